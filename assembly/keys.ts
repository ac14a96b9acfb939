// Key operations: private-key parsing, public-key derivation, ECDH, the BIP32 tweaks and SEC1
// re-encoding. Constant time in private keys and tweaks (validity exits aside); a peer's or
// parent's public key arrives decoded (decodePoint_var in index.ts, public), except in
// convertPublicKey_var, which is variable time in its (public) key.
import { sc_fromBytes, sc_toBytes, sc_isZero, sc_add } from './scalar';
import { fe_toBytes } from './field';
import { pt_toAffine, pt_maddComplete, pt_isInf } from './point';
import { mulG } from './mulg';
import { mulP } from './mulp';
import { decodePoint_var, encodePoint } from './codec';
import { OK, E_PRIVATE_KEY, E_PUBLIC_KEY, E_TWEAK } from './layout';
import {
  EC_D as D, EC_W1 as W1, EC_PJ as PJ, EC_PA as PA, EC_QA as QA,
} from './layout';
export { EC_QA as QA } from './layout';

/** Parse a private key: D = key; returns 1 if 1 ≤ key < n. */
export function loadPrivateKey(cv: usize, d: usize, key: usize): u32 {
  let over = sc_fromBytes(cv, d, key);
  return (over | sc_isZero(d)) ^ 1;
}

/** Public key of the private key at key (33 or 65 bytes at out). */
export function getPublicKey(cv: usize, key: usize, compressed: bool, out: usize): u32 {
  if (!loadPrivateKey(cv, D, key)) return E_PRIVATE_KEY;
  mulG(cv, PJ, key);
  pt_toAffine(cv, PA, PJ);
  encodePoint(cv, out, PA, compressed);
  return OK;
}

/** ECDH: the x-coordinate of key·q (32 bytes at out) for an affine point q already decoded and
 *  validated by decodePoint_var (public). Constant time in key. */
export function ecdh(cv: usize, key: usize, q: usize, out: usize): u32 {
  if (!loadPrivateKey(cv, D, key)) return E_PRIVATE_KEY;
  mulP(cv, PJ, q, key);
  pt_toAffine(cv, PA, PJ);
  fe_toBytes(cv, out, PA);
  return OK;
}

/** (key + tweak) mod n → out. Constant time in key and tweak. */
export function privateKeyTweakAdd(cv: usize, key: usize, tweak: usize, out: usize): u32 {
  if (!loadPrivateKey(cv, D, key)) return E_PRIVATE_KEY;
  if (sc_fromBytes(cv, W1, tweak)) return E_TWEAK;
  sc_add(cv, W1, W1, D);
  if (sc_isZero(W1)) return E_TWEAK;
  sc_toBytes(out, W1);
  return OK;
}

/** q + tweak·G → out (SEC1) for an affine point q already decoded by decodePoint_var (public).
 *  Constant time in tweak: the addition is the complete masked one (tweak·G = ±q and tweak = 0
 *  are not branches); only a result at infinity (an invalid tweak) returns early. */
export function publicKeyTweakAdd(cv: usize, q: usize, tweak: usize, compressed: bool, out: usize): u32 {
  if (sc_fromBytes(cv, W1, tweak)) return E_TWEAK;
  mulG(cv, PJ, tweak);
  pt_maddComplete(cv, PJ, PJ, q);
  if (pt_isInf(cv, PJ)) return E_TWEAK;
  pt_toAffine(cv, PA, PJ);
  encodePoint(cv, out, PA, compressed);
  return OK;
}

/** Re-encodes the SEC1 key at pub (validated). Variable time in pub (public). */
export function convertPublicKey_var(cv: usize, pub: usize, pubLen: u32, compressed: bool, out: usize): u32 {
  if (!decodePoint_var(cv, QA, pub, pubLen)) return E_PUBLIC_KEY;
  encodePoint(cv, out, QA, compressed);
  return OK;
}
