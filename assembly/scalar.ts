// GENERATED from scripts/gen-arith/scalar.tpl by `npm run gen:arith`: edit the template, not this file.
// Scalar arithmetic modulo the group order n of the curve cv (a constants block of curve.ts, first
// argument of every function that needs the curve), 9 x 29-bit limbs.
// Invariant: every scalar is fully reduced (< n). Products use Montgomery multiplication with
// R = 2^261 (generic: the quotient digit is (c mod 2^29)·(−n⁻¹) mod 2^29); callers convert
// with sc_toMont / sc_fromMont around chains of products. Everything here is constant time.
//
// (The unrolled column code was generated mechanically from the schoolbook definition.)
import { scN, scMu, scR2, scR3, scN30, scNinv30, scHalf } from './curve';
import { modinv } from './modinv';
import { DEBUG, verifySc } from './debug';
import { M, limbsFromBytes, limbsToBytes, limbsLess, limbsCondSub, limbsIsZero, copy40 } from './limbs';

const PLAIN_ONE: usize = memory.data<u32>([1, 0, 0, 0, 0, 0, 0, 0, 0, 0], 16);

// @ts-ignore: decorator
@inline
function scCarryStore(cv: usize, r: usize, c0: i64, c1: i64, c2: i64, c3: i64, c4: i64, c5: i64, c6: i64, c7: i64, c8: i64): void {
  c1 += c0 >> 29; c0 &= M; c2 += c1 >> 29; c1 &= M; c3 += c2 >> 29; c2 &= M; c4 += c3 >> 29; c3 &= M;
  c5 += c4 >> 29; c4 &= M; c6 += c5 >> 29; c5 &= M; c7 += c6 >> 29; c6 &= M; c8 += c7 >> 29; c7 &= M;
  store<u32>(r, <u32>c0, 0); store<u32>(r, <u32>c1, 4); store<u32>(r, <u32>c2, 8);
  store<u32>(r, <u32>c3, 12); store<u32>(r, <u32>c4, 16); store<u32>(r, <u32>c5, 20);
  store<u32>(r, <u32>c6, 24); store<u32>(r, <u32>c7, 28); store<u32>(r, <u32>c8, 32);
  store<u32>(r, 0, 36);
  limbsCondSub(r, r, scN(cv));
}

