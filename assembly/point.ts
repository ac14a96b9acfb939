// Group law in Jacobian coordinates (X, Y, Z) ↦ (X/Z², Y/Z³); infinity is Z = 0.
// A Jacobian point is 120 bytes (X, Y, Z), an affine point 80 bytes (x, y).
// The formulas without `_var` are straight-line code (constant time) and do not handle the
// exceptional cases (equal inputs, infinity); callers that feed secrets guarantee those cannot
// occur or repair them with cmov. The `_var` versions branch on their (public) inputs.
// Doubling is the only place the two curves differ (a = 0 vs a = −3), chosen by isK1(cv) (public).
import { isK1 } from './curve';
import {
  fe_mul, fe_sqr, fe_add, fe_sub, fe_neg, fe_setOne, fe_setZero, fe_isZero, fe_inv, fe_equal,
  fe_curveRhs, fe_subMul, fe_mulSub, fe_addMul, fe_isZero_var, fe_subLazy,
  fe_mulThenSub, fe_mulThenAdd, fe_mulTwice, fe_sqrThenSub, fe_sqrThenSubSub2, fe_sqrThrice,
} from './field';
import { FE, copy40, cmov40 } from './limbs';
import { S_POINT, PUBLIC } from './layout';
import { DEBUG } from './debug';

export const JAC: usize = 120;
export const AFF: usize = 80;

const t0: usize = S_POINT + 0;
const t1: usize = S_POINT + 40;
const t2: usize = S_POINT + 80;
const t3: usize = S_POINT + 120;
const t4: usize = S_POINT + 160;
const t5: usize = S_POINT + 200;
const t6: usize = S_POINT + 240;
const t7: usize = S_POINT + 280;
const t8: usize = S_POINT + 320;
const t9: usize = S_POINT + 360;
const t10: usize = S_POINT + 400;
const t11: usize = S_POINT + 440;
const t12: usize = S_POINT + 480;
const u0: usize = S_POINT + 520; // scratch of the _var wrappers / conversions
const u1: usize = S_POINT + 560;

/** r = 2p (r may alias p). Doubling infinity gives infinity (Z stays 0); no point of order 2 exists.
 *  The linear steps are fused (field.ts fe_subMul, fe_mulSub, fe_addMul: one carry pass each), and
 *  where a step follows a product, into the product (fe_sqrThenSub, fe_mulThenSub, fe_mulTwice,
 *  fe_sqrThrice: no carry pass of its own). All of them are straight-line code. */
export function pt_dbl(cv: usize, r: usize, p: usize): void {
  let X = p, Y = p + FE, Z = p + 2 * FE;
  if (isK1(cv)) {
    // a = 0: X3 = (3X²)² − 8XY², Y3 = 3X²(4XY² − X3) − 8Y⁴, Z3 = 2YZ (3M + 4S, three of them with
    // the next linear step fused in, and one linear step)
    fe_sqr(cv, t1, Y); //                      B = Y²
    fe_mul(cv, t3, X, t1); //                  X·B (D = 4XB)
    fe_sqr(cv, t2, t1); //                     C = B²
    fe_sqrThrice(cv, t4, X); //                E = 3X²
    fe_mulTwice(cv, r + 2 * FE, Y, Z); //      Z3 = 2YZ (Z is not read again; Y is)
    fe_sqrThenSub(cv, r, t4, t3, 8); //        X3 = E² − 8XB
    fe_mulSub(cv, t3, 4, t3, r); //            D − X3
    fe_mulThenSub(cv, r + FE, t4, t3, t2, 8); // Y3 = E(D − X3) − 8C
  } else {
    // a = −3: α = 3(X − Z²)(X + Z²), β = XY², X3 = α² − 8β, Y3 = α(4β − X3) − 8Y⁴, Z3 = 2YZ (4M + 4S,
    // two of them with the next linear step fused in, and four linear steps)
    fe_sqr(cv, t0, Z); //                      delta
    fe_sqr(cv, t1, Y); //                      gamma
    fe_mul(cv, t2, X, t1); //                  beta
    fe_mulTwice(cv, r + 2 * FE, Y, Z); //      Z3 = 2YZ (Z is not read again; Y is not either)
    fe_subLazy(cv, t3, X, t0); //              X − delta, not carried: only alpha reads it
    fe_addMul(cv, t4, X, t0, 3);
    fe_mul(cv, t3, t3, t4, true); //           alpha = 3(X − delta)(X + delta)
    fe_sqrThenSub(cv, r, t3, t2, 8); //        X3 = alpha² − 8 beta
    fe_mulSub(cv, t2, 4, t2, r);
    fe_mul(cv, t2, t3, t2);
    fe_sqr(cv, t1, t1); //                     gamma²
    fe_subMul(cv, r + FE, t2, t1, 8); //       Y3 = alpha(4 beta − X3) − 8 gamma² (fe_mulThenSub is not faster on P-256)
  }
}

