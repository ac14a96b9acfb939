// SEC1 point encoding: 33-byte compressed (02/03 ‖ x) and 65-byte uncompressed (04 ‖ x ‖ y).
// Decoding validates: x, y < p, on the curve, not infinity (which has no encoding here).
// Public data only (variable time is fine).
import { fe_fromBytes, fe_toBytes, fe_sqrt, fe_isOdd, fe_neg, fe_curveRhs } from './field';
import { pt_isOnCurve } from './point';
import { FE } from './limbs';
import { S_ECDSA } from './layout';

const RHS: usize = S_ECDSA + 1920;

/** y for x with the requested parity; returns 0 if x is not the x-coordinate of a point. a = (x, y) with x set. */
export function decompress_var(cv: usize, a: usize, odd: u32): u32 {
  fe_curveRhs(cv, RHS, a);
  if (!fe_sqrt(cv, a + FE, RHS)) return 0;
  if (fe_isOdd(cv, a + FE) != odd) fe_neg(cv, a + FE, a + FE);
  return 1;
}

/** Decode a SEC1 public key of len bytes at p into affine a. Returns 1 if valid. */
export function decodePoint_var(cv: usize, a: usize, p: usize, len: u32): u32 {
  if (len == 33) {
    let tag = load<u8>(p);
    if (tag != 2 && tag != 3) return 0;
    if (!fe_fromBytes(cv, a, p + 1)) return 0;
    return decompress_var(cv, a, tag & 1);
  }
  if (len == 65) {
    if (load<u8>(p) != 4) return 0;
    if (!fe_fromBytes(cv, a, p + 1)) return 0;
    if (!fe_fromBytes(cv, a + FE, p + 33)) return 0;
    return pt_isOnCurve(cv, a);
  }
  return 0;
}

/** Encode affine a at p; returns the length written (33 or 65). */
export function encodePoint(cv: usize, p: usize, a: usize, compressed: bool): u32 {
  if (compressed) {
    store<u8>(p, <u8>(2 + fe_isOdd(cv, a + FE)));
    fe_toBytes(cv, p + 1, a);
    return 33;
  }
  store<u8>(p, 4);
  fe_toBytes(cv, p + 1, a);
  fe_toBytes(cv, p + 33, a + FE);
  return 65;
}
