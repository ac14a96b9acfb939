// ECDSA over the selected curve: RFC 6979 deterministic signing (HMAC-SHA256 DRBG, optional
// extra data k' per §3.6), low-s normalisation, recovery ids, verification, public-key recovery,
// ECDH and the BIP32 tweak helpers. Digests are 32 bytes read as a big-endian integer and
// reduced mod n (for 256-bit curves bits2int is the identity). Secret paths are constant time
// except the data-independent retry of RFC 6979 (probability ~2^-128).
import { hmacSha256Init, hmacSha256Update, hmacSha256Final } from './hash/sha256';
import { SC_N, IS_K1 } from './curve';
import {
  sc_fromBytes, sc_toBytes, sc_isZero, sc_isHigh, sc_mul, sc_add, sc_neg, sc_toMont, sc_invMont, sc_copy,
} from './scalar';
import { fe_fromBytes, fe_toBytes, fe_isOdd, fe_sqr, fe_mul, fe_equal } from './field';
import { AFF, pt_toAffine, pt_maddComplete, pt_isInf } from './point';
import {
  mulG, mulP, mulDouble_var, qctxPrepare_var, qctxUpgrade_var, QCTX_SIZE, QCTX_STATE, QCTX_KEY, QCTX_Q,
  QCTX_USES, QCTX_HOT, QCTX_REF, HOT_TABLE_SIZE, hotBuild_var, mulDoubleHot_var,
} from './mult';
import { decodePoint_var, encodePoint, decompress_var } from './codec';
import { FE, cmov40, limbsToBytes } from './limbs';
import { DEBUG } from './verify';
import {
  S_ECDSA, S_HMAC, OK, E_PRIVATE_KEY, E_PUBLIC_KEY, E_SIGNATURE, E_RECOVERY_ID, E_TWEAK, E_SIGN_FAILED,
} from './layout';

// secret scratch
const D: usize = S_ECDSA + 0; //      private key scalar
const E: usize = S_ECDSA + 40; //     digest scalar
const K: usize = S_ECDSA + 80; //     nonce scalar
const RS: usize = S_ECDSA + 120; //   r
const SS: usize = S_ECDSA + 160; //   s
const W1: usize = S_ECDSA + 200;
const W2: usize = S_ECDSA + 240;
const W3: usize = S_ECDSA + 280;
const PJ: usize = S_ECDSA + 320; //   Jacobian point (120)
const PA: usize = S_ECDSA + 448; //   affine point (80)
/** Affine point (80 bytes): a decoded public key (decodePoint_var's output for ecdh, the tweak). */
export const QA: usize = S_ECDSA + 528;
const KB: usize = S_ECDSA + 608; //   32 bytes
const XB: usize = S_ECDSA + 640; //   32 bytes
const EB: usize = S_ECDSA + 672; //   32 bytes
const UB1: usize = S_ECDSA + 704; //  32 bytes
const UB2: usize = S_ECDSA + 736; //  32 bytes
const FX: usize = S_ECDSA + 768; //   field element
const FT: usize = S_ECDSA + 808; //   field element
const NB: usize = S_ECDSA + 848; //   32 bytes (n)

// RFC 6979 HMAC-DRBG state. CTXK holds the HMAC key schedule (inner/outer midstates) of the
// current K, cloned for every HMAC under that K instead of re-deriving it.
const RK: usize = S_HMAC + 0; //      K (32)
const RV: usize = S_HMAC + 32; //     V (32)
const RB: usize = S_HMAC + 64; //     1-byte separator
const CTX: usize = S_HMAC + 128; //   working HMAC ctx (224)
const CTXK: usize = S_HMAC + 384; //  HMAC ctx keyed with K (224)
const ZERO_KEY_CTX: usize = memory.data(224, 16); // HMAC ctx for K = 0^32 (public constant)
let zeroCtxReady = false;
let drbgFresh = true;

/** K ← HMAC_K(V ‖ sep ‖ x ‖ h ‖ extra), then re-key CTXK */
function drbgReseed(sep: u8, x: usize, h: usize, extra: usize, extraLen: u32): void {
  store<u8>(RB, sep);
  memory.copy(CTX, CTXK, 224);
  hmacSha256Update(CTX, RV, 32);
  hmacSha256Update(CTX, RB, 1);
  if (x != 0) {
    hmacSha256Update(CTX, x, 32);
    hmacSha256Update(CTX, h, 32);
    if (extraLen != 0) hmacSha256Update(CTX, extra, extraLen);
  }
  hmacSha256Final(CTX, RK);
  hmacSha256Init(CTXK, RK, 32);
}

