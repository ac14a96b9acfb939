// Multi-scalar multiplication u1·G + u2·Q for verification and recovery: variable time, for
// public scalars and points only (every function here ends in _var or handles public layout).
//   mulDouble_var     Strauss–Shamir over wNAF digits (window 8 for G from the generated tables, 5
//                     for Q), four ~128-bit streams via GLV (secp256k1) or via 2^128·Q (P-256,
//                     once a cached key has that table)
//   mulDoubleHot_var  the same over a key's full fixed-window table (hotBuild_var): no doublings
// It also owns the layout of a verification context (a decoded key and its tables), which the
// key cache (keycache.ts) stores. Scalars are 32 big-endian bytes < n (checked in the debug build).
import { gComb, gWnaf, g128Wnaf, isK1, curveId } from './curve';
import { glvSplit_var, FP_BETA } from './glv';
import { fe_mul, fe_sqr, fe_setOne, fe_equal, fe_neg } from './field';
import {
  JAC, AFF, pt_dbl, pt_setInf, pt_fromAffine, pt_madd_var, pt_add_var, pt_negAffine, pt_toAffine, pt_copy,
  pt_batchToAffine, pt_maddFinite_var, pt_madd, pt_isOnCurve, pt_maddZr, pt_maddZinv_var,
} from './point';
import { FE, copy40 } from './limbs';
import { PUBLIC } from './layout';
import { DEBUG, verifyScBytes } from './debug';
import { SCW, comb6Digits, wnaf_var, split128 } from './recode';

// public scratch
const WNAF1: usize = memory.data(520, 16); //  260 digits (i16)
const WNAF2: usize = memory.data(520, 16);
const QODD: usize = PUBLIC + 4800; //         8 Jacobian odd multiples of Q (960)
const NEGA: usize = PUBLIC + 5824; //         80
const ACCV: usize = PUBLIC + 6144; //         120
const ZPOW: usize = memory.data(80, 16); //    Z_D², Z_D³ of oddMultiples_var (q may be NEGA)
const WNAF3: usize = memory.data(520, 16);
const WNAF4: usize = memory.data(520, 16);
const SPLIT: usize = PUBLIC + 8320; //        4 x 32 bytes of split scalars (ends 8448)
const PREFIX: usize = PUBLIC + 3328; //      8 prefix products of the batch inversion (shared with mulp.ts's table scratch, never live at once)

/** r += sign(d)·table[(|d| − 1)/2] (affine odd multiples), negated again if neg. Variable time. */
// @ts-ignore: decorator
@inline
function addWnaf_var(cv: usize, r: usize, d: i32, table: usize, neg: bool, inf: bool): bool {
  let e = table + AFF * <usize>(((d < 0 ? -d : d) - 1) >> 1);
  let flip = (d < 0) != neg;
  if (inf) {
    pt_fromAffine(cv, r, e);
    if (flip) fe_neg(cv, r + FE, r + FE);
    return false;
  }
  return pt_maddFinite_var(cv, r, r, e, flip) != 0; // −e folded into the addition
}

const UP: usize = memory.data(<i32>(2 * FE), 16); //  u², u³ of the image curve of a verification

/** addWnaf_var for a plain-affine table (G's) while the sum runs on the image curve (x, y) ↦
 *  (u²x, u³y) of an effective-affine Q table: the entry is carried over by pt_maddZinv_var, or by
 *  u², u³ when the sum is still infinity. */
// @ts-ignore: decorator
@inline
function addWnafIso_var(cv: usize, r: usize, d: i32, table: usize, neg: bool, inf: bool, u: usize): bool {
  let e = table + AFF * <usize>(((d < 0 ? -d : d) - 1) >> 1);
  let flip = (d < 0) != neg;
  if (inf) {
    fe_mul(cv, r, e, UP);
    fe_mul(cv, r + FE, e + FE, UP + FE);
    if (flip) fe_neg(cv, r + FE, r + FE);
    fe_setOne(cv, r + 2 * FE);
    return false;
  }
  return pt_maddZinv_var(cv, r, r, e, u, flip) != 0;
}

