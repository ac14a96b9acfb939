/**
 * Encryption of private keys and mnemonics at rest: AES-256-GCM under a sub-key derived from
 * the 32-byte master key, random 96-bit nonce, AAD binding the record, versioned format:
 *
 *   sealed = 0x01 ‖ nonce (12) ‖ ciphertext ‖ tag (16)
 *   key    = HKDF-SHA256(ikm = master key, salt = "", info = "kmas/at-rest/v1", 32)
 *   aad    = UTF-8 JSON ["kmas/at-rest/v1", kind, organizationId, recordId]
 *
 * The master key comes from KMAS_MASTER_KEY (64 hex chars or base64 of 32 bytes) or the key file
 * DATA_DIR/master.key (hex, created on first start with mode 0600).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex, concatBytes, utf8, wipe } from '../encoding/bytes.js';
import { aes256GcmOpen, aes256GcmSeal, hkdfExpand, hkdfExtract } from './hpke.js';

export const AT_REST_VERSION = 0x01;
const LABEL = 'kmas/at-rest/v1';
const NONCE = 12;
const TAG = 16;
export const MASTER_KEY_FILE = 'master.key';
export const MASTER_KEY_ENV = 'KMAS_MASTER_KEY';

/** What a sealed value belongs to; all fields are bound as AAD (a value moved to another record fails to open). */
export interface AtRestContext {
  /** e.g. "private_key", "wallet_mnemonic", "signer_key", "import_target" */
  kind: string;
  organizationId: string;
  /** private key id, wallet id, … */
  recordId: string;
}

function checkMasterKey(masterKey: Uint8Array): void {
  if (!(masterKey instanceof Uint8Array) || masterKey.length !== 32)
    throw new CryptoError('INVALID_MASTER_KEY', 'master key must be 32 bytes');
}

function subKey(masterKey: Uint8Array): Uint8Array {
  checkMasterKey(masterKey);
  const prk = hkdfExtract(new Uint8Array(0), masterKey);
  const k = hkdfExpand(prk, utf8(LABEL), 32);
  wipe(prk);
  return k;
}

function aad(ctx: AtRestContext): Uint8Array {
  if (!ctx || typeof ctx.kind !== 'string' || typeof ctx.organizationId !== 'string' || typeof ctx.recordId !== 'string')
    throw new CryptoError('INVALID_LENGTH', 'at-rest context needs kind, organizationId and recordId strings');
  return utf8(JSON.stringify([LABEL, ctx.kind, ctx.organizationId, ctx.recordId]));
}

/** Encrypt secret bytes for storage. */
export function sealSecret(masterKey: Uint8Array, plaintext: Uint8Array, ctx: AtRestContext): Uint8Array {
  const key = subKey(masterKey);
  try {
    return sealWithAtRestKey(key, plaintext, ctx);
  } finally {
    wipe(key);
  }
}

/** Decrypt a sealed value; INVALID_CIPHERTEXT for an unknown format, DECRYPTION_FAILED for wrong key/record/tampering. */
export function openSecret(masterKey: Uint8Array, sealed: Uint8Array, ctx: AtRestContext): Uint8Array {
  checkSealed(sealed);
  const key = subKey(masterKey);
  try {
    return openWithAtRestKey(key, sealed, ctx);
  } finally {
    wipe(key);
  }
}

/**
 * The AES-256-GCM key derived from the master key (HKDF, info "kmas/at-rest/v1"). A long-lived
 * holder of the master key (the Vault) derives it once instead of on every seal / open.
 */
export function deriveAtRestKey(masterKey: Uint8Array): Uint8Array {
  return subKey(masterKey);
}

function checkSealed(sealed: Uint8Array): void {
  if (!(sealed instanceof Uint8Array) || sealed.length < 1 + NONCE + TAG)
    throw new CryptoError('INVALID_CIPHERTEXT', 'sealed value too short');
  if (sealed[0] !== AT_REST_VERSION) throw new CryptoError('INVALID_CIPHERTEXT', 'unknown at-rest format version');
}

/** sealSecret with a key from deriveAtRestKey (same format). */
export function sealWithAtRestKey(atRestKey: Uint8Array, plaintext: Uint8Array, ctx: AtRestContext): Uint8Array {
  const nonce = new Uint8Array(randomBytes(NONCE));
  return concatBytes(new Uint8Array([AT_REST_VERSION]), nonce, aes256GcmSeal(atRestKey, nonce, plaintext, aad(ctx)));
}

