// GENERATED from scripts/gen-arith/field.tpl by `npm run gen:arith`: edit the template, not this file.
// Field arithmetic modulo p of the curve cv (a constants block of curve.ts, first argument of every
// function that needs the curve), 9 x 29-bit limbs.
//
// Representation invariant ("weakly normalised"), kept by every function here: limbs
// non-negative and < 2^29 (on secp256k1 limbs 0..2 may exceed that by < 2^15 after the short
// final carry), limb 8 < 2^25, so the value is < 2^257 (< 4p for both primes) but not necessarily
// < p. Products of two such elements fit i64 columns without carry handling (at most
// 9·(2^29 + 2^15)^2 < 2^62); fe_normalize gives the canonical value. The reduction is the only
// curve-specific code:
//   secp256k1: plain form, 2^261 ≡ 2^37 + 31264 (mod p) folds the high columns;
//   P-256:     Montgomery form with R = 2^261; since p ≡ −1 (mod 2^96) the Montgomery
//              quotient digit is the low limb itself and m·p is four shifted adds.
// Everything in this file is constant time (no secret-dependent branch or index).
//
// (The unrolled column code was generated mechanically from the schoolbook definition.)
import { isK1, fpP, fpBias, fpOne, fpB, fpR2, fpR3, fpP30, fpPinv30 } from './curve';
import { modinv } from './modinv';
import { M, M24, FE, limbsFromBytes, limbsToBytes, limbsLess, limbsCondSub, limbsIsZero, copy40 } from './limbs';
import { S_FIELD } from './layout';
import { DEBUG, verifyFe, verifyFeNormal, verifyFeLazy } from './debug';

const POW_T: usize = S_FIELD; // 8 elements: addition-chain temporaries
const T1: usize = S_FIELD + 640;
const T2: usize = S_FIELD + 680;
const T3: usize = S_FIELD + 720;
const T4: usize = S_FIELD + 760; //  fe_mulThenSub / fe_mulThenAdd on P-256
const PLAIN_ONE: usize = memory.data<u32>([1, 0, 0, 0, 0, 0, 0, 0, 0, 0], 16);

// Carry helpers. "Light" outputs may leave limb 2 (secp256k1) a few bits above 2^29 — still far
// inside the column bounds of fe_mul/fe_sqr (9·(2^29 + 2^15)^2 < 2^62) and the value stays < 2^257;
// fe_normalize (via carryFull) is the only place that needs strict 29-bit limbs.

/** secp256k1: carry, fold the bits above 2^256 (2^256 ≡ 2^32 + 977), short carry. Input value ≥ 0. */
// @ts-ignore: decorator
@inline
function carryStoreK1(r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  let top = c8 >> 24;
  c8 &= M24;
  c0 += top * 977;
  c1 += top << 3;
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M;
  store<u32>(r, <u32>c0, 0); store<u32>(r, <u32>c1, 4); store<u32>(r, <u32>c2, 8);
  store<u32>(r, <u32>c3, 12); store<u32>(r, <u32>c4, 16); store<u32>(r, <u32>c5, 20);
  store<u32>(r, <u32>c6, 24); store<u32>(r, <u32>c7, 28); store<u32>(r, <u32>c8, 32);
}

/** P-256 Montgomery output (value < p + 2^253 < 2^257): one carry pass suffices. */
// @ts-ignore: decorator
@inline
function carryStoreMont(r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  store<u32>(r, <u32>c0, 0); store<u32>(r, <u32>c1, 4); store<u32>(r, <u32>c2, 8);
  store<u32>(r, <u32>c3, 12); store<u32>(r, <u32>c4, 16); store<u32>(r, <u32>c5, 20);
  store<u32>(r, <u32>c6, 24); store<u32>(r, <u32>c7, 28); store<u32>(r, <u32>c8, 32);
}

/** P-256: carry, fold (2^256 ≡ 2^224 − 2^192 − 2^96 + 1), carry. Strict output.
 *  Precondition: the value is ≥ 0 and < 2^262 (top < 64; the fused linear combinations reach
 *  2^261.2), which holds for every caller: the fold subtracts top·p, leaving a value < 2^257. */
