/**
 * Turnkey envelopes, byte-compatible with @turnkey/crypto 2.13.2 (wire-compat §4):
 * signed `{version, data, dataSignature, enclaveQuorumPublic}` envelopes, export bundles,
 * import bundles + opening the client's `encryptedBundle`, credential bundles.
 * Signing (P-256, SHA-256 of the data bytes, DER) goes through the wasm core.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { createBase58check } from '@scure/base';
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex, hexToBytes, utf8, wipe } from '../encoding/bytes.js';
import {
  compactToDer,
  convertPublicKey,
  derToCompact,
  getPublicKey,
  isValidPrivateKey,
  sha256,
  signDigest,
  verifyDigest,
  type CurveId,
} from './curves.js';
import { generateKeyPair, turnkeyOpen, turnkeySeal, uncompressedP256 } from './hpke.js';
import { normalizeMnemonic, validateMnemonic } from './hd.js';

export const BUNDLE_VERSION = 'v1.0.0';

export interface SignedEnvelope {
  version: string;
  /** hex of the UTF-8 JSON payload */
  data: string;
  /** DER hex of ECDSA-P256 over SHA-256(data bytes) */
  dataSignature: string;
  /** 65-byte uncompressed signer public key, lowercase hex */
  enclaveQuorumPublic: string;
}

const b58c = createBase58check(nobleSha256);

function bundleHex(h: string, field: string): Uint8Array {
  try {
    return hexToBytes(h, field, false);
  } catch {
    throw new CryptoError('INVALID_BUNDLE', 'bundle field is not hex', field);
  }
}

/** Uncompressed lowercase hex of the bundle signer's public key (what `dangerouslyOverrideSignerPublicKey` takes). */
export function signerPublicKeyHex(signerPrivateKey: Uint8Array): string {
  return bytesToHex(getPublicKey('p256', signerPrivateKey, false));
}

/** Parse a client-supplied P-256 public key (hex, 33 or 65 bytes) → 65-byte uncompressed; errors name `field`. */
export function parseTargetPublicKey(hex: string, field = 'targetPublicKey'): Uint8Array {
  try {
    return uncompressedP256(hexToBytes(hex, field));
  } catch {
    throw new CryptoError('INVALID_PUBLIC_KEY', 'target public key must be a P-256 point in hex (33 or 65 bytes)', field);
  }
}

/** Sign a JSON payload into the envelope (returned as the JSON string the clients parse). */
export function signEnvelope(payload: string, signerPrivateKey: Uint8Array): string {
  const dataBytes = utf8(payload);
  const sig = signDigest('p256', sha256(dataBytes), signerPrivateKey);
  const env: SignedEnvelope = {
    version: BUNDLE_VERSION,
    data: bytesToHex(dataBytes),
    dataSignature: bytesToHex(compactToDer(sig.signature)),
    enclaveQuorumPublic: signerPublicKeyHex(signerPrivateKey),
  };
  return JSON.stringify(env);
}

/**
 * Verify an envelope the way the clients do (signer key string match, DER P-256 over SHA-256 of
 * the data bytes) and return the parsed payload. INVALID_BUNDLE otherwise.
 */
export function verifyEnvelope(bundle: string, expectedSignerPublicKeyHex: string, field = 'bundle'): Record<string, unknown> {
  const bad = (why: string) => new CryptoError('INVALID_BUNDLE', `invalid bundle: ${why}`, field);
  let env: SignedEnvelope;
  try {
    env = JSON.parse(bundle);
  } catch {
    throw bad('not JSON');
  }
  if (!env || typeof env.data !== 'string' || typeof env.dataSignature !== 'string' || typeof env.enclaveQuorumPublic !== 'string')
    throw bad('missing fields');
  if (env.enclaveQuorumPublic !== expectedSignerPublicKeyHex) throw bad('unexpected signer key');
  const dataBytes = bundleHex(env.data, field);
  let sig: Uint8Array;
  try {
    sig = derToCompact(hexToBytes(env.dataSignature, field, false));
  } catch {
    throw bad('malformed signature');
  }
  if (!verifyDigest('p256', sig, sha256(dataBytes), hexToBytes(env.enclaveQuorumPublic, field, false), { format: 'compact' }))
    throw bad('signature does not verify');
  try {
    const obj = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(dataBytes));
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new Error();
    return obj as Record<string, unknown>;
  } catch {
    throw bad('data is not a JSON object');
  }
}