/** openSecret with a key from deriveAtRestKey. */
export function openWithAtRestKey(atRestKey: Uint8Array, sealed: Uint8Array, ctx: AtRestContext): Uint8Array {
  checkSealed(sealed);
  return aes256GcmOpen(atRestKey, sealed.subarray(1, 1 + NONCE), sealed.subarray(1 + NONCE), aad(ctx));
}

/**
 * Opens a stored secret for use by the server. A failure here is the server's (wrong master key,
 * corrupted row), never the caller's, and says no more than that.
 */
export function openStored(atRestKey: Uint8Array, sealed: Uint8Array, ctx: AtRestContext): Uint8Array {
  try {
    return openWithAtRestKey(atRestKey, sealed, ctx);
  } catch {
    throw new CryptoError('DECRYPTION_FAILED', `stored ${ctx.kind} could not be opened (wrong master key or corrupted data)`);
  }
}

/** Seal a string (e.g. a mnemonic); returns base64 text for a TEXT column. */
export function sealSecretText(masterKey: Uint8Array, text: string, ctx: AtRestContext): string {
  const pt = utf8(text);
  try {
    return Buffer.from(sealSecret(masterKey, pt, ctx)).toString('base64');
  } finally {
    wipe(pt);
  }
}

export function openSecretText(masterKey: Uint8Array, sealedBase64: string, ctx: AtRestContext): string {
  const pt = openSecret(masterKey, new Uint8Array(Buffer.from(sealedBase64, 'base64')), ctx);
  try {
    return new TextDecoder().decode(pt);
  } finally {
    wipe(pt);
  }
}

// ---- master key ------------------------------------------------------------------------------

/** 64 hex chars (optional 0x) or base64/base64url of exactly 32 bytes. */
export function parseMasterKey(text: string): Uint8Array {
  const s = String(text).trim();
  const h = s.replace(/^0x/i, '');
  if (/^[0-9a-fA-F]{64}$/.test(h)) return new Uint8Array(Buffer.from(h, 'hex'));
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(s)) {
    const b = new Uint8Array(Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
    if (b.length === 32) return b;
  }
  throw new CryptoError('INVALID_MASTER_KEY', 'master key must be 32 bytes as 64 hex characters or base64');
}

export interface MasterKeyResult {
  key: Uint8Array;
  source: 'env' | 'file' | 'created';
  /** set when the key came from / went to a file */
  path?: string;
  /** e.g. the key file is readable by group/others */
  warnings: string[];
}

/**
 * KMAS_MASTER_KEY if set; else DATA_DIR/master.key; else create that file (random 32 bytes,
 * hex, mode 0600, exclusive create). Never logs the key.
 */
export function loadOrCreateMasterKey(dataDir: string, env: Record<string, string | undefined> = process.env): MasterKeyResult {
  const fromEnv = env[MASTER_KEY_ENV];
  if (fromEnv !== undefined && fromEnv !== '') {
    try {
      return { key: parseMasterKey(fromEnv), source: 'env', warnings: [] };
    } catch {
      throw new CryptoError('INVALID_MASTER_KEY', `${MASTER_KEY_ENV} must be 32 bytes as 64 hex characters or base64`);
    }
  }
  const path = join(dataDir, MASTER_KEY_FILE);
  const warnings: string[] = [];
  if (existsSync(path)) {
    const st = statSync(path);
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0)
      warnings.push(`${path} is accessible by group/others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 recommended`);
    const raw = readFileSync(path);
    try {
      const key = raw.length === 32 ? new Uint8Array(raw) : parseMasterKey(raw.toString('utf8'));
      return { key, source: 'file', path, warnings };
    } catch {
      throw new CryptoError('INVALID_MASTER_KEY', `${path} does not hold a 32-byte key (hex or base64)`);
    } finally {
      raw.fill(0);
    }
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = new Uint8Array(randomBytes(32));
  try {
    writeFileSync(path, bytesToHex(key) + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    // another process created it first: use theirs
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
      wipe(key);
      return loadOrCreateMasterKey(dataDir, {});
    }
    throw e;
  }
  return { key, source: 'created', path, warnings };
}