// ---- the G streams' tables: 512 odd multiples (wNAF window 11), built at first use ----
// The wider the window of a G stream, the fewer its additions (a 128-bit stream: ≈ 14 at window 8,
// ≈ 11 at 11); the doublings are shared with the Q streams and do not change. Wider windows
// stopped paying here (window 14, 320 KB per table, measured no better than 11: the random reads
// miss the caches), and 40 KB per table is still more than the module should ship, so they are
// computed from G on the first verification on each curve (512 mixed additions and 8 batch
// inversions, well under a millisecond, once per instance); the first 64 entries must equal the
// generated G_WNAF (checked in the debug build). secp256k1 also gets λ·(that table) = (β·x, y)
// for its GLV stream.
const GW: u32 = 11;
const GBIG: usize = <usize>1 << (GW - 2);
const GBIG_K1: usize = memory.data(<i32>(GBIG * AFF), 16);
const GBIG_LAM: usize = memory.data(<i32>(GBIG * AFF), 16);
const GBIG_P256: usize = memory.data(<i32>(GBIG * AFF), 16);
const GB_CHUNK: usize = 64;
const GB_J: usize = memory.data(<i32>(GB_CHUNK * JAC), 16); //  one chunk, Jacobian
const GB_PRE: usize = memory.data(<i32>(GB_CHUNK * FE), 16); // its batch-inversion prefix products
const GB_ACC: usize = memory.data(<i32>JAC, 16);
const GB_D: usize = memory.data(<i32>AFF, 16); //               2G, affine
let gBigReady: u32 = 0; //                                      bit (curve id): built

/** The table of odd multiples (2j + 1)·G, j < 512, of curve cv (built on first use). */
function gBig_var(cv: usize): usize {
  let t = isK1(cv) ? GBIG_K1 : GBIG_P256;
  let bit: u32 = 1 << curveId(cv);
  if ((gBigReady & bit) != 0) return t;
  let g = gWnaf(cv); //                           entry 0 is G
  pt_fromAffine(cv, GB_ACC, g);
  pt_dbl(cv, GB_ACC, GB_ACC);
  pt_toAffine(cv, GB_D, GB_ACC);
  pt_fromAffine(cv, GB_ACC, g);
  for (let c: usize = 0; c < GBIG; c += GB_CHUNK) {
    for (let i: usize = 0; i < GB_CHUNK; i++) {
      pt_copy(GB_J + JAC * i, GB_ACC);
      pt_maddFinite_var(cv, GB_ACC, GB_ACC, GB_D); // (2j + 1)·G + 2G: never ±2G, never infinity (j ≪ n)
    }
    pt_batchToAffine(cv, t + AFF * c, GB_J, GB_CHUNK, GB_PRE);
  }
  if (DEBUG) {
    for (let j: usize = 0; j < 64; j++) {
      assert(fe_equal(cv, t + AFF * j, g + AFF * j) && fe_equal(cv, t + AFF * j + FE, g + AFF * j + FE),
        'runtime G table differs from the generated G_WNAF');
    }
  }
  if (isK1(cv)) {
    for (let j: usize = 0; j < GBIG; j++) {
      fe_mul(cv, GBIG_LAM + AFF * j, t + AFF * j, FP_BETA);
      memory.copy(GBIG_LAM + AFF * j + FE, t + AFF * j + FE, FE);
    }
  }
  gBigReady |= bit;
  return t;
}

// ---- public-key contexts for verification ----
// A Q context holds everything verification needs about one public key (public data):
//   +0 curve id, +4 encoded length, +8 state, +12 verifications since cached (keycache.ts),
//   +16 encoded key (≤ 65 bytes), +84 hot table slot + 1 (0: none), +88 verified since the
//   cache's CLOCK hand passed (keycache.ts)
//   +96  Q (affine)
//   +176 T1: affine odd multiples Q, 3Q, ..., 15Q
//   +816 T2: affine odd multiples of λQ (secp256k1) or, once state = 2, of 2^128·Q (P-256)
//   +1456 u (secp256k1): T1 and T2 hold the images of those multiples under the isomorphism
//         (x, y) ↦ (u²x, u³y) ("effective affine": one Z for the whole table, no inversion);
//         +92 is 1 then, 0 when the tables are plain affine (P-256)
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
const QCTX_ISO: usize = 92;
const QCTX_U: usize = 1456;

/** D = 2Q at ACCV (Jacobian; its Z = Z_D at ACCV + 2·FE) and, at QODD, Q' = (Z_D²·x, Z_D³·y, 1): the
 *  image of the affine point q = (x, y) on the curve (x, y) ↦ (Z_D²x, Z_D³y), where D is the affine
 *  point (X_D, Y_D) read at ACCV. Both tables below start from here. */