// @ts-ignore: decorator
@inline
function carryStoreP256(r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  let top = c8 >> 24;
  c8 &= M24;
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

/** Strict weak normalisation for both curves (all limbs < 2^29, value < 2^256 + 2^40 for
 *  secp256k1, < 2^256 + 2^224 for P-256); input value ≥ 0 and < 2^260. */
function carryFull(cv: usize, r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  if (!isK1(cv)) {
    carryStoreP256(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
    return;
  }
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

// @ts-ignore: decorator
@inline
function carryStore(cv: usize, r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  if (isK1(cv)) carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  else carryStoreP256(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
}

/** r = a · b (r may alias a or b). Columns 0–7 two at a time with SIMD 32x32→64 multiplies, columns
 *  8–16 with scalar i64 ones (genhybrid.mjs: the two kinds use different execution ports). */
export function fe_mul(cv: usize, r: usize, a: usize, b: usize, lazyA: bool = false): void {
  if (DEBUG) {
    if (lazyA) verifyFeLazy(cv, a);
    else verifyFe(cv, a);
    verifyFe(cv, b);
  }
@@MULCOLS@@
  if (isK1(cv)) {
@@REDK1@@
  } else {
@@REDP256@@
  }
  if (DEBUG) verifyFe(cv, r);
}

/** r = a² (r may alias a). */
export function fe_sqr(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifyFe(cv, a);
@@SQRCOLS@@
  if (isK1(cv)) {
@@REDK1@@
  } else {
@@REDP256@@
  }
  if (DEBUG) verifyFe(cv, r);
}

// ---- products with the next linear step fused in ----
// r = k·(a·b) − kc·c − kd·d (or, with kc = −1, k·(a·b) + c): the small factor k scales the
// columns before the reduction, and the linear terms are added to the reduced columns before the
// final carry, so what would be a multiplication and one or two fe_add/fe_sub/fe_subMul calls (each
// with its own loads, carry pass, fold and stores) is one carry pass. Subtracted terms are biased
// by as many multiples of 4p (FP_BIAS) as they are subtracted, as in the linear combinations below.
// Column bounds: a weakly normalised product column is < 9·(2^29 + 2^15)^2 < 2^61.2, so k ≤ 3
// keeps it < 2^62.8 < 2^63, and the folds and Montgomery steps add < 2^54. The result before the
// final carry: secp256k1, any value ≥ 0 (carryStoreK1 folds whatever is above 2^256); P-256, the
// Montgomery output (< k·2^253 + p) plus at most 9·4p < 2^262 (carryStoreP256's precondition).

/** The linear terms of column o: bq·q − kc·c − kd·d, with bq = max(kc, 0) + kd multiples of the bias. */
// @ts-ignore: decorator
@inline
function linTerm(q: usize, c: usize, d: usize, o: usize, kc: i64, kd: i64): i64 {
  let bq: i64 = (kc > 0 ? kc : 0) + kd;
  let t: i64 = -kc * <i64>load<u32>(c + o);
  if (bq != 0) t += bq * <i64>load<u32>(q + o);
  if (kd != 0) t -= kd * <i64>load<u32>(d + o);
  return t;
}

// @ts-ignore: decorator
@inline
function linStoreK1(cv: usize, r: usize, kc: i64,
  c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);
}

// @ts-ignore: decorator
@inline
function linStoreP256(cv: usize, r: usize, kc: i64,
  c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  if (kc != 0) carryStoreP256(r, c0, c1, c2, c3, c4, c5, c6, c7, c8); // up to 2^261.2: carry, fold, carry
  else carryStoreMont(r, c0, c1, c2, c3, c4, c5, c6, c7, c8); //        < 3·2^253 + p < 2^257
}

/** r = k·(a·b) − kc·c − kd·d (kc = −1: + c; kc = 0: no terms, kd then 0). k and the sign of kc
 *  are compile-time constants at every use, so each wrapper below is its own straight-line code. */
// @ts-ignore: decorator
@inline
function mulLin(cv: usize, r: usize, a: usize, b: usize, k: i64, c: usize, kc: i64, d: usize, kd: i64): void {
@@MULCOLS@@
  if (k != 1) {
    c0 *= k; c1 *= k; c2 *= k; c3 *= k; c4 *= k; c5 *= k; c6 *= k; c7 *= k; c8 *= k;
    c9 *= k; c10 *= k; c11 *= k; c12 *= k; c13 *= k; c14 *= k; c15 *= k; c16 *= k;
  }
  if (isK1(cv)) {
@@REDK1LIN@@
  } else {
@@REDP256LIN@@
  }
}

/** r = k·a² − kc·c − kd·d, as mulLin. */
// @ts-ignore: decorator
@inline
function sqrLin(cv: usize, r: usize, a: usize, k: i64, c: usize, kc: i64, d: usize, kd: i64): void {
@@SQRCOLS@@
  if (k != 1) {
    c0 *= k; c1 *= k; c2 *= k; c3 *= k; c4 *= k; c5 *= k; c6 *= k; c7 *= k; c8 *= k;
    c9 *= k; c10 *= k; c11 *= k; c12 *= k; c13 *= k; c14 *= k; c15 *= k; c16 *= k;
  }
  if (isK1(cv)) {
@@REDK1LIN@@
  } else {
@@REDP256LIN@@
  }
}

/** r = a·b − k·c for a small constant k ≤ 8 (r may alias any input). Fused on secp256k1 only: on
 *  P-256 the fused form (Montgomery steps, then carry, fold and carry with the terms) measured
 *  no faster than fe_mul and fe_subMul in turn, so it is those two there. */
export function fe_mulThenSub(cv: usize, r: usize, a: usize, b: usize, c: usize, k: i64, lazyA: bool = false): void {
  if (DEBUG) {
    if (lazyA) verifyFeLazy(cv, a);
    else verifyFe(cv, a);
    verifyFe(cv, b);
    verifyFe(cv, c);
    assert(k >= 1 && k <= 8, 'fe_mulThenSub: k out of [1, 8]');
  }
  if (isK1(cv)) mulLin(cv, r, a, b, 1, c, k, 0, 0);
  else {
    fe_mul(cv, T4, a, b, lazyA);
    fe_subMul(cv, r, T4, c, k);
  }
  if (DEBUG) verifyFe(cv, r);
}

/** r = a·b + c (r may alias any input). Fused on secp256k1 only, as fe_mulThenSub. */
export function fe_mulThenAdd(cv: usize, r: usize, a: usize, b: usize, c: usize): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    verifyFe(cv, c);
  }
  if (isK1(cv)) mulLin(cv, r, a, b, 1, c, -1, 0, 0);
  else {
    fe_mul(cv, T4, a, b);
    fe_add(cv, r, T4, c);
  }
  if (DEBUG) verifyFe(cv, r);
}

/** r = 2·a·b (r may alias a or b). */
export function fe_mulTwice(cv: usize, r: usize, a: usize, b: usize): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
  }
  mulLin(cv, r, a, b, 2, 0, 0, 0, 0);
  if (DEBUG) verifyFe(cv, r);
}