/** V ← HMAC_K(V) */
function drbgStep(): void {
  memory.copy(CTX, CTXK, 224);
  hmacSha256Update(CTX, RV, 32);
  hmacSha256Final(CTX, RV);
}

/** RFC 6979 §3.2 steps b–f for private key bytes x and bits2octets(h1) = h. */
export function drbgInit(x: usize, h: usize, extra: usize, extraLen: u32): void {
  memory.fill(RV, 1, 32);
  memory.fill(RK, 0, 32);
  if (!zeroCtxReady) {
    hmacSha256Init(ZERO_KEY_CTX, RK, 32);
    zeroCtxReady = true;
  }
  memory.copy(CTXK, ZERO_KEY_CTX, 224);
  drbgReseed(0, x, h, extra, extraLen);
  drbgStep();
  drbgReseed(1, x, h, extra, extraLen);
  drbgStep();
  drbgFresh = true;
}

/** Next candidate T (32 bytes) into out (§3.2 step h, including the retry update). */
export function drbgNext(out: usize): void {
  if (!drbgFresh) {
    drbgReseed(0, 0, 0, 0, 0);
    drbgStep();
  }
  drbgFresh = false;
  drbgStep();
  memory.copy(out, RV, 32);
}

/** Parse a private key: D = key; returns 1 if 1 ≤ key < n. */
export function loadPrivateKey(d: usize, key: usize): u32 {
  let over = sc_fromBytes(d, key);
  return (over | sc_isZero(d)) ^ 1;
}

/** Sign the digest at dig with the key at key. Writes r‖s (64) at outSig and the recovery id at outRec. */
export function ecdsaSign(
  dig: usize, key: usize, extra: usize, extraLen: u32, lowS: bool, outSig: usize, outRec: usize,
): u32 {
  if (!loadPrivateKey(D, key)) return E_PRIVATE_KEY;
  sc_fromBytes(E, dig);
  sc_toBytes(EB, E);
  drbgInit(key, EB, extra, extraLen);
  for (let attempt = 0; attempt < 64; attempt++) {
    drbgNext(KB);
    let over = sc_fromBytes(K, KB);
    if (over | sc_isZero(K)) continue; // k ∉ [1, n): next candidate (public event, ~2^-128)
    if (DEBUG) assert(sc_isZero(D) == 0, 'signing with key 0');
    if (signWithNonce(outSig, outRec, lowS)) return OK;
  }
  return E_SIGN_FAILED;
}

/** r, s, recovery id from D, E, K/KB. Returns false if r or s is 0 (caller retries). */
function signWithNonce(outSig: usize, outRec: usize, lowS: bool): bool {
  mulG(PJ, KB);
  pt_toAffine(PA, PJ);
  fe_toBytes(XB, PA);
  let xOver = sc_fromBytes(RS, XB); // r = x mod n
  if (sc_isZero(RS)) return false;
  let rec = fe_isOdd(PA + FE) | (xOver << 1);
  // s = k⁻¹ (e + r d)
  sc_toMont(W1, K);
  sc_invMont(W1, W1); //       k⁻¹·R
  sc_toMont(W2, RS);
  sc_mul(W2, W2, D); //        r·d
  sc_add(W2, W2, E); //        e + r·d
  sc_mul(SS, W1, W2); //       s
  if (sc_isZero(SS)) return false;
  return finishSig(outSig, outRec, rec, lowS);
}

/** finishSig for r, s held elsewhere (batch signing). */
export function finishSigFrom(r: usize, s: usize, outSig: usize, outRec: usize, rec: u32, lowS: bool): void {
  sc_copy(RS, r);
  sc_copy(SS, s);
  finishSig(outSig, outRec, rec, lowS);
}

