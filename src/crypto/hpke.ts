/**
 * RFC 9180 HPKE, base mode, for the one suite Turnkey uses:
 * DHKEM(P-256, HKDF-SHA256) 0x0010 / HKDF-SHA256 0x0001 / AES-256-GCM 0x0002.
 * P-256 ECDH runs on the wasm core; AES-256-GCM on node:crypto; HKDF is @noble/hashes.
 * Plus the Turnkey flavour (info "turnkey_hpke", aad = enc ‖ pkR, both uncompressed).
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { extract as hkdfExtractRaw, expand as hkdfExpandRaw } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { CryptoError } from '../encoding/errors.js';
import { concatBytes, utf8, wipe } from '../encoding/bytes.js';
import { convertPublicKey, ecdh, generatePrivateKey, getPublicKey, isValidPrivateKey } from './curves.js';

export const KEM_ID = 0x0010;
export const KDF_ID = 0x0001;
export const AEAD_ID = 0x0002;
const NSECRET = 32;
const NK = 32;
const NN = 12;
const NH = 32;
const TAG = 16;

const HPKE_V1 = utf8('HPKE-v1');
const i2osp = (n: number, len: number): Uint8Array => {
  const b = new Uint8Array(len);
  for (let i = len - 1, v = n; i >= 0; i--, v = Math.floor(v / 256)) b[i] = v & 0xff;
  return b;
};
const KEM_SUITE = concatBytes(utf8('KEM'), i2osp(KEM_ID, 2));
const HPKE_SUITE = concatBytes(utf8('HPKE'), i2osp(KEM_ID, 2), i2osp(KDF_ID, 2), i2osp(AEAD_ID, 2));

// ---- HKDF-SHA256 (RFC 5869) ------------------------------------------------------------------

export function hkdfExtract(salt: Uint8Array, ikm: Uint8Array): Uint8Array {
  return hkdfExtractRaw(sha256, ikm, salt);
}

export function hkdfExpand(prk: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  return hkdfExpandRaw(sha256, prk, info, length);
}

export function labeledExtract(suiteId: Uint8Array, salt: Uint8Array, label: string, ikm: Uint8Array): Uint8Array {
  const labeled = concatBytes(HPKE_V1, suiteId, utf8(label), ikm);
  const out = hkdfExtract(salt, labeled);
  wipe(labeled);
  return out;
}

export function labeledExpand(suiteId: Uint8Array, prk: Uint8Array, label: string, info: Uint8Array, length: number): Uint8Array {
  return hkdfExpand(prk, concatBytes(i2osp(length, 2), HPKE_V1, suiteId, utf8(label), info), length);
}

// ---- AES-256-GCM (node:crypto) -----------------------------------------------------------------

/** AES-256-GCM seal: ciphertext ‖ 16-byte tag. */
export function aes256GcmSeal(key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  if (key.length !== 32 || nonce.length !== 12) throw new CryptoError('INVALID_LENGTH', 'AES-256-GCM needs a 32-byte key and 12-byte nonce');
  const c = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG });
  c.setAAD(aad);
  const a = c.update(plaintext);
  const b = c.final();
  const out = concatBytes(a, b, c.getAuthTag());
  a.fill(0);
  return out;
}

/** AES-256-GCM open; DECRYPTION_FAILED on a bad tag. */
export function aes256GcmOpen(key: Uint8Array, nonce: Uint8Array, sealed: Uint8Array, aad: Uint8Array): Uint8Array {
  if (key.length !== 32 || nonce.length !== 12) throw new CryptoError('INVALID_LENGTH', 'AES-256-GCM needs a 32-byte key and 12-byte nonce');
  if (sealed.length < TAG) throw new CryptoError('DECRYPTION_FAILED', 'ciphertext shorter than the tag');
  const d = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG });
  d.setAAD(aad);
  d.setAuthTag(sealed.subarray(sealed.length - TAG));
  const a = d.update(sealed.subarray(0, sealed.length - TAG));
  try {
    const b = d.final();
    const out = concatBytes(a, b);
    a.fill(0);
    return out;
  } catch {
    a.fill(0);
    throw new CryptoError('DECRYPTION_FAILED', 'authentication failed');
  }
}

// ---- DHKEM(P-256, HKDF-SHA256) -------------------------------------------------------------------