/** r = a² − k·c for a small constant k ≤ 8 (r may alias any input). */
export function fe_sqrThenSub(cv: usize, r: usize, a: usize, c: usize, k: i64): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, c);
    assert(k >= 1 && k <= 8, 'fe_sqrThenSub: k out of [1, 8]');
  }
  sqrLin(cv, r, a, 1, c, k, 0, 0);
  if (DEBUG) verifyFe(cv, r);
}

/** r = a² − b − 2·c (r may alias any input): X3 of the mixed addition. */
export function fe_sqrThenSubSub2(cv: usize, r: usize, a: usize, b: usize, c: usize): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    verifyFe(cv, c);
  }
  sqrLin(cv, r, a, 1, b, 1, c, 2);
  if (DEBUG) verifyFe(cv, r);
}

/** r = 3·a² (r may alias a). */
export function fe_sqrThrice(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifyFe(cv, a);
  sqrLin(cv, r, a, 3, 0, 0, 0, 0);
  if (DEBUG) verifyFe(cv, r);
}

/** r = a^(2^n) for n ≥ 1 (r may alias a): n squarings with the limbs kept in locals from one to
 *  the next (the carry of each feeds the columns of the next without a store, a load or a call);
 *  the square roots' addition chains are mostly runs of these. */
export function fe_sqrN(cv: usize, r: usize, a: usize, n: i32): void {
  if (DEBUG) {
    verifyFe(cv, a);
    assert(n >= 1, 'fe_sqrN: n < 1');
  }
  let a0 = <i64>load<u32>(a, 0);
  let a1 = <i64>load<u32>(a, 4);
  let a2 = <i64>load<u32>(a, 8);
  let a3 = <i64>load<u32>(a, 12);
  let a4 = <i64>load<u32>(a, 16);
  let a5 = <i64>load<u32>(a, 20);
  let a6 = <i64>load<u32>(a, 24);
  let a7 = <i64>load<u32>(a, 28);
  let a8 = <i64>load<u32>(a, 32);
  let k1 = isK1(cv);
  for (let i = 0; i < n; i++) {
@@SQRCOLSREG@@
    if (k1) {
@@REDK1REG@@
    } else {
@@REDP256REG@@
    }
  }
  store<u32>(r, <u32>a0, 0); store<u32>(r, <u32>a1, 4); store<u32>(r, <u32>a2, 8);
  store<u32>(r, <u32>a3, 12); store<u32>(r, <u32>a4, 16); store<u32>(r, <u32>a5, 20);
  store<u32>(r, <u32>a6, 24); store<u32>(r, <u32>a7, 28); store<u32>(r, <u32>a8, 32);
  if (DEBUG) verifyFe(cv, r);
}

