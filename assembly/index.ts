// The exported pointer ABI of the kmas signing core (the only module the host instantiates).
//
// Protocol: the host writes inputs into the IN region (ioIn()) at the offsets documented in
// layout.ts / assembly/README.md, calls one function with a curve id (0 = secp256k1, 1 = P-256)
// and small integer arguments, and reads results from OUT (ioOut()). Every function returns a
// status code (0 = ok); nothing throws across the boundary and nothing is allocated.
// Secret-bearing scratch and the secret input slots are zeroed before secret operations return.
import { curveOf } from './curve';
import * as L from './layout';
import * as sign_ from './sign';
import * as ecverify from './ecverify';
import * as keycache from './keycache';
import * as keys from './keys';
import { signBatchImpl } from './batch';
import { decodePoint_var } from './codec';
import { sha256Init, sha256Update, sha256Final, hmacSha256Init, hmacSha256Final } from './hash/sha256';

export function ioIn(): usize {
  return L.IN;
}
export function ioOut(): usize {
  return L.OUT;
}
export function ioSize(): u32 {
  return <u32>L.IO_SIZE;
}
export function batchMax(): u32 {
  return L.BATCH_MAX;
}

function wipe(): void {
  memory.fill(L.SECRET, 0, L.SECRET_SCRATCH_SIZE);
  memory.fill(L.IN, 0, <usize>L.IN_EXTRA + <usize>L.EXTRA_MAX);
}

/** sign: IN_DIGEST, IN_KEY, IN_EXTRA (extraLen bytes); flags bit 0 = lowS. → OUT_SIG, OUT_REC */
export function sign(curve: u32, flags: u32, extraLen: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  if (extraLen > L.EXTRA_MAX) return L.E_LENGTH;
  let st = sign_.ecdsaSign(cv,
    L.IN + L.IN_DIGEST, L.IN + L.IN_KEY, L.IN + L.IN_EXTRA, extraLen, (flags & 1) != 0,
    L.OUT + L.OUT_SIG, L.OUT + L.OUT_REC,
  );
  wipe();
  return st;
}

/** signBatch: IN_B_DIGESTS (32·count), IN_B_KEYS (32·count, or 32 if oneKey) → OUT_B_SIGS, OUT_B_RECS.
 *  On error the index of the failing item is available from batchErrorIndex(). Always low-s. */
export function signBatch(curve: u32, count: u32, oneKey: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  if (count == 0 || count > L.BATCH_MAX) return L.E_LENGTH;
  let st = signBatchImpl(cv, count, oneKey != 0);
  wipe();
  memory.fill(L.IN + L.IN_B_KEYS, 0, 32 * <usize>L.BATCH_MAX);
  memory.fill(L.BATCH_SCRATCH, 0, L.BATCH_STRIDE * <usize>count);
  return st;
}
export { batchErrorIndex } from './batch';

/** verify: IN_SIG (r‖s), IN_DIGEST, IN_PUB (pubLen); flags bit 0 = strict low-s. 0 = valid. */
export function verify(curve: u32, flags: u32, pubLen: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  return ecverify.ecdsaVerify_var(cv, L.IN + L.IN_SIG, L.IN + L.IN_DIGEST, L.IN + L.IN_PUB, pubLen, (flags & 1) != 0);
}

/** verifyCacheState: IN_PUB (pubLen) → 0 not cached, 1 cached, 2 cached with a hot table (diagnostic). */
export function verifyCacheState(curve: u32, pubLen: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return 0;
  return keycache.keyCacheState_var(cv, L.IN + L.IN_PUB, pubLen);
}

/** setVerifyCachePolicy: a cached key gets a hot table after `after` verifications, at most one
 *  build per `buildEvery` verifications (defaults 32 and 512). */
export function setVerifyCachePolicy(after: u32, buildEvery: u32): void {
  keycache.setHotPolicy(after, buildEvery);
}

/** getPublicKey: IN_KEY → OUT_PUB (33 or 65 bytes) */
export function getPublicKey(curve: u32, compressed: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  let st = keys.getPublicKey(cv, L.IN + L.IN_KEY, compressed != 0, L.OUT + L.OUT_PUB);
  wipe();
  return st;
}