// ---- export bundles -------------------------------------------------------------------------

export interface ExportBundleParams {
  /** The plaintext: mnemonic UTF-8 for wallets, raw private key bytes for keys / wallet accounts. */
  plaintext: Uint8Array;
  /** The client's targetPublicKey (hex, compressed or uncompressed). */
  targetPublicKey: string;
  organizationId: string;
  signerPrivateKey: Uint8Array;
}

/** export_wallet / export_private_key / export_wallet_account bundle. */
export function createExportBundle(p: ExportBundleParams): string {
  const target = parseTargetPublicKey(p.targetPublicKey);
  const { encappedPublic, ciphertext } = turnkeySeal(p.plaintext, target);
  const payload = JSON.stringify({
    encappedPublic: bytesToHex(encappedPublic),
    ciphertext: bytesToHex(ciphertext),
    organizationId: p.organizationId,
  });
  return signEnvelope(payload, p.signerPrivateKey);
}

/** Wallet export: plaintext = mnemonic (optionally "\n" + passphrase) as UTF-8. */
export function createWalletExportBundle(p: Omit<ExportBundleParams, 'plaintext'> & { mnemonic: string; passphrase?: string }): string {
  const text = p.passphrase ? `${p.mnemonic}\n${p.passphrase}` : p.mnemonic;
  const pt = utf8(text);
  try {
    return createExportBundle({ ...p, plaintext: pt });
  } finally {
    wipe(pt);
  }
}

/** Private key / wallet account export: plaintext = raw 32-byte private key (Ed25519: the seed). */
export function createPrivateKeyExportBundle(p: Omit<ExportBundleParams, 'plaintext'> & { privateKey: Uint8Array }): string {
  return createExportBundle({ ...p, plaintext: p.privateKey });
}

/** Decrypt an export bundle (the client side; used by tests and tools). */
export function decryptExportBundle(bundle: string, embeddedPrivateKey: Uint8Array, organizationId: string, signerPublicKeyHex: string): Uint8Array {
  const data = verifyEnvelope(bundle, signerPublicKeyHex, 'exportBundle');
  if (data.organizationId !== organizationId) throw new CryptoError('INVALID_BUNDLE', 'organization id mismatch', 'exportBundle');
  if (typeof data.encappedPublic !== 'string' || typeof data.ciphertext !== 'string')
    throw new CryptoError('INVALID_BUNDLE', 'missing encappedPublic/ciphertext', 'exportBundle');
  let enc: Uint8Array;
  try {
    enc = uncompressedP256(bundleHex(data.encappedPublic, 'exportBundle'));
  } catch {
    throw new CryptoError('INVALID_BUNDLE', 'encappedPublic is not a P-256 point', 'exportBundle');
  }
  return turnkeyOpen(enc, bundleHex(data.ciphertext, 'exportBundle'), embeddedPrivateKey);
}

// ---- import bundles ---------------------------------------------------------------------------

export interface ImportTarget {
  /** The signed envelope returned by init_import_* (`importBundle`). */
  importBundle: string;
  /** The target private key that must be kept (encrypted) until import_* arrives. */
  targetPrivateKey: Uint8Array;
  /** 65-byte uncompressed target public key. */
  targetPublicKey: Uint8Array;
}

/**
 * init_import_wallet / init_import_private_key: fresh target key + signed {targetPublic,
 * organizationId, userId}; init_otp's otpEncryptionTargetBundle has the same form without userId.
 */
export function createImportBundle(p: {
  organizationId: string;
  userId?: string;
  signerPrivateKey: Uint8Array;
  /** for tests / re-signing: an existing target private key */
  targetPrivateKey?: Uint8Array;
}): ImportTarget {
  const kp = p.targetPrivateKey
    ? { privateKey: p.targetPrivateKey, publicKey: getPublicKey('p256', p.targetPrivateKey, false) }
    : generateKeyPair();
  const payload = JSON.stringify({
    targetPublic: bytesToHex(kp.publicKey),
    organizationId: p.organizationId,
    ...(p.userId !== undefined ? { userId: p.userId } : {}),
  });
  return { importBundle: signEnvelope(payload, p.signerPrivateKey), targetPrivateKey: kp.privateKey, targetPublicKey: kp.publicKey };
}