/** r = a + b */
export function fe_add(cv: usize, r: usize, a: usize, b: usize): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
  }
  carryStore(cv, r,
    <i64>load<u32>(a, 0) + <i64>load<u32>(b, 0), <i64>load<u32>(a, 4) + <i64>load<u32>(b, 4),
    <i64>load<u32>(a, 8) + <i64>load<u32>(b, 8), <i64>load<u32>(a, 12) + <i64>load<u32>(b, 12),
    <i64>load<u32>(a, 16) + <i64>load<u32>(b, 16), <i64>load<u32>(a, 20) + <i64>load<u32>(b, 20),
    <i64>load<u32>(a, 24) + <i64>load<u32>(b, 24), <i64>load<u32>(a, 28) + <i64>load<u32>(b, 28),
    <i64>load<u32>(a, 32) + <i64>load<u32>(b, 32));
  if (DEBUG) verifyFe(cv, r);
}

/** r = a − b  (computed as a + 4p − b, which is positive for weakly normalised b) */
export function fe_sub(cv: usize, r: usize, a: usize, b: usize): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
  }
  let q = fpBias(cv);
  carryStore(cv, r,
    <i64>load<u32>(a, 0) - <i64>load<u32>(b, 0) + <i64>load<u32>(q, 0),
    <i64>load<u32>(a, 4) - <i64>load<u32>(b, 4) + <i64>load<u32>(q, 4),
    <i64>load<u32>(a, 8) - <i64>load<u32>(b, 8) + <i64>load<u32>(q, 8),
    <i64>load<u32>(a, 12) - <i64>load<u32>(b, 12) + <i64>load<u32>(q, 12),
    <i64>load<u32>(a, 16) - <i64>load<u32>(b, 16) + <i64>load<u32>(q, 16),
    <i64>load<u32>(a, 20) - <i64>load<u32>(b, 20) + <i64>load<u32>(q, 20),
    <i64>load<u32>(a, 24) - <i64>load<u32>(b, 24) + <i64>load<u32>(q, 24),
    <i64>load<u32>(a, 28) - <i64>load<u32>(b, 28) + <i64>load<u32>(q, 28),
    <i64>load<u32>(a, 32) - <i64>load<u32>(b, 32) + <i64>load<u32>(q, 32));
  if (DEBUG) verifyFe(cv, r);
}

/** r = −a */
export function fe_neg(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifyFe(cv, a);
  let q = fpBias(cv);
  carryStore(cv, r,
    <i64>load<u32>(q, 0) - <i64>load<u32>(a, 0), <i64>load<u32>(q, 4) - <i64>load<u32>(a, 4),
    <i64>load<u32>(q, 8) - <i64>load<u32>(a, 8), <i64>load<u32>(q, 12) - <i64>load<u32>(a, 12),
    <i64>load<u32>(q, 16) - <i64>load<u32>(a, 16), <i64>load<u32>(q, 20) - <i64>load<u32>(a, 20),
    <i64>load<u32>(q, 24) - <i64>load<u32>(a, 24), <i64>load<u32>(q, 28) - <i64>load<u32>(a, 28),
    <i64>load<u32>(q, 32) - <i64>load<u32>(a, 32));
  if (DEBUG) verifyFe(cv, r);
}

/** r = a · k for a small constant k ≤ 8 */
export function fe_mulInt(cv: usize, r: usize, a: usize, k: i64): void {
  if (DEBUG) {
    verifyFe(cv, a);
    assert(k >= 0 && k <= 8, 'fe_mulInt: k out of [0, 8]');
  }
  carryStore(cv, r,
    <i64>load<u32>(a, 0) * k, <i64>load<u32>(a, 4) * k, <i64>load<u32>(a, 8) * k,
    <i64>load<u32>(a, 12) * k, <i64>load<u32>(a, 16) * k, <i64>load<u32>(a, 20) * k,
    <i64>load<u32>(a, 24) * k, <i64>load<u32>(a, 28) * k, <i64>load<u32>(a, 32) * k);
  if (DEBUG) verifyFe(cv, r);
}

