// Representation invariants, checked only in the debug build (build/debug.wasm), in the manner of
// libsecp256k1's VERIFY_CHECK. `DEBUG` is `!ASC_NO_ASSERT`: true for the debug target (asserts
// on), the constant false for the release target (`noAssert`), where the compiler drops every
// `if (DEBUG) …` block, so build/kmas.wasm contains none of this (test/core/debug-build.test.ts
// checks that it imports nothing, while debug.wasm imports `env.abort` for failed checks).
// The checks are not constant time and need not be: the debug build is for tests only.
import { isK1, fpP, scN, curveMagic, CURVE_MAGIC } from './curve';
import { limbsLess, limbsToBytes } from './limbs';

// @ts-ignore: compile-time constant
export const DEBUG: bool = !ASC_NO_ASSERT;

const LIMB: u32 = 1 << 29;
const NBYTES: usize = memory.data(32, 16);

/** cv is one of the curve constants blocks of curve.ts (not a stray pointer). */
export function verifyCurve(cv: usize): void {
  assert(cv != 0 && curveMagic(cv) == CURVE_MAGIC, 'curve parameter is not a curve constants block');
}

/** Weakly normalised field element: limbs < 2^29 (secp256k1: limbs 0..2 < 2^29 + 2^15), limb 8 < 2^25. */
export function verifyFe(cv: usize, a: usize): void {
  verifyCurve(cv);
  let low: u32 = isK1(cv) ? LIMB + (1 << 15) : LIMB;
  for (let i: usize = 0; i < 3; i++) assert(load<u32>(a + 4 * i) < low, 'field element: limb 0..2 out of bounds');
  for (let i: usize = 3; i < 8; i++) assert(load<u32>(a + 4 * i) < LIMB, 'field element: limb 3..7 ≥ 2^29');
  assert(load<u32>(a, 32) < (1 << 25), 'field element: limb 8 ≥ 2^25');
}

/** A lazy field element (field.ts fe_subLazy): limbs 0..7 < 2^29 + 2^15 + 2^30 + 2^15, limb 8 < 2^25 + 2^26. */
export function verifyFeLazy(cv: usize, a: usize): void {
  verifyCurve(cv);
  for (let i: usize = 0; i < 8; i++) assert(load<u32>(a + 4 * i) < 0x60010000, 'lazy field element: limb 0..7 ≥ 2^30 + 2^29 + 2^16');
  assert(load<u32>(a, 32) < 0x6000000, 'lazy field element: limb 8 ≥ 2^25 + 2^26');
}

/** Canonical field element: limbs < 2^29 and value < p. */
export function verifyFeNormal(cv: usize, a: usize): void {
  for (let i: usize = 0; i < 9; i++) assert(load<u32>(a + 4 * i) < LIMB, 'normalised field element: limb ≥ 2^29');
  assert(limbsLess(a, fpP(cv)) != 0, 'normalised field element ≥ p');
}

/** Scalar: limbs < 2^29 and value < n (plain or Montgomery form alike). */
export function verifySc(cv: usize, a: usize): void {
  verifyCurve(cv);
  for (let i: usize = 0; i < 9; i++) assert(load<u32>(a + 4 * i) < LIMB, 'scalar: limb ≥ 2^29');
  assert(limbsLess(a, scN(cv)) != 0, 'scalar ≥ n');
}

/** 32 big-endian bytes holding a scalar < n (the contract of the scalar multiplications). */
export function verifyScBytes(cv: usize, k: usize): void {
  limbsToBytes(NBYTES, scN(cv));
  let lt = false;
  for (let i: usize = 0; i < 32; i++) {
    let x = load<u8>(k + i), y = load<u8>(NBYTES + i);
    if (x != y) {
      lt = x < y;
      break;
    }
  }
  assert(lt, 'scalar bytes ≥ n');
}