/** Low-s normalisation (constant time) and output of RS, SS. */
export function finishSig(outSig: usize, outRec: usize, rec: u32, lowS: bool): bool {
  let flip = sc_isHigh(SS) & (lowS ? 1 : 0);
  sc_neg(W3, SS);
  cmov40(SS, W3, flip);
  sc_toBytes(outSig, RS);
  sc_toBytes(outSig + 32, SS);
  store<u8>(outRec, <u8>(rec ^ flip));
  return true;
}

/** Public key of the private key at key (33 or 65 bytes at out). */
export function getPublicKey(key: usize, compressed: bool, out: usize): u32 {
  if (!loadPrivateKey(D, key)) return E_PRIVATE_KEY;
  mulG(PJ, key);
  pt_toAffine(PA, PJ);
  encodePoint(out, PA, compressed);
  return OK;
}

/** r, s from 64 bytes; returns 1 if both are in [1, n). */
function loadRS(sig: usize): u32 {
  let bad = sc_fromBytes(RS, sig) | sc_isZero(RS) | sc_fromBytes(SS, sig + 32) | sc_isZero(SS);
  return bad ^ 1;
}

/** 32-byte big-endian a + n → out; returns the carry. */
function addN(out: usize, a: usize): u32 {
  limbsToBytes(NB, SC_N);
  let c: u32 = 0;
  for (let i: i32 = 31; i >= 0; i--) {
    let t = <u32>load<u8>(a + <usize>i) + <u32>load<u8>(NB + <usize>i) + c;
    store<u8>(out + <usize>i, <u8>t);
    c = t >> 8;
  }
  return c;
}

// Verification key cache (public data): the decoded point and its wNAF tables for CACHE_SLOTS
// distinct (curve, encoded key) pairs, so repeated verifications under the same key (API-key
// stamps) skip decoding and table building; on P-256 a key seen twice also gets its 2^128·Q table,
// which halves the doublings from then on. Replacement is CLOCK (second chance): a key verified
// since the hand last passed is kept, so keys in steady use survive a stream of one-off keys.
const CACHE_SLOTS: u32 = 64;
const CACHE: usize = memory.data(<i32>(QCTX_SIZE * <usize>CACHE_SLOTS), 16);
const RCTX: usize = memory.data(<i32>QCTX_SIZE, 16); // recovery: context of R (not cached)
let cacheNext: u32 = 0;

// Hot keys: a cached key that has verified HOT_AFTER times gets a full fixed-window table
// (mult.ts hotBuild_var, 110 KB; verification then needs no doubling), in one of HOT_SLOTS slots
// taken round-robin. A build costs about 30 verifications, so at most one runs per
// HOT_BUILD_EVERY verifications: keys taking turns can never spend more than a few percent of
// the time rebuilding tables for each other.
const HOT_SLOTS: u32 = 8;
let HOT_AFTER: u32 = 32;
let HOT_BUILD_EVERY: u32 = 512;
const HOT: usize = memory.data(<i32>(HOT_TABLE_SIZE * <usize>HOT_SLOTS), 16);
const HOT_OWNER: usize = memory.data(<i32>(4 * HOT_SLOTS), 16); // context holding each slot (0: free)
let hotNext: u32 = 0;
let sinceBuild: u32 = 512;

/** Sets when keys get a hot table (tests use 1 and 0 to give every key one on its second use). */
export function setHotPolicy(after: u32, buildEvery: u32): void {
  HOT_AFTER = max<u32>(after, 1);
  HOT_BUILD_EVERY = buildEvery;
  sinceBuild = buildEvery;
}

/** The cached context of the SEC1 key at pub on the selected curve, or 0. */
function findContext_var(pub: usize, pubLen: u32): usize {
  let curve: u32 = IS_K1 ? 0 : 1;
  for (let i: u32 = 0; i < CACHE_SLOTS; i++) {
    let c = CACHE + QCTX_SIZE * <usize>i;
    if (load<u32>(c + QCTX_STATE) == 0 || load<u32>(c) != curve || load<u32>(c, 4) != pubLen) continue;
    if (memory.compare(c + QCTX_KEY, pub, pubLen) == 0) return c;
  }
  return 0;
}

/** 0: the SEC1 key at pub is not in the verification cache; 1: cached; 2: cached with a hot table. */
export function keyCacheState_var(pub: usize, pubLen: u32): u32 {
  let c = findContext_var(pub, pubLen);
  if (c == 0) return 0;
  return load<u32>(c + QCTX_HOT) != 0 ? 2 : 1;
}