// Fused linear combinations: one carry pass (and one fold) for what would otherwise be two or three
// operations, each with its own. Subtracted terms are biased by as many multiples of 4p (FP_BIAS)
// as they are subtracted, so the total stays ≥ 0 (individual columns may go negative; the carry
// pass's arithmetic shifts propagate the borrows). The total stays < 2^262, inside what the
// carry-and-fold of both reductions handles (top bits < 64) while giving weakly normalised output.

/** r = a − k·b for a small constant k ≤ 8 (r may alias a or b). */
export function fe_subMul(cv: usize, r: usize, a: usize, b: usize, k: i64): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    assert(k >= 1 && k <= 8, 'fe_subMul: k out of [1, 8]');
  }
  let q = fpBias(cv);
  carryStore(cv, r,
    <i64>load<u32>(a, 0) + k * (<i64>load<u32>(q, 0) - <i64>load<u32>(b, 0)),
    <i64>load<u32>(a, 4) + k * (<i64>load<u32>(q, 4) - <i64>load<u32>(b, 4)),
    <i64>load<u32>(a, 8) + k * (<i64>load<u32>(q, 8) - <i64>load<u32>(b, 8)),
    <i64>load<u32>(a, 12) + k * (<i64>load<u32>(q, 12) - <i64>load<u32>(b, 12)),
    <i64>load<u32>(a, 16) + k * (<i64>load<u32>(q, 16) - <i64>load<u32>(b, 16)),
    <i64>load<u32>(a, 20) + k * (<i64>load<u32>(q, 20) - <i64>load<u32>(b, 20)),
    <i64>load<u32>(a, 24) + k * (<i64>load<u32>(q, 24) - <i64>load<u32>(b, 24)),
    <i64>load<u32>(a, 28) + k * (<i64>load<u32>(q, 28) - <i64>load<u32>(b, 28)),
    <i64>load<u32>(a, 32) + k * (<i64>load<u32>(q, 32) - <i64>load<u32>(b, 32)));
  if (DEBUG) verifyFe(cv, r);
}

/** r = k·a − b for a small constant k ≤ 8 (r may alias a or b). */
export function fe_mulSub(cv: usize, r: usize, k: i64, a: usize, b: usize): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    assert(k >= 1 && k <= 8, 'fe_mulSub: k out of [1, 8]');
  }
  let q = fpBias(cv);
  carryStore(cv, r,
    k * <i64>load<u32>(a, 0) - <i64>load<u32>(b, 0) + <i64>load<u32>(q, 0),
    k * <i64>load<u32>(a, 4) - <i64>load<u32>(b, 4) + <i64>load<u32>(q, 4),
    k * <i64>load<u32>(a, 8) - <i64>load<u32>(b, 8) + <i64>load<u32>(q, 8),
    k * <i64>load<u32>(a, 12) - <i64>load<u32>(b, 12) + <i64>load<u32>(q, 12),
    k * <i64>load<u32>(a, 16) - <i64>load<u32>(b, 16) + <i64>load<u32>(q, 16),
    k * <i64>load<u32>(a, 20) - <i64>load<u32>(b, 20) + <i64>load<u32>(q, 20),
    k * <i64>load<u32>(a, 24) - <i64>load<u32>(b, 24) + <i64>load<u32>(q, 24),
    k * <i64>load<u32>(a, 28) - <i64>load<u32>(b, 28) + <i64>load<u32>(q, 28),
    k * <i64>load<u32>(a, 32) - <i64>load<u32>(b, 32) + <i64>load<u32>(q, 32));
  if (DEBUG) verifyFe(cv, r);
}

/** r = k·(a + b) for a small constant k ≤ 4 (r may alias a or b). */
export function fe_addMul(cv: usize, r: usize, a: usize, b: usize, k: i64): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    assert(k >= 1 && k <= 4, 'fe_addMul: k out of [1, 4]');
  }
  carryStore(cv, r,
    k * (<i64>load<u32>(a, 0) + <i64>load<u32>(b, 0)), k * (<i64>load<u32>(a, 4) + <i64>load<u32>(b, 4)),
    k * (<i64>load<u32>(a, 8) + <i64>load<u32>(b, 8)), k * (<i64>load<u32>(a, 12) + <i64>load<u32>(b, 12)),
    k * (<i64>load<u32>(a, 16) + <i64>load<u32>(b, 16)), k * (<i64>load<u32>(a, 20) + <i64>load<u32>(b, 20)),
    k * (<i64>load<u32>(a, 24) + <i64>load<u32>(b, 24)), k * (<i64>load<u32>(a, 28) + <i64>load<u32>(b, 28)),
    k * (<i64>load<u32>(a, 32) + <i64>load<u32>(b, 32)));
  if (DEBUG) verifyFe(cv, r);
}

