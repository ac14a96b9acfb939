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
  let A0 = v128.load32_splat(a + 0);
  let A1 = v128.load32_splat(a + 4);
  let A2 = v128.load32_splat(a + 8);
  let A3 = v128.load32_splat(a + 12);
  let A4 = v128.load32_splat(a + 16);
  let A5 = v128.load32_splat(a + 20);
  let A6 = v128.load32_splat(a + 24);
  let A7 = v128.load32_splat(a + 28);
  let B0 = v128.load(b, 0);
  let B1 = v128.load(b, 4);
  let B2 = v128.load(b, 8);
  let B3 = v128.load(b, 12);
  let B4 = v128.load(b, 16);
  let B5 = v128.load(b, 20);
  let B6 = v128.load(b, 24);
  let Z = v128.shuffle<i32>(i32x4.splat(0), B0, 0, 4, 0, 0);
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
  let P0 = i64x2.extmul_low_i32x4_u(A0, B0);
  P0 = i64x2.add(P0, i64x2.extmul_low_i32x4_u(A1, Z));
  let P2 = i64x2.extmul_low_i32x4_u(A0, B2);
  P2 = i64x2.add(P2, i64x2.extmul_low_i32x4_u(A1, B1));
  P2 = i64x2.add(P2, i64x2.extmul_low_i32x4_u(A2, B0));
  P2 = i64x2.add(P2, i64x2.extmul_low_i32x4_u(A3, Z));
  let P4 = i64x2.extmul_low_i32x4_u(A0, B4);
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A1, B3));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A2, B2));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A3, B1));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A4, B0));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A5, Z));
  let P6 = i64x2.extmul_low_i32x4_u(A0, B6);
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A1, B5));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A2, B4));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A3, B3));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A4, B2));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A5, B1));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A6, B0));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A7, Z));
  let c0 = i64x2.extract_lane(P0, 0);
  let c1 = i64x2.extract_lane(P0, 1);
  let c2 = i64x2.extract_lane(P2, 0);
  let c3 = i64x2.extract_lane(P2, 1);
  let c4 = i64x2.extract_lane(P4, 0);
  let c5 = i64x2.extract_lane(P4, 1);
  let c6 = i64x2.extract_lane(P6, 0);
  let c7 = i64x2.extract_lane(P6, 1);
  let c8 = a0 * b8 + a1 * b7 + a2 * b6 + a3 * b5 + a4 * b4 + a5 * b3 + a6 * b2 + a7 * b1 + a8 * b0;
  let c9 = a1 * b8 + a2 * b7 + a3 * b6 + a4 * b5 + a5 * b4 + a6 * b3 + a7 * b2 + a8 * b1;
  let c10 = a2 * b8 + a3 * b7 + a4 * b6 + a5 * b5 + a6 * b4 + a7 * b3 + a8 * b2;
  let c11 = a3 * b8 + a4 * b7 + a5 * b6 + a6 * b5 + a7 * b4 + a8 * b3;
  let c12 = a4 * b8 + a5 * b7 + a6 * b6 + a7 * b5 + a8 * b4;
  let c13 = a5 * b8 + a6 * b7 + a7 * b6 + a8 * b5;
  let c14 = a6 * b8 + a7 * b7 + a8 * b6;
  let c15 = a7 * b8 + a8 * b7;
  let c16 = a8 * b8;
  if (isK1(cv)) {
    let l9 = c9 & M; let h9 = c9 >> 29;
    let l10 = c10 & M; let h10 = c10 >> 29;
    let l11 = c11 & M; let h11 = c11 >> 29;
    let l12 = c12 & M; let h12 = c12 >> 29;
    let l13 = c13 & M; let h13 = c13 >> 29;
    let l14 = c14 & M; let h14 = c14 >> 29;
    let l15 = c15 & M; let h15 = c15 >> 29;
    let l16 = c16 & M; let h16 = c16 >> 29;
    let m0 = l9;
    let m1 = l10 + h9;
    let m2 = l11 + h10;
    let m3 = l12 + h11;
    let m4 = l13 + h12;
    let m5 = l14 + h13;
    let m6 = l15 + h14;
    let m7 = l16 + h15;
    let m8 = h16;
    c0 += m0 * 31264; c1 += m0 << 8;
    c1 += m1 * 31264; c2 += m1 << 8;
    c2 += m2 * 31264; c3 += m2 << 8;
    c3 += m3 * 31264; c4 += m3 << 8;
    c4 += m4 * 31264; c5 += m4 << 8;
    c5 += m5 * 31264; c6 += m5 << 8;
    c6 += m6 * 31264; c7 += m6 << 8;
    c7 += m7 * 31264; c8 += m7 << 8;
    c8 += m8 * 31264;
    c0 += (m8 << 8) * 31264; c1 += m8 << 16;
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
    carryStoreMont(r, c9, c10, c11, c12, c13, c14, c15, c16, c17);
  }
  if (DEBUG) verifyFe(cv, r);
}