/** Open the client's `encryptedBundle` (`{"encappedPublic","ciphertext"}` JSON) with the target private key. */
export function openEncryptedBundle(encryptedBundle: string, targetPrivateKey: Uint8Array, field = 'encryptedBundle'): Uint8Array {
  let obj: { encappedPublic?: unknown; ciphertext?: unknown };
  try {
    obj = JSON.parse(encryptedBundle);
  } catch {
    throw new CryptoError('INVALID_BUNDLE', 'encrypted bundle is not JSON', field);
  }
  if (!obj || typeof obj.encappedPublic !== 'string' || typeof obj.ciphertext !== 'string')
    throw new CryptoError('INVALID_BUNDLE', 'encrypted bundle needs encappedPublic and ciphertext', field);
  let enc: Uint8Array;
  try {
    enc = uncompressedP256(bundleHex(obj.encappedPublic, field));
  } catch {
    throw new CryptoError('INVALID_BUNDLE', 'encappedPublic is not a P-256 point', field);
  }
  const ct = bundleHex(obj.ciphertext, field);
  try {
    return turnkeyOpen(enc, ct, targetPrivateKey);
  } catch (e) {
    if (e instanceof CryptoError && e.code === 'DECRYPTION_FAILED') throw new CryptoError('DECRYPTION_FAILED', 'encrypted bundle does not decrypt with the import target key', field);
    throw e;
  }
}

/** import_wallet: returns the mnemonic (and optional passphrase after a newline); INVALID_MNEMONIC if not valid English BIP39. */
export function openImportedWallet(encryptedBundle: string, targetPrivateKey: Uint8Array, field = 'encryptedBundle'): { mnemonic: string; passphrase?: string } {
  const pt = openEncryptedBundle(encryptedBundle, targetPrivateKey, field);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(pt);
  } catch {
    throw new CryptoError('INVALID_MNEMONIC', 'imported wallet is not UTF-8', field);
  } finally {
    wipe(pt);
  }
  const nl = text.indexOf('\n');
  const mnemonic = normalizeMnemonic(nl >= 0 ? text.slice(0, nl) : text);
  const passphrase = nl >= 0 ? text.slice(nl + 1) : undefined;
  if (!validateMnemonic(mnemonic)) throw new CryptoError('INVALID_MNEMONIC', 'imported wallet is not a valid mnemonic', field);
  return passphrase ? { mnemonic, passphrase } : { mnemonic };
}

/** import_private_key: returns the 32-byte key, validated for `curve`. */
export function openImportedPrivateKey(encryptedBundle: string, targetPrivateKey: Uint8Array, curve: CurveId, field = 'encryptedBundle'): Uint8Array {
  const pt = openEncryptedBundle(encryptedBundle, targetPrivateKey, field);
  if (pt.length !== 32 || !isValidPrivateKey(curve, pt)) {
    wipe(pt);
    throw new CryptoError('INVALID_PRIVATE_KEY', 'imported private key is not a valid 32-byte key for the curve', field);
  }
  return pt;
}

// ---- credential bundles (§4.2) -------------------------------------------------------------

/** bs58check(compressed enc (33) ‖ ciphertext): the credential bundle for email/otp/oauth/session flows. */
export function createCredentialBundle(plaintext: Uint8Array, targetPublicKey: string): string {
  const target = parseTargetPublicKey(targetPublicKey);
  const { encappedPublic, ciphertext } = turnkeySeal(plaintext, target);
  const enc33 = convertPublicKey('p256', encappedPublic, true);
  const payload = new Uint8Array(33 + ciphertext.length);
  payload.set(enc33, 0);
  payload.set(ciphertext, 33);
  return b58c.encode(payload);
}

/** Inverse of createCredentialBundle (what @turnkey/crypto decryptCredentialBundle does). */
export function decryptCredentialBundle(bundle: string, receiverPrivateKey: Uint8Array): Uint8Array {
  let b: Uint8Array;
  try {
    b = b58c.decode(bundle);
  } catch {
    throw new CryptoError('INVALID_BUNDLE', 'credential bundle is not base58check', 'credentialBundle');
  }
  if (b.length <= 33) throw new CryptoError('INVALID_BUNDLE', 'credential bundle too short', 'credentialBundle');
  return turnkeyOpen(b.subarray(0, 33), b.subarray(33), receiverPrivateKey);
}