/** The hot table of context c, or 0. */
// @ts-ignore: decorator
@inline
function hotTable_var(c: usize): usize {
  let slot = load<u32>(c + QCTX_HOT);
  return slot == 0 ? 0 : HOT + HOT_TABLE_SIZE * <usize>(slot - 1);
}

/** Releases the hot slot of context c, if it has one. */
function dropHot_var(c: usize): void {
  let slot = load<u32>(c + QCTX_HOT);
  if (slot == 0) return;
  store<u32>(HOT_OWNER + 4 * <usize>(slot - 1), 0);
  store<u32>(c + QCTX_HOT, 0);
}

/** Gives context c the next hot slot (its previous holder loses it and starts counting again). */
function makeHot_var(c: usize): void {
  let slot = hotNext;
  hotNext = (hotNext + 1) % HOT_SLOTS;
  let owner = <usize>load<u32>(HOT_OWNER + 4 * <usize>slot);
  if (owner != 0) {
    store<u32>(owner + QCTX_HOT, 0);
    store<u32>(owner + QCTX_USES, 0);
  }
  hotBuild_var(HOT + HOT_TABLE_SIZE * <usize>slot, c + QCTX_Q);
  store<u32>(HOT_OWNER + 4 * <usize>slot, <u32>c);
  store<u32>(c + QCTX_HOT, slot + 1);
  sinceBuild = 0;
}

/** Context for the SEC1 key at pub (cached), or 0 if the key is invalid. Variable time. */
function keyContext_var(pub: usize, pubLen: u32): usize {
  if (sinceBuild < HOT_BUILD_EVERY) sinceBuild++;
  let c = findContext_var(pub, pubLen);
  if (c != 0) {
    if (load<u32>(c + QCTX_STATE) == 1) qctxUpgrade_var(c);
    store<u32>(c + QCTX_REF, 1);
    let uses = load<u32>(c + QCTX_USES);
    if (uses < HOT_AFTER) store<u32>(c + QCTX_USES, ++uses);
    if (uses >= HOT_AFTER && load<u32>(c + QCTX_HOT) == 0 && sinceBuild >= HOT_BUILD_EVERY) makeHot_var(c);
    return c;
  }
  if (!decodePoint_var(QA, pub, pubLen)) return 0;
  c = CACHE + QCTX_SIZE * <usize>cacheNext;
  while (load<u32>(c + QCTX_STATE) != 0 && load<u32>(c + QCTX_REF) != 0) {
    store<u32>(c + QCTX_REF, 0); // second chance: taken next time round unless verified again
    cacheNext = (cacheNext + 1) % CACHE_SLOTS;
    c = CACHE + QCTX_SIZE * <usize>cacheNext;
  }
  cacheNext = (cacheNext + 1) % CACHE_SLOTS;
  dropHot_var(c);
  store<u32>(c + QCTX_REF, 0);
  store<u32>(c + QCTX_STATE, 0);
  store<u32>(c + QCTX_USES, 1);
  store<u32>(c, IS_K1 ? 0 : 1);
  store<u32>(c, pubLen, 4);
  memory.copy(c + QCTX_KEY, pub, pubLen);
  memory.copy(c + QCTX_Q, QA, AFF);
  qctxPrepare_var(c);
  return c;
}

/** Verify r‖s at sig for the digest at dig and the SEC1 key at pub. OK if valid. Variable time. */
export function ecdsaVerify_var(sig: usize, dig: usize, pub: usize, pubLen: u32, strictLowS: bool): u32 {
  if (pubLen != 33 && pubLen != 65) return E_PUBLIC_KEY;
  let ctx = keyContext_var(pub, pubLen);
  if (ctx == 0) return E_PUBLIC_KEY;
  if (!loadRS(sig)) return E_SIGNATURE;
  if (strictLowS && sc_isHigh(SS)) return E_SIGNATURE;
  sc_fromBytes(E, dig);
  sc_toMont(W1, SS);
  sc_invMont(W1, W1); //          s⁻¹·R
  sc_mul(W2, W1, E); //           u1 = e/s
  sc_mul(W3, W1, RS); //          u2 = r/s
  sc_toBytes(UB1, W2);
  sc_toBytes(UB2, W3);
  let hot = hotTable_var(ctx);
  if (hot != 0) mulDoubleHot_var(PJ, UB1, UB2, hot);
  else mulDouble_var(PJ, UB1, UB2, ctx);
  if (pt_isInf(PJ)) return E_SIGNATURE;
  // x(R) ≡ r (mod n)  ⇔  X == r'·Z² for r' ∈ {r, r + n} with r' < p
  fe_sqr(FT, PJ + 2 * FE);
  fe_fromBytes(FX, sig); // r < n < p
  fe_mul(FX, FX, FT);
  if (fe_equal(FX, PJ)) return OK;
  if (addN(UB1, sig) != 0) return E_SIGNATURE;
  if (!fe_fromBytes(FX, UB1)) return E_SIGNATURE;
  fe_mul(FX, FX, FT);
  if (fe_equal(FX, PJ)) return OK;
  return E_SIGNATURE;
}

