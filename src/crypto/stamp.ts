/**
 * Stamp signature verification over the exact raw body bytes (the X-Stamp header is parsed in
 * http/stamp.ts).
 * One verifier per scheme. ECDSA stamps (P-256, secp256k1, secp256k1 EIP-191) are verified by the
 * wasm core: it caches the decoded key, and a key that stamps often gets a full fixed-window table
 * (assembly/mult.ts), after which a P-256 check costs ≈ 50 µs against ≈ 85–115 µs for node:crypto
 * with a cached KeyObject (bench/core.ts). Ed25519 uses node:crypto. Without build/kmas.wasm
 * the ECDSA schemes fall back to node:crypto (P-256, secp256k1) and @noble/curves (EIP-191).
 */
import { createHash, createPublicKey, verify as nodeVerify, type KeyObject } from 'node:crypto';
import type { Core, CurveCore } from '../core/api.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';

export type StampScheme =
  | 'SIGNATURE_SCHEME_TK_API_P256'
  | 'SIGNATURE_SCHEME_TK_API_SECP256K1'
  | 'SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191'
  | 'SIGNATURE_SCHEME_TK_API_ED25519';

export interface Stamp {
  /** Lowercase hex. */
  publicKey: string;
  scheme: StampScheme;
  /** Lowercase hex. */
  signature: string;
}

/** The curve of an API key (the API's `API_KEY_CURVE_*`). */
export type StampCurve = 'API_KEY_CURVE_P256' | 'API_KEY_CURVE_SECP256K1' | 'API_KEY_CURVE_ED25519';

/** Which registered API key curve each scheme uses. */
export const SCHEME_CURVE: Record<StampScheme, StampCurve> = {
  SIGNATURE_SCHEME_TK_API_P256: 'API_KEY_CURVE_P256',
  SIGNATURE_SCHEME_TK_API_SECP256K1: 'API_KEY_CURVE_SECP256K1',
  SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191: 'API_KEY_CURVE_SECP256K1',
  SIGNATURE_SCHEME_TK_API_ED25519: 'API_KEY_CURVE_ED25519',
};

/** The wasm core (its curves and SHA-256), when it loads. */
let wasmCore: Pick<Core, 'secp256k1' | 'p256' | 'sha256'> | undefined;
try {
  wasmCore = (await import('../core/node.js')).core;
} catch {
  wasmCore = undefined;
}

/** Which implementation verifies each curve (reported at start-up). */
export const VERIFIER_BACKENDS = {
  p256: wasmCore ? 'wasm core' : 'node:crypto',
  secp256k1: wasmCore ? 'wasm core' : 'node:crypto',
  secp256k1Eip191: wasmCore ? 'wasm core' : '@noble/curves',
  ed25519: 'node:crypto',
} as const;

/** The core's verdict for a 64-byte r‖s over a digest, or undefined without the core. */
function coreVerify(curve: CurveCore | undefined, compact: Uint8Array, digest: Uint8Array, publicKeyHex: string): boolean | undefined {
  if (!curve) return undefined;
  try {
    return curve.verify(compact, digest, Buffer.from(publicKeyHex, 'hex'), { format: 'compact' });
  } catch {
    return false;
  }
}

/**
 * SHA-256 of a body: in the core when it loads. node:crypto's createHash makes a native object per
 * call, and the garbage collector then runs a weak callback for each: under load that made the
 * young-generation collections of the thread that checks stamps twice as long.
 */
const sha256 = (body: Uint8Array): Uint8Array => (wasmCore ? wasmCore.sha256(body) : createHash('sha256').update(body).digest());

/**
 * DER SEQUENCE{INTEGER r, INTEGER s} → 64-byte r‖s. Lenient on one point only: integers may carry
 * non-minimal leading zero bytes, because @turnkey/crypto's toDerSignature (used by the
 * wallet-stamper for EIP-191 stamps) always writes 32-byte integers. Negative integers, values
 * longer than 32 bytes, long-form lengths beyond 0x81 and trailing bytes are refused.
 */
export function derToCompact(sig: Uint8Array): Uint8Array | undefined {
  if (sig.length < 8 || sig.length > 80 || sig[0] !== 0x30) return undefined;
  let pos = 1;
  let len = sig[pos++]!;
  if (len === 0x81) len = sig[pos++]!;
  else if (len > 0x7f) return undefined;
  if (pos + len !== sig.length) return undefined;
  const out = new Uint8Array(64);
  for (let i = 0; i < 2; i++) {
    if (sig[pos++] !== 0x02) return undefined;
    const l = sig[pos++];
    if (l === undefined || l === 0 || l > 0x7f || pos + l > sig.length) return undefined;
    let start = pos;
    const end = pos + l;
    if ((sig[start]! & 0x80) !== 0) return undefined; // negative
    while (start < end && sig[start] === 0) start++;
    if (end - start > 32) return undefined;
    out.set(sig.subarray(start, end), i * 32 + 32 - (end - start));
    pos = end;
  }
  return pos === sig.length ? out : undefined;
}

