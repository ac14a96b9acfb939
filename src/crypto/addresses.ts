/**
 * Addresses from public keys, and the address-format table (curve, default path, signing
 * defaults) of wire-compat §3.1.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256, sha3_256 } from '@noble/hashes/sha3.js';
import { blake2b } from '@noble/hashes/blake2.js';
import { base32nopad, base58, base58xrp, bech32, bech32m, createBase58check } from '@scure/base';
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex, concatBytes, utf8 } from '../encoding/bytes.js';
import { convertPublicKey, isValidPublicKey, publicKeyTweakAdd, type CurveId } from './curves.js';
import { hash160 } from './hd.js';
import { tronAddressOfRaw } from '../chains/tron.js';

const b58c = createBase58check(sha256);

export type Network = 'mainnet' | 'testnet' | 'signet' | 'regtest';
export type BitcoinScript = 'P2PKH' | 'P2SH' | 'P2WPKH' | 'P2WSH' | 'P2TR';

export interface AddressFormatInfo {
  /** The curve the format is defined for; null = any curve (UNCOMPRESSED / COMPRESSED). */
  curve: CurveId | null;
  /** Default derivation path (sdk-server addressFormatConfig); null when there is none. */
  defaultPath: string | null;
  /** sdk-server's default sign_raw_payload settings for the format. */
  defaultEncoding: 'PAYLOAD_ENCODING_HEXADECIMAL' | 'PAYLOAD_ENCODING_TEXT_UTF8';
  defaultHashFunction: 'HASH_FUNCTION_SHA256' | 'HASH_FUNCTION_KECCAK256' | 'HASH_FUNCTION_NOT_APPLICABLE';
  /** Whether addressFromPublicKey can compute it. */
  supported: boolean;
}

const HEX = 'PAYLOAD_ENCODING_HEXADECIMAL' as const;
const TXT = 'PAYLOAD_ENCODING_TEXT_UTF8' as const;
const SHA = 'HASH_FUNCTION_SHA256' as const;
const KEC = 'HASH_FUNCTION_KECCAK256' as const;
const NA = 'HASH_FUNCTION_NOT_APPLICABLE' as const;

function fmt(
  curve: CurveId | null,
  defaultPath: string | null,
  supported: boolean,
  defaultEncoding: AddressFormatInfo['defaultEncoding'] = HEX,
  defaultHashFunction: AddressFormatInfo['defaultHashFunction'] = curve === 'ed25519' ? NA : SHA,
): AddressFormatInfo {
  return { curve, defaultPath, defaultEncoding, defaultHashFunction, supported };
}

function bitcoinTable(): Record<string, AddressFormatInfo> {
  const out: Record<string, AddressFormatInfo> = {};
  const purpose: Record<BitcoinScript, string> = {
    P2PKH: "m/44'/C'/0'/0/0",
    P2SH: "m/44'/C'/0'/0/0",
    P2WPKH: "m/84'/C'/0'/0/0",
    P2WSH: "m/48'/C'/0'/2'/0/0",
    P2TR: "m/86'/C'/0'/0/0",
  };
  for (const net of ['MAINNET', 'TESTNET', 'SIGNET', 'REGTEST']) {
    for (const s of Object.keys(purpose) as BitcoinScript[]) {
      const path = purpose[s].replace('C', net === 'MAINNET' ? '0' : '1');
      out[`ADDRESS_FORMAT_BITCOIN_${net}_${s}`] = fmt('secp256k1', path, s === 'P2PKH' || s === 'P2WPKH' || s === 'P2TR');
    }
  }
  return out;
}

