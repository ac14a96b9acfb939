/**
 * Account-level helpers for the activity handlers: derive wallet accounts from a seed and
 * compute a private key's addresses, validating every field and naming it in errors.
 */
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex } from '../encoding/bytes.js';
import { curveFromApi, getPublicKey, type CurveId } from './curves.js';
import { addressFromPublicKey, assertFormatFitsCurve } from './addresses.js';
import { deriveFromSeed, parsePath } from './hd.js';

export interface WalletAccountSpec {
  curve: string; // CURVE_SECP256K1 | CURVE_P256 | CURVE_ED25519
  pathFormat?: string; // PATH_FORMAT_BIP32
  path: string;
  addressFormat: string;
}

export interface DerivedAccount {
  curve: CurveId;
  /** the path as given (validated) */
  path: string;
  addressFormat: string;
  address: string;
  /** ECDSA: compressed SEC1 hex; Ed25519: 32-byte hex */
  publicKey: string;
}

/** Public key as stored in records: ECDSA compressed SEC1 hex, Ed25519 raw hex. */
export function publicKeyHex(curve: CurveId, publicKey: Uint8Array): string {
  return bytesToHex(publicKey);
}

/** Validate one account spec (curve, path format, path, address format) without deriving. */
export function validateAccountSpec(spec: WalletAccountSpec, prefix = 'accounts[0]'): { curve: CurveId; indices: number[] } {
  if (!spec || typeof spec !== 'object') throw new CryptoError('INVALID_PATH', 'account must be an object', prefix);
  const curve = curveFromApi(spec.curve, `${prefix}.curve`);
  if (spec.pathFormat !== undefined && spec.pathFormat !== 'PATH_FORMAT_BIP32')
    throw new CryptoError('INVALID_PATH', 'pathFormat must be PATH_FORMAT_BIP32', `${prefix}.pathFormat`);
  const indices = parsePath(spec.path, `${prefix}.path`);
  if (curve === 'ed25519' && indices.some((i) => i < 0x80000000))
    throw new CryptoError('INVALID_PATH', 'CURVE_ED25519 paths must be fully hardened', `${prefix}.path`);
  assertFormatFitsCurve(spec.addressFormat, curve, `${prefix}.addressFormat`);
  return { curve, indices };
}

/** Derive accounts from a BIP39 seed. Validates all specs before deriving any. */
export function deriveWalletAccounts(seed: Uint8Array, specs: WalletAccountSpec[], fieldPrefix = 'accounts'): DerivedAccount[] {
  if (!Array.isArray(specs)) throw new CryptoError('INVALID_PATH', 'accounts must be an array', fieldPrefix);
  const checked = specs.map((s, i) => validateAccountSpec(s, `${fieldPrefix}[${i}]`));
  return checked.map(({ curve, indices }, i) => {
    const key = deriveFromSeed(curve, seed, indices);
    try {
      const pub = key.publicKey;
      return {
        curve,
        path: specs[i].path,
        addressFormat: specs[i].addressFormat,
        address: addressFromPublicKey(specs[i].addressFormat, curve, pub, `${fieldPrefix}[${i}].addressFormat`),
        publicKey: publicKeyHex(curve, pub),
      };
    } finally {
      key.wipe();
    }
  });
}

/** Derive the private key of one account (for signing / export); the caller wipes it. */
export function deriveAccountPrivateKey(seed: Uint8Array, curve: CurveId, path: string): Uint8Array {
  const key = deriveFromSeed(curve, seed, path);
  const out = (key.privateKey as Uint8Array).slice();
  key.wipe();
  return out;
}

/** Addresses of a private key's public key in the given formats (create_private_keys). */
export function privateKeyAddresses(
  curve: CurveId,
  publicKey: Uint8Array,
  formats: string[],
  fieldPrefix = 'addressFormats',
): { format: string; address: string }[] {
  if (!Array.isArray(formats)) throw new CryptoError('UNSUPPORTED_ADDRESS_FORMAT', 'addressFormats must be an array', fieldPrefix);
  formats.forEach((f, i) => assertFormatFitsCurve(f, curve, `${fieldPrefix}[${i}]`));
  return formats.map((format, i) => ({ format, address: addressFromPublicKey(format, curve, publicKey, `${fieldPrefix}[${i}]`) }));
}

/** Public key of a stored private key, in record form. */
export function publicKeyHexFromPrivate(curve: CurveId, privateKey: Uint8Array): string {
  return publicKeyHex(curve, getPublicKey(curve, privateKey, true));
}