// SubjectPublicKeyInfo prefixes: SEQUENCE { AlgorithmIdentifier, BIT STRING 00 || key }.
const SPKI_P256_COMPRESSED = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex');
const SPKI_SECP256K1_COMPRESSED = Buffer.from('3036301006072a8648ce3d020106052b8104000a032200', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

const keyCache = new Map<string, KeyObject | null>();
const KEY_CACHE_MAX = 10_000;

function cachedKey(cacheKey: string, make: () => KeyObject): KeyObject | null {
  const hit = keyCache.get(cacheKey);
  if (hit !== undefined) return hit;
  let k: KeyObject | null;
  try { k = make(); } catch { k = null; }
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
  keyCache.set(cacheKey, k);
  return k;
}

const COMPRESSED_KEY = /^0[23][0-9a-f]{64}$/;

/**
 * ECDSA over SHA-256 of the body, DER signature, high-s accepted, with a compressed SEC1 key: on
 * the wasm core's `curve`, else node:crypto (KeyObjects cached per public key).
 */
function ecdsaSha256Verifier(curve: 'p256' | 'secp256k1', spki: Buffer): (body: Uint8Array, signatureHex: string, publicKeyHex: string) => boolean {
  return (body, signatureHex, publicKeyHex) => {
    if (!COMPRESSED_KEY.test(publicKeyHex)) return false;
    const compact = derToCompact(Buffer.from(signatureHex, 'hex'));
    if (!compact) return false;
    const viaCore = coreVerify(wasmCore?.[curve], compact, sha256(body), publicKeyHex);
    if (viaCore !== undefined) return viaCore;
    const key = cachedKey(`${curve}:${publicKeyHex}`, () =>
      createPublicKey({ key: Buffer.concat([spki, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' }));
    if (!key) return false;
    try {
      return nodeVerify('sha256', body, { key, dsaEncoding: 'ieee-p1363' }, compact);
    } catch { return false; }
  };
}

/** ECDSA P-256, SHA-256 over the body, DER signature, high-s accepted. */
export const verifyP256 = ecdsaSha256Verifier('p256', SPKI_P256_COMPRESSED);

/** ECDSA secp256k1, SHA-256 over the body, DER signature, high-s accepted. */
export const verifySecp256k1 = ecdsaSha256Verifier('secp256k1', SPKI_SECP256K1_COMPRESSED);

/** ECDSA secp256k1 over keccak256("\x19Ethereum Signed Message:\n" + len + body) (EIP-191), DER signature. */
export function verifySecp256k1Eip191(body: Uint8Array, signatureHex: string, publicKeyHex: string): boolean {
  if (!COMPRESSED_KEY.test(publicKeyHex)) return false;
  const prefix = Buffer.from(`\x19Ethereum Signed Message:\n${body.length}`, 'utf8');
  const digest = keccak_256(Buffer.concat([prefix, body]));
  const compact = derToCompact(Buffer.from(signatureHex, 'hex'));
  if (!compact) return false;
  const viaCore = coreVerify(wasmCore?.secp256k1, compact, digest, publicKeyHex);
  if (viaCore !== undefined) return viaCore;
  try {
    return secp256k1.verify(compact, digest, Buffer.from(publicKeyHex, 'hex'),
      { prehash: false, lowS: false, format: 'compact' });
  } catch { return false; }
}

/** Pure Ed25519 over the body; raw 32-byte public key and 64-byte signature. */
export function verifyEd25519(body: Uint8Array, signatureHex: string, publicKeyHex: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(publicKeyHex) || signatureHex.length !== 128) return false;
  const key = cachedKey(`ed:${publicKeyHex}`, () =>
    createPublicKey({ key: Buffer.concat([SPKI_ED25519, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' }));
  if (!key) return false;
  try {
    return nodeVerify(null, body, key, Buffer.from(signatureHex, 'hex'));
  } catch { return false; }
}

const VERIFIERS: Record<StampScheme, (body: Uint8Array, sig: string, pub: string) => boolean> = {
  SIGNATURE_SCHEME_TK_API_P256: verifyP256,
  SIGNATURE_SCHEME_TK_API_SECP256K1: verifySecp256k1,
  SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191: verifySecp256k1Eip191,
  SIGNATURE_SCHEME_TK_API_ED25519: verifyEd25519,
};

/** True when the stamp's signature is valid for these exact body bytes. */
export function verifyStamp(stamp: Stamp, body: Uint8Array): boolean {
  return VERIFIERS[stamp.scheme](body, stamp.signature, stamp.publicKey);
}
