// Field arithmetic modulo p of the selected curve, 9 x 29-bit limbs.
//
// Representation invariant ("weakly normalised"), kept by every function here: limbs 0..7 in
// [0, 2^29), limb 8 in [0, 2^25), so the value is < 2^257 (< 4p for both primes) but not
// necessarily < p. Products of two such elements fit i64 columns without carry handling
// (at most 9 * 2^58 < 2^62); the reduction is the only curve-specific code:
//   secp256k1: plain form, 2^261 ≡ 2^37 + 31264 (mod p) folds the high columns;
//   P-256:     Montgomery form with R = 2^261; since p ≡ −1 (mod 2^96) the Montgomery
//              quotient digit is the low limb itself and m·p is four shifted adds.
// Everything in this file is constant time (no secret-dependent branch or index);
// the `_var` functions are explicitly variable time.
//
// (The unrolled column code was generated mechanically from the schoolbook definition.)
import { IS_K1, FP_P, FP_BIAS, FP_ONE, FP_B, FP_R2, FP_R3, FP_P30, FP_PINV30, FP_EXP_SQRT } from './curve';
import { modinv } from './modinv';
import { M, M24, FE, limbsFromBytes, limbsToBytes, limbsLess, limbsCondSub, limbsIsZero, copy40 } from './limbs';
import { S_FIELD } from './layout';

const POW_T: usize = S_FIELD; // 16 elements: a^0 .. a^15
const T1: usize = S_FIELD + 640;
const T2: usize = S_FIELD + 680;
const T3: usize = S_FIELD + 720;
const PLAIN_ONE: usize = memory.data<u32>([1, 0, 0, 0, 0, 0, 0, 0, 0, 0], 16);

// @ts-ignore: decorator
@inline
function carryStoreK1(r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  let top = c8 >> 24;
  c8 &= M24;
  c0 += top * 977;
  c1 += top << 3;
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  store<u32>(r, <u32>c0, 0); store<u32>(r, <u32>c1, 4); store<u32>(r, <u32>c2, 8);
  store<u32>(r, <u32>c3, 12); store<u32>(r, <u32>c4, 16); store<u32>(r, <u32>c5, 20);
  store<u32>(r, <u32>c6, 24); store<u32>(r, <u32>c7, 28); store<u32>(r, <u32>c8, 32);
}

// Precondition: the value is ≥ 0 and < 2^260 (top < 16), which holds for every caller.
// @ts-ignore: decorator
@inline
function carryStoreP256(r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  let top = c8 >> 24;
  c8 &= M24;
  // 2^256 ≡ 2^224 − 2^192 − 2^96 + 1
  c0 += top;
  c3 -= top << 9;
  c6 -= top << 18;
  c7 += top << 21;
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  store<u32>(r, <u32>c0, 0); store<u32>(r, <u32>c1, 4); store<u32>(r, <u32>c2, 8);
  store<u32>(r, <u32>c3, 12); store<u32>(r, <u32>c4, 16); store<u32>(r, <u32>c5, 20);
  store<u32>(r, <u32>c6, 24); store<u32>(r, <u32>c7, 28); store<u32>(r, <u32>c8, 32);
}

