/**
 * Hierarchical deterministic keys: BIP32 for secp256k1 and P-256 (SLIP-10 master keys and
 * invalid-key retry rules; child arithmetic on the wasm core), SLIP-10 for Ed25519 (hardened
 * only), BIP32 path parsing, xprv/xpub serialization, BIP39 mnemonics (English).
 */
import { pbkdf2Sync } from 'node:crypto';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { createBase58check } from '@scure/base';
import * as bip39 from '@scure/bip39';
import { wordlist as english } from '@scure/bip39/wordlists/english.js';
import { CryptoError } from '../encoding/errors.js';
import { concatBytes, u32be, utf8, wipe } from '../encoding/bytes.js';
import {
  getPublicKey,
  isValidPrivateKey,
  isValidPublicKey,
  privateKeyTweakAdd,
  publicKeyTweakAdd,
  convertPublicKey,
  type CurveId,
} from './curves.js';

export const HARDENED_OFFSET = 0x80000000;
/** BIP32 serializes depth in one byte. */
export const MAX_DEPTH = 255;

const SEED_KEYS: Record<CurveId, Uint8Array> = {
  secp256k1: utf8('Bitcoin seed'),
  p256: utf8('Nist256p1 seed'),
  ed25519: utf8('ed25519 seed'),
};

const b58c = createBase58check(sha256);

export function hash160(data: Uint8Array): Uint8Array {
  return ripemd160(sha256(data));
}

// ---- paths ----------------------------------------------------------------------------

/**
 * Parse a BIP32 path: `m`, `m/44'/60'/0'/0/0`; hardened marked `'`, `h` or `H`.
 * Each index must be a decimal integer < 2^31 (without leading zeros); depth ≤ 255.
 */