/** r = p + q with q affine (madd-2004-hmv, 8M + 3S; on secp256k1 four of its five linear steps are
 *  fused into the products before them, on P-256 the X3 one). Not valid when p = ±q or p is
 *  infinity. r may alias p. */
export function pt_madd(cv: usize, r: usize, p: usize, q: usize): void {
  maddStart(cv, p, q);
  maddFinish(cv, r, p);
}

/** t1 = H = X2·Z1² − X1, t2 = R = Y2·Z1³ − Y1; with neg (q taken as −q), t2 = −R = Y2·Z1³ + Y1,
 *  which maddFinish(neg) accounts for (R enters X3 squared, and Y3 as R·(X1·H² − X3)). */
// @ts-ignore: decorator
@inline
function maddStart(cv: usize, p: usize, q: usize, neg: bool = false): void {
  let X1 = p, Y1 = p + FE, Z1 = p + 2 * FE, X2 = q, Y2 = q + FE;
  fe_sqr(cv, t1, Z1); //                 Z1²
  fe_mul(cv, t2, t1, Z1); //             Z1³
  if (isK1(cv)) {
    fe_mulThenSub(cv, t1, t1, X2, X1, 1); // H = X2·Z1² − X1
    if (neg) fe_mulThenAdd(cv, t2, t2, Y2, Y1); // −R = Y2·Z1³ + Y1
    else fe_mulThenSub(cv, t2, t2, Y2, Y1, 1); //  R = Y2·Z1³ − Y1
  } else {
    // P-256: the fused forms measured no faster here (fe_mulThenSub)
    fe_mul(cv, t1, t1, X2); //           U2 = X2·Z1²
    fe_mul(cv, t2, t2, Y2); //           S2 = Y2·Z1³
    fe_sub(cv, t1, t1, X1); //           H
    if (neg) fe_add(cv, t2, t2, Y1); //  −R
    else fe_sub(cv, t2, t2, Y1); //      R
  }
}

// @ts-ignore: decorator
@inline
function maddFinish(cv: usize, r: usize, p: usize, neg: bool = false): void {
  let X1 = p, Y1 = p + FE, Z1 = p + 2 * FE;
  fe_mul(cv, r + 2 * FE, Z1, t1); //     Z3 = Z1·H
  fe_sqr(cv, t4, t1); //                 H²
  fe_mul(cv, t3, t4, t1); //             H³
  fe_mul(cv, t4, t4, X1); //             X1·H²
  fe_mul(cv, t5, Y1, t3); //             Y1·H³
  fe_sqrThenSubSub2(cv, r, t2, t3, t4); // X3 = R² − H³ − 2·X1·H²
  // X1·H² − X3 (with neg X3 − X1·H²: (−R)(X3 − X1·H²) = R(X1·H² − X3)), not carried: only the
  // product below reads it
  if (neg) fe_subLazy(cv, t4, r, t4);
  else fe_subLazy(cv, t4, t4, r);
  if (isK1(cv)) fe_mulThenSub(cv, r + FE, t4, t2, t5, 1, true); // Y3 = R(X1·H² − X3) − Y1·H³
  else {
    fe_mul(cv, t4, t4, t2, true);
    fe_sub(cv, r + FE, t4, t5);
  }
}