/** wire-compat §3.1 (from @turnkey/sdk-server addressFormatConfig). */
export const ADDRESS_FORMATS: Readonly<Record<string, AddressFormatInfo>> = Object.freeze({
  ADDRESS_FORMAT_UNCOMPRESSED: fmt(null, null, true),
  ADDRESS_FORMAT_COMPRESSED: fmt(null, null, true),
  ADDRESS_FORMAT_ETHEREUM: fmt('secp256k1', "m/44'/60'/0'/0/0", true, HEX, KEC),
  ADDRESS_FORMAT_SOLANA: fmt('ed25519', "m/44'/501'/0'/0'", true),
  ADDRESS_FORMAT_COSMOS: fmt('secp256k1', "m/44'/118'/0'/0/0", true, TXT, SHA),
  ADDRESS_FORMAT_TRON: fmt('secp256k1', "m/44'/195'/0'", true),
  ADDRESS_FORMAT_SUI: fmt('ed25519', "m/44'/784'/0'/0'/0'", true),
  ADDRESS_FORMAT_APTOS: fmt('ed25519', "m/44'/637'/0'/0'/0'", true),
  ...bitcoinTable(),
  ADDRESS_FORMAT_SEI: fmt('secp256k1', "m/44'/118'/0'/0'/0'", false, TXT, SHA),
  ADDRESS_FORMAT_XLM: fmt('ed25519', "m/44'/148'/0'", true),
  ADDRESS_FORMAT_DOGE_MAINNET: fmt('secp256k1', "m/44'/3'/0'/0/0", true),
  ADDRESS_FORMAT_DOGE_TESTNET: fmt('secp256k1', "m/44'/3'/0'/0/0", true),
  ADDRESS_FORMAT_TON_V3R2: fmt('ed25519', "m/44'/607'/0'/0'/0'", false),
  ADDRESS_FORMAT_TON_V4R2: fmt('ed25519', "m/44'/607'/0'/0'/0'", false),
  ADDRESS_FORMAT_TON_V5R1: fmt('ed25519', null, false),
  ADDRESS_FORMAT_XRP: fmt('secp256k1', "m/44'/144'/0'/0'/0'", true),
  ADDRESS_FORMAT_SPARK_MAINNET: fmt('secp256k1', "m/86'/0'/0'/0/0", false),
  ADDRESS_FORMAT_SPARK_REGTEST: fmt('secp256k1', "m/86'/1'/0'/0/0", false),
});

export type AddressFormat = keyof typeof ADDRESS_FORMATS;

/** Table lookup; UNSUPPORTED_ADDRESS_FORMAT for a name that is not a v1AddressFormat. */
export function addressFormatInfo(format: string, field = 'addressFormat'): AddressFormatInfo {
  const info = Object.prototype.hasOwnProperty.call(ADDRESS_FORMATS, format) ? ADDRESS_FORMATS[format] : undefined;
  if (!info) throw new CryptoError('UNSUPPORTED_ADDRESS_FORMAT', `unknown address format: ${String(format).slice(0, 64)}`, field);
  return info;
}

/** Throws ADDRESS_FORMAT_CURVE_MISMATCH (naming `field`) if the format cannot be used with the curve. */
export function assertFormatFitsCurve(format: string, curve: CurveId, field = 'addressFormat'): void {
  const info = addressFormatInfo(format, field);
  if (info.curve !== null && info.curve !== curve)
    throw new CryptoError(
      'ADDRESS_FORMAT_CURVE_MISMATCH',
      `address format ${format} requires curve ${curveName(info.curve)}, not ${curveName(curve)}`,
      field,
    );
  if (!info.supported) throw new CryptoError('UNSUPPORTED_ADDRESS_FORMAT', `address format ${format} is not supported`, field);
}

function curveName(c: CurveId): string {
  return c === 'secp256k1' ? 'CURVE_SECP256K1' : c === 'p256' ? 'CURVE_P256' : 'CURVE_ED25519';
}

/** Default path for an address format (null if it has none). */
export function defaultPathFor(format: string, field = 'addressFormat'): string | null {
  return addressFormatInfo(format, field).defaultPath;
}

// ---- encoders ---------------------------------------------------------------------------

