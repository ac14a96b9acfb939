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
@@MULCOLS@@
  let q = scN(cv);
  let mu = <i64>load<u32>(scMu(cv));
  let n0 = <i64>load<u32>(q, 0); let n1 = <i64>load<u32>(q, 4); let n2 = <i64>load<u32>(q, 8);
  let n3 = <i64>load<u32>(q, 12); let n4 = <i64>load<u32>(q, 16); let n5 = <i64>load<u32>(q, 20);
  let n6 = <i64>load<u32>(q, 24); let n7 = <i64>load<u32>(q, 28); let n8 = <i64>load<u32>(q, 32);
@@REDSC@@
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