/** pt_madd that also leaves the Z ratio H = Z3 / Z1 at zr (for tables brought to one Z). */
export function pt_maddZr(cv: usize, r: usize, p: usize, q: usize, zr: usize): void {
  maddStart(cv, p, q);
  copy40(zr, t1);
  maddFinish(cv, r, p);
}

/** r = p + q, both Jacobian (add-2007-bl). Not valid when p = ±q or either is infinity. r may alias p or q. */
export function pt_add(cv: usize, r: usize, p: usize, q: usize): void {
  let X1 = p, Y1 = p + FE, Z1 = p + 2 * FE, X2 = q, Y2 = q + FE, Z2 = q + 2 * FE;
  fe_sqr(cv, t0, Z1); //                 Z1Z1
  fe_sqr(cv, t1, Z2); //                 Z2Z2
  fe_mul(cv, t2, X1, t1); //             U1
  fe_mul(cv, t3, X2, t0); //             U2
  fe_mul(cv, t4, Y1, Z2);
  fe_mul(cv, t4, t4, t1); //             S1
  fe_mul(cv, t5, Y2, Z1);
  fe_mul(cv, t5, t5, t0); //             S2
  fe_sub(cv, t6, t3, t2); //             H
  fe_add(cv, t7, t6, t6);
  fe_sqr(cv, t7, t7); //                 I = (2H)²
  fe_mul(cv, t8, t6, t7); //             J
  fe_sub(cv, t9, t5, t4);
  fe_add(cv, t9, t9, t9); //             rr = 2(S2 − S1)
  fe_mul(cv, t10, t2, t7); //            V = U1·I
  fe_add(cv, t11, Z1, Z2);
  fe_sqr(cv, t11, t11);
  fe_sub(cv, t11, t11, t0);
  fe_sub(cv, t11, t11, t1);
  fe_mul(cv, r + 2 * FE, t11, t6); //    Z3 = ((Z1 + Z2)² − Z1Z1 − Z2Z2)·H
  fe_mul(cv, t12, t4, t8);
  fe_add(cv, t12, t12, t12); //          2·S1·J
  fe_sqr(cv, t0, t9);
  fe_sub(cv, t0, t0, t8);
  fe_sub(cv, t0, t0, t10);
  fe_sub(cv, r, t0, t10); //             X3 = rr² − J − 2V
  fe_sub(cv, t10, t10, r);
  fe_mul(cv, t10, t9, t10);
  fe_sub(cv, r + FE, t10, t12); //       Y3 = rr(V − X3) − 2·S1·J
}

export function pt_setInf(cv: usize, r: usize): void {
  fe_setOne(cv, r);
  fe_setOne(cv, r + FE);
  fe_setZero(r + 2 * FE);
}

/** 1 if p is the point at infinity (constant time). */
export function pt_isInf(cv: usize, p: usize): u32 {
  return fe_isZero(cv, p + 2 * FE);
}

export function pt_copy(r: usize, p: usize): void {
  copy40(r, p);
  copy40(r + FE, p + FE);
  copy40(r + 2 * FE, p + 2 * FE);
}

/** r = p if flag, constant time (Jacobian). */
export function pt_cmov(r: usize, p: usize, flag: u32): void {
  cmov40(r, p, flag);
  cmov40(r + FE, p + FE, flag);
  cmov40(r + 2 * FE, p + 2 * FE, flag);
}

/** Jacobian r = affine a (Z = 1). */
export function pt_fromAffine(cv: usize, r: usize, a: usize): void {
  copy40(r, a);
  copy40(r + FE, a + FE);
  fe_setOne(cv, r + 2 * FE);
}

/** affine r = Jacobian p (constant-time inversion). p must not be infinity. */
export function pt_toAffine(cv: usize, r: usize, p: usize): void {
  fe_inv(cv, u0, p + 2 * FE);
  pt_toAffineWithInv(cv, r, p, u0);
}

