// Scalar multiplication.
//   mulG      k·G over the precomputed table (43 signed 6-bit windows x 32 affine multiples), constant time
//   mulP       k·P for a public point P (ECDH, 4-bit fixed windows), constant time in k
//   mulDouble_var  u1·G + u2·Q for verification/recovery (Strauss–Shamir with wNAF, GLV on secp256k1),
//                variable time
//   mulDoubleHot_var  the same for a key with a full fixed-window table (hotBuild_var): no doublings
// Scalars are passed as 32 big-endian bytes and must be < n.
import { G_COMB, G_WNAF, G128_WNAF, IS_K1 } from './curve';
import { glvSplit_var, FP_BETA } from './glv';
import { fe_inv, fe_mul, fe_neg } from './field';
import {
  JAC, AFF, pt_dbl, pt_madd, pt_cmov, pt_setInf, pt_fromAffine, pt_madd_var, pt_add_var, pt_negAffine,
  pt_toAffineWithInv, pt_toAffine, pt_copy,
} from './point';
import { FE, eqMask, cmov40 } from './limbs';
import { S_MULT, PUBLIC } from './layout';
import { DEBUG, verifyScBytes } from './verify';

const ENTRY: usize = S_MULT; //          80: looked-up affine entry
const TMP: usize = S_MULT + 128; //      120: candidate sum
const ENTRYJ: usize = S_MULT + 256; //   120: entry as a Jacobian point
const NEGY: usize = S_MULT + 384; //     40
const KW: usize = S_MULT + 448; //       scalar as 12 little-endian words (48)
const KD: usize = S_MULT + 512; //       its 43 signed base-64 digits (i8)

// public scratch for mulP's table of P multiples and the wNAF machinery
const PT_J: usize = PUBLIC; //               15 Jacobian multiples of P (1800)
const PT_A: usize = PUBLIC + 2048; //        15 affine multiples of P (1200)
const PT_PREFIX: usize = PUBLIC + 3328; //   15 prefix products (600)
const PT_INV: usize = PUBLIC + 3968; //       40 + 40
const WNAF1: usize = PUBLIC + 4096; //        260 digits (i8)
const WNAF2: usize = PUBLIC + 4416; //        260
const SCW: usize = PUBLIC + 4736; //          scalar as 12 little-endian words
const QODD: usize = PUBLIC + 4800; //         8 Jacobian odd multiples of Q (960)
const NEGA: usize = PUBLIC + 5824; //         80
const NEGJ: usize = PUBLIC + 5952; //         120
const ACCV: usize = PUBLIC + 6144; //         120
const WNAF3: usize = PUBLIC + 6400; //        260
const WNAF4: usize = PUBLIC + 6720; //        260
const SPLIT: usize = PUBLIC + 8320; //        4 x 32 bytes of split scalars (ends 8448)
const G_LAM: usize = PUBLIC + 9216; //        64 affine odd multiples of λG (5120)

// @ts-ignore: decorator
@inline
function nibble(k: usize, w: u32): u32 {
  let b = <u32>load<u8>(k + 31 - <usize>(w >> 1));
  return (w & 1) != 0 ? b >> 4 : b & 15;
}