/** EIP-55 mixed-case checksum of a 20-byte address (input hex with or without 0x, any case). */
export function toChecksumAddress(address: string): string {
  const a = address.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{40}$/.test(a)) throw new CryptoError('INVALID_HEX', 'address must be 20 bytes of hex', 'address');
  const lower = a.toLowerCase();
  const h = bytesToHex(keccak_256(utf8(lower)));
  let out = '0x';
  for (let i = 0; i < 40; i++) out += parseInt(h[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  return out;
}

/** Ethereum address (EIP-55) of a secp256k1 public key (33 or 65 bytes). */
export function ethereumAddress(publicKey: Uint8Array): string {
  const unc = convertPublicKey('secp256k1', publicKey, false);
  return toChecksumAddress(bytesToHex(keccak_256(unc.subarray(1)).subarray(12)));
}

export function tronAddress(publicKey: Uint8Array): string {
  const unc = convertPublicKey('secp256k1', publicKey, false);
  return tronAddressOfRaw(concatBytes(new Uint8Array([0x41]), keccak_256(unc.subarray(1)).subarray(12)));
}


export function cosmosAddress(publicKey: Uint8Array, prefix = 'cosmos'): string {
  const c = convertPublicKey('secp256k1', publicKey, true);
  return bech32.encode(prefix, bech32.toWords(hash160(c)));
}

const P2PKH_VERSION: Record<Network, number> = { mainnet: 0x00, testnet: 0x6f, signet: 0x6f, regtest: 0x6f };
const SEGWIT_HRP: Record<Network, string> = { mainnet: 'bc', testnet: 'tb', signet: 'tb', regtest: 'bcrt' };

export function p2pkhAddress(publicKey: Uint8Array, network: Network = 'mainnet'): string {
  const c = convertPublicKey('secp256k1', publicKey, true);
  return b58c.encode(concatBytes(new Uint8Array([P2PKH_VERSION[network]]), hash160(c)));
}

export function p2wpkhAddress(publicKey: Uint8Array, network: Network = 'mainnet'): string {
  const c = convertPublicKey('secp256k1', publicKey, true);
  return bech32.encode(SEGWIT_HRP[network], [0, ...bech32.toWords(hash160(c))]);
}

/** BIP340 tagged hash. */
export function taggedHash(tag: string, ...msgs: Uint8Array[]): Uint8Array {
  const t = sha256(utf8(tag));
  return sha256(concatBytes(t, t, ...msgs));
}

/** BIP86 key-path-only taproot output key (x-only, 32 bytes) of an internal key. */
export function taprootOutputKey(publicKey: Uint8Array): Uint8Array {
  const c = convertPublicKey('secp256k1', publicKey, true);
  const x = c.slice(1);
  const even = concatBytes(new Uint8Array([0x02]), x); // lift_x: the even-y point with this x
  const t = taggedHash('TapTweak', x);
  return publicKeyTweakAdd('secp256k1', even, t, true).slice(1);
}

export function p2trAddress(publicKey: Uint8Array, network: Network = 'mainnet'): string {
  return bech32m.encode(SEGWIT_HRP[network], [1, ...bech32m.toWords(taprootOutputKey(publicKey))]);
}

export function solanaAddress(publicKey: Uint8Array): string {
  return base58.encode(ed25519Key(publicKey));
}

function ed25519Key(publicKey: Uint8Array): Uint8Array {
  if (!isValidPublicKey('ed25519', publicKey)) throw new CryptoError('INVALID_PUBLIC_KEY', 'invalid Ed25519 public key');
  return publicKey;
}

/** Sui: 0x ‖ hex(BLAKE2b-256(flag 0x00 ‖ Ed25519 public key)). */
export function suiAddress(publicKey: Uint8Array): string {
  return '0x' + bytesToHex(blake2b(concatBytes(new Uint8Array([0x00]), ed25519Key(publicKey)), { dkLen: 32 }));
}

/** Aptos (legacy Ed25519 authentication key = account address): 0x ‖ hex(SHA3-256(public key ‖ 0x00)). */
export function aptosAddress(publicKey: Uint8Array): string {
  return '0x' + bytesToHex(sha3_256(concatBytes(ed25519Key(publicKey), new Uint8Array([0x00]))));
}

function crc16xmodem(data: Uint8Array): number {
  let crc = 0;
  for (const b of data) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** Stellar account id (StrKey "G…"): base32(0x30 ‖ public key ‖ CRC16-XModem little-endian). */
export function stellarAddress(publicKey: Uint8Array): string {
  const payload = concatBytes(new Uint8Array([6 << 3]), ed25519Key(publicKey));
  const crc = crc16xmodem(payload);
  return base32nopad.encode(concatBytes(payload, new Uint8Array([crc & 0xff, crc >> 8])));
}

/** Dogecoin P2PKH: base58check(0x1e mainnet / 0x71 testnet ‖ HASH160(compressed key)). */
export function dogeAddress(publicKey: Uint8Array, network: 'mainnet' | 'testnet' = 'mainnet'): string {
  const c = convertPublicKey('secp256k1', publicKey, true);
  return b58c.encode(concatBytes(new Uint8Array([network === 'mainnet' ? 0x1e : 0x71]), hash160(c)));
}

/** XRP Ledger classic address: XRP-alphabet base58check(0x00 ‖ HASH160(compressed key)). */
export function xrpAddress(publicKey: Uint8Array): string {
  const c = convertPublicKey('secp256k1', publicKey, true);
  const payload = concatBytes(new Uint8Array([0x00]), hash160(c));
  return base58xrp.encode(concatBytes(payload, sha256(sha256(payload)).subarray(0, 4)));
}

// ---- dispatcher -----------------------------------------------------------------------------

/**
 * The address of `publicKey` (ECDSA: SEC1 33 or 65 bytes; Ed25519: raw 32 bytes) in `format`.
 * Hex formats are lowercase without 0x. Errors: UNSUPPORTED_ADDRESS_FORMAT,
 * ADDRESS_FORMAT_CURVE_MISMATCH (both naming `field`), INVALID_PUBLIC_KEY.
 */
export function addressFromPublicKey(format: string, curve: CurveId, publicKey: Uint8Array, field = 'addressFormat'): string {
  assertFormatFitsCurve(format, curve, field);
  if (format === 'ADDRESS_FORMAT_UNCOMPRESSED' || format === 'ADDRESS_FORMAT_COMPRESSED') {
    if (curve === 'ed25519') {
      if (!isValidPublicKey('ed25519', publicKey)) throw new CryptoError('INVALID_PUBLIC_KEY', 'invalid Ed25519 public key');
      return bytesToHex(publicKey);
    }
    return bytesToHex(convertPublicKey(curve, publicKey, format === 'ADDRESS_FORMAT_COMPRESSED'));
  }
  switch (format) {
    case 'ADDRESS_FORMAT_ETHEREUM':
      return ethereumAddress(publicKey);
    case 'ADDRESS_FORMAT_TRON':
      return tronAddress(publicKey);
    case 'ADDRESS_FORMAT_COSMOS':
      return cosmosAddress(publicKey);
    case 'ADDRESS_FORMAT_SOLANA':
      return solanaAddress(publicKey);
    case 'ADDRESS_FORMAT_SUI':
      return suiAddress(publicKey);
    case 'ADDRESS_FORMAT_APTOS':
      return aptosAddress(publicKey);
    case 'ADDRESS_FORMAT_XLM':
      return stellarAddress(publicKey);
    case 'ADDRESS_FORMAT_DOGE_MAINNET':
      return dogeAddress(publicKey, 'mainnet');
    case 'ADDRESS_FORMAT_DOGE_TESTNET':
      return dogeAddress(publicKey, 'testnet');
    case 'ADDRESS_FORMAT_XRP':
      return xrpAddress(publicKey);
  }
  const m = /^ADDRESS_FORMAT_BITCOIN_(MAINNET|TESTNET|SIGNET|REGTEST)_(P2PKH|P2WPKH|P2TR)$/.exec(format);
  if (m) {
    const net = m[1].toLowerCase() as Network;
    if (m[2] === 'P2PKH') return p2pkhAddress(publicKey, net);
    if (m[2] === 'P2WPKH') return p2wpkhAddress(publicKey, net);
    return p2trAddress(publicKey, net);
  }
  throw new CryptoError('UNSUPPORTED_ADDRESS_FORMAT', `address format ${format} is not supported`, field);
}
