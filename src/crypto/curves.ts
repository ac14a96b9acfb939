/**
 * Curve façade: secp256k1 and P-256 go through the wasm core (design §1); Ed25519 through
 * @noble/curves (the core has no Ed25519). Every error is a CryptoError (core codes kept).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { core, CoreError, type CurveCore } from '../core/node.js';
import { CryptoError, type CryptoErrorCode } from '../encoding/errors.js';
import type { RecoverableSignature } from '../encoding/signature.js';

export type EcdsaCurve = 'secp256k1' | 'p256';
export type CurveId = EcdsaCurve | 'ed25519';
export type ApiCurve = 'CURVE_SECP256K1' | 'CURVE_P256' | 'CURVE_ED25519';

export type { RecoverableSignature };

const API_TO_ID: Record<ApiCurve, CurveId> = {
  CURVE_SECP256K1: 'secp256k1',
  CURVE_P256: 'p256',
  CURVE_ED25519: 'ed25519',
};

/** `CURVE_SECP256K1` → `secp256k1` etc.; throws UNSUPPORTED_CURVE naming `field`. */
export function curveFromApi(curve: string, field = 'curve'): CurveId {
  const id = (API_TO_ID as Record<string, CurveId | undefined>)[curve];
  if (!id) throw new CryptoError('UNSUPPORTED_CURVE', `unsupported curve: ${String(curve).slice(0, 64)}`, field);
  return id;
}

export function curveToApi(curve: CurveId): ApiCurve {
  return curve === 'secp256k1' ? 'CURVE_SECP256K1' : curve === 'p256' ? 'CURVE_P256' : 'CURVE_ED25519';
}

export function isEcdsaCurve(curve: CurveId): curve is EcdsaCurve {
  return curve === 'secp256k1' || curve === 'p256';
}

function ecdsa(curve: CurveId): CurveCore {
  if (curve === 'secp256k1') return core.secp256k1;
  if (curve === 'p256') return core.p256;
  throw new CryptoError('UNSUPPORTED_CURVE', `operation not available for ${curve}`);
}

/** Run a core call, turning CoreError into CryptoError with the same code. */
function guard<T>(fn: () => T, field?: string): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof CryptoError) throw e;
    if (e instanceof CoreError) throw new CryptoError(e.code as CryptoErrorCode, e.message, field);
    throw e;
  }
}

function checkEd25519Key(k: Uint8Array): void {
  if (!(k instanceof Uint8Array) || k.length !== 32)
    throw new CryptoError('INVALID_PRIVATE_KEY', 'Ed25519 private key must be 32 bytes');
}

/** Public key: ECDSA SEC1 (compressed 33 bytes by default, or 65), Ed25519 raw 32 bytes. */
export function getPublicKey(curve: CurveId, privateKey: Uint8Array, compressed = true): Uint8Array {
  if (curve === 'ed25519') {
    checkEd25519Key(privateKey);
    return ed25519.getPublicKey(privateKey);
  }
  return guard(() => ecdsa(curve).getPublicKey(privateKey, compressed));
}

export function isValidPrivateKey(curve: CurveId, privateKey: Uint8Array): boolean {
  if (curve === 'ed25519') return privateKey instanceof Uint8Array && privateKey.length === 32;
  return ecdsa(curve).isValidPrivateKey(privateKey);
}

export function isValidPublicKey(curve: CurveId, publicKey: Uint8Array): boolean {
  if (curve === 'ed25519') {
    if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) return false;
    try {
      ed25519.Point.fromBytes(publicKey);
      return true;
    } catch {
      return false;
    }
  }
  return ecdsa(curve).isValidPublicKey(publicKey);
}

/** A fresh random private key (CSPRNG; re-drawn until valid for the curve). */
export function generatePrivateKey(curve: CurveId): Uint8Array {
  for (;;) {
    const k = new Uint8Array(32);
    globalThis.crypto.getRandomValues(k);
    if (isValidPrivateKey(curve, k)) return k;
  }
}

/** SEC1 decode, validate and re-encode. */
export function convertPublicKey(curve: EcdsaCurve, publicKey: Uint8Array, compressed: boolean): Uint8Array {
  return guard(() => ecdsa(curve).convertPublicKey(publicKey, compressed));
}

/** RFC 6979 ECDSA over a 32-byte digest, low-s, with recovery id. */
export function signDigest(curve: EcdsaCurve, digest: Uint8Array, privateKey: Uint8Array): RecoverableSignature {
  return guard(() => ecdsa(curve).sign(digest, privateKey));
}