/** recover: IN_DIGEST, IN_SIG → OUT_PUB */
export function recover(curve: u32, recid: u32, compressed: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  return ecverify.ecdsaRecover_var(cv, L.IN + L.IN_DIGEST, L.IN + L.IN_SIG, recid, compressed != 0, L.OUT + L.OUT_PUB);
}

/** ecdh: IN_KEY, IN_PUB (pubLen) → OUT_SECRET (32-byte x-coordinate) */
export function ecdh(curve: u32, pubLen: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  let st: u32;
  if (!keys.loadPrivateKey(cv, L.SECRET, L.IN + L.IN_KEY)) st = L.E_PRIVATE_KEY;
  else if (!decodePoint_var(cv, keys.QA, L.IN + L.IN_PUB, pubLen)) st = L.E_PUBLIC_KEY; // public input
  else st = keys.ecdh(cv, L.IN + L.IN_KEY, keys.QA, L.OUT + L.OUT_SECRET);
  wipe();
  return st;
}

/** IN_KEY valid (1 ≤ k < n)? */
export function isValidPrivateKey(curve: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  let st = keys.loadPrivateKey(cv, L.SECRET, L.IN + L.IN_KEY) ? L.OK : L.E_PRIVATE_KEY;
  wipe();
  return st;
}

/** IN_PUB (pubLen) valid? */
export function isValidPublicKey(curve: u32, pubLen: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  return decodePoint_var(cv, keys.QA, L.IN + L.IN_PUB, pubLen) ? L.OK : L.E_PUBLIC_KEY;
}

/** IN_PUB (pubLen) → OUT_PUB re-encoded */
export function convertPublicKey(curve: u32, pubLen: u32, compressed: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  return keys.convertPublicKey_var(cv, L.IN + L.IN_PUB, pubLen, compressed != 0, L.OUT + L.OUT_PUB);
}

/** IN_KEY + IN_TWEAK mod n → OUT_SECRET */
export function privateKeyTweakAdd(curve: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  let st = keys.privateKeyTweakAdd(cv, L.IN + L.IN_KEY, L.IN + L.IN_TWEAK, L.OUT + L.OUT_SECRET);
  wipe();
  return st;
}

/** IN_PUB (pubLen) + IN_TWEAK·G → OUT_PUB */
export function publicKeyTweakAdd(curve: u32, pubLen: u32, compressed: u32): u32 {
  let cv = curveOf(curve);
  if (cv == 0) return L.E_CURVE;
  let st = decodePoint_var(cv, keys.QA, L.IN + L.IN_PUB, pubLen) // public input
    ? keys.publicKeyTweakAdd(cv, keys.QA, L.IN + L.IN_TWEAK, compressed != 0, L.OUT + L.OUT_PUB)
    : L.E_PUBLIC_KEY;
  wipe();
  return st;
}

// ---- hashing (streaming through IN, so any length works) ----
const HASH_CTX: usize = memory.data(256, 16);

/** Start SHA-256 (no key) or HMAC-SHA256 with the key of keyLen bytes at IN (keyLen ≤ 64; longer
 *  keys are hashed first by the host, as RFC 2104 prescribes). mode 0 = SHA-256, 1 = HMAC. */
export function hashInit(mode: u32, keyLen: u32): u32 {
  if (mode == 0) {
    sha256Init(HASH_CTX);
    return L.OK;
  }
  if (keyLen > 64) return L.E_LENGTH;
  hmacSha256Init(HASH_CTX, L.IN, keyLen);
  memory.fill(L.IN, 0, 64);
  return L.OK;
}
/** Absorb len bytes from IN. */
export function hashUpdate(len: u32): u32 {
  if (<usize>len > L.IO_SIZE) return L.E_LENGTH;
  sha256Update(HASH_CTX, L.IN, len);
  return L.OK;
}
/** Finish into OUT (32 bytes). mode as in hashInit. */
export function hashFinal(mode: u32): u32 {
  if (mode == 0) sha256Final(HASH_CTX, L.OUT);
  else hmacSha256Final(HASH_CTX, L.OUT);
  memory.fill(HASH_CTX, 0, 256);
  return L.OK;
}