export interface KemKeyPair {
  privateKey: Uint8Array; // 32 bytes
  publicKey: Uint8Array; // 65 bytes uncompressed (SerializePublicKey)
}

const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

/** RFC 9180 §7.1.3 DeriveKeyPair for P-256 (bitmask 0xff). */
export function deriveKeyPair(ikm: Uint8Array): KemKeyPair {
  const prk = labeledExtract(KEM_SUITE, new Uint8Array(0), 'dkp_prk', ikm);
  for (let counter = 0; counter < 256; counter++) {
    const sk = labeledExpand(KEM_SUITE, prk, 'candidate', i2osp(counter, 1), 32);
    const n = BigInt('0x' + Buffer.from(sk).toString('hex'));
    if (n !== 0n && n < P256_ORDER) {
      wipe(prk);
      return { privateKey: sk, publicKey: getPublicKey('p256', sk, false) };
    }
    wipe(sk);
  }
  throw new CryptoError('INVALID_PRIVATE_KEY', 'DeriveKeyPairError');
}

export function generateKeyPair(): KemKeyPair {
  const sk = generatePrivateKey('p256');
  return { privateKey: sk, publicKey: getPublicKey('p256', sk, false) };
}

function extractAndExpand(dh: Uint8Array, kemContext: Uint8Array): Uint8Array {
  const prk = labeledExtract(KEM_SUITE, new Uint8Array(0), 'eae_prk', dh);
  const ss = labeledExpand(KEM_SUITE, prk, 'shared_secret', kemContext, NSECRET);
  wipe(prk);
  return ss;
}

/** Uncompressed (65-byte) form of a P-256 point given compressed or uncompressed; INVALID_PUBLIC_KEY otherwise. */
export function uncompressedP256(publicKey: Uint8Array): Uint8Array {
  return convertPublicKey('p256', publicKey, false);
}

/** Encap(pkR) with a given (test) or fresh ephemeral key. enc = 65-byte uncompressed pkE. */
export function encap(pkR: Uint8Array, ephemeralPrivateKey?: Uint8Array): { sharedSecret: Uint8Array; enc: Uint8Array } {
  const pkRm = uncompressedP256(pkR);
  const skE = ephemeralPrivateKey ?? generatePrivateKey('p256');
  if (!isValidPrivateKey('p256', skE)) throw new CryptoError('INVALID_PRIVATE_KEY', 'invalid ephemeral key');
  const enc = getPublicKey('p256', skE, false);
  const dh = ecdh('p256', skE, pkRm);
  const sharedSecret = extractAndExpand(dh, concatBytes(enc, pkRm));
  wipe(dh);
  if (!ephemeralPrivateKey) wipe(skE);
  return { sharedSecret, enc };
}

/** Decap(enc, skR). enc may be compressed (33) or uncompressed (65); the KEM context always uses 65. */
export function decap(enc: Uint8Array, skR: Uint8Array): Uint8Array {
  const pkEm = uncompressedP256(enc);
  const pkRm = getPublicKey('p256', skR, false);
  const dh = ecdh('p256', skR, pkEm);
  const ss = extractAndExpand(dh, concatBytes(pkEm, pkRm));
  wipe(dh);
  return ss;
}

// ---- key schedule and context --------------------------------------------------------------------

export interface KeySchedule {
  keyScheduleContext: Uint8Array;
  secret: Uint8Array;
  key: Uint8Array;
  baseNonce: Uint8Array;
  exporterSecret: Uint8Array;
}

/** KeySchedule for mode_base (no PSK). */
export function keySchedule(sharedSecret: Uint8Array, info: Uint8Array): KeySchedule {
  const empty = new Uint8Array(0);
  const pskIdHash = labeledExtract(HPKE_SUITE, empty, 'psk_id_hash', empty);
  const infoHash = labeledExtract(HPKE_SUITE, empty, 'info_hash', info);
  const keyScheduleContext = concatBytes(new Uint8Array([0]), pskIdHash, infoHash);
  const secret = labeledExtract(HPKE_SUITE, sharedSecret, 'secret', empty);
  return {
    keyScheduleContext,
    secret,
    key: labeledExpand(HPKE_SUITE, secret, 'key', keyScheduleContext, NK),
    baseNonce: labeledExpand(HPKE_SUITE, secret, 'base_nonce', keyScheduleContext, NN),
    exporterSecret: labeledExpand(HPKE_SUITE, secret, 'exp', keyScheduleContext, NH),
  };
}