// @ts-ignore: decorator
@inline
function carryStore(r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  if (IS_K1) carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  else carryStoreP256(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
}

/** r = a · b (r may alias a or b). */
export function fe_mul(r: usize, a: usize, b: usize): void {
  let a0 = <i64>load<u32>(a, 0);
  let a1 = <i64>load<u32>(a, 4);
  let a2 = <i64>load<u32>(a, 8);
  let a3 = <i64>load<u32>(a, 12);
  let a4 = <i64>load<u32>(a, 16);
  let a5 = <i64>load<u32>(a, 20);
  let a6 = <i64>load<u32>(a, 24);
  let a7 = <i64>load<u32>(a, 28);
  let a8 = <i64>load<u32>(a, 32);
  let b0 = <i64>load<u32>(b, 0);
  let b1 = <i64>load<u32>(b, 4);
  let b2 = <i64>load<u32>(b, 8);
  let b3 = <i64>load<u32>(b, 12);
  let b4 = <i64>load<u32>(b, 16);
  let b5 = <i64>load<u32>(b, 20);
  let b6 = <i64>load<u32>(b, 24);
  let b7 = <i64>load<u32>(b, 28);
  let b8 = <i64>load<u32>(b, 32);
  let c0 = a0 * b0;
  let c1 = a0 * b1 + a1 * b0;
  let c2 = a0 * b2 + a1 * b1 + a2 * b0;
  let c3 = a0 * b3 + a1 * b2 + a2 * b1 + a3 * b0;
  let c4 = a0 * b4 + a1 * b3 + a2 * b2 + a3 * b1 + a4 * b0;
  let c5 = a0 * b5 + a1 * b4 + a2 * b3 + a3 * b2 + a4 * b1 + a5 * b0;
  let c6 = a0 * b6 + a1 * b5 + a2 * b4 + a3 * b3 + a4 * b2 + a5 * b1 + a6 * b0;
  let c7 = a0 * b7 + a1 * b6 + a2 * b5 + a3 * b4 + a4 * b3 + a5 * b2 + a6 * b1 + a7 * b0;
  let c8 = a0 * b8 + a1 * b7 + a2 * b6 + a3 * b5 + a4 * b4 + a5 * b3 + a6 * b2 + a7 * b1 + a8 * b0;
  let c9 = a1 * b8 + a2 * b7 + a3 * b6 + a4 * b5 + a5 * b4 + a6 * b3 + a7 * b2 + a8 * b1;
  let c10 = a2 * b8 + a3 * b7 + a4 * b6 + a5 * b5 + a6 * b4 + a7 * b3 + a8 * b2;
  let c11 = a3 * b8 + a4 * b7 + a5 * b6 + a6 * b5 + a7 * b4 + a8 * b3;
  let c12 = a4 * b8 + a5 * b7 + a6 * b6 + a7 * b5 + a8 * b4;
  let c13 = a5 * b8 + a6 * b7 + a7 * b6 + a8 * b5;
  let c14 = a6 * b8 + a7 * b7 + a8 * b6;
  let c15 = a7 * b8 + a8 * b7;
  let c16 = a8 * b8;
  if (IS_K1) {
    let h = c9;
    let t9 = h & M;
    h = (h >> 29) + c10; let t10 = h & M;
    h = (h >> 29) + c11; let t11 = h & M;
    h = (h >> 29) + c12; let t12 = h & M;
    h = (h >> 29) + c13; let t13 = h & M;
    h = (h >> 29) + c14; let t14 = h & M;
    h = (h >> 29) + c15; let t15 = h & M;
    h = (h >> 29) + c16; let t16 = h & M;
    let t17 = h >> 29;
    c0 += t9 * 31264; c1 += t9 << 8;
    c1 += t10 * 31264; c2 += t10 << 8;
    c2 += t11 * 31264; c3 += t11 << 8;
    c3 += t12 * 31264; c4 += t12 << 8;
    c4 += t13 * 31264; c5 += t13 << 8;
    c5 += t14 * 31264; c6 += t14 << 8;
    c6 += t15 * 31264; c7 += t15 << 8;
    c7 += t16 * 31264; c8 += t16 << 8;
    c8 += t17 * 31264; c0 += (t17 << 8) * 31264; c1 += t17 << 16;
    carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  } else {
    let c17: i64 = 0; let m: i64;
    m = c0 & M; c1 += c0 >> 29; c3 += m << 9; c6 += m << 18; c7 -= m << 21; c8 += m << 24;
    m = c1 & M; c2 += c1 >> 29; c4 += m << 9; c7 += m << 18; c8 -= m << 21; c9 += m << 24;
    m = c2 & M; c3 += c2 >> 29; c5 += m << 9; c8 += m << 18; c9 -= m << 21; c10 += m << 24;
    m = c3 & M; c4 += c3 >> 29; c6 += m << 9; c9 += m << 18; c10 -= m << 21; c11 += m << 24;
    m = c4 & M; c5 += c4 >> 29; c7 += m << 9; c10 += m << 18; c11 -= m << 21; c12 += m << 24;
    m = c5 & M; c6 += c5 >> 29; c8 += m << 9; c11 += m << 18; c12 -= m << 21; c13 += m << 24;
    m = c6 & M; c7 += c6 >> 29; c9 += m << 9; c12 += m << 18; c13 -= m << 21; c14 += m << 24;
    m = c7 & M; c8 += c7 >> 29; c10 += m << 9; c13 += m << 18; c14 -= m << 21; c15 += m << 24;
    m = c8 & M; c9 += c8 >> 29; c11 += m << 9; c14 += m << 18; c15 -= m << 21; c16 += m << 24;
    carryStoreP256(r, c9, c10, c11, c12, c13, c14, c15, c16, c17);
  }
}

/** r = a² (r may alias a). */
export function fe_sqr(r: usize, a: usize): void {
  let a0 = <i64>load<u32>(a, 0);
  let a1 = <i64>load<u32>(a, 4);
  let a2 = <i64>load<u32>(a, 8);
  let a3 = <i64>load<u32>(a, 12);
  let a4 = <i64>load<u32>(a, 16);
  let a5 = <i64>load<u32>(a, 20);
  let a6 = <i64>load<u32>(a, 24);
  let a7 = <i64>load<u32>(a, 28);
  let a8 = <i64>load<u32>(a, 32);
  let d0 = a0 << 1;
  let d1 = a1 << 1;
  let d2 = a2 << 1;
  let d3 = a3 << 1;
  let d4 = a4 << 1;
  let d5 = a5 << 1;
  let d6 = a6 << 1;
  let d7 = a7 << 1;
  let d8 = a8 << 1;
  let c0 = a0 * a0;
  let c1 = d0 * a1;
  let c2 = d0 * a2 + a1 * a1;
  let c3 = d0 * a3 + d1 * a2;
  let c4 = d0 * a4 + d1 * a3 + a2 * a2;
  let c5 = d0 * a5 + d1 * a4 + d2 * a3;
  let c6 = d0 * a6 + d1 * a5 + d2 * a4 + a3 * a3;
  let c7 = d0 * a7 + d1 * a6 + d2 * a5 + d3 * a4;
  let c8 = d0 * a8 + d1 * a7 + d2 * a6 + d3 * a5 + a4 * a4;
  let c9 = d1 * a8 + d2 * a7 + d3 * a6 + d4 * a5;
  let c10 = d2 * a8 + d3 * a7 + d4 * a6 + a5 * a5;
  let c11 = d3 * a8 + d4 * a7 + d5 * a6;
  let c12 = d4 * a8 + d5 * a7 + a6 * a6;
  let c13 = d5 * a8 + d6 * a7;
  let c14 = d6 * a8 + a7 * a7;
  let c15 = d7 * a8;
  let c16 = a8 * a8;
  if (IS_K1) {
    let h = c9;
    let t9 = h & M;
    h = (h >> 29) + c10; let t10 = h & M;
    h = (h >> 29) + c11; let t11 = h & M;
    h = (h >> 29) + c12; let t12 = h & M;
    h = (h >> 29) + c13; let t13 = h & M;
    h = (h >> 29) + c14; let t14 = h & M;
    h = (h >> 29) + c15; let t15 = h & M;
    h = (h >> 29) + c16; let t16 = h & M;
    let t17 = h >> 29;
    c0 += t9 * 31264; c1 += t9 << 8;
    c1 += t10 * 31264; c2 += t10 << 8;
    c2 += t11 * 31264; c3 += t11 << 8;
    c3 += t12 * 31264; c4 += t12 << 8;
    c4 += t13 * 31264; c5 += t13 << 8;
    c5 += t14 * 31264; c6 += t14 << 8;
    c6 += t15 * 31264; c7 += t15 << 8;
    c7 += t16 * 31264; c8 += t16 << 8;
    c8 += t17 * 31264; c0 += (t17 << 8) * 31264; c1 += t17 << 16;
    carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  } else {
    let c17: i64 = 0; let m: i64;
    m = c0 & M; c1 += c0 >> 29; c3 += m << 9; c6 += m << 18; c7 -= m << 21; c8 += m << 24;
    m = c1 & M; c2 += c1 >> 29; c4 += m << 9; c7 += m << 18; c8 -= m << 21; c9 += m << 24;
    m = c2 & M; c3 += c2 >> 29; c5 += m << 9; c8 += m << 18; c9 -= m << 21; c10 += m << 24;
    m = c3 & M; c4 += c3 >> 29; c6 += m << 9; c9 += m << 18; c10 -= m << 21; c11 += m << 24;
    m = c4 & M; c5 += c4 >> 29; c7 += m << 9; c10 += m << 18; c11 -= m << 21; c12 += m << 24;
    m = c5 & M; c6 += c5 >> 29; c8 += m << 9; c11 += m << 18; c12 -= m << 21; c13 += m << 24;
    m = c6 & M; c7 += c6 >> 29; c9 += m << 9; c12 += m << 18; c13 -= m << 21; c14 += m << 24;
    m = c7 & M; c8 += c7 >> 29; c10 += m << 9; c13 += m << 18; c14 -= m << 21; c15 += m << 24;
    m = c8 & M; c9 += c8 >> 29; c11 += m << 9; c14 += m << 18; c15 -= m << 21; c16 += m << 24;
    carryStoreP256(r, c9, c10, c11, c12, c13, c14, c15, c16, c17);
  }
}

/** r = a + b */
export function fe_add(r: usize, a: usize, b: usize): void {
  carryStore(r,
    <i64>load<u32>(a, 0) + <i64>load<u32>(b, 0), <i64>load<u32>(a, 4) + <i64>load<u32>(b, 4),
    <i64>load<u32>(a, 8) + <i64>load<u32>(b, 8), <i64>load<u32>(a, 12) + <i64>load<u32>(b, 12),
    <i64>load<u32>(a, 16) + <i64>load<u32>(b, 16), <i64>load<u32>(a, 20) + <i64>load<u32>(b, 20),
    <i64>load<u32>(a, 24) + <i64>load<u32>(b, 24), <i64>load<u32>(a, 28) + <i64>load<u32>(b, 28),
    <i64>load<u32>(a, 32) + <i64>load<u32>(b, 32));
}

/** r = a − b  (computed as a + 4p − b, which is positive for weakly normalised b) */
export function fe_sub(r: usize, a: usize, b: usize): void {
  let q = FP_BIAS;
  carryStore(r,
    <i64>load<u32>(a, 0) - <i64>load<u32>(b, 0) + <i64>load<u32>(q, 0),
    <i64>load<u32>(a, 4) - <i64>load<u32>(b, 4) + <i64>load<u32>(q, 4),
    <i64>load<u32>(a, 8) - <i64>load<u32>(b, 8) + <i64>load<u32>(q, 8),
    <i64>load<u32>(a, 12) - <i64>load<u32>(b, 12) + <i64>load<u32>(q, 12),
    <i64>load<u32>(a, 16) - <i64>load<u32>(b, 16) + <i64>load<u32>(q, 16),
    <i64>load<u32>(a, 20) - <i64>load<u32>(b, 20) + <i64>load<u32>(q, 20),
    <i64>load<u32>(a, 24) - <i64>load<u32>(b, 24) + <i64>load<u32>(q, 24),
    <i64>load<u32>(a, 28) - <i64>load<u32>(b, 28) + <i64>load<u32>(q, 28),
    <i64>load<u32>(a, 32) - <i64>load<u32>(b, 32) + <i64>load<u32>(q, 32));
}

/** r = −a */
export function fe_neg(r: usize, a: usize): void {
  let q = FP_BIAS;
  carryStore(r,
    <i64>load<u32>(q, 0) - <i64>load<u32>(a, 0), <i64>load<u32>(q, 4) - <i64>load<u32>(a, 4),
    <i64>load<u32>(q, 8) - <i64>load<u32>(a, 8), <i64>load<u32>(q, 12) - <i64>load<u32>(a, 12),
    <i64>load<u32>(q, 16) - <i64>load<u32>(a, 16), <i64>load<u32>(q, 20) - <i64>load<u32>(a, 20),
    <i64>load<u32>(q, 24) - <i64>load<u32>(a, 24), <i64>load<u32>(q, 28) - <i64>load<u32>(a, 28),
    <i64>load<u32>(q, 32) - <i64>load<u32>(a, 32));
}

/** r = a · k for a small constant k ≤ 8 */
export function fe_mulInt(r: usize, a: usize, k: i64): void {
  carryStore(r,
    <i64>load<u32>(a, 0) * k, <i64>load<u32>(a, 4) * k, <i64>load<u32>(a, 8) * k,
    <i64>load<u32>(a, 12) * k, <i64>load<u32>(a, 16) * k, <i64>load<u32>(a, 20) * k,
    <i64>load<u32>(a, 24) * k, <i64>load<u32>(a, 28) * k, <i64>load<u32>(a, 32) * k);
}

export function fe_copy(r: usize, a: usize): void {
  copy40(r, a);
}

export function fe_setOne(r: usize): void {
  copy40(r, FP_ONE);
}

export function fe_setZero(r: usize): void {
  memory.fill(r, 0, FE);
}

/** r = the canonical representative (< p) of a's internal value (still Montgomery form for P-256). */
export function fe_normalize(r: usize, a: usize): void {
  // one more fold brings the value below 2^256 + 2^40 < 2p, then one conditional subtraction
  carryStore(r,
    <i64>load<u32>(a, 0), <i64>load<u32>(a, 4), <i64>load<u32>(a, 8), <i64>load<u32>(a, 12),
    <i64>load<u32>(a, 16), <i64>load<u32>(a, 20), <i64>load<u32>(a, 24), <i64>load<u32>(a, 28),
    <i64>load<u32>(a, 32));
  limbsCondSub(r, r, FP_P);
}

/** 1 if a ≡ 0 (mod p), else 0. Constant time. */
export function fe_isZero(a: usize): u32 {
  fe_normalize(T1, a);
  return limbsIsZero(T1);
}

/** 1 if a ≡ b (mod p), else 0. Constant time. */
export function fe_equal(a: usize, b: usize): u32 {
  fe_sub(T2, a, b);
  return fe_isZero(T2);
}

/** Parity (lowest bit) of the canonical value of a. */
export function fe_isOdd(a: usize): u32 {
  fe_fromMont(T1, a);
  return load<u32>(T1) & 1;
}

/** r = canonical plain value of a (leaves Montgomery form for P-256). */
export function fe_fromMont(r: usize, a: usize): void {
  if (IS_K1) fe_normalize(r, a);
  else {
    fe_mul(r, a, PLAIN_ONE);
    fe_normalize(r, r);
  }
}

/** 32 big-endian bytes → r. Returns 1 if the value is < p (canonical), 0 otherwise (r then unusable). */
export function fe_fromBytes(r: usize, p: usize): u32 {
  limbsFromBytes(r, p);
  let ok = limbsLess(r, FP_P);
  if (!IS_K1) fe_mul(r, r, FP_R2);
  return ok;
}

/** a → 32 big-endian bytes of its canonical value. */
export function fe_toBytes(p: usize, a: usize): void {
  fe_fromMont(T3, a);
  limbsToBytes(p, T3);
}

/** r = a^e for the public 32-byte big-endian exponent at e (fixed 4-bit windows; the sequence of
 *  operations depends only on e, never on a). */
export function fe_pow(r: usize, a: usize, e: usize): void {
  fe_setOne(POW_T);
  copy40(POW_T + FE, a);
  for (let i: usize = 2; i < 16; i++) fe_mul(POW_T + FE * i, POW_T + FE * (i - 1), a);
  let started = false;
  for (let i: usize = 0; i < 32; i++) {
    let byte = <usize>load<u8>(e + i);
    for (let h = 0; h < 2; h++) {
      let nib = h == 0 ? byte >> 4 : byte & 15;
      if (started) {
        fe_sqr(r, r);
        fe_sqr(r, r);
        fe_sqr(r, r);
        fe_sqr(r, r);
        if (nib != 0) fe_mul(r, r, POW_T + FE * nib);
      } else if (nib != 0) {
        copy40(r, POW_T + FE * nib);
        started = true;
      }
    }
  }
  if (!started) fe_setOne(r);
}

/** r = a⁻¹ (a⁻¹ of 0 is 0). Constant time (safegcd). */
export function fe_inv(r: usize, a: usize): void {
  fe_normalize(T1, a);
  modinv(r, T1, FP_P30, load<u32>(FP_PINV30));
  // Montgomery form: (aR)⁻¹ · R³ · R⁻¹ = a⁻¹R
  if (!IS_K1) fe_mul(r, r, FP_R3);
}

/** r = √a if it exists (both primes are 3 mod 4: a^((p+1)/4)); returns 1 if a is a square. */
export function fe_sqrt(r: usize, a: usize): u32 {
  fe_pow(r, a, FP_EXP_SQRT);
  fe_sqr(T2, r);
  fe_sub(T2, T2, a);
  return fe_isZero(T2);
}

/** r = x³ + a·x + b (the curve equation's right-hand side). */
export function fe_curveRhs(r: usize, x: usize): void {
  fe_sqr(T2, x);
  fe_mul(T2, T2, x);
  if (!IS_K1) {
    fe_mulInt(T3, x, 3);
    fe_sub(T2, T2, T3);
  }
  fe_add(r, T2, FP_B);
}
export function fe_mul_simd(r: usize, a: usize, b: usize): void {
  let A0 = v128.load32_splat(a + 0);
  let A1 = v128.load32_splat(a + 4);
  let A2 = v128.load32_splat(a + 8);
  let A3 = v128.load32_splat(a + 12);
  let A4 = v128.load32_splat(a + 16);
  let A5 = v128.load32_splat(a + 20);
  let A6 = v128.load32_splat(a + 24);
  let A7 = v128.load32_splat(a + 28);
  let A8 = v128.load32_splat(a + 32);
  let B0 = v128.load(b, 0);
  let B1 = v128.load(b, 4);
  let B2 = v128.load(b, 8);
  let B3 = v128.load(b, 12);
  let B4 = v128.load(b, 16);
  let B5 = v128.load(b, 20);
  let B6 = v128.load(b, 24);
  let B7 = v128.load(b, 28);
  let B8 = v128.load(b, 32);
  let Z = v128.shuffle<i32>(i32x4.splat(0), B0, 0, 4, 0, 0);
  let P0 = i64x2.add(i64x2.extmul_low_i32x4_u(A0, B0), i64x2.extmul_low_i32x4_u(A1, Z));
  let P2 = i64x2.add(i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A0, B2), i64x2.extmul_low_i32x4_u(A1, B1)), i64x2.extmul_low_i32x4_u(A2, B0)), i64x2.extmul_low_i32x4_u(A3, Z));
  let P4 = i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A0, B4), i64x2.extmul_low_i32x4_u(A1, B3)), i64x2.extmul_low_i32x4_u(A2, B2)), i64x2.extmul_low_i32x4_u(A3, B1)), i64x2.extmul_low_i32x4_u(A4, B0)), i64x2.extmul_low_i32x4_u(A5, Z));
  let P6 = i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A0, B6), i64x2.extmul_low_i32x4_u(A1, B5)), i64x2.extmul_low_i32x4_u(A2, B4)), i64x2.extmul_low_i32x4_u(A3, B3)), i64x2.extmul_low_i32x4_u(A4, B2)), i64x2.extmul_low_i32x4_u(A5, B1)), i64x2.extmul_low_i32x4_u(A6, B0)), i64x2.extmul_low_i32x4_u(A7, Z));
  let P8 = i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A0, B8), i64x2.extmul_low_i32x4_u(A1, B7)), i64x2.extmul_low_i32x4_u(A2, B6)), i64x2.extmul_low_i32x4_u(A3, B5)), i64x2.extmul_low_i32x4_u(A4, B4)), i64x2.extmul_low_i32x4_u(A5, B3)), i64x2.extmul_low_i32x4_u(A6, B2)), i64x2.extmul_low_i32x4_u(A7, B1)), i64x2.extmul_low_i32x4_u(A8, B0));
  let P10 = i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A2, B8), i64x2.extmul_low_i32x4_u(A3, B7)), i64x2.extmul_low_i32x4_u(A4, B6)), i64x2.extmul_low_i32x4_u(A5, B5)), i64x2.extmul_low_i32x4_u(A6, B4)), i64x2.extmul_low_i32x4_u(A7, B3)), i64x2.extmul_low_i32x4_u(A8, B2));
  let P12 = i64x2.add(i64x2.add(i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A4, B8), i64x2.extmul_low_i32x4_u(A5, B7)), i64x2.extmul_low_i32x4_u(A6, B6)), i64x2.extmul_low_i32x4_u(A7, B5)), i64x2.extmul_low_i32x4_u(A8, B4));
  let P14 = i64x2.add(i64x2.add(i64x2.extmul_low_i32x4_u(A6, B8), i64x2.extmul_low_i32x4_u(A7, B7)), i64x2.extmul_low_i32x4_u(A8, B6));
  let P16 = i64x2.extmul_low_i32x4_u(A8, B8);
  let c0 = i64x2.extract_lane(P0, 0);
  let c1 = i64x2.extract_lane(P0, 1);
  let c2 = i64x2.extract_lane(P2, 0);
  let c3 = i64x2.extract_lane(P2, 1);
  let c4 = i64x2.extract_lane(P4, 0);
  let c5 = i64x2.extract_lane(P4, 1);
  let c6 = i64x2.extract_lane(P6, 0);
  let c7 = i64x2.extract_lane(P6, 1);
  let c8 = i64x2.extract_lane(P8, 0);
  let c9 = i64x2.extract_lane(P8, 1);
  let c10 = i64x2.extract_lane(P10, 0);
  let c11 = i64x2.extract_lane(P10, 1);
  let c12 = i64x2.extract_lane(P12, 0);
  let c13 = i64x2.extract_lane(P12, 1);
  let c14 = i64x2.extract_lane(P14, 0);
  let c15 = i64x2.extract_lane(P14, 1);
  let c16 = i64x2.extract_lane(P16, 0);

  if (IS_K1) {
    let h = c9;
    let t9 = h & M;
    h = (h >> 29) + c10; let t10 = h & M;
    h = (h >> 29) + c11; let t11 = h & M;
    h = (h >> 29) + c12; let t12 = h & M;
    h = (h >> 29) + c13; let t13 = h & M;
    h = (h >> 29) + c14; let t14 = h & M;
    h = (h >> 29) + c15; let t15 = h & M;
    h = (h >> 29) + c16; let t16 = h & M;
    let t17 = h >> 29;
    c0 += t9 * 31264; c1 += t9 << 8;
    c1 += t10 * 31264; c2 += t10 << 8;
    c2 += t11 * 31264; c3 += t11 << 8;
    c3 += t12 * 31264; c4 += t12 << 8;
    c4 += t13 * 31264; c5 += t13 << 8;
    c5 += t14 * 31264; c6 += t14 << 8;
    c6 += t15 * 31264; c7 += t15 << 8;
    c7 += t16 * 31264; c8 += t16 << 8;
    c8 += t17 * 31264; c0 += (t17 << 8) * 31264; c1 += t17 << 16;
    carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  } else {
    let c17: i64 = 0; let m: i64;
    m = c0 & M; c1 += c0 >> 29; c3 += m << 9; c6 += m << 18; c7 -= m << 21; c8 += m << 24;
    m = c1 & M; c2 += c1 >> 29; c4 += m << 9; c7 += m << 18; c8 -= m << 21; c9 += m << 24;
    m = c2 & M; c3 += c2 >> 29; c5 += m << 9; c8 += m << 18; c9 -= m << 21; c10 += m << 24;
    m = c3 & M; c4 += c3 >> 29; c6 += m << 9; c9 += m << 18; c10 -= m << 21; c11 += m << 24;
    m = c4 & M; c5 += c4 >> 29; c7 += m << 9; c10 += m << 18; c11 -= m << 21; c12 += m << 24;
    m = c5 & M; c6 += c5 >> 29; c8 += m << 9; c11 += m << 18; c12 -= m << 21; c13 += m << 24;
    m = c6 & M; c7 += c6 >> 29; c9 += m << 9; c12 += m << 18; c13 -= m << 21; c14 += m << 24;
    m = c7 & M; c8 += c7 >> 29; c10 += m << 9; c13 += m << 18; c14 -= m << 21; c15 += m << 24;
    m = c8 & M; c9 += c8 >> 29; c11 += m << 9; c14 += m << 18; c15 -= m << 21; c16 += m << 24;
    carryStoreP256(r, c9, c10, c11, c12, c13, c14, c15, c16, c17);
  }
}