/** r = a² (r may alias a). */
export function fe_sqr(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifyFe(cv, a);
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
  if (isK1(cv)) {
    let l9 = c9 & M; let h9 = c9 >> 29;
    let l10 = c10 & M; let h10 = c10 >> 29;
    let l11 = c11 & M; let h11 = c11 >> 29;
    let l12 = c12 & M; let h12 = c12 >> 29;
    let l13 = c13 & M; let h13 = c13 >> 29;
    let l14 = c14 & M; let h14 = c14 >> 29;
    let l15 = c15 & M; let h15 = c15 >> 29;
    let l16 = c16 & M; let h16 = c16 >> 29;
    let m0 = l9;
    let m1 = l10 + h9;
    let m2 = l11 + h10;
    let m3 = l12 + h11;
    let m4 = l13 + h12;
    let m5 = l14 + h13;
    let m6 = l15 + h14;
    let m7 = l16 + h15;
    let m8 = h16;
    c0 += m0 * 31264; c1 += m0 << 8;
    c1 += m1 * 31264; c2 += m1 << 8;
    c2 += m2 * 31264; c3 += m2 << 8;
    c3 += m3 * 31264; c4 += m3 << 8;
    c4 += m4 * 31264; c5 += m4 << 8;
    c5 += m5 * 31264; c6 += m5 << 8;
    c6 += m6 * 31264; c7 += m6 << 8;
    c7 += m7 * 31264; c8 += m7 << 8;
    c8 += m8 * 31264;
    c0 += (m8 << 8) * 31264; c1 += m8 << 16;
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
    carryStoreMont(r, c9, c10, c11, c12, c13, c14, c15, c16, c17);
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
  let A0 = v128.load32_splat(a + 0);
  let A1 = v128.load32_splat(a + 4);
  let A2 = v128.load32_splat(a + 8);
  let A3 = v128.load32_splat(a + 12);
  let A4 = v128.load32_splat(a + 16);
  let A5 = v128.load32_splat(a + 20);
  let A6 = v128.load32_splat(a + 24);
  let A7 = v128.load32_splat(a + 28);
  let B0 = v128.load(b, 0);
  let B1 = v128.load(b, 4);
  let B2 = v128.load(b, 8);
  let B3 = v128.load(b, 12);
  let B4 = v128.load(b, 16);
  let B5 = v128.load(b, 20);
  let B6 = v128.load(b, 24);
  let Z = v128.shuffle<i32>(i32x4.splat(0), B0, 0, 4, 0, 0);
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
  let P0 = i64x2.extmul_low_i32x4_u(A0, B0);
  P0 = i64x2.add(P0, i64x2.extmul_low_i32x4_u(A1, Z));
  let P2 = i64x2.extmul_low_i32x4_u(A0, B2);
  P2 = i64x2.add(P2, i64x2.extmul_low_i32x4_u(A1, B1));
  P2 = i64x2.add(P2, i64x2.extmul_low_i32x4_u(A2, B0));
  P2 = i64x2.add(P2, i64x2.extmul_low_i32x4_u(A3, Z));
  let P4 = i64x2.extmul_low_i32x4_u(A0, B4);
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A1, B3));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A2, B2));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A3, B1));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A4, B0));
  P4 = i64x2.add(P4, i64x2.extmul_low_i32x4_u(A5, Z));
  let P6 = i64x2.extmul_low_i32x4_u(A0, B6);
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A1, B5));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A2, B4));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A3, B3));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A4, B2));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A5, B1));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A6, B0));
  P6 = i64x2.add(P6, i64x2.extmul_low_i32x4_u(A7, Z));
  let c0 = i64x2.extract_lane(P0, 0);
  let c1 = i64x2.extract_lane(P0, 1);
  let c2 = i64x2.extract_lane(P2, 0);
  let c3 = i64x2.extract_lane(P2, 1);
  let c4 = i64x2.extract_lane(P4, 0);
  let c5 = i64x2.extract_lane(P4, 1);
  let c6 = i64x2.extract_lane(P6, 0);
  let c7 = i64x2.extract_lane(P6, 1);
  let c8 = a0 * b8 + a1 * b7 + a2 * b6 + a3 * b5 + a4 * b4 + a5 * b3 + a6 * b2 + a7 * b1 + a8 * b0;
  let c9 = a1 * b8 + a2 * b7 + a3 * b6 + a4 * b5 + a5 * b4 + a6 * b3 + a7 * b2 + a8 * b1;
  let c10 = a2 * b8 + a3 * b7 + a4 * b6 + a5 * b5 + a6 * b4 + a7 * b3 + a8 * b2;
  let c11 = a3 * b8 + a4 * b7 + a5 * b6 + a6 * b5 + a7 * b4 + a8 * b3;
  let c12 = a4 * b8 + a5 * b7 + a6 * b6 + a7 * b5 + a8 * b4;
  let c13 = a5 * b8 + a6 * b7 + a7 * b6 + a8 * b5;
  let c14 = a6 * b8 + a7 * b7 + a8 * b6;
  let c15 = a7 * b8 + a8 * b7;
  let c16 = a8 * b8;
  if (k != 1) {
    c0 *= k; c1 *= k; c2 *= k; c3 *= k; c4 *= k; c5 *= k; c6 *= k; c7 *= k; c8 *= k;
    c9 *= k; c10 *= k; c11 *= k; c12 *= k; c13 *= k; c14 *= k; c15 *= k; c16 *= k;
  }
  if (isK1(cv)) {
    if (kc != 0) {
      let q = fpBias(cv);
      c0 += linTerm(q, c, d, 0, kc, kd);
      c1 += linTerm(q, c, d, 4, kc, kd);
      c2 += linTerm(q, c, d, 8, kc, kd);
      c3 += linTerm(q, c, d, 12, kc, kd);
      c4 += linTerm(q, c, d, 16, kc, kd);
      c5 += linTerm(q, c, d, 20, kc, kd);
      c6 += linTerm(q, c, d, 24, kc, kd);
      c7 += linTerm(q, c, d, 28, kc, kd);
      c8 += linTerm(q, c, d, 32, kc, kd);
    }
    let l9 = c9 & M; let h9 = c9 >> 29;
    let l10 = c10 & M; let h10 = c10 >> 29;
    let l11 = c11 & M; let h11 = c11 >> 29;
    let l12 = c12 & M; let h12 = c12 >> 29;
    let l13 = c13 & M; let h13 = c13 >> 29;
    let l14 = c14 & M; let h14 = c14 >> 29;
    let l15 = c15 & M; let h15 = c15 >> 29;
    let l16 = c16 & M; let h16 = c16 >> 29;
    let m0 = l9;
    let m1 = l10 + h9;
    let m2 = l11 + h10;
    let m3 = l12 + h11;
    let m4 = l13 + h12;
    let m5 = l14 + h13;
    let m6 = l15 + h14;
    let m7 = l16 + h15;
    let m8 = h16;
    c0 += m0 * 31264; c1 += m0 << 8;
    c1 += m1 * 31264; c2 += m1 << 8;
    c2 += m2 * 31264; c3 += m2 << 8;
    c3 += m3 * 31264; c4 += m3 << 8;
    c4 += m4 * 31264; c5 += m4 << 8;
    c5 += m5 * 31264; c6 += m5 << 8;
    c6 += m6 * 31264; c7 += m6 << 8;
    c7 += m7 * 31264; c8 += m7 << 8;
    c8 += m8 * 31264;
    c0 += (m8 << 8) * 31264; c1 += m8 << 16;
    linStoreK1(cv, r, kc, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  } else {
    let c17: i64 = 0; let m: i64;
    if (kc != 0) {
      let q = fpBias(cv);
      c9 += linTerm(q, c, d, 0, kc, kd);
      c10 += linTerm(q, c, d, 4, kc, kd);
      c11 += linTerm(q, c, d, 8, kc, kd);
      c12 += linTerm(q, c, d, 12, kc, kd);
      c13 += linTerm(q, c, d, 16, kc, kd);
      c14 += linTerm(q, c, d, 20, kc, kd);
      c15 += linTerm(q, c, d, 24, kc, kd);
      c16 += linTerm(q, c, d, 28, kc, kd);
      c17 += linTerm(q, c, d, 32, kc, kd);
    }
    m = c0 & M; c1 += c0 >> 29; c3 += m << 9; c6 += m << 18; c7 -= m << 21; c8 += m << 24;
    m = c1 & M; c2 += c1 >> 29; c4 += m << 9; c7 += m << 18; c8 -= m << 21; c9 += m << 24;
    m = c2 & M; c3 += c2 >> 29; c5 += m << 9; c8 += m << 18; c9 -= m << 21; c10 += m << 24;
    m = c3 & M; c4 += c3 >> 29; c6 += m << 9; c9 += m << 18; c10 -= m << 21; c11 += m << 24;
    m = c4 & M; c5 += c4 >> 29; c7 += m << 9; c10 += m << 18; c11 -= m << 21; c12 += m << 24;
    m = c5 & M; c6 += c5 >> 29; c8 += m << 9; c11 += m << 18; c12 -= m << 21; c13 += m << 24;
    m = c6 & M; c7 += c6 >> 29; c9 += m << 9; c12 += m << 18; c13 -= m << 21; c14 += m << 24;
    m = c7 & M; c8 += c7 >> 29; c10 += m << 9; c13 += m << 18; c14 -= m << 21; c15 += m << 24;
    m = c8 & M; c9 += c8 >> 29; c11 += m << 9; c14 += m << 18; c15 -= m << 21; c16 += m << 24;
    linStoreP256(cv, r, kc, c9, c10, c11, c12, c13, c14, c15, c16, c17);
  }
}