export function parsePath(path: string, field = 'path'): number[] {
  if (typeof path !== 'string') throw new CryptoError('INVALID_PATH', 'path must be a string', field);
  const parts = path.split('/');
  if (parts[0] !== 'm') throw new CryptoError('INVALID_PATH', 'path must start with "m"', field);
  const out: number[] = [];
  for (const p of parts.slice(1)) {
    const m = /^(0|[1-9][0-9]{0,9})(['hH]?)$/.exec(p);
    if (!m) throw new CryptoError('INVALID_PATH', `invalid path component "${p.slice(0, 16)}"`, field);
    const n = Number(m[1]);
    if (n >= HARDENED_OFFSET) throw new CryptoError('INVALID_PATH', 'path index out of range (must be < 2^31)', field);
    out.push(m[2] ? n + HARDENED_OFFSET : n);
  }
  if (out.length > MAX_DEPTH) throw new CryptoError('INVALID_PATH', `path deeper than ${MAX_DEPTH}`, field);
  return out;
}

/** Indices → `m/44'/60'/0'/0/0` (hardened written `'`). */
export function formatPath(indices: readonly number[]): string {
  return ['m', ...indices.map((i) => (i >= HARDENED_OFFSET ? `${i - HARDENED_OFFSET}'` : String(i)))].join('/');
}

// ---- HD keys ----------------------------------------------------------------------------

export interface HDKeyFields {
  curve: CurveId;
  depth: number;
  index: number;
  parentFingerprint: number;
  chainCode: Uint8Array;
  privateKey: Uint8Array | null;
  /** ECDSA: SEC1 compressed (33 bytes). Ed25519: raw (32 bytes). Computed from privateKey if absent. */
  publicKey?: Uint8Array;
}

export class HDKey {
  readonly curve: CurveId;
  readonly depth: number;
  readonly index: number;
  readonly parentFingerprint: number;
  readonly chainCode: Uint8Array;
  #privateKey: Uint8Array | null;
  #publicKey: Uint8Array | undefined;

  constructor(f: HDKeyFields) {
    this.curve = f.curve;
    this.depth = f.depth;
    this.index = f.index;
    this.parentFingerprint = f.parentFingerprint;
    this.chainCode = f.chainCode;
    this.#privateKey = f.privateKey;
    this.#publicKey = f.publicKey;
    if (!f.privateKey && !f.publicKey) throw new CryptoError('INVALID_EXTENDED_KEY', 'HD key needs a private or public key');
  }

  get privateKey(): Uint8Array | null {
    return this.#privateKey;
  }

  /** ECDSA: compressed SEC1 (33 bytes). Ed25519: raw 32 bytes. */
  get publicKey(): Uint8Array {
    if (!this.#publicKey) this.#publicKey = getPublicKey(this.curve, this.#privateKey as Uint8Array, true);
    return this.#publicKey;
  }

  /** SLIP-10 / BIP32 ser_P: 33 bytes (Ed25519: 0x00 ‖ pub). */
  get serializedPublicKey(): Uint8Array {
    return this.curve === 'ed25519' ? concatBytes(new Uint8Array([0]), this.publicKey) : this.publicKey;
  }

  /** First 4 bytes of HASH160(ser_P(K)) as an unsigned integer. */
  get fingerprint(): number {
    return new DataView(hash160(this.serializedPublicKey).buffer).getUint32(0, false);
  }

  get isHardenedOnly(): boolean {
    return this.curve === 'ed25519';
  }

  /** Derive one child (index ≥ 2^31 = hardened). */
  deriveChild(index: number): HDKey {
    return deriveChild(this, index);
  }

  /** Derive along a path relative to this key (`m/...`), or absolute from a master key. */
  derive(path: string | readonly number[]): HDKey {
    const idx = typeof path === 'string' ? parsePath(path) : path;
    if (this.depth + idx.length > MAX_DEPTH) throw new CryptoError('INVALID_PATH', `path deeper than ${MAX_DEPTH}`);
    let k: HDKey = this;
    for (const i of idx) {
      const next = deriveChild(k, i);
      if (k !== this) k.wipe();
      k = next;
    }
    return k;
  }

  /** A public-only copy. */
  neuter(): HDKey {
    if (this.curve === 'ed25519') throw new CryptoError('UNSUPPORTED_CURVE', 'Ed25519 has no public derivation');
    return new HDKey({ ...this.fields(), privateKey: null, publicKey: this.publicKey });
  }

  /** Overwrite the private key and chain code in place. */
  wipe(): void {
    wipe(this.#privateKey, this.chainCode);
  }

  private fields(): HDKeyFields {
    return {
      curve: this.curve,
      depth: this.depth,
      index: this.index,
      parentFingerprint: this.parentFingerprint,
      chainCode: this.chainCode,
      privateKey: this.#privateKey,
    };
  }
}

function split(I: Uint8Array): [Uint8Array, Uint8Array] {
  return [I.slice(0, 32), I.slice(32)];
}

/** Master key from a seed (16–64 bytes) per SLIP-10 (secp256k1: identical to BIP32). */
export function masterKeyFromSeed(curve: CurveId, seed: Uint8Array): HDKey {
  if (!(seed instanceof Uint8Array) || seed.length < 16 || seed.length > 64)
    throw new CryptoError('INVALID_SEED', 'seed must be 16 to 64 bytes', 'seed');
  let I = hmac(sha512, SEED_KEYS[curve], seed);
  for (;;) {
    const [IL, IR] = split(I);
    if (curve === 'ed25519' || isValidPrivateKey(curve, IL)) {
      wipe(I);
      return new HDKey({ curve, depth: 0, index: 0, parentFingerprint: 0, chainCode: IR, privateKey: IL });
    }
    // SLIP-10: invalid master key → S := I, repeat.
    const next = hmac(sha512, SEED_KEYS[curve], I);
    wipe(I, IL, IR);
    I = next;
  }
}

/** CKDpriv / CKDpub with the SLIP-10 retry rule (I = HMAC(c, 0x01 ‖ IR ‖ ser32(i))) on invalid keys. */
export function deriveChild(parent: HDKey, index: number): HDKey {
  if (!Number.isInteger(index) || index < 0 || index > 0xffffffff)
    throw new CryptoError('INVALID_PATH', 'child index out of range');
  if (parent.depth >= MAX_DEPTH) throw new CryptoError('INVALID_PATH', `path deeper than ${MAX_DEPTH}`);
  const hardened = index >= HARDENED_OFFSET;
  const curve = parent.curve;
  const kpar = parent.privateKey;
  if (curve === 'ed25519' && !hardened)
    throw new CryptoError('INVALID_PATH', 'Ed25519 (SLIP-10) supports hardened derivation only');
  if (hardened && !kpar) throw new CryptoError('INVALID_PATH', 'hardened derivation needs a private key');

  const data = hardened
    ? concatBytes(new Uint8Array([0]), kpar as Uint8Array, u32be(index))
    : concatBytes(parent.publicKey, u32be(index));
  let I = hmac(sha512, parent.chainCode, data);
  wipe(data);
  const common = { curve, depth: parent.depth + 1, index, parentFingerprint: parent.fingerprint };

  if (curve === 'ed25519') {
    const [IL, IR] = split(I);
    wipe(I);
    return new HDKey({ ...common, chainCode: IR, privateKey: IL });
  }
  for (;;) {
    const [IL, IR] = split(I);
    try {
      if (kpar) {
        const child = privateKeyTweakAdd(curve, kpar, IL);
        wipe(I, IL);
        return new HDKey({ ...common, chainCode: IR, privateKey: child });
      }
      const child = publicKeyTweakAdd(curve, parent.publicKey, IL, true);
      wipe(I, IL);
      return new HDKey({ ...common, chainCode: IR, privateKey: null, publicKey: child });
    } catch (e) {
      if (!(e instanceof CryptoError) || e.code !== 'INVALID_TWEAK') throw e;
      const next = hmac(sha512, parent.chainCode, concatBytes(new Uint8Array([1]), IR, u32be(index)));
      wipe(I, IL, IR);
      I = next;
    }
  }
}

/** seed → master → path. The caller wipes the returned key (`key.wipe()`) after use. */
export function deriveFromSeed(curve: CurveId, seed: Uint8Array, path: string | readonly number[]): HDKey {
  const master = masterKeyFromSeed(curve, seed);
  const idx = typeof path === 'string' ? parsePath(path) : path;
  if (idx.length === 0) return master;
  const key = master.derive(idx);
  master.wipe();
  return key;
}

// ---- extended keys (xprv / xpub) ----------------------------------------------------------

export const VERSIONS = {
  mainnet: { private: 0x0488ade4, public: 0x0488b21e },
  testnet: { private: 0x04358394, public: 0x043587cf },
} as const;

function serialize(key: HDKey, version: number, keyData: Uint8Array): string {
  const b = new Uint8Array(78);
  const dv = new DataView(b.buffer);
  dv.setUint32(0, version, false);
  b[4] = key.depth;
  dv.setUint32(5, key.parentFingerprint >>> 0, false);
  dv.setUint32(9, key.index >>> 0, false);
  b.set(key.chainCode, 13);
  b.set(keyData, 45);
  const s = b58c.encode(b);
  wipe(b);
  return s;
}

/** BIP32 xprv (secp256k1 / P-256). */
export function toExtendedPrivateKey(key: HDKey, version: number = VERSIONS.mainnet.private): string {
  if (key.curve === 'ed25519') throw new CryptoError('UNSUPPORTED_CURVE', 'no extended key format for Ed25519');
  if (!key.privateKey) throw new CryptoError('INVALID_EXTENDED_KEY', 'no private key');
  const data = concatBytes(new Uint8Array([0]), key.privateKey);
  const s = serialize(key, version, data);
  wipe(data);
  return s;
}

/** BIP32 xpub (secp256k1 / P-256). */
export function toExtendedPublicKey(key: HDKey, version: number = VERSIONS.mainnet.public): string {
  if (key.curve === 'ed25519') throw new CryptoError('UNSUPPORTED_CURVE', 'no extended key format for Ed25519');
  return serialize(key, version, key.publicKey);
}

/** Parse and validate an xprv/xpub (BIP32 test vector 5 rules). */
export function parseExtendedKey(
  xkey: string,
  curve: 'secp256k1' | 'p256' = 'secp256k1',
  versions: { private: number; public: number } = VERSIONS.mainnet,
): HDKey {
  const bad = (why: string) => new CryptoError('INVALID_EXTENDED_KEY', `invalid extended key: ${why}`);
  let b: Uint8Array;
  try {
    b = b58c.decode(xkey);
  } catch {
    throw bad('base58check');
  }
  if (b.length !== 78) throw bad('length');
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const version = dv.getUint32(0, false);
  const depth = b[4];
  const parentFingerprint = dv.getUint32(5, false);
  const index = dv.getUint32(9, false);
  const chainCode = b.slice(13, 45);
  const keyData = b.slice(45);
  if (depth === 0 && parentFingerprint !== 0) throw bad('zero depth with non-zero parent fingerprint');
  if (depth === 0 && index !== 0) throw bad('zero depth with non-zero index');
  const common = { curve, depth, index, parentFingerprint, chainCode };
  if (version === versions.private) {
    if (keyData[0] !== 0) throw bad('private key prefix');
    const k = keyData.slice(1);
    if (!isValidPrivateKey(curve, k)) throw bad('private key out of range');
    wipe(b, keyData);
    return new HDKey({ ...common, privateKey: k });
  }
  if (version === versions.public) {
    if (keyData[0] !== 2 && keyData[0] !== 3) throw bad('public key prefix');
    if (!isValidPublicKey(curve, keyData)) throw bad('public key not on curve');
    return new HDKey({ ...common, privateKey: null, publicKey: convertPublicKey(curve, keyData, true) });
  }
  throw bad('unknown version');
}

// ---- BIP39 mnemonics (English) ------------------------------------------------------------

export const MNEMONIC_WORD_COUNTS = [12, 15, 18, 21, 24] as const;
export type MnemonicWordCount = (typeof MNEMONIC_WORD_COUNTS)[number];

/** A fresh English mnemonic of 12/15/18/21/24 words. */
export function generateMnemonic(words: number = 12): string {
  if (!(MNEMONIC_WORD_COUNTS as readonly number[]).includes(words))
    throw new CryptoError('INVALID_MNEMONIC', 'mnemonic length must be 12, 15, 18, 21 or 24 words', 'mnemonicLength');
  return bip39.generateMnemonic(english, (words / 3) * 32);
}

/** Checksum- and wordlist-valid English mnemonic of an allowed length. */
export function validateMnemonic(mnemonic: string): boolean {
  if (typeof mnemonic !== 'string') return false;
  const n = mnemonic.normalize('NFKD').trim().split(/\s+/).length;
  if (!(MNEMONIC_WORD_COUNTS as readonly number[]).includes(n)) return false;
  return bip39.validateMnemonic(normalizeMnemonic(mnemonic), english);
}

export function assertValidMnemonic(mnemonic: string, field = 'mnemonic'): void {
  if (!validateMnemonic(mnemonic)) throw new CryptoError('INVALID_MNEMONIC', 'invalid mnemonic', field);
}

/** NFKD with single spaces (the form that is stored and exported). */
export function normalizeMnemonic(mnemonic: string): string {
  return mnemonic.normalize('NFKD').trim().split(/\s+/).join(' ');
}

/**
 * BIP39 seed → 64 bytes: PBKDF2-HMAC-SHA512(password = NFKD mnemonic, salt = "mnemonic" ‖ NFKD
 * passphrase, 2048 rounds). node:crypto's PBKDF2 (~1.4 ms) rather than the pure-JS one (~11 ms).
 */
export function mnemonicToSeed(mnemonic: string, passphrase = ''): Uint8Array {
  assertValidMnemonic(mnemonic);
  if (typeof passphrase !== 'string') throw new CryptoError('INVALID_MNEMONIC', 'passphrase must be a string', 'passphrase');
  const pw = Buffer.from(normalizeMnemonic(mnemonic), 'utf8');
  const salt = Buffer.from('mnemonic' + passphrase.normalize('NFKD'), 'utf8');
  const out = new Uint8Array(pbkdf2Sync(pw, salt, 2048, 64, 'sha512'));
  pw.fill(0);
  salt.fill(0);
  return out;
}

export function mnemonicToEntropy(mnemonic: string): Uint8Array {
  assertValidMnemonic(mnemonic);
  return bip39.mnemonicToEntropy(normalizeMnemonic(mnemonic), english);
}

export function entropyToMnemonic(entropy: Uint8Array): string {
  if (!(entropy instanceof Uint8Array) || ![16, 20, 24, 28, 32].includes(entropy.length))
    throw new CryptoError('INVALID_MNEMONIC', 'entropy must be 16, 20, 24, 28 or 32 bytes');
  return bip39.entropyToMnemonic(entropy, english);
}