function imageOf2Q_var(cv: usize, q: usize): void {
  let zd = ACCV + 2 * FE, z2 = ZPOW, z3 = ZPOW + FE;
  pt_fromAffine(cv, ACCV, q);
  pt_dbl(cv, ACCV, ACCV);
  fe_sqr(cv, z2, zd);
  fe_mul(cv, z3, z2, zd);
  fe_mul(cv, QODD, q, z2);
  fe_mul(cv, QODD + FE, q + FE, z3);
  fe_setOne(cv, QODD + 2 * FE);
}

/** The odd multiples Q, 3Q, …, 15Q of the affine point q into the affine table t (8 entries).
 *  D = 2Q = (X_D, Y_D, Z_D) is made affine without an inversion by moving to the isomorphic curve
 *  (x, y) ↦ (Z_D²·x, Z_D³·y), where D is (X_D, Y_D) and Q is Q' = (Z_D²·x, Z_D³·y): the multiples
 *  are built there with mixed additions (8M + 3S instead of full Jacobian ones; the addition
 *  formulas involve neither a nor b, so they hold on the image curve), and a point (X, Y, Z) of
 *  the image is (X, Y, Z·Z_D) on the curve. No exceptional case: (2i − 1)Q ≠ ±2Q for i < 8. */
function oddMultiples_var(cv: usize, t: usize, q: usize): void {
  let zd = ACCV + 2 * FE;
  imageOf2Q_var(cv, q);
  for (let i: usize = 1; i < 8; i++) pt_madd(cv, QODD + JAC * i, QODD + JAC * (i - 1), ACCV);
  for (let i: usize = 0; i < 8; i++) fe_mul(cv, QODD + JAC * i + 2 * FE, QODD + JAC * i + 2 * FE, zd);
  pt_batchToAffine(cv, t, QODD, 8, PREFIX);
  if (DEBUG) {
    assert(fe_equal(cv, t, q) && fe_equal(cv, t + FE, q + FE), 'odd multiples: the first entry is not Q');
    for (let i: usize = 0; i < 8; i++) assert(pt_isOnCurve(cv, t + AFF * i), 'odd multiples: an entry is off the curve');
  }
}

const ZR: usize = memory.data(<i32>(8 * FE), 16); //  Z ratios of oddMultiplesIso_var
const SC: usize = memory.data(<i32>(3 * FE), 16); //  its running scale s, s², s³

/** secp256k1: the odd multiples Q, 3Q, …, 15Q of the affine point q as one effective-affine table:
 *  t[i] = (u²·x_i, u³·y_i), the image of (2i + 1)Q under (x, y) ↦ (u²x, u³y), with u written at u.
 *  Built as in oddMultiples_var on the image curve of 2Q, then every entry is brought to the last
 *  one's Z by the Z ratios of the additions (s = Z_7 / Z_i: X·s², Y·s³), so the entries share
 *  u = Z_7·Z_D and no inversion is needed; verification runs on that image curve (its a is still
 *  0) and multiplies the result's Z by u at the end. */
function oddMultiplesIso_var(cv: usize, t: usize, q: usize, u: usize): void {
  let zd = ACCV + 2 * FE;
  imageOf2Q_var(cv, q);
  for (let i: usize = 1; i < 8; i++) pt_maddZr(cv, QODD + JAC * i, QODD + JAC * (i - 1), ACCV, ZR + FE * i);
  memory.copy(t + AFF * 7, QODD + JAC * 7, AFF);
  let sc = SC, s2 = SC + FE, s3 = SC + 2 * FE;
  copy40(sc, ZR + FE * 7);
  for (let i = 6; i >= 0; i--) {
    let k = <usize>i;
    if (i < 6) fe_mul(cv, sc, sc, ZR + FE * (k + 1));
    fe_sqr(cv, s2, sc);
    fe_mul(cv, s3, s2, sc);
    fe_mul(cv, t + AFF * k, QODD + JAC * k, s2);
    fe_mul(cv, t + AFF * k + FE, QODD + JAC * k + FE, s3);
  }
  fe_mul(cv, u, QODD + JAC * 7 + 2 * FE, zd);
  if (DEBUG) {
    fe_sqr(cv, s2, u);
    fe_mul(cv, s3, s2, u);
    fe_mul(cv, s2, s2, q);
    fe_mul(cv, s3, s3, q + FE);
    assert(fe_equal(cv, t, s2) && fe_equal(cv, t + FE, s3), 'effective-affine table: the first entry is not the image of Q');
  }
}

