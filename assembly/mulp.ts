// Variable-base multiplication k·P for a public point P (ECDH), constant time in k: 4-bit fixed
// windows over the 15 affine multiples of P (built with one shared inversion; depends on P only),
// each looked up with a full scan. k < n (checked in the debug build).
import { pt_dbl, pt_madd, pt_setInf, pt_fromAffine, pt_batchToAffine, JAC } from './point';
import { PUBLIC } from './layout';
import { DEBUG, verifyScBytes } from './debug';
import { ENTRY, lookupAff, addDigit, zeroZIfInf } from './window';
import { nibble } from './recode';

// public scratch: the table of multiples of P
// public scratch for mulP's table of P multiples and the wNAF machinery
const PT_J: usize = PUBLIC; //               15 Jacobian multiples of P (1800)
const PT_A: usize = PUBLIC + 2048; //        15 affine multiples of P (1200)
const PT_PREFIX: usize = PUBLIC + 3328; //   15 prefix products (600)

/** Affine table of 1P..15P for a public affine point P (variable time in P only). */
function buildTable(cv: usize, p: usize): void {
  pt_fromAffine(cv, PT_J, p);
  pt_dbl(cv, PT_J + JAC, PT_J);
  for (let i: usize = 2; i < 15; i++) pt_madd(cv, PT_J + JAC * i, PT_J + JAC * (i - 1), p);
  pt_batchToAffine(cv, PT_A, PT_J, 15, PT_PREFIX);
}

/** r = k·P (Jacobian) for a public affine point P (on the curve, not infinity), k < n as 32 big-endian
 *  bytes; constant time in k. Left-to-right 4-bit windows: before each addition the accumulator
 *  is 16·A·P with 1 ≤ 16·A ≤ k < n, and the addend d·P with d < 16, so no exceptional case. */
export function mulP(cv: usize, r: usize, p: usize, k: usize): void {
  if (DEBUG) verifyScBytes(cv, k);
  buildTable(cv, p);
  let inf: u32 = 1;
  pt_setInf(cv, r);
  for (let w: i32 = 63; w >= 0; w--) {
    if (w != 63) {
      pt_dbl(cv, r, r);
      pt_dbl(cv, r, r);
      pt_dbl(cv, r, r);
      pt_dbl(cv, r, r);
    }
    let d = nibble(k, <u32>w);
    lookupAff(ENTRY, PT_A, 15, d);
    inf = addDigit(cv, r, d, inf);
  }
  zeroZIfInf(r, inf);
}