/** Batch signing through the core's batch path; one key for all digests or one per digest. */
export function signDigests(
  curve: EcdsaCurve,
  digests: Uint8Array[],
  privateKeys: Uint8Array | Uint8Array[],
): RecoverableSignature[] {
  if (Array.isArray(privateKeys) && privateKeys.length !== digests.length)
    throw new CryptoError('INVALID_LENGTH', 'one private key per digest expected');
  if (digests.length === 0) return [];
  return guard(() => ecdsa(curve).signBatch(digests, privateKeys));
}

/** Verify a compact (64-byte) or DER ECDSA signature over a digest; never throws. Pass `format`
 *  whenever DER may arrive: without it a 64-byte DER signature is ambiguous and gives false. */
export function verifyDigest(
  curve: EcdsaCurve,
  signature: Uint8Array,
  digest: Uint8Array,
  publicKey: Uint8Array,
  opts?: { lowS?: boolean; format?: 'compact' | 'der' },
): boolean {
  try {
    return ecdsa(curve).verify(signature, digest, publicKey, opts);
  } catch {
    return false;
  }
}

export function recoverPublicKey(
  curve: EcdsaCurve,
  digest: Uint8Array,
  signature: Uint8Array,
  recovery: number,
  compressed = true,
): Uint8Array {
  return guard(() => ecdsa(curve).recoverPublicKey(digest, signature, recovery, compressed));
}

/** ECDH: x-coordinate (32 bytes) of privateKey·publicKey. */
export function ecdh(curve: EcdsaCurve, privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  return guard(() => ecdsa(curve).ecdh(privateKey, publicKey));
}

/** (k + t) mod n. */
export function privateKeyTweakAdd(curve: EcdsaCurve, privateKey: Uint8Array, tweak: Uint8Array): Uint8Array {
  return guard(() => ecdsa(curve).privateKeyTweakAdd(privateKey, tweak));
}

/** P + t·G. */
export function publicKeyTweakAdd(curve: EcdsaCurve, publicKey: Uint8Array, tweak: Uint8Array, compressed = true): Uint8Array {
  return guard(() => ecdsa(curve).publicKeyTweakAdd(publicKey, tweak, compressed));
}

/** Ed25519 (RFC 8032, pure) signature of the message bytes: 64 bytes R‖S. */
export function signEd25519(message: Uint8Array, privateKey: Uint8Array): Uint8Array {
  checkEd25519Key(privateKey);
  return ed25519.sign(message, privateKey);
}

export function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, message, publicKey);
  } catch {
    return false;
  }
}

/** SHA-256 inside the wasm core. */
export function sha256(data: Uint8Array): Uint8Array {
  return core.sha256(data);
}

// ---- DER (ASN.1 ECDSA-Sig-Value) for 64-byte compact signatures -------------------------

function derInt(x: Uint8Array): Uint8Array {
  let i = 0;
  while (i < x.length - 1 && x[i] === 0) i++;
  const body = x.subarray(i);
  const pad = body[0] & 0x80 ? 1 : 0;
  const out = new Uint8Array(2 + pad + body.length);
  out[0] = 0x02;
  out[1] = pad + body.length;
  out.set(body, 2 + pad);
  return out;
}

/** 64-byte r‖s → DER SEQUENCE { INTEGER r, INTEGER s }. */
export function compactToDer(signature: Uint8Array): Uint8Array {
  if (signature.length !== 64) throw new CryptoError('INVALID_SIGNATURE', 'compact signature must be 64 bytes');
  const r = derInt(signature.subarray(0, 32));
  const s = derInt(signature.subarray(32));
  const out = new Uint8Array(2 + r.length + s.length);
  out[0] = 0x30;
  out[1] = r.length + s.length;
  out.set(r, 2);
  out.set(s, 2 + r.length);
  return out;
}

/** Strict DER → 64-byte r‖s. */
export function derToCompact(der: Uint8Array): Uint8Array {
  const bad = () => new CryptoError('INVALID_SIGNATURE', 'malformed DER signature');
  if (der.length < 8 || der[0] !== 0x30 || der[1] !== der.length - 2) throw bad();
  const out = new Uint8Array(64);
  let o = 2;
  for (let k = 0; k < 2; k++) {
    if (der[o] !== 0x02) throw bad();
    const len = der[o + 1];
    if (len === 0 || len > 33 || o + 2 + len > der.length) throw bad();
    let v = der.subarray(o + 2, o + 2 + len);
    if (v[0] & 0x80) throw bad();
    if (v[0] === 0 && len > 1 && !(v[1] & 0x80)) throw bad();
    if (v[0] === 0 && len > 1) v = v.subarray(1);
    if (v.length > 32) throw bad();
    out.set(v, k * 32 + 32 - v.length);
    o += 2 + len;
  }
  if (o !== der.length) throw bad();
  return out;
}