/** r = a − b − k·c for a small constant k ≤ 4 (r may alias any input). */
export function fe_subSubMul(cv: usize, r: usize, a: usize, b: usize, c: usize, k: i64): void {
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    verifyFe(cv, c);
    assert(k >= 1 && k <= 4, 'fe_subSubMul: k out of [1, 4]');
  }
  let q = fpBias(cv);
  let kq = k + 1;
  carryStore(cv, r,
    <i64>load<u32>(a, 0) - <i64>load<u32>(b, 0) + kq * <i64>load<u32>(q, 0) - k * <i64>load<u32>(c, 0),
    <i64>load<u32>(a, 4) - <i64>load<u32>(b, 4) + kq * <i64>load<u32>(q, 4) - k * <i64>load<u32>(c, 4),
    <i64>load<u32>(a, 8) - <i64>load<u32>(b, 8) + kq * <i64>load<u32>(q, 8) - k * <i64>load<u32>(c, 8),
    <i64>load<u32>(a, 12) - <i64>load<u32>(b, 12) + kq * <i64>load<u32>(q, 12) - k * <i64>load<u32>(c, 12),
    <i64>load<u32>(a, 16) - <i64>load<u32>(b, 16) + kq * <i64>load<u32>(q, 16) - k * <i64>load<u32>(c, 16),
    <i64>load<u32>(a, 20) - <i64>load<u32>(b, 20) + kq * <i64>load<u32>(q, 20) - k * <i64>load<u32>(c, 20),
    <i64>load<u32>(a, 24) - <i64>load<u32>(b, 24) + kq * <i64>load<u32>(q, 24) - k * <i64>load<u32>(c, 24),
    <i64>load<u32>(a, 28) - <i64>load<u32>(b, 28) + kq * <i64>load<u32>(q, 28) - k * <i64>load<u32>(c, 28),
    <i64>load<u32>(a, 32) - <i64>load<u32>(b, 32) + kq * <i64>load<u32>(q, 32) - k * <i64>load<u32>(c, 32));
  if (DEBUG) verifyFe(cv, r);
}

// ---- a difference left unreduced for the one product that reads it ----
// a − b + Q, Q a representation of 4p whose limbs 0..7 lie in [2^29 + 2^15, 2^30 + 2^15) and whose
// limb 8 is 2^26 − 2 (4p minus Σ_{i<8} (2^29 + 2^15)·2^(29i), cut into 29-bit limbs, plus that offset
// back on limbs 0..7; the debug build checks the sum is 4p). Every limb of a − b + Q is then ≥ 0
// with no borrow (Q_i ≥ 2^29 + 2^15 > b_i, Q_8 > 2^25 > b_8) and no carry pass is needed: limbs
// 0..7 < 2^29 + 2^15 + 2^30 + 2^15 < 2^30.59, limb 8 < 2^25 + 2^26, value < 2^257 + 4p < 2^258.6.
// Such a "lazy" element is valid only as the operand a of fe_mul(…, lazyA = true) or of
// fe_mulThenSub(…, lazyA = true) (products of scale 1), never of anything else: product columns stay
// < 9·2^30.59·(2^29 + 2^15) < 2^62.76 (the secp256k1 fold and linear terms add < 2^51,
// P-256's Montgomery steps < 2^56, still < 2^63), and the P-256 Montgomery output stays
// < 2^258.6·2^257/2^261 + p < 2^257, so carryStoreMont's single pass still suffices. This is the
// whole of the lazy reduction the 9 × 29-bit limbs allow: a column holds 9 products in 63 bits,
// ~3 bits above two 29-bit limbs, so one operand may carry one unreduced addition, not more.
const FP_LAZY_K1: usize = memory.data<u32>([
  0x3ffff0bc, 0x3fffffde, 0x3ffffffe, 0x3ffffffe, 0x3ffffffe, 0x3ffffffe, 0x3ffffffe, 0x3ffffffe, 0x3fffffe, 0,
], 16);
const FP_LAZY_P256: usize = memory.data<u32>([
  0x3ffffffc, 0x3ffffffe, 0x3ffffffe, 0x400007fe, 0x3ffffffe, 0x3ffffffe, 0x200ffffe, 0x3f7fffff, 0x3fffffe, 0,
], 16);

