// ECDSA verification and public-key recovery: variable time, public inputs only. Verification
// takes the key's context from the cache (keycache.ts) and computes u1·G + u2·Q over its hot
// table when it has one (muldouble.ts); the x(R) ≡ r (mod n) test is done in Jacobian
// coordinates (X = r'·Z² for r' ∈ {r, r + n}) without an inversion.
import { scN } from './curve';
import { sc_fromBytes, sc_toBytes, sc_isZero, sc_isHigh, sc_mul, sc_neg, sc_toMont, sc_invMont } from './scalar';
import { fe_fromBytes, fe_sqr, fe_mul, fe_equal } from './field';
import { AFF, pt_toAffine, pt_isInf } from './point';
import { mulDouble_var, mulDoubleHot_var, qctxPrepare_var, QCTX_SIZE, QCTX_Q } from './muldouble';
import { keyContext_var, hotTable_var } from './keycache';
import { encodePoint, decompress_var } from './codec';
import { FE, limbsToBytes } from './limbs';
import { OK, E_PUBLIC_KEY, E_SIGNATURE, E_RECOVERY_ID } from './layout';
import {
  EC_E as E, EC_RS as RS, EC_SS as SS, EC_W1 as W1, EC_W2 as W2, EC_W3 as W3, EC_PJ as PJ, EC_PA as PA, EC_QA as QA, EC_XB as XB, EC_UB1 as UB1, EC_UB2 as UB2, EC_FX as FX, EC_FT as FT, EC_NB as NB,
} from './layout';

const RCTX: usize = memory.data(<i32>QCTX_SIZE, 16); // recovery: context of R (not cached)

/** r, s from 64 bytes; returns 1 if both are in [1, n). */
function loadRS(cv: usize, sig: usize): u32 {
  let bad = sc_fromBytes(cv, RS, sig) | sc_isZero(RS) | sc_fromBytes(cv, SS, sig + 32) | sc_isZero(SS);
  return bad ^ 1;
}

/** 32-byte big-endian a + n → out; returns the carry. */
function addN(cv: usize, out: usize, a: usize): u32 {
  limbsToBytes(NB, scN(cv));
  let c: u32 = 0;
  for (let i: i32 = 31; i >= 0; i--) {
    let t = <u32>load<u8>(a + <usize>i) + <u32>load<u8>(NB + <usize>i) + c;
    store<u8>(out + <usize>i, <u8>t);
    c = t >> 8;
  }
  return c;
}

/** Verify r‖s at sig for the digest at dig and the SEC1 key at pub. OK if valid. Variable time. */
export function ecdsaVerify_var(cv: usize, sig: usize, dig: usize, pub: usize, pubLen: u32, strictLowS: bool): u32 {
  if (pubLen != 33 && pubLen != 65) return E_PUBLIC_KEY;
  let ctx = keyContext_var(cv, pub, pubLen);
  if (ctx == 0) return E_PUBLIC_KEY;
  if (!loadRS(cv, sig)) return E_SIGNATURE;
  if (strictLowS && sc_isHigh(cv, SS)) return E_SIGNATURE;
  sc_fromBytes(cv, E, dig);
  sc_toMont(cv, W1, SS);
  sc_invMont(cv, W1, W1); //          s⁻¹·R
  sc_mul(cv, W2, W1, E); //           u1 = e/s
  sc_mul(cv, W3, W1, RS); //          u2 = r/s
  sc_toBytes(UB1, W2);
  sc_toBytes(UB2, W3);
  let hot = hotTable_var(ctx);
  if (hot != 0) mulDoubleHot_var(cv, PJ, UB1, UB2, hot);
  else mulDouble_var(cv, PJ, UB1, UB2, ctx);
  if (pt_isInf(cv, PJ)) return E_SIGNATURE;
  // x(R) ≡ r (mod n)  ⇔  X == r'·Z² for r' ∈ {r, r + n} with r' < p
  fe_sqr(cv, FT, PJ + 2 * FE);
  fe_fromBytes(cv, FX, sig); // r < n < p
  fe_mul(cv, FX, FX, FT);
  if (fe_equal(cv, FX, PJ)) return OK;
  if (addN(cv, UB1, sig) != 0) return E_SIGNATURE;
  if (!fe_fromBytes(cv, FX, UB1)) return E_SIGNATURE;
  fe_mul(cv, FX, FX, FT);
  if (fe_equal(cv, FX, PJ)) return OK;
  return E_SIGNATURE;
}

/** Recover the public key from (digest, r‖s, recovery id). Variable time (public inputs). */
export function ecdsaRecover_var(cv: usize, dig: usize, sig: usize, recid: u32, compressed: bool, out: usize): u32 {
  if (recid > 3) return E_RECOVERY_ID;
  if (!loadRS(cv, sig)) return E_SIGNATURE;
  memory.copy(XB, sig, 32);
  if (recid & 2) {
    if (addN(cv, XB, sig) != 0) return E_SIGNATURE;
  }
  if (!fe_fromBytes(cv, PA, XB)) return E_SIGNATURE;
  if (!decompress_var(cv, PA, recid & 1)) return E_SIGNATURE;
  sc_fromBytes(cv, E, dig);
  sc_toMont(cv, W1, RS);
  sc_invMont(cv, W1, W1); //          r⁻¹·R
  sc_mul(cv, W2, W1, E);
  sc_neg(cv, W2, W2); //              u1 = −e/r
  sc_mul(cv, W3, W1, SS); //          u2 = s/r
  sc_toBytes(UB1, W2);
  sc_toBytes(UB2, W3);
  memory.copy(RCTX + QCTX_Q, PA, AFF);
  qctxPrepare_var(cv, RCTX);
  mulDouble_var(cv, PJ, UB1, UB2, RCTX);
  if (pt_isInf(cv, PJ)) return E_SIGNATURE;
  pt_toAffine(cv, QA, PJ);
  encodePoint(cv, out, QA, compressed);
  return OK;
}