/** r = k·a² − kc·c − kd·d, as mulLin. */
// @ts-ignore: decorator
@inline
function sqrLin(cv: usize, r: usize, a: usize, k: i64, c: usize, kc: i64, d: usize, kd: i64): void {
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
  if (k != 1) {
    c0 *= k; c1 *= k; c2 *= k; c3 *= k; c4 *= k; c5 *= k; c6 *= k; c7 *= k; c8 *= k;
    c9 *= k; c10 *= k; c11 *= k; c12 *= k; c13 *= k; c14 *= k; c15 *= k; c16 *= k;
  }
  if (isK1(cv)) {
    if (kc != 0) {
      let q = fpBias(cv);
      c0 += linTerm(q, c, d, 0, kc, kd);
      c1 += linTerm(q, c, d, 4, kc, kd);
      c2 += linTerm(q, c, d, 8, kc, kd);
      c3 += linTerm(q, c, d, 12, kc, kd);
      c4 += linTerm(q, c, d, 16, kc, kd);
      c5 += linTerm(q, c, d, 20, kc, kd);
      c6 += linTerm(q, c, d, 24, kc, kd);
      c7 += linTerm(q, c, d, 28, kc, kd);
      c8 += linTerm(q, c, d, 32, kc, kd);
    }
    let l9 = c9 & M; let h9 = c9 >> 29;
    let l10 = c10 & M; let h10 = c10 >> 29;
    let l11 = c11 & M; let h11 = c11 >> 29;
    let l12 = c12 & M; let h12 = c12 >> 29;
    let l13 = c13 & M; let h13 = c13 >> 29;
    let l14 = c14 & M; let h14 = c14 >> 29;
    let l15 = c15 & M; let h15 = c15 >> 29;
    let l16 = c16 & M; let h16 = c16 >> 29;
    let m0 = l9;
    let m1 = l10 + h9;
    let m2 = l11 + h10;
    let m3 = l12 + h11;
    let m4 = l13 + h12;
    let m5 = l14 + h13;
    let m6 = l15 + h14;
    let m7 = l16 + h15;
    let m8 = h16;
    c0 += m0 * 31264; c1 += m0 << 8;
    c1 += m1 * 31264; c2 += m1 << 8;
    c2 += m2 * 31264; c3 += m2 << 8;
    c3 += m3 * 31264; c4 += m3 << 8;
    c4 += m4 * 31264; c5 += m4 << 8;
    c5 += m5 * 31264; c6 += m5 << 8;
    c6 += m6 * 31264; c7 += m6 << 8;
    c7 += m7 * 31264; c8 += m7 << 8;
    c8 += m8 * 31264;
    c0 += (m8 << 8) * 31264; c1 += m8 << 16;
    linStoreK1(cv, r, kc, c0, c1, c2, c3, c4, c5, c6, c7, c8);
  } else {
    let c17: i64 = 0; let m: i64;
    if (kc != 0) {
      let q = fpBias(cv);
      c9 += linTerm(q, c, d, 0, kc, kd);
      c10 += linTerm(q, c, d, 4, kc, kd);
      c11 += linTerm(q, c, d, 8, kc, kd);
      c12 += linTerm(q, c, d, 12, kc, kd);
      c13 += linTerm(q, c, d, 16, kc, kd);
      c14 += linTerm(q, c, d, 20, kc, kd);
      c15 += linTerm(q, c, d, 24, kc, kd);
      c16 += linTerm(q, c, d, 28, kc, kd);
      c17 += linTerm(q, c, d, 32, kc, kd);
    }
    m = c0 & M; c1 += c0 >> 29; c3 += m << 9; c6 += m << 18; c7 -= m << 21; c8 += m << 24;
    m = c1 & M; c2 += c1 >> 29; c4 += m << 9; c7 += m << 18; c8 -= m << 21; c9 += m << 24;
    m = c2 & M; c3 += c2 >> 29; c5 += m << 9; c8 += m << 18; c9 -= m << 21; c10 += m << 24;
    m = c3 & M; c4 += c3 >> 29; c6 += m << 9; c9 += m << 18; c10 -= m << 21; c11 += m << 24;
    m = c4 & M; c5 += c4 >> 29; c7 += m << 9; c10 += m << 18; c11 -= m << 21; c12 += m << 24;
    m = c5 & M; c6 += c5 >> 29; c8 += m << 9; c11 += m << 18; c12 -= m << 21; c13 += m << 24;
    m = c6 & M; c7 += c6 >> 29; c9 += m << 9; c12 += m << 18; c13 -= m << 21; c14 += m << 24;
    m = c7 & M; c8 += c7 >> 29; c10 += m << 9; c13 += m << 18; c14 -= m << 21; c15 += m << 24;
    m = c8 & M; c9 += c8 >> 29; c11 += m << 9; c14 += m << 18; c15 -= m << 21; c16 += m << 24;
    linStoreP256(cv, r, kc, c9, c10, c11, c12, c13, c14, c15, c16, c17);
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
    if (k1) {
      let l9 = c9 & M; let h9 = c9 >> 29;
      let l10 = c10 & M; let h10 = c10 >> 29;
      let l11 = c11 & M; let h11 = c11 >> 29;
      let l12 = c12 & M; let h12 = c12 >> 29;
      let l13 = c13 & M; let h13 = c13 >> 29;
      let l14 = c14 & M; let h14 = c14 >> 29;
      let l15 = c15 & M; let h15 = c15 >> 29;
      let l16 = c16 & M; let h16 = c16 >> 29;
      let m0 = l9;
      let m1 = l10 + h9;
      let m2 = l11 + h10;
      let m3 = l12 + h11;
      let m4 = l13 + h12;
      let m5 = l14 + h13;
      let m6 = l15 + h14;
      let m7 = l16 + h15;
      let m8 = h16;
      c0 += m0 * 31264; c1 += m0 << 8;
      c1 += m1 * 31264; c2 += m1 << 8;
      c2 += m2 * 31264; c3 += m2 << 8;
      c3 += m3 * 31264; c4 += m3 << 8;
      c4 += m4 * 31264; c5 += m4 << 8;
      c5 += m5 * 31264; c6 += m5 << 8;
      c6 += m6 * 31264; c7 += m6 << 8;
      c7 += m7 * 31264; c8 += m7 << 8;
      c8 += m8 * 31264;
      c0 += (m8 << 8) * 31264; c1 += m8 << 16;
      c1 += c0 >> 29; c0 &= M;
      c2 += c1 >> 29; c1 &= M;
      c3 += c2 >> 29; c2 &= M;
      c4 += c3 >> 29; c3 &= M;
      c5 += c4 >> 29; c4 &= M;
      c6 += c5 >> 29; c5 &= M;
      c7 += c6 >> 29; c6 &= M;
      c8 += c7 >> 29; c7 &= M;
      let top = c8 >> 24; c8 &= M24; c0 += top * 977; c1 += top << 3;
      c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M;
      a0 = c0; a1 = c1; a2 = c2; a3 = c3; a4 = c4; a5 = c5; a6 = c6; a7 = c7; a8 = c8;
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
      c10 += c9 >> 29; c9 &= M;
      c11 += c10 >> 29; c10 &= M;
      c12 += c11 >> 29; c11 &= M;
      c13 += c12 >> 29; c12 &= M;
      c14 += c13 >> 29; c13 &= M;
      c15 += c14 >> 29; c14 &= M;
      c16 += c15 >> 29; c15 &= M;
      c17 += c16 >> 29; c16 &= M;
      a0 = c9; a1 = c10; a2 = c11; a3 = c12; a4 = c13; a5 = c14; a6 = c15; a7 = c16; a8 = c17;
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