/** r = a − b + 4p limb by limb, not carried (a "lazy" element: see above; only for the operand a
 *  of fe_mul or fe_mulThenSub with lazyA = true). Constant time. r may alias a or b. */
export function fe_subLazy(cv: usize, r: usize, a: usize, b: usize): void {
  let q = isK1(cv) ? FP_LAZY_K1 : FP_LAZY_P256;
  if (DEBUG) {
    verifyFe(cv, a);
    verifyFe(cv, b);
    // Q is 4p: carry it into 29-bit limbs and compare with FP_BIAS
    let c: u64 = 0;
    for (let i: usize = 0; i < 9; i++) {
      c += <u64>load<u32>(q + 4 * i);
      assert(<u32>(c & <u64>M) == load<u32>(fpBias(cv) + 4 * i), 'fe_subLazy: the lazy bias is not 4p');
      c >>= 29;
    }
  }
  store<u32>(r, load<u32>(a, 0) - load<u32>(b, 0) + load<u32>(q, 0), 0);
  store<u32>(r, load<u32>(a, 4) - load<u32>(b, 4) + load<u32>(q, 4), 4);
  store<u32>(r, load<u32>(a, 8) - load<u32>(b, 8) + load<u32>(q, 8), 8);
  store<u32>(r, load<u32>(a, 12) - load<u32>(b, 12) + load<u32>(q, 12), 12);
  store<u32>(r, load<u32>(a, 16) - load<u32>(b, 16) + load<u32>(q, 16), 16);
  store<u32>(r, load<u32>(a, 20) - load<u32>(b, 20) + load<u32>(q, 20), 20);
  store<u32>(r, load<u32>(a, 24) - load<u32>(b, 24) + load<u32>(q, 24), 24);
  store<u32>(r, load<u32>(a, 28) - load<u32>(b, 28) + load<u32>(q, 28), 28);
  store<u32>(r, load<u32>(a, 32) - load<u32>(b, 32) + load<u32>(q, 32), 32);
  if (DEBUG) verifyFeLazy(cv, r);
}

export function fe_copy(r: usize, a: usize): void {
  copy40(r, a);
}

export function fe_setOne(cv: usize, r: usize): void {
  copy40(r, fpOne(cv));
}

export function fe_setZero(r: usize): void {
  memory.fill(r, 0, FE);
}

/** r = the canonical representative (< p) of a's internal value (still Montgomery form for P-256). */
export function fe_normalize(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifyFe(cv, a);
  // one more fold brings the value below 2^256 + 2^40 (< 2p), then one conditional subtraction
  carryFull(cv, r,
    <i64>load<u32>(a, 0), <i64>load<u32>(a, 4), <i64>load<u32>(a, 8), <i64>load<u32>(a, 12),
    <i64>load<u32>(a, 16), <i64>load<u32>(a, 20), <i64>load<u32>(a, 24), <i64>load<u32>(a, 28),
    <i64>load<u32>(a, 32));
  limbsCondSub(r, r, fpP(cv));
  if (DEBUG) verifyFeNormal(cv, r);
}

/** 1 if a ≡ 0 (mod p), else 0. Constant time. */
export function fe_isZero(cv: usize, a: usize): u32 {
  fe_normalize(cv, T1, a);
  return limbsIsZero(T1);
}

/** 1 if a ≡ 0 (mod p), else 0. Variable time in a (public values only): a weakly normalised a is
 *  < 4p, so a ≡ 0 only if a ∈ {0, p, 2p, 3p}, and its low 29 bits (limb 0 mod 2^29: every other
 *  limb counts multiples of 2^29) must then be those of one of them; almost every nonzero a is
 *  told apart by that alone, without fe_normalize. */
export function fe_isZero_var(cv: usize, a: usize): u32 {
  let l = load<u32>(a) & <u32>M;
  let pl = load<u32>(fpP(cv)); //  p mod 2^29
  if (l != 0 && l != pl && l != ((pl << 1) & <u32>M) && l != ((pl * 3) & <u32>M)) return 0;
  return fe_isZero(cv, a);
}

/** 1 if a ≡ b (mod p), else 0. Constant time. */
export function fe_equal(cv: usize, a: usize, b: usize): u32 {
  fe_sub(cv, T2, a, b);
  return fe_isZero(cv, T2);
}

/** Parity (lowest bit) of the canonical value of a. */
export function fe_isOdd(cv: usize, a: usize): u32 {
  fe_fromMont(cv, T1, a);
  return load<u32>(T1) & 1;
}

