/**
 * sign_raw_payload(s) digest rules (wire-compat §2.7) and result formatting.
 *
 * ECDSA (secp256k1, P-256):
 *   encoding HEXADECIMAL (0x optional) | TEXT_UTF8  → bytes, then
 *     NO_OP: bytes must be exactly 32 (already a digest); SHA256; KECCAK256.
 *   EIP712 (typed-data JSON) / EIP7702_AUTHORIZATION (JSON {address, chainId, nonce}), secp256k1 only:
 *     the EIP-712 / EIP-7702 digest; hash function NO_OP (what @turnkey/viem sends) or KECCAK256.
 *   NOT_APPLICABLE is refused.
 * Ed25519: HEXADECIMAL | TEXT_UTF8 with NOT_APPLICABLE (or NO_OP): the bytes are signed as they are.
 * Result: r, s = 64 lowercase hex (no 0x), v = "00"/"01" (Ed25519: R, S halves, v "00").
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex, hexToBytes, utf8 } from '../encoding/bytes.js';
import { sha256, signDigest, signDigests, signEd25519, type CurveId, type RecoverableSignature } from './curves.js';
import { authorizationDigest, typedDataDigest } from '../chains/ethereum.js';

export const PAYLOAD_ENCODINGS = [
  'PAYLOAD_ENCODING_HEXADECIMAL',
  'PAYLOAD_ENCODING_TEXT_UTF8',
  'PAYLOAD_ENCODING_EIP712',
  'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION',
] as const;
export const HASH_FUNCTIONS = ['HASH_FUNCTION_NO_OP', 'HASH_FUNCTION_SHA256', 'HASH_FUNCTION_KECCAK256', 'HASH_FUNCTION_NOT_APPLICABLE'] as const;
export type PayloadEncoding = (typeof PAYLOAD_ENCODINGS)[number];
export type HashFunction = (typeof HASH_FUNCTIONS)[number];

export interface RawPayloadRequest {
  payload: string;
  encoding: string;
  hashFunction: string;
}

/** What gets signed: a 32-byte digest (ECDSA) or the message bytes (Ed25519). */
export type PreparedPayload = { kind: 'digest'; digest: Uint8Array } | { kind: 'message'; message: Uint8Array };

export interface RawSignature {
  r: string;
  s: string;
  v: string;
}

export interface FieldNames {
  payload?: string;
  encoding?: string;
  hashFunction?: string;
}

function payloadBytes(payload: string, encoding: PayloadEncoding, f: Required<FieldNames>): Uint8Array {
  if (typeof payload !== 'string') throw new CryptoError('INVALID_PAYLOAD', 'payload must be a string', f.payload);
  if (encoding === 'PAYLOAD_ENCODING_TEXT_UTF8') return utf8(payload);
  try {
    return hexToBytes(payload, f.payload);
  } catch {
    throw new CryptoError('INVALID_PAYLOAD', 'payload is not valid hex', f.payload);
  }
}

