// Constant-time building blocks of the two windowed multiplications (mulg.ts, mulp.ts): a table
// lookup that reads every entry and selects with masks, and the masked accumulation of one
// looked-up entry into a Jacobian sum that tracks "still at infinity" without branching.
// Nothing here branches on or indexes by a digit. Scratch in S_MULT (secret, wiped).
import { pt_madd, pt_cmov, pt_fromAffine, AFF } from './point';
import { FE, eqMask } from './limbs';
import { S_MULT } from './layout';
import { DEBUG } from './debug';

export const ENTRY: usize = S_MULT; //          80: looked-up affine entry
const TMP: usize = S_MULT + 128; //      120: candidate sum
const ENTRYJ: usize = S_MULT + 256; //   120: entry as a Jacobian point
export const NEGY: usize = S_MULT + 384; //     40

/** out = table[d − 1] (80-byte entries, `count` of them) or all zeros when d = 0; reads every entry. */
export function lookupAff(out: usize, table: usize, count: u32, d: u32): void {
  if (DEBUG) assert(d <= count, 'table lookup: digit beyond the table');
  let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0), a4 = i32x4.splat(0);
  let e = table;
  for (let j: u32 = 1; j <= count; j++) {
    let m = i32x4.splat(-(<i32>eqMask(j, d)));
    a0 = v128.or(a0, v128.and(v128.load(e, 0), m));
    a1 = v128.or(a1, v128.and(v128.load(e, 16), m));
    a2 = v128.or(a2, v128.and(v128.load(e, 32), m));
    a3 = v128.or(a3, v128.and(v128.load(e, 48), m));
    a4 = v128.or(a4, v128.and(v128.load(e, 64), m));
    e += AFF;
  }
  v128.store(out, a0, 0);
  v128.store(out, a1, 16);
  v128.store(out, a2, 32);
  v128.store(out, a3, 48);
  v128.store(out, a4, 64);
}

/** acc += entry (affine, looked up for digit d), tracking "acc is infinity" in inf (1/0). Returns new inf.
 *  Exceptional additions (acc = ±entry) cannot occur for scalars in [1, n) (see callers). */
// @ts-ignore: decorator
@inline
export function addDigit(cv: usize, acc: usize, d: u32, inf: u32): u32 {
  let nz = 1 ^ eqMask(d, 0);
  pt_madd(cv, TMP, acc, ENTRY);
  pt_cmov(acc, TMP, nz & (inf ^ 1));
  pt_fromAffine(cv, ENTRYJ, ENTRY);
  pt_cmov(acc, ENTRYJ, nz & inf);
  return inf & (nz ^ 1);
}

/** If the accumulator never left infinity (inf = 1, i.e. k = 0), clear its Z so it reads as the
 *  point at infinity; masked, no branch on inf. */
@inline
export function zeroZIfInf(r: usize, inf: u32): void {
  let z = r + 2 * FE;
  let m: u64 = <u64>0 - <u64>inf;
  store<u64>(z, load<u64>(z, 0) & ~m, 0);
  store<u64>(z, load<u64>(z, 8) & ~m, 8);
  store<u64>(z, load<u64>(z, 16) & ~m, 16);
  store<u64>(z, load<u64>(z, 24) & ~m, 24);
  store<u64>(z, load<u64>(z, 32) & ~m, 32);
}