/** r = a · b · R⁻¹ mod n (Montgomery product; r may alias a or b). */
export function sc_mul(cv: usize, r: usize, a: usize, b: usize): void {
  if (DEBUG) {
    verifySc(cv, a);
    verifySc(cv, b);
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
  let q = scN(cv);
  let mu = <i64>load<u32>(scMu(cv));
  let n0 = <i64>load<u32>(q, 0); let n1 = <i64>load<u32>(q, 4); let n2 = <i64>load<u32>(q, 8);
  let n3 = <i64>load<u32>(q, 12); let n4 = <i64>load<u32>(q, 16); let n5 = <i64>load<u32>(q, 20);
  let n6 = <i64>load<u32>(q, 24); let n7 = <i64>load<u32>(q, 28); let n8 = <i64>load<u32>(q, 32);
  let c17: i64 = 0; let m: i64;
  m = ((c0 & M) * mu) & M; c0 += m * n0; c1 += c0 >> 29; c1 += m * n1; c2 += m * n2; c3 += m * n3; c4 += m * n4; c5 += m * n5; c6 += m * n6; c7 += m * n7; c8 += m * n8;
  m = ((c1 & M) * mu) & M; c1 += m * n0; c2 += c1 >> 29; c2 += m * n1; c3 += m * n2; c4 += m * n3; c5 += m * n4; c6 += m * n5; c7 += m * n6; c8 += m * n7; c9 += m * n8;
  m = ((c2 & M) * mu) & M; c2 += m * n0; c3 += c2 >> 29; c3 += m * n1; c4 += m * n2; c5 += m * n3; c6 += m * n4; c7 += m * n5; c8 += m * n6; c9 += m * n7; c10 += m * n8;
  m = ((c3 & M) * mu) & M; c3 += m * n0; c4 += c3 >> 29; c4 += m * n1; c5 += m * n2; c6 += m * n3; c7 += m * n4; c8 += m * n5; c9 += m * n6; c10 += m * n7; c11 += m * n8;
  m = ((c4 & M) * mu) & M; c4 += m * n0; c5 += c4 >> 29; c5 += m * n1; c6 += m * n2; c7 += m * n3; c8 += m * n4; c9 += m * n5; c10 += m * n6; c11 += m * n7; c12 += m * n8;
  m = ((c5 & M) * mu) & M; c5 += m * n0; c6 += c5 >> 29; c6 += m * n1; c7 += m * n2; c8 += m * n3; c9 += m * n4; c10 += m * n5; c11 += m * n6; c12 += m * n7; c13 += m * n8;
  m = ((c6 & M) * mu) & M; c6 += m * n0; c7 += c6 >> 29; c7 += m * n1; c8 += m * n2; c9 += m * n3; c10 += m * n4; c11 += m * n5; c12 += m * n6; c13 += m * n7; c14 += m * n8;
  m = ((c7 & M) * mu) & M; c7 += m * n0; c8 += c7 >> 29; c8 += m * n1; c9 += m * n2; c10 += m * n3; c11 += m * n4; c12 += m * n5; c13 += m * n6; c14 += m * n7; c15 += m * n8;
  m = ((c8 & M) * mu) & M; c8 += m * n0; c9 += c8 >> 29; c9 += m * n1; c10 += m * n2; c11 += m * n3; c12 += m * n4; c13 += m * n5; c14 += m * n6; c15 += m * n7; c16 += m * n8;
  scCarryStore(cv, r, c9, c10, c11, c12, c13, c14, c15, c16, c17);
  if (DEBUG) verifySc(cv, r);
}

export function sc_toMont(cv: usize, r: usize, a: usize): void {
  sc_mul(cv, r, a, scR2(cv));
}

export function sc_fromMont(cv: usize, r: usize, a: usize): void {
  sc_mul(cv, r, a, PLAIN_ONE);
}

/** r = a + b mod n */
export function sc_add(cv: usize, r: usize, a: usize, b: usize): void {
  if (DEBUG) {
    verifySc(cv, a);
    verifySc(cv, b);
  }
  scCarryStore(cv, r,
    <i64>load<u32>(a, 0) + <i64>load<u32>(b, 0), <i64>load<u32>(a, 4) + <i64>load<u32>(b, 4),
    <i64>load<u32>(a, 8) + <i64>load<u32>(b, 8), <i64>load<u32>(a, 12) + <i64>load<u32>(b, 12),
    <i64>load<u32>(a, 16) + <i64>load<u32>(b, 16), <i64>load<u32>(a, 20) + <i64>load<u32>(b, 20),
    <i64>load<u32>(a, 24) + <i64>load<u32>(b, 24), <i64>load<u32>(a, 28) + <i64>load<u32>(b, 28),
    <i64>load<u32>(a, 32) + <i64>load<u32>(b, 32));
  if (DEBUG) verifySc(cv, r);
}

/** r = a − b mod n  (a + n − b, then one conditional subtraction) */
export function sc_sub(cv: usize, r: usize, a: usize, b: usize): void {
  if (DEBUG) {
    verifySc(cv, a);
    verifySc(cv, b);
  }
  let q = scN(cv);
  scCarryStore(cv, r,
    <i64>load<u32>(a, 0) - <i64>load<u32>(b, 0) + <i64>load<u32>(q, 0),
    <i64>load<u32>(a, 4) - <i64>load<u32>(b, 4) + <i64>load<u32>(q, 4),
    <i64>load<u32>(a, 8) - <i64>load<u32>(b, 8) + <i64>load<u32>(q, 8),
    <i64>load<u32>(a, 12) - <i64>load<u32>(b, 12) + <i64>load<u32>(q, 12),
    <i64>load<u32>(a, 16) - <i64>load<u32>(b, 16) + <i64>load<u32>(q, 16),
    <i64>load<u32>(a, 20) - <i64>load<u32>(b, 20) + <i64>load<u32>(q, 20),
    <i64>load<u32>(a, 24) - <i64>load<u32>(b, 24) + <i64>load<u32>(q, 24),
    <i64>load<u32>(a, 28) - <i64>load<u32>(b, 28) + <i64>load<u32>(q, 28),
    <i64>load<u32>(a, 32) - <i64>load<u32>(b, 32) + <i64>load<u32>(q, 32));
  if (DEBUG) verifySc(cv, r);
}

const ZERO: usize = memory.data<u32>([0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 16);

/** r = −a mod n */
export function sc_neg(cv: usize, r: usize, a: usize): void {
  sc_sub(cv, r, ZERO, a);
}

/** 32 big-endian bytes → r = value mod n. Returns 1 if the value was ≥ n (overflow), else 0. */
export function sc_fromBytes(cv: usize, r: usize, p: usize): u32 {
  limbsFromBytes(r, p);
  let over = limbsCondSub(r, r, scN(cv)); // value < 2^256 < 2n for both curves
  if (DEBUG) verifySc(cv, r);
  return over;
}

export function sc_toBytes(p: usize, a: usize): void {
  limbsToBytes(p, a);
}

export function sc_isZero(a: usize): u32 {
  return limbsIsZero(a);
}

/** 1 if a > (n−1)/2 (a "high" s), constant time. */
export function sc_isHigh(cv: usize, a: usize): u32 {
  return limbsLess(scHalf(cv), a);
}

export function sc_copy(r: usize, a: usize): void {
  copy40(r, a);
}

/** r = a⁻¹ for a in Montgomery form (result in Montgomery form). Constant time (safegcd). */
export function sc_invMont(cv: usize, r: usize, a: usize): void {
  if (DEBUG) verifySc(cv, a);
  modinv(r, a, scN30(cv), load<u32>(scNinv30(cv)));
  sc_mul(cv, r, r, scR3(cv)); // (aR)⁻¹ · R³ · R⁻¹ = a⁻¹R
}