/** r = canonical plain value of a (leaves Montgomery form for P-256). */
export function fe_fromMont(cv: usize, r: usize, a: usize): void {
  if (isK1(cv)) fe_normalize(cv, r, a);
  else {
    fe_mul(cv, r, a, PLAIN_ONE);
    fe_normalize(cv, r, r);
  }
}

/** 32 big-endian bytes → r. Returns 1 if the value is < p (canonical), 0 otherwise (r then unusable). */
export function fe_fromBytes(cv: usize, r: usize, p: usize): u32 {
  limbsFromBytes(r, p);
  let ok = limbsLess(r, fpP(cv));
  if (!isK1(cv)) fe_mul(cv, r, r, fpR2(cv));
  return ok;
}

/** a → 32 big-endian bytes of its canonical value. */
export function fe_toBytes(cv: usize, p: usize, a: usize): void {
  fe_fromMont(cv, T3, a);
  limbsToBytes(p, T3);
}

/** r = a⁻¹ (a⁻¹ of 0 is 0). Constant time (safegcd). */
export function fe_inv(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifyFe(cv, a);
  fe_normalize(cv, T1, a);
  modinv(r, T1, fpP30(cv), load<u32>(fpPinv30(cv)));
  // Montgomery form: (aR)⁻¹ · R³ · R⁻¹ = a⁻¹R
  if (!isK1(cv)) fe_mul(cv, r, r, fpR3(cv));
  if (DEBUG) verifyFe(cv, r);
}

/** r = a^(2^n) · m */
function sqrMul(cv: usize, r: usize, a: usize, n: i32, m: usize): void {
  fe_sqrN(cv, r, a, n);
  fe_mul(cv, r, r, m);
}

/** r = √a if it exists, via a^((p+1)/4) (both primes are 3 mod 4) with a per-prime addition
 *  chain; returns 1 if a is a square. r must not alias a. */
export function fe_sqrt(cv: usize, r: usize, a: usize): u32 {
  let x2 = POW_T, x3 = POW_T + FE, x6 = POW_T + 2 * FE, x9 = POW_T + 3 * FE, x11 = POW_T + 4 * FE;
  let x22 = POW_T + 5 * FE, x44 = POW_T + 6 * FE, t = POW_T + 7 * FE;
  if (isK1(cv)) {
    // (p+1)/4 = 2^254 − 2^30 − 244: 253 squarings, 13 multiplications
    sqrMul(cv, x2, a, 1, a);
    sqrMul(cv, x3, x2, 1, a);
    sqrMul(cv, x6, x3, 3, x3);
    sqrMul(cv, x9, x6, 3, x3);
    sqrMul(cv, x11, x9, 2, x2);
    sqrMul(cv, x22, x11, 11, x11);
    sqrMul(cv, x44, x22, 22, x22);
    sqrMul(cv, t, x44, 44, x44); //   x88
    sqrMul(cv, x6, t, 88, t); //      x176
    sqrMul(cv, t, x6, 44, x44); //    x220
    sqrMul(cv, x6, t, 3, x3); //      x223
    sqrMul(cv, t, x6, 23, x22);
    sqrMul(cv, t, t, 6, x2);
    fe_sqrN(cv, r, t, 2);
  } else {
    // (p+1)/4 = (2^32 − 1)·2^222 + 2^190 + 2^94: 253 squarings, 7 multiplications
    sqrMul(cv, x2, a, 1, a); //        2^2 − 1
    sqrMul(cv, x3, x2, 2, x2); //      2^4 − 1
    sqrMul(cv, x6, x3, 4, x3); //      2^8 − 1
    sqrMul(cv, x9, x6, 8, x6); //      2^16 − 1
    sqrMul(cv, t, x9, 16, x9); //      2^32 − 1
    sqrMul(cv, t, t, 32, a);
    sqrMul(cv, t, t, 96, a);
    fe_sqrN(cv, r, t, 94);
  }
  fe_sqr(cv, T2, r);
  fe_sub(cv, T2, T2, a);
  return fe_isZero(cv, T2);
}

/** r = x³ + a·x + b (the curve equation's right-hand side). */
export function fe_curveRhs(cv: usize, r: usize, x: usize): void {
  fe_sqr(cv, T2, x);
  fe_mul(cv, T2, T2, x);
  if (!isK1(cv)) {
    fe_mulInt(cv, T3, x, 3);
    fe_sub(cv, T2, T2, T3);
  }
  fe_add(cv, r, T2, fpB(cv));
}