/** out = table[d − 1] (80-byte entries, `count` of them) or all zeros when d = 0; reads every entry. */
function lookupAff(out: usize, table: usize, count: u32, d: u32): void {
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
function addDigit(acc: usize, d: u32, inf: u32): u32 {
  let nz = 1 ^ eqMask(d, 0);
  pt_madd(TMP, acc, ENTRY);
  pt_cmov(acc, TMP, nz & (inf ^ 1));
  pt_fromAffine(ENTRYJ, ENTRY);
  pt_cmov(acc, ENTRYJ, nz & inf);
  return inf & (nz ^ 1);
}

/** If the accumulator never left infinity (inf = 1, i.e. k = 0), clear its Z so it reads as the
 *  point at infinity; masked, no branch on inf. */
@inline
function zeroZIfInf(r: usize, inf: u32): void {
  let z = r + 2 * FE;
  let m: u64 = <u64>0 - <u64>inf;
  store<u64>(z, load<u64>(z, 0) & ~m, 0);
  store<u64>(z, load<u64>(z, 8) & ~m, 8);
  store<u64>(z, load<u64>(z, 16) & ~m, 16);
  store<u64>(z, load<u64>(z, 24) & ~m, 24);
  store<u64>(z, load<u64>(z, 32) & ~m, 32);
}

/** The 32-byte big-endian scalar k as 12 little-endian u32 words at w (the top four zero). */
// @ts-ignore: decorator
@inline
function scalarWords(w: usize, k: usize): void {
  for (let i: usize = 0; i < 8; i++) store<u32>(w + 4 * i, bswap<u32>(load<u32>(k + 28 - 4 * i)));
  store<u64>(w + 32, 0);
  store<u64>(w + 40, 0);
}

/** The 32-byte big-endian scalar k (< n) as 43 signed base-64 digits in [−31, 32], least
 *  significant first (i8 at out), using `words` (48 bytes) as scratch. Branch-free: mulG
 *  recodes secret scalars with it (into secret scratch), verification public ones. */
function comb6Digits(out: usize, k: usize, words: usize): void {
  scalarWords(words, k);
  let carry: u32 = 0;
  for (let w: u32 = 0; w < 43; w++) {
    let pos = 6 * w;
    let v = (<u32>(load<u64>(words + 4 * <usize>(pos >> 5)) >> <u64>(pos & 31)) & 63) + carry;
    carry = (v + 31) >> 6; //  v ≥ 33 → digit v − 64 (negative), carry 1
    store<i8>(out + <usize>w, <i8>(<i32>v - <i32>(carry << 6)));
  }
  if (DEBUG) {
    assert(carry == 0, 'comb digits: carry out of the top window (scalar ≥ 2^257?)');
    for (let w: usize = 0; w < 43; w++) {
      let d = <i32>load<i8>(out + w);
      assert(d >= -31 && d <= 32, 'comb digit out of [−31, 32]');
    }
  }
}

/** r = k·G (Jacobian), k < n as 32 big-endian bytes. Constant time.
 *  k is recoded into 43 signed base-64 digits d_w ∈ [−31, 32]; window w adds d_w·64^w·G from the
 *  table (|d_w| looked up by a full scan, y negated by cmov for d_w < 0). The partial sum S before
 *  window w satisfies |S| < 0.51·64^w, so S ≢ ±d_w·64^w (mod n) for 0 < k < n: for w ≤ 41 no
 *  wrap-around is possible, and for the top window S ≡ D forces k = 2D − n with D ≥ 15.49·2^252,
 *  i.e. d = 16 and k > n. The sum is infinity only while every digit so far is 0 (tracked by inf).
 *  k = 0 gives infinity. */
export function mulG(r: usize, k: usize): void {
  if (DEBUG) verifyScBytes(k);
  comb6Digits(KD, k, KW);
  let inf: u32 = 1;
  pt_setInf(r);
  let table = G_COMB;
  for (let w: u32 = 0; w < 43; w++) {
    let d = <i32>load<i8>(KD + <usize>w);
    let neg = <u32>d >> 31; //        digit < 0
    let mag = (<u32>d ^ (0 - neg)) + neg; // |d|
    lookupAff(ENTRY, table, 32, mag);
    fe_neg(NEGY, ENTRY + FE);
    cmov40(ENTRY + FE, NEGY, neg);
    inf = addDigit(r, mag, inf);
    table += 32 * AFF;
  }
  memory.fill(KW, 0, 48);
  memory.fill(KD, 0, 48);
  zeroZIfInf(r, inf); // k = 0
}

/** Affine table of 1P..15P for a public affine point P (variable time in P only). */
function buildTable(p: usize): void {
  pt_fromAffine(PT_J, p);
  pt_dbl(PT_J + JAC, PT_J);
  for (let i: usize = 2; i < 15; i++) pt_madd(PT_J + JAC * i, PT_J + JAC * (i - 1), p);
  batchToAffine(PT_A, PT_J, 15);
}

/** r = k·P (Jacobian) for a public affine point P (on the curve, not infinity), k < n as 32 big-endian
 *  bytes; constant time in k. Left-to-right 4-bit windows: before each addition the accumulator
 *  is 16·A·P with 1 ≤ 16·A ≤ k < n, and the addend d·P with d < 16, so no exceptional case. */
export function mulP(r: usize, p: usize, k: usize): void {
  if (DEBUG) verifyScBytes(k);
  buildTable(p);
  let inf: u32 = 1;
  pt_setInf(r);
  for (let w: i32 = 63; w >= 0; w--) {
    if (w != 63) {
      pt_dbl(r, r);
      pt_dbl(r, r);
      pt_dbl(r, r);
      pt_dbl(r, r);
    }
    let d = nibble(k, <u32>w);
    lookupAff(ENTRY, PT_A, 15, d);
    inf = addDigit(r, d, inf);
  }
  zeroZIfInf(r, inf);
}

// ---- variable time ----

/** wNAF digits of the 32-byte big-endian scalar k into out (i8[257]); returns the number of digits. */
function wnaf_var(out: usize, k: usize, w: u32): i32 {
  scalarWords(SCW, k);
  memory.fill(out, 0, 260);
  let carry: u32 = 0;
  let bit: u32 = 0;
  let last: i32 = -1;
  const len: u32 = 257;
  while (bit < len) {
    let b = <u32>((load<u32>(SCW + 4 * <usize>(bit >> 5)) >> (bit & 31)) & 1);
    if (b == carry) {
      bit++;
      continue;
    }
    let now = w;
    if (now > len - bit) now = len - bit;
    let word = <i32>(<u32>(load<u64>(SCW + 4 * <usize>(bit >> 5)) >> <u64>(bit & 31)) & ((1 << now) - 1)) + <i32>carry;
    carry = (<u32>word >> (w - 1)) & 1;
    word -= <i32>(carry << w);
    store<i8>(out + <usize>bit, <i8>word);
    last = <i32>bit;
    bit += now;
  }
  if (DEBUG) {
    for (let i: usize = 0; i < 260; i++) {
      let d = <i32>load<i8>(out + i);
      assert(d == 0 || ((d & 1) != 0 && d < (1 << (w - 1)) && d > -(1 << (w - 1))), 'wNAF digit not odd or beyond the window');
    }
  }
  return last + 1;
}

/** outAff[i] = affine of inJac[i] for i < count (one shared inversion; points must not be infinity);
 *  prefix: scratch for count field elements. */
function batchToAffine(outAff: usize, inJac: usize, count: usize, prefix: usize = PT_PREFIX): void {
  memory.copy(prefix, inJac + 2 * FE, FE);
  for (let i: usize = 1; i < count; i++) fe_mul(prefix + FE * i, prefix + FE * (i - 1), inJac + JAC * i + 2 * FE);
  fe_inv(PT_INV, prefix + FE * (count - 1));
  for (let i = <isize>count - 1; i >= 0; i--) {
    let zi = PT_INV + FE;
    let p = inJac + JAC * <usize>i;
    if (i > 0) {
      fe_mul(zi, PT_INV, prefix + FE * <usize>(i - 1));
      fe_mul(PT_INV, PT_INV, p + 2 * FE);
    } else memory.copy(zi, PT_INV, FE);
    pt_toAffineWithInv(outAff + AFF * <usize>i, p, zi);
  }
}

/** r += sign(d)·table[(|d| − 1)/2] (affine odd multiples), negated again if neg. Variable time. */
// @ts-ignore: decorator
@inline
function addWnaf_var(r: usize, d: i32, table: usize, neg: bool): bool {
  let e = table + AFF * <usize>(((d < 0 ? -d : d) - 1) >> 1);
  if ((d < 0) != neg) {
    pt_negAffine(NEGA, e);
    e = NEGA;
  }
  return pt_madd_var(r, r, e) != 0;
}

let gLamReady = false;

// ---- public-key contexts for verification ----
// A Q context holds everything verification needs about one public key (public data):
//   +0 curve id, +4 encoded length, +8 state, +12 verifications since cached (ecdsa.ts),
//   +16 encoded key (≤ 65 bytes), +84 hot table slot + 1 (0: none), +88 verified since the
//   cache's CLOCK hand passed (ecdsa.ts)
//   +96  Q (affine)
//   +176 T1: affine odd multiples Q, 3Q, ..., 15Q
//   +816 T2: affine odd multiples of λQ (secp256k1) or, once state = 2, of 2^128·Q (P-256)
// state 1: T1 ready (P-256 verifies with 256 doublings); state 2: T2 ready as well.
export const QCTX_SIZE: usize = 1536;
export const QCTX_STATE: usize = 8;
export const QCTX_USES: usize = 12;
export const QCTX_KEY: usize = 16;
export const QCTX_HOT: usize = 84;
export const QCTX_REF: usize = 88;
export const QCTX_Q: usize = 96;
const QCTX_T1: usize = 176;
const QCTX_T2: usize = 816;

/** odd multiples of the affine point q into the affine table t (8 entries). */
function oddMultiples_var(t: usize, q: usize): void {
  pt_fromAffine(QODD, q);
  pt_dbl(ACCV, QODD);
  for (let i: usize = 1; i < 8; i++) pt_add_var(QODD + JAC * i, QODD + JAC * (i - 1), ACCV);
  batchToAffine(t, QODD, 8);
}

/** Fill T1 (and on secp256k1 T2 = λ·T1) for the affine point Q already stored in ctx. */
export function qctxPrepare_var(ctx: usize): void {
  oddMultiples_var(ctx + QCTX_T1, ctx + QCTX_Q);
  if (IS_K1) {
    for (let j: usize = 0; j < 8; j++) {
      let e = ctx + QCTX_T1 + AFF * j, f = ctx + QCTX_T2 + AFF * j;
      fe_mul(f, e, FP_BETA);
      memory.copy(f + FE, e + FE, FE);
    }
    store<u32>(ctx + QCTX_STATE, 2);
  } else store<u32>(ctx + QCTX_STATE, 1);
}

/** P-256: add the 2^128·Q table (128 doublings, paid once per cached key), state 2. */
export function qctxUpgrade_var(ctx: usize): void {
  pt_fromAffine(ACCV, ctx + QCTX_Q);
  for (let i = 0; i < 128; i++) pt_dbl(ACCV, ACCV);
  pt_toAffine(NEGA, ACCV);
  oddMultiples_var(ctx + QCTX_T2, NEGA);
  store<u32>(ctx + QCTX_STATE, 2);
}

/** out = the 32-byte scalar at k split at bit 128: out = low half, out + 32 = high half (both 32-byte BE). */
function split128(out: usize, k: usize): void {
  memory.fill(out, 0, 64);
  memory.copy(out + 16, k + 16, 16);
  memory.copy(out + 48, k, 16);
}

/** r = u1·G + u2·Q (Jacobian); u1, u2 as 32 big-endian bytes (< n); Q from a prepared context.
 *  Strauss–Shamir over wNAF digits (window 8 for G from the generated tables, 5 for Q). Four
 *  ~128-bit streams when available: on secp256k1 via the GLV endomorphism (G, λG, Q, λQ), on
 *  P-256 (state 2) by splitting the scalars at bit 128 (G, 2^128·G, Q, 2^128·Q); both halve the
 *  doublings. Variable time: only for public inputs. */
export function mulDouble_var(r: usize, u1: usize, u2: usize, ctx: usize): void {
  if (DEBUG) {
    verifyScBytes(u1);
    verifyScBytes(u2);
    assert(load<u32>(ctx + QCTX_STATE) != 0, 'verification context not prepared');
  }
  let t1 = ctx + QCTX_T1, t2 = ctx + QCTX_T2;
  let streams = 2;
  let n1: i32, n2: i32, n3: i32 = 0, n4: i32 = 0;
  let f1: u32 = 0, f2: u32 = 0;
  let g2 = G128_WNAF;
  if (IS_K1) {
    if (!gLamReady) {
      for (let j: usize = 0; j < 64; j++) {
        fe_mul(G_LAM + AFF * j, G_WNAF + AFF * j, FP_BETA);
        memory.copy(G_LAM + AFF * j + FE, G_WNAF + AFF * j + FE, FE);
      }
      gLamReady = true;
    }
    g2 = G_LAM;
    f1 = glvSplit_var(u1, SPLIT, SPLIT + 32);
    f2 = glvSplit_var(u2, SPLIT + 64, SPLIT + 96);
    streams = 4;
  } else if (load<u32>(ctx + QCTX_STATE) == 2) {
    split128(SPLIT, u1);
    split128(SPLIT + 64, u2);
    streams = 4;
  }
  if (streams == 4) {
    n1 = wnaf_var(WNAF1, SPLIT, 8);
    n3 = wnaf_var(WNAF3, SPLIT + 32, 8);
    n2 = wnaf_var(WNAF2, SPLIT + 64, 5);
    n4 = wnaf_var(WNAF4, SPLIT + 96, 5);
  } else {
    n1 = wnaf_var(WNAF1, u1, 8);
    n2 = wnaf_var(WNAF2, u2, 5);
  }
  let top = max(max(n1, n2), max(n3, n4));
  pt_setInf(r);
  let inf = true;
  let neg1 = (f1 & 1) != 0, neg3 = (f1 & 2) != 0, neg2 = (f2 & 1) != 0, neg4 = (f2 & 2) != 0;
  for (let i = top - 1; i >= 0; i--) {
    if (!inf) pt_dbl(r, r);
    let d = <i32>load<i8>(WNAF1 + <usize>i);
    if (d != 0) inf = addWnaf_var(r, d, G_WNAF, neg1);
    d = <i32>load<i8>(WNAF2 + <usize>i);
    if (d != 0) inf = addWnaf_var(r, d, t1, neg2);
    if (streams == 4) {
      d = <i32>load<i8>(WNAF3 + <usize>i);
      if (d != 0) inf = addWnaf_var(r, d, g2, neg3);
      d = <i32>load<i8>(WNAF4 + <usize>i);
      if (d != 0) inf = addWnaf_var(r, d, t2, neg4);
    }
  }
}

// ---- hot keys: a full fixed-window table of Q ----
// For a key that verifies often (API-key stamps), a table laid out like G_COMB: entry (w, d) =
// d·64^w·Q, w < 43, d = 1..32, affine. With it, u1·G + u2·Q needs no doubling at all: each
// scalar is recoded into 43 signed base-64 digits and every nonzero digit costs one mixed addition
// (≈ 86 in all, against 128 doublings and ≈ 70 additions over the wNAF tables). Building one costs
// about as much as 30 verifications; ecdsa.ts decides which keys get one.

export const HOT_TABLE_SIZE: usize = 43 * 32 * AFF;
const HJ: usize = memory.data(<i32>(<usize>32 * JAC), 16); //   one window's multiples, Jacobian
const HPRE: usize = memory.data(<i32>(<usize>32 * FE), 16); //  batch-inversion prefix products
const HB: usize = memory.data(<i32>JAC, 16); //          64^w·Q
const DIG1: usize = memory.data(48, 16); //              signed digits of u1 (i8)
const DIG2: usize = memory.data(48, 16); //              signed digits of u2 (i8)

/** Fills the table at t (HOT_TABLE_SIZE bytes) for the affine point q. */
export function hotBuild_var(t: usize, q: usize): void {
  pt_fromAffine(HB, q);
  for (let w: usize = 0; w < 43; w++) {
    pt_copy(HJ, HB);
    pt_dbl(HJ + JAC, HB);
    for (let j: usize = 2; j < 32; j++) pt_add_var(HJ + JAC * j, HJ + JAC * (j - 1), HB);
    if (w < 42) pt_dbl(HB, HJ + JAC * 31); // 64·(64^w·Q)
    batchToAffine(t + <usize>32 * AFF * w, HJ, 32, HPRE);
  }
}

/** r += d·(entry |d| of the 32-entry window at table), d ≠ 0. */
// @ts-ignore: decorator
@inline
function addComb_var(r: usize, d: i32, table: usize): void {
  let e = table + AFF * <usize>((d < 0 ? -d : d) - 1);
  if (d < 0) {
    pt_negAffine(NEGA, e);
    e = NEGA;
  }
  pt_madd_var(r, r, e);
}

/** r = u1·G + u2·Q (Jacobian) over G_COMB and Q's hot table qt; u1, u2 as 32 big-endian bytes (< n).
 *  Variable time: only for public inputs. */
export function mulDoubleHot_var(r: usize, u1: usize, u2: usize, qt: usize): void {
  if (DEBUG) {
    verifyScBytes(u1);
    verifyScBytes(u2);
  }
  comb6Digits(DIG1, u1, SCW);
  comb6Digits(DIG2, u2, SCW);
  pt_setInf(r);
  let gt = G_COMB;
  for (let w: usize = 0; w < 43; w++) {
    let d = <i32>load<i8>(DIG1 + w);
    if (d != 0) addComb_var(r, d, gt);
    d = <i32>load<i8>(DIG2 + w);
    if (d != 0) addComb_var(r, d, qt);
    gt += 32 * AFF;
    qt += 32 * AFF;
  }
}