/** Fill T1 (and on secp256k1 T2 = λ·T1) for the affine point Q already stored in ctx. */
export function qctxPrepare_var(cv: usize, ctx: usize): void {
  if (isK1(cv)) oddMultiplesIso_var(cv, ctx + QCTX_T1, ctx + QCTX_Q, ctx + QCTX_U);
  else oddMultiples_var(cv, ctx + QCTX_T1, ctx + QCTX_Q);
  store<u32>(ctx + QCTX_ISO, isK1(cv) ? 1 : 0);
  if (isK1(cv)) {
    for (let j: usize = 0; j < 8; j++) {
      let e = ctx + QCTX_T1 + AFF * j, f = ctx + QCTX_T2 + AFF * j;
      fe_mul(cv, f, e, FP_BETA);
      memory.copy(f + FE, e + FE, FE);
    }
    store<u32>(ctx + QCTX_STATE, 2);
  } else store<u32>(ctx + QCTX_STATE, 1);
}

/** P-256: add the 2^128·Q table (128 doublings, paid once per cached key), state 2. */
export function qctxUpgrade_var(cv: usize, ctx: usize): void {
  pt_fromAffine(cv, ACCV, ctx + QCTX_Q);
  for (let i = 0; i < 128; i++) pt_dbl(cv, ACCV, ACCV);
  pt_toAffine(cv, NEGA, ACCV);
  oddMultiples_var(cv, ctx + QCTX_T2, NEGA);
  store<u32>(ctx + QCTX_STATE, 2);
}

/** r = u1·G + u2·Q (Jacobian); u1, u2 as 32 big-endian bytes (< n); Q from a prepared context.
 *  Strauss–Shamir over wNAF digits (window 8 for G from the generated tables, 5 for Q). Four
 *  ~128-bit streams when available: on secp256k1 via the GLV endomorphism (G, λG, Q, λQ), on
 *  P-256 (state 2) by splitting the scalars at bit 128 (G, 2^128·G, Q, 2^128·Q); both halve the
 *  doublings. Variable time: only for public inputs. */
export function mulDouble_var(cv: usize, r: usize, u1: usize, u2: usize, ctx: usize): void {
  if (DEBUG) {
    verifyScBytes(cv, u1);
    verifyScBytes(cv, u2);
    assert(load<u32>(ctx + QCTX_STATE) != 0, 'verification context not prepared');
  }
  let t1 = ctx + QCTX_T1, t2 = ctx + QCTX_T2;
  let streams = 2;
  let n1: i32, n2: i32, n3: i32 = 0, n4: i32 = 0;
  let f1: u32 = 0, f2: u32 = 0;
  let g1 = gBig_var(cv), g2 = g128Wnaf(cv), w3: u32 = 8;
  if (isK1(cv)) {
    g2 = GBIG_LAM;
    w3 = GW;
    f1 = glvSplit_var(cv, u1, SPLIT, SPLIT + 32);
    f2 = glvSplit_var(cv, u2, SPLIT + 64, SPLIT + 96);
    streams = 4;
  } else if (load<u32>(ctx + QCTX_STATE) == 2) {
    split128(SPLIT, u1);
    split128(SPLIT + 64, u2);
    streams = 4;
  }
  if (streams == 4) {
    n1 = wnaf_var(WNAF1, SPLIT, GW);
    n3 = wnaf_var(WNAF3, SPLIT + 32, w3);
    n2 = wnaf_var(WNAF2, SPLIT + 64, 5);
    n4 = wnaf_var(WNAF4, SPLIT + 96, 5);
  } else {
    n1 = wnaf_var(WNAF1, u1, GW);
    n2 = wnaf_var(WNAF2, u2, 5);
  }
  let top = max(max(n1, n2), max(n3, n4));
  pt_setInf(cv, r);
  let inf = true;
  let neg1 = (f1 & 1) != 0, neg3 = (f1 & 2) != 0, neg2 = (f2 & 1) != 0, neg4 = (f2 & 2) != 0;
  if (load<u32>(ctx + QCTX_ISO) != 0) {
    // secp256k1: the sum runs on the image curve of the effective-affine Q tables (u at ctx)
    let u = ctx + QCTX_U;
    fe_sqr(cv, UP, u);
    fe_mul(cv, UP + FE, UP, u);
    for (let i = top - 1; i >= 0; i--) {
      if (!inf) pt_dbl(cv, r, r);
      let d = <i32>load<i16>(WNAF1 + 2 * <usize>i);
      if (d != 0) inf = addWnafIso_var(cv, r, d, g1, neg1, inf, u);
      d = <i32>load<i16>(WNAF2 + 2 * <usize>i);
      if (d != 0) inf = addWnaf_var(cv, r, d, t1, neg2, inf);
      d = <i32>load<i16>(WNAF3 + 2 * <usize>i);
      if (d != 0) inf = addWnafIso_var(cv, r, d, g2, neg3, inf, u);
      d = <i32>load<i16>(WNAF4 + 2 * <usize>i);
      if (d != 0) inf = addWnaf_var(cv, r, d, t2, neg4, inf);
    }
    fe_mul(cv, r + 2 * FE, r + 2 * FE, u); //  (X, Y, Z) on the image is (X, Y, Z·u) on the curve
    return;
  }
  for (let i = top - 1; i >= 0; i--) {
    if (!inf) pt_dbl(cv, r, r);
    let d = <i32>load<i16>(WNAF1 + 2 * <usize>i);
    if (d != 0) inf = addWnaf_var(cv, r, d, g1, neg1, inf);
    d = <i32>load<i16>(WNAF2 + 2 * <usize>i);
    if (d != 0) inf = addWnaf_var(cv, r, d, t1, neg2, inf);
    if (streams == 4) {
      d = <i32>load<i16>(WNAF3 + 2 * <usize>i);
      if (d != 0) inf = addWnaf_var(cv, r, d, g2, neg3, inf);
      d = <i32>load<i16>(WNAF4 + 2 * <usize>i);
      if (d != 0) inf = addWnaf_var(cv, r, d, t2, neg4, inf);
    }
  }
}