export class HpkeContext {
  #key: Uint8Array;
  #baseNonce: Uint8Array;
  #exporterSecret: Uint8Array;
  #seq = 0;

  constructor(ks: KeySchedule) {
    this.#key = ks.key;
    this.#baseNonce = ks.baseNonce;
    this.#exporterSecret = ks.exporterSecret;
    wipe(ks.secret);
  }

  get sequenceNumber(): number {
    return this.#seq;
  }

  private nonce(): Uint8Array {
    const n = this.#baseNonce.slice();
    const s = i2osp(this.#seq, NN);
    for (let i = 0; i < NN; i++) n[i] ^= s[i];
    return n;
  }

  seal(plaintext: Uint8Array, aad: Uint8Array = new Uint8Array(0)): Uint8Array {
    const ct = aes256GcmSeal(this.#key, this.nonce(), plaintext, aad);
    this.#seq++;
    return ct;
  }

  open(ciphertext: Uint8Array, aad: Uint8Array = new Uint8Array(0)): Uint8Array {
    const pt = aes256GcmOpen(this.#key, this.nonce(), ciphertext, aad);
    this.#seq++;
    return pt;
  }

  export(exporterContext: Uint8Array, length: number): Uint8Array {
    return labeledExpand(HPKE_SUITE, this.#exporterSecret, 'sec', exporterContext, length);
  }

  destroy(): void {
    wipe(this.#key, this.#baseNonce, this.#exporterSecret);
  }
}

/** SetupBaseS: returns enc and a sender context. */
export function setupBaseS(pkR: Uint8Array, info: Uint8Array, ephemeralPrivateKey?: Uint8Array): { enc: Uint8Array; context: HpkeContext } {
  const { sharedSecret, enc } = encap(pkR, ephemeralPrivateKey);
  const ctx = new HpkeContext(keySchedule(sharedSecret, info));
  wipe(sharedSecret);
  return { enc, context: ctx };
}

/** SetupBaseR: a receiver context. */
export function setupBaseR(enc: Uint8Array, skR: Uint8Array, info: Uint8Array): HpkeContext {
  const ss = decap(enc, skR);
  const ctx = new HpkeContext(keySchedule(ss, info));
  wipe(ss);
  return ctx;
}

// ---- Turnkey flavour (wire-compat §4.1) ----------------------------------------------------------

export const TURNKEY_HPKE_INFO = utf8('turnkey_hpke');

export interface TurnkeySealed {
  /** 65-byte uncompressed ephemeral public key. */
  encappedPublic: Uint8Array;
  /** AES-256-GCM ciphertext ‖ tag. */
  ciphertext: Uint8Array;
}

/**
 * Single-shot HPKE seal to a P-256 key (33 or 65 bytes) with info "turnkey_hpke" and
 * aad = enc ‖ pkR (both uncompressed).
 */
export function turnkeySeal(plaintext: Uint8Array, receiverPublicKey: Uint8Array, ephemeralPrivateKey?: Uint8Array): TurnkeySealed {
  const pkRm = uncompressedP256(receiverPublicKey);
  const { enc, context } = setupBaseS(pkRm, TURNKEY_HPKE_INFO, ephemeralPrivateKey);
  const ciphertext = context.seal(plaintext, concatBytes(enc, pkRm));
  context.destroy();
  return { encappedPublic: enc, ciphertext };
}

/** Opens a turnkeySeal result with the receiver's private key; DECRYPTION_FAILED if it does not authenticate. */
export function turnkeyOpen(encappedPublic: Uint8Array, ciphertext: Uint8Array, receiverPrivateKey: Uint8Array): Uint8Array {
  const enc = uncompressedP256(encappedPublic);
  const pkRm = getPublicKey('p256', receiverPrivateKey, false);
  const context = setupBaseR(enc, receiverPrivateKey, TURNKEY_HPKE_INFO);
  try {
    return context.open(ciphertext, concatBytes(enc, pkRm));
  } finally {
    context.destroy();
  }
}