/** Apply the encoding and hash-function rules; typed errors name the offending field. */
export function preparePayload(curve: CurveId, req: RawPayloadRequest, fields: FieldNames = {}): PreparedPayload {
  const f: Required<FieldNames> = { payload: 'payload', encoding: 'encoding', hashFunction: 'hashFunction', ...fields };
  const encoding = req.encoding as PayloadEncoding;
  const hashFunction = req.hashFunction as HashFunction;
  if (!(PAYLOAD_ENCODINGS as readonly string[]).includes(encoding))
    throw new CryptoError('INVALID_ENCODING', `unknown payload encoding: ${String(req.encoding).slice(0, 64)}`, f.encoding);
  if (!(HASH_FUNCTIONS as readonly string[]).includes(hashFunction))
    throw new CryptoError('INVALID_HASH_FUNCTION', `unknown hash function: ${String(req.hashFunction).slice(0, 64)}`, f.hashFunction);
  if (typeof req.payload !== 'string') throw new CryptoError('INVALID_PAYLOAD', 'payload must be a string', f.payload);

  if (curve === 'ed25519') {
    if (hashFunction !== 'HASH_FUNCTION_NOT_APPLICABLE' && hashFunction !== 'HASH_FUNCTION_NO_OP')
      throw new CryptoError('UNSUPPORTED_COMBINATION', `${hashFunction} cannot be used with CURVE_ED25519 (use HASH_FUNCTION_NOT_APPLICABLE)`, f.hashFunction);
    if (encoding !== 'PAYLOAD_ENCODING_HEXADECIMAL' && encoding !== 'PAYLOAD_ENCODING_TEXT_UTF8')
      throw new CryptoError('UNSUPPORTED_COMBINATION', `${encoding} cannot be used with CURVE_ED25519`, f.encoding);
    return { kind: 'message', message: payloadBytes(req.payload, encoding, f) };
  }

  if (hashFunction === 'HASH_FUNCTION_NOT_APPLICABLE')
    throw new CryptoError('UNSUPPORTED_COMBINATION', 'HASH_FUNCTION_NOT_APPLICABLE is only for CURVE_ED25519', f.hashFunction);

  if (encoding === 'PAYLOAD_ENCODING_EIP712' || encoding === 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION') {
    if (curve !== 'secp256k1')
      throw new CryptoError('UNSUPPORTED_COMBINATION', `${encoding} needs a CURVE_SECP256K1 key`, f.encoding);
    if (hashFunction !== 'HASH_FUNCTION_NO_OP' && hashFunction !== 'HASH_FUNCTION_KECCAK256')
      throw new CryptoError('UNSUPPORTED_COMBINATION', `${encoding} is hashed by its own rules; use HASH_FUNCTION_NO_OP`, f.hashFunction);
    const digest = encoding === 'PAYLOAD_ENCODING_EIP712' ? typedDataDigest(req.payload, f.payload) : authorizationDigest(req.payload, f.payload);
    return { kind: 'digest', digest };
  }

  const bytes = payloadBytes(req.payload, encoding, f);
  switch (hashFunction) {
    case 'HASH_FUNCTION_NO_OP':
      if (bytes.length !== 32)
        throw new CryptoError('INVALID_PAYLOAD', `HASH_FUNCTION_NO_OP needs a 32-byte payload (got ${bytes.length} bytes)`, f.payload);
      return { kind: 'digest', digest: bytes };
    case 'HASH_FUNCTION_SHA256':
      return { kind: 'digest', digest: sha256(bytes) };
    case 'HASH_FUNCTION_KECCAK256':
      return { kind: 'digest', digest: keccak_256(bytes) };
  }
  throw new CryptoError('INVALID_HASH_FUNCTION', 'unreachable', f.hashFunction);
}

/** ECDSA result: r, s as 64 lowercase hex, v = recovery id as two hex digits. */
export function formatEcdsaSignature(sig: RecoverableSignature): RawSignature {
  return {
    r: bytesToHex(sig.signature.subarray(0, 32)),
    s: bytesToHex(sig.signature.subarray(32, 64)),
    v: sig.recovery.toString(16).padStart(2, '0'),
  };
}

/** Ed25519 result: R and S halves of the 64-byte signature, v "00". */
export function formatEd25519Signature(sig: Uint8Array): RawSignature {
  return { r: bytesToHex(sig.subarray(0, 32)), s: bytesToHex(sig.subarray(32, 64)), v: '00' };
}

/** sign_raw_payload: prepare + sign with the key (core for ECDSA). */
export function signRawPayload(curve: CurveId, privateKey: Uint8Array, req: RawPayloadRequest, fields?: FieldNames): RawSignature {
  const p = preparePayload(curve, req, fields);
  if (p.kind === 'message') return formatEd25519Signature(signEd25519(p.message, privateKey));
  return formatEcdsaSignature(signDigest(curve as 'secp256k1' | 'p256', p.digest, privateKey));
}

/**
 * sign_raw_payloads: all payloads with one key, ECDSA through the core's batch path. Errors name
 * the failing element, e.g. `payloads[3]`.
 */
export function signRawPayloads(
  curve: CurveId,
  privateKey: Uint8Array,
  payloads: string[],
  encoding: string,
  hashFunction: string,
  fieldPrefix = 'payloads',
  /** index of payloads[0] in the whole request (when this is a slice of it), for error fields */
  firstIndex = 0,
): RawSignature[] {
  if (!Array.isArray(payloads)) throw new CryptoError('INVALID_PAYLOAD', 'payloads must be an array', fieldPrefix);
  const prepared = payloads.map((payload, i) => preparePayload(curve, { payload, encoding, hashFunction }, { payload: `${fieldPrefix}[${firstIndex + i}]` }));
  if (curve === 'ed25519') {
    return prepared.map((p) => formatEd25519Signature(signEd25519((p as { message: Uint8Array }).message, privateKey)));
  }
  const digests = prepared.map((p) => (p as { digest: Uint8Array }).digest);
  const sigs = signDigests(curve, digests, privateKey);
  return sigs.map(formatEcdsaSignature);
}