// ---- hot keys: a full fixed-window table of Q ----
// For a key that verifies often (API-key stamps), a table laid out like G_COMB: entry (w, d) =
// d·64^w·Q, w < 43, d = 1..32, affine. With it, u1·G + u2·Q needs no doubling at all: each
// scalar is recoded into 43 signed base-64 digits and every nonzero digit costs one mixed addition
// (≈ 86 in all, against 128 doublings and ≈ 70 additions over the wNAF tables). Building one costs
// about as much as 30 verifications; keycache.ts decides which keys get one.

export const HOT_TABLE_SIZE: usize = 43 * 32 * AFF;
const HJ: usize = memory.data(<i32>(<usize>32 * JAC), 16); //   one window's multiples, Jacobian
const HPRE: usize = memory.data(<i32>(<usize>32 * FE), 16); //  batch-inversion prefix products
const HB: usize = memory.data(<i32>JAC, 16); //          64^w·Q
const DIG1: usize = memory.data(48, 16); //              signed digits of u1 (i8)
const DIG2: usize = memory.data(48, 16); //              signed digits of u2 (i8)

/** Fills the table at t (HOT_TABLE_SIZE bytes) for the affine point q. */
export function hotBuild_var(cv: usize, t: usize, q: usize): void {
  pt_fromAffine(cv, HB, q);
  for (let w: usize = 0; w < 43; w++) {
    pt_copy(HJ, HB);
    pt_dbl(cv, HJ + JAC, HB);
    for (let j: usize = 2; j < 32; j++) pt_add_var(cv, HJ + JAC * j, HJ + JAC * (j - 1), HB);
    if (w < 42) pt_dbl(cv, HB, HJ + JAC * 31); // 64·(64^w·Q)
    pt_batchToAffine(cv, t + <usize>32 * AFF * w, HJ, 32, HPRE);
  }
}

/** r += d·(entry |d| of the 32-entry window at table), d ≠ 0. */
// @ts-ignore: decorator
@inline
function addComb_var(cv: usize, r: usize, d: i32, table: usize): void {
  let e = table + AFF * <usize>((d < 0 ? -d : d) - 1);
  if (d < 0) {
    pt_negAffine(cv, NEGA, e);
    e = NEGA;
  }
  pt_madd_var(cv, r, r, e);
}

/** r = u1·G + u2·Q (Jacobian) over G_COMB and Q's hot table qt; u1, u2 as 32 big-endian bytes (< n).
 *  Variable time: only for public inputs. */
export function mulDoubleHot_var(cv: usize, r: usize, u1: usize, u2: usize, qt: usize): void {
  if (DEBUG) {
    verifyScBytes(cv, u1);
    verifyScBytes(cv, u2);
  }
  comb6Digits(DIG1, u1, SCW);
  comb6Digits(DIG2, u2, SCW);
  pt_setInf(cv, r);
  let gt = gComb(cv);
  for (let w: usize = 0; w < 43; w++) {
    let d = <i32>load<i8>(DIG1 + w);
    if (d != 0) addComb_var(cv, r, d, gt);
    d = <i32>load<i8>(DIG2 + w);
    if (d != 0) addComb_var(cv, r, d, qt);
    gt += 32 * AFF;
    qt += 32 * AFF;
  }
}