/** Recover the public key from (digest, r‖s, recovery id). Variable time (public inputs). */
export function ecdsaRecover_var(dig: usize, sig: usize, recid: u32, compressed: bool, out: usize): u32 {
  if (recid > 3) return E_RECOVERY_ID;
  if (!loadRS(sig)) return E_SIGNATURE;
  memory.copy(XB, sig, 32);
  if (recid & 2) {
    if (addN(XB, sig) != 0) return E_SIGNATURE;
  }
  if (!fe_fromBytes(PA, XB)) return E_SIGNATURE;
  if (!decompress_var(PA, recid & 1)) return E_SIGNATURE;
  sc_fromBytes(E, dig);
  sc_toMont(W1, RS);
  sc_invMont(W1, W1); //          r⁻¹·R
  sc_mul(W2, W1, E);
  sc_neg(W2, W2); //              u1 = −e/r
  sc_mul(W3, W1, SS); //          u2 = s/r
  sc_toBytes(UB1, W2);
  sc_toBytes(UB2, W3);
  memory.copy(RCTX + QCTX_Q, PA, AFF);
  qctxPrepare_var(RCTX);
  mulDouble_var(PJ, UB1, UB2, RCTX);
  if (pt_isInf(PJ)) return E_SIGNATURE;
  pt_toAffine(QA, PJ);
  encodePoint(out, QA, compressed);
  return OK;
}

/** ECDH: the x-coordinate of key·q (32 bytes at out) for an affine point q already decoded and
 *  validated by decodePoint_var (public). Constant time in key. */
export function ecdh(key: usize, q: usize, out: usize): u32 {
  if (!loadPrivateKey(D, key)) return E_PRIVATE_KEY;
  mulP(PJ, q, key);
  pt_toAffine(PA, PJ);
  fe_toBytes(out, PA);
  return OK;
}

/** (key + tweak) mod n → out. Constant time in key and tweak. */
export function privateKeyTweakAdd(key: usize, tweak: usize, out: usize): u32 {
  if (!loadPrivateKey(D, key)) return E_PRIVATE_KEY;
  if (sc_fromBytes(W1, tweak)) return E_TWEAK;
  sc_add(W1, W1, D);
  if (sc_isZero(W1)) return E_TWEAK;
  sc_toBytes(out, W1);
  return OK;
}

/** q + tweak·G → out (SEC1) for an affine point q already decoded by decodePoint_var (public).
 *  Constant time in tweak: the addition is the complete masked one (tweak·G = ±q and tweak = 0
 *  are not branches); only a result at infinity (an invalid tweak) returns early. */
export function publicKeyTweakAdd(q: usize, tweak: usize, compressed: bool, out: usize): u32 {
  if (sc_fromBytes(W1, tweak)) return E_TWEAK;
  mulG(PJ, tweak);
  pt_maddComplete(PJ, PJ, q);
  if (pt_isInf(PJ)) return E_TWEAK;
  pt_toAffine(PA, PJ);
  encodePoint(out, PA, compressed);
  return OK;
}

/** Re-encodes the SEC1 key at pub (validated). Variable time in pub (public). */
export function convertPublicKey_var(pub: usize, pubLen: u32, compressed: bool, out: usize): u32 {
  if (!decodePoint_var(QA, pub, pubLen)) return E_PUBLIC_KEY;
  encodePoint(out, QA, compressed);
  return OK;
}