/** affine r = Jacobian p given zi = 1/Z. */
export function pt_toAffineWithInv(cv: usize, r: usize, p: usize, zi: usize): void {
  fe_sqr(cv, u1, zi);
  fe_mul(cv, r, p, u1);
  fe_mul(cv, u1, u1, zi);
  fe_mul(cv, r + FE, p + FE, u1);
}

/** 1 if affine (x, y) satisfies y² = x³ + ax + b. */
export function pt_isOnCurve(cv: usize, a: usize): u32 {
  fe_curveRhs(cv, u0, a);
  fe_sqr(cv, u1, a + FE);
  return fe_equal(cv, u0, u1);
}

const v0: usize = S_POINT + 640; //  pt_maddComplete: generic sum (120)
const v1: usize = S_POINT + 768; //  doubling / infinity (120)
const v2: usize = S_POINT + 896; //  q as a Jacobian point (120)

/** r = p + q (q affine, not infinity; p anything, infinity included), every case handled by
 *  masked moves instead of branches: the generic sum, the doubling (p = q), infinity (p = −q)
 *  and q (p = infinity) are all computed and the right one selected. Constant time. r may alias p. */
export function pt_maddComplete(cv: usize, r: usize, p: usize, q: usize): void {
  let pinf = fe_isZero(cv, p + 2 * FE);
  maddStart(cv, p, q);
  let h0 = fe_isZero(cv, t1), r0 = fe_isZero(cv, t2);
  maddFinish(cv, v0, p);
  pt_dbl(cv, v1, p);
  pt_cmov(v0, v1, h0 & r0 & (pinf ^ 1));
  pt_setInf(cv, v1);
  pt_cmov(v0, v1, h0 & (r0 ^ 1) & (pinf ^ 1));
  pt_fromAffine(cv, v2, q);
  pt_cmov(v0, v2, pinf);
  pt_copy(r, v0);
}

const BATCH_INV: usize = PUBLIC + 3968; // 40 + 40 (public scratch of pt_batchToAffine)

/** outAff[i] = affine of inJac[i] for i < count (one shared inversion, Montgomery's trick; points
 *  must not be infinity); prefix: scratch for count field elements. For public points (the tables
 *  of mulp.ts and muldouble.ts): its scratch is public. */
export function pt_batchToAffine(cv: usize, outAff: usize, inJac: usize, count: usize, prefix: usize): void {
  memory.copy(prefix, inJac + 2 * FE, FE);
  for (let i: usize = 1; i < count; i++) fe_mul(cv, prefix + FE * i, prefix + FE * (i - 1), inJac + JAC * i + 2 * FE);
  fe_inv(cv, BATCH_INV, prefix + FE * (count - 1));
  for (let i = <isize>count - 1; i >= 0; i--) {
    let zi = BATCH_INV + FE;
    let p = inJac + JAC * <usize>i;
    if (i > 0) {
      fe_mul(cv, zi, BATCH_INV, prefix + FE * <usize>(i - 1));
      fe_mul(cv, BATCH_INV, BATCH_INV, p + 2 * FE);
    } else memory.copy(zi, BATCH_INV, FE);
    pt_toAffineWithInv(cv, outAff + AFF * <usize>i, p, zi);
  }
}

// ---- variable time (public inputs only) ----

/** r = p + q (q affine, not infinity), handling every case. r may alias p.
 *  Returns 1 if the result is infinity (p = −q), else 0. */
export function pt_madd_var(cv: usize, r: usize, p: usize, q: usize): u32 {
  if (fe_isZero_var(cv, p + 2 * FE)) {
    pt_fromAffine(cv, r, q);
    return 0;
  }
  return pt_maddFinite_var(cv, r, p, q);
}

/** pt_madd_var for a p known not to be infinity (a caller that tracks it, as the multi-scalar
 *  loops do, skips the test; checked in the debug build). */
