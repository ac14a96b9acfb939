// ECDSA signing: s = k⁻¹(e + r·d) with the RFC 6979 nonce, low-s normalisation and recovery id.
// Constant time in the key, the nonce and every intermediate; the only branches are the validity
// exits (key ∉ [1, n)) and the RFC 6979 retry (k ∉ [1, n), r = 0 or s = 0; probability ~2^-128).
// Digests are 32 bytes read big-endian and reduced mod n (bits2int for 256-bit curves).
import { sc_fromBytes, sc_toBytes, sc_isZero, sc_isHigh, sc_mul, sc_add, sc_neg, sc_toMont, sc_invMont, sc_copy } from './scalar';
import { fe_toBytes, fe_isOdd } from './field';
import { pt_toAffine } from './point';
import { mulG } from './mulg';
import { drbgInit, drbgNext } from './rfc6979';
import { loadPrivateKey } from './keys';
import { FE, cmov40 } from './limbs';
import { OK, E_PRIVATE_KEY, E_SIGN_FAILED } from './layout';
import {
  EC_D as D, EC_E as E, EC_K as K, EC_RS as RS, EC_SS as SS, EC_W1 as W1, EC_W2 as W2, EC_W3 as W3, EC_PJ as PJ, EC_PA as PA, EC_KB as KB, EC_XB as XB, EC_EB as EB,
} from './layout';
import { DEBUG } from './debug';

/** Sign the digest at dig with the key at key. Writes r‖s (64) at outSig and the recovery id at outRec. */
export function ecdsaSign(cv: usize, 
  dig: usize, key: usize, extra: usize, extraLen: u32, lowS: bool, outSig: usize, outRec: usize,
): u32 {
  if (!loadPrivateKey(cv, D, key)) return E_PRIVATE_KEY;
  sc_fromBytes(cv, E, dig);
  sc_toBytes(EB, E);
  drbgInit(key, EB, extra, extraLen);
  for (let attempt = 0; attempt < 64; attempt++) {
    drbgNext(KB);
    let over = sc_fromBytes(cv, K, KB);
    if (over | sc_isZero(K)) continue; // k ∉ [1, n): next candidate (public event, ~2^-128)
    if (DEBUG) assert(sc_isZero(D) == 0, 'signing with key 0');
    if (signWithNonce(cv, outSig, outRec, lowS)) return OK;
  }
  return E_SIGN_FAILED;
}

/** r, s, recovery id from D, E, K/KB. Returns false if r or s is 0 (caller retries). */
function signWithNonce(cv: usize, outSig: usize, outRec: usize, lowS: bool): bool {
  mulG(cv, PJ, KB);
  pt_toAffine(cv, PA, PJ);
  fe_toBytes(cv, XB, PA);
  let xOver = sc_fromBytes(cv, RS, XB); // r = x mod n
  if (sc_isZero(RS)) return false;
  let rec = fe_isOdd(cv, PA + FE) | (xOver << 1);
  // s = k⁻¹ (e + r d)
  sc_toMont(cv, W1, K);
  sc_invMont(cv, W1, W1); //       k⁻¹·R
  sc_toMont(cv, W2, RS);
  sc_mul(cv, W2, W2, D); //        r·d
  sc_add(cv, W2, W2, E); //        e + r·d
  sc_mul(cv, SS, W1, W2); //       s
  if (sc_isZero(SS)) return false;
  return finishSig(cv, outSig, outRec, rec, lowS);
}

/** finishSig for r, s held elsewhere (batch signing). */
export function finishSigFrom(cv: usize, r: usize, s: usize, outSig: usize, outRec: usize, rec: u32, lowS: bool): void {
  sc_copy(RS, r);
  sc_copy(SS, s);
  finishSig(cv, outSig, outRec, rec, lowS);
}

/** Low-s normalisation (constant time) and output of RS, SS. */
export function finishSig(cv: usize, outSig: usize, outRec: usize, rec: u32, lowS: bool): bool {
  let flip = sc_isHigh(cv, SS) & (lowS ? 1 : 0);
  sc_neg(cv, W3, SS);
  cmov40(SS, W3, flip);
  sc_toBytes(outSig, RS);
  sc_toBytes(outSig + 32, SS);
  store<u8>(outRec, <u8>(rec ^ flip));
  return true;
}