export function pt_maddFinite_var(cv: usize, r: usize, p: usize, q: usize, neg: bool = false): u32 {
  if (DEBUG) assert(!fe_isZero(cv, p + 2 * FE), 'pt_maddFinite_var: p is infinity');
  maddStart(cv, p, q, neg);
  if (fe_isZero_var(cv, t1)) {
    if (fe_isZero_var(cv, t2)) {
      pt_dbl(cv, r, p); //   p = q (no point of order 2 exists, so never infinity)
      return 0;
    }
    pt_setInf(cv, r);
    return 1;
  }
  maddFinish(cv, r, p, neg);
  return 0;
}

/** r = p + q' where q' = (u²·x, u³·y) is the affine point q = (x, y) carried to the isomorphic
 *  curve (x, y) ↦ (u²x, u³y) on which p lives (q' as a Jacobian point is (x, y, 1/u)): the mixed
 *  addition with Z1·u in place of Z1 for U2 and S2, one multiplication more, no inversion. p is
 *  not infinity (the caller tracks it; checked in the debug build); every other case is handled.
 *  With neg, q is taken as −q. Returns 1 if the result is infinity. r may alias p. Only for a = 0 (secp256k1): the doubling of
 *  the exceptional case runs on the image curve, whose a is a·u⁴. */
export function pt_maddZinv_var(cv: usize, r: usize, p: usize, q: usize, u: usize, neg: bool = false): u32 {
  if (DEBUG) {
    assert(!fe_isZero(cv, p + 2 * FE), 'pt_maddZinv_var: p is infinity');
    assert(isK1(cv), 'pt_maddZinv_var: the image curve keeps a = 0 only on secp256k1');
  }
  let X1 = p, Y1 = p + FE, Z1 = p + 2 * FE;
  fe_mul(cv, t0, Z1, u); //                 az = Z1·u
  fe_sqr(cv, t1, t0);
  fe_mul(cv, t2, t1, t0); //                az³
  fe_mulThenSub(cv, t1, t1, q, X1, 1); //   H = x·az² − X1
  if (neg) fe_mulThenAdd(cv, t2, t2, q + FE, Y1); // −R = y·az³ + Y1 (q taken as −q, as in maddStart)
  else fe_mulThenSub(cv, t2, t2, q + FE, Y1, 1); //  R = y·az³ − Y1
  if (fe_isZero_var(cv, t1)) {
    if (fe_isZero_var(cv, t2)) {
      pt_dbl(cv, r, p);
      return 0;
    }
    pt_setInf(cv, r);
    return 1;
  }
  maddFinish(cv, r, p, neg); //             Z3 = Z1·H with the Z1 of p
  return 0;
}

/** r = p + q (both Jacobian), handling every case. r may alias p or q. */
export function pt_add_var(cv: usize, r: usize, p: usize, q: usize): void {
  if (fe_isZero_var(cv, q + 2 * FE)) {
    if (r != p) pt_copy(r, p);
    return;
  }
  if (fe_isZero_var(cv, p + 2 * FE)) {
    if (r != q) pt_copy(r, q);
    return;
  }
  // U1 = X1·Z2², U2 = X2·Z1²
  fe_sqr(cv, u0, q + 2 * FE);
  fe_mul(cv, u0, p, u0);
  fe_sqr(cv, u1, p + 2 * FE);
  fe_mul(cv, u1, q, u1);
  fe_sub(cv, u0, u0, u1);
  if (fe_isZero_var(cv, u0)) {
    // S1 = Y1·Z2³, S2 = Y2·Z1³
    fe_sqr(cv, u0, q + 2 * FE);
    fe_mul(cv, u0, u0, q + 2 * FE);
    fe_mul(cv, u0, u0, p + FE);
    fe_sqr(cv, u1, p + 2 * FE);
    fe_mul(cv, u1, u1, p + 2 * FE);
    fe_mul(cv, u1, u1, q + FE);
    fe_sub(cv, u0, u0, u1);
    if (fe_isZero_var(cv, u0)) pt_dbl(cv, r, p);
    else pt_setInf(cv, r);
    return;
  }
  pt_add(cv, r, p, q);
}

/** affine r = −a */
export function pt_negAffine(cv: usize, r: usize, a: usize): void {
  if (r != a) copy40(r, a);
  fe_neg(cv, r + FE, a + FE);
}
