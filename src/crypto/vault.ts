/**
 * The Vault: every operation the server performs with key material, over SEALED values only.
 * Callers (the activity handlers) hold sealed blobs and their AtRestContext; the Vault opens a
 * secret for the moment of use, uses it (signing on the wasm core, derivation, HPKE), wipes the
 * plaintext and returns only public results or newly sealed values. The master key and the
 * sealed bundle-signer key live inside the Vault instance.
 */
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex, utf8, wipe } from '../encoding/bytes.js';
import { generatePrivateKey, getPublicKey, sha256, signDigest, signEd25519, type CurveId } from './curves.js';
import { deriveAtRestKey, openStored, sealWithAtRestKey, type AtRestContext } from './atrest.js';
import { deriveFromSeed, generateMnemonic, mnemonicToSeed } from './hd.js';
import { validateAccountSpec, publicKeyHex, type WalletAccountSpec } from './wallets.js';
import { addressFromPublicKey } from './addresses.js';
import type { RawPayloadRequest, RawSignature } from './payload.js';
import { runSignJob, type SignJob, type SignJobResult } from './signjob.js';
import { secondsSince, signatures, signDuration } from '../metrics.js';
import { SignPool, type StampCheck } from './signpool.js';
import { createCredentialBundle, createExportBundle, createImportBundle, openEncryptedBundle, openImportedPrivateKey, openImportedWallet, signerPublicKeyHex } from './bundles.js';

export const SIGNER_CONTEXT: AtRestContext = { kind: 'bundle_signer', organizationId: '', recordId: 'bundle-signer' };
export const WEBHOOK_SIGNER_CONTEXT: AtRestContext = { kind: 'webhook_signer', organizationId: '', recordId: 'webhook-signer' };
export const SESSION_SIGNER_CONTEXT: AtRestContext = { kind: 'session_signer', organizationId: '', recordId: 'session-signer' };
export const LOG_SIGNER_CONTEXT: AtRestContext = { kind: 'log_signer', organizationId: '', recordId: 'log-signer' };

/** Keys of the server itself, created on first start and kept sealed (domain/keys.ts initKeys). */
export type ServerKeyKind = 'bundleSigner' | 'webhookSigner' | 'sessionSigner' | 'logSigner';
const SERVER_KEYS: Record<ServerKeyKind, { curve: CurveId; ctx: AtRestContext; publicKeyOf: (sk: Uint8Array) => string }> = {
  bundleSigner: { curve: 'p256', ctx: SIGNER_CONTEXT, publicKeyOf: signerPublicKeyHex },
  webhookSigner: { curve: 'ed25519', ctx: WEBHOOK_SIGNER_CONTEXT, publicKeyOf: (sk) => publicKeyHex('ed25519', getPublicKey('ed25519', sk)) },
  sessionSigner: { curve: 'p256', ctx: SESSION_SIGNER_CONTEXT, publicKeyOf: signerPublicKeyHex },
  logSigner: { curve: 'ed25519', ctx: LOG_SIGNER_CONTEXT, publicKeyOf: (sk) => publicKeyHex('ed25519', getPublicKey('ed25519', sk)) },
};

export interface SealedKey {
  sealed: Uint8Array;
  /** record form: compressed SEC1 (ECDSA) or raw 32 bytes (Ed25519) */
  publicKey: Uint8Array;
}

export interface SealedAccount {
  curve: CurveId;
  path: string;
  addressFormat: string;
  address: string;
  /** record form hex */
  publicKey: string;
  sealed: Uint8Array;
}

/** One account to derive: the spec (API strings) and the at-rest context its key is sealed under. */
export interface AccountToDerive extends WalletAccountSpec { ctx: AtRestContext }

const dec = new TextDecoder('utf-8', { fatal: true });

export class Vault {
  /** AES-256-GCM key derived from the master key (the master key itself is not kept). */
  readonly #atRest: Uint8Array;
  readonly #serverKeys = new Map<ServerKeyKind, { sealed: Uint8Array; publicKey: string }>();
  #pool?: SignPool;

  constructor(masterKey: Uint8Array) {
    if (!(masterKey instanceof Uint8Array) || masterKey.length !== 32)
      throw new CryptoError('INVALID_MASTER_KEY', 'master key must be 32 bytes');
    this.#atRest = deriveAtRestKey(masterKey);
  }

  // ---- at rest --------------------------------------------------------------------------------

  seal(plaintext: Uint8Array, ctx: AtRestContext): Uint8Array {
    return sealWithAtRestKey(this.#atRest, plaintext, ctx);
  }

  /** Opens a stored secret; a failure here is the server's (wrong master key / corrupted row), never the caller's. */
  #open(sealed: Uint8Array, ctx: AtRestContext): Uint8Array {
    return openStored(this.#atRest, sealed, ctx);
  }

  #with<T>(sealed: Uint8Array, ctx: AtRestContext, fn: (secret: Uint8Array) => T): T {
    const secret = this.#open(sealed, ctx);
    try {
      return fn(secret);
    } finally {
      wipe(secret);
    }
  }

  // ---- server keys: the bundle signer (P-256) and the webhook signer (Ed25519) -------------------

  /** A fresh server key of `kind`, sealed; also installs it in this Vault. */
  createServerKey(kind: ServerKeyKind): { sealed: Uint8Array; publicKey: string } {
    const k = SERVER_KEYS[kind];
    const sk = generatePrivateKey(k.curve);
    try {
      const key = { sealed: this.seal(sk, k.ctx), publicKey: k.publicKeyOf(sk) };
      this.#serverKeys.set(kind, key);
      return key;
    } finally {
      wipe(sk);
    }
  }

  /** Installs a stored server key; checks that it opens and matches its recorded public key. */
  useServerKey(kind: ServerKeyKind, sealed: Uint8Array, publicKey: string): void {
    const k = SERVER_KEYS[kind];
    if (this.#with(sealed, k.ctx, k.publicKeyOf) !== publicKey) {
      throw new CryptoError('DECRYPTION_FAILED', `stored ${k.ctx.kind} does not match its public key`);
    }
    this.#serverKeys.set(kind, { sealed, publicKey });
  }

  #withServerKey<T>(kind: ServerKeyKind, fn: (sk: Uint8Array) => T): T {
    const key = this.#serverKeys.get(kind);
    if (!key) throw new CryptoError('INVALID_PRIVATE_KEY', `no ${SERVER_KEYS[kind].ctx.kind} installed`);
    return this.#with(key.sealed, SERVER_KEYS[kind].ctx, fn);
  }

  /** The bundle signer, uncompressed lowercase hex (what dangerouslyOverrideSignerPublicKey takes). */
  get signerPublicKey(): string {
    const key = this.#serverKeys.get('bundleSigner');
    if (!key) throw new CryptoError('INVALID_PRIVATE_KEY', 'no bundle signer installed');
    return key.publicKey;
  }

  #withSigner<T>(fn: (sk: Uint8Array) => T): T {
    return this.#withServerKey('bundleSigner', fn);
  }

  /** The webhook signer's raw 32-byte Ed25519 public key, lowercase hex (undefined: none installed). */
  get webhookPublicKey(): string | undefined { return this.#serverKeys.get('webhookSigner')?.publicKey; }

  /** Ed25519 signature (64 bytes) of `message` with the webhook signer, opened for this call only. */
  signWebhook(message: Uint8Array): Uint8Array {
    return this.#withServerKey('webhookSigner', (sk) => signEd25519(message, sk));
  }

  /** The log signer's raw 32-byte Ed25519 public key, lowercase hex (undefined: none installed). */
  get logPublicKey(): string | undefined { return this.#serverKeys.get('logSigner')?.publicKey; }

  /** Ed25519 signature (64 bytes) of `message` (a checkpoint's text) with the log signer, opened for this call only. */
  signLog(message: Uint8Array): Uint8Array {
    return this.#withServerKey('logSigner', (sk) => signEd25519(message, sk));
  }

  /** The session signer (session JWTs of the *_login flows), uncompressed lowercase hex (undefined: none installed). */
  get sessionSignerPublicKey(): string | undefined { return this.#serverKeys.get('sessionSigner')?.publicKey; }

  /**
   * 64-byte r‖s (low-s) by the session signer over SHA-256(SHA-256(signingInput)), the digest
   * @turnkey/crypto verifySessionJwtSignature checks.
   */
  signSessionJwt(signingInput: string): Uint8Array {
    const digest = sha256(sha256(utf8(signingInput)));
    return this.#withServerKey('sessionSigner', (sk) => signDigest('p256', digest, sk).signature);
  }

  /**
   * 64-byte r‖s (low-s) by the bundle signer over SHA-256(signingInput): a standard ES256 JWT
   * signature (verify_otp's verification tokens; @turnkey/crypto verifyOtpVerificationToken).
   */
  signVerificationToken(signingInput: string): Uint8Array {
    const digest = sha256(utf8(signingInput));
    return this.#withSigner((sk) => signDigest('p256', digest, sk).signature);
  }

  /** verify_otp's encryptedOtpBundle, opened with init_otp's sealed target key: the JSON text inside. */
  openOtpBundle(sealedTarget: Uint8Array, targetCtx: AtRestContext, encryptedOtpBundle: string): string {
    const pt = this.#with(sealedTarget, targetCtx, (tk) => openEncryptedBundle(encryptedOtpBundle, tk, 'encryptedOtpBundle'));
    try {
      return dec.decode(pt);
    } catch {
      throw new CryptoError('INVALID_BUNDLE', 'the encrypted OTP bundle does not hold UTF-8 text', 'encryptedOtpBundle');
    } finally {
      wipe(pt);
    }
  }

  /** Opens a secret the server sealed for itself (mail in the outbox, one-time codes); UTF-8. */
  openText(sealed: Uint8Array, ctx: AtRestContext): string {
    return this.#with(sealed, ctx, (pt) => dec.decode(pt));
  }

  // ---- session keys (create_read_write_session) -----------------------------------------------

  /**
   * A fresh P-256 API key for a session: its compressed public key (to register) and its private
   * key in a credential bundle for `targetPublicKey` (what @turnkey/crypto decryptCredentialBundle
   * opens). The private key exists only inside this call.
   */
  newSessionKey(targetPublicKey: string): { publicKey: string; credentialBundle: string } {
    const sk = generatePrivateKey('p256');
    try {
      return { publicKey: publicKeyHex('p256', getPublicKey('p256', sk, true)), credentialBundle: createCredentialBundle(sk, targetPublicKey) };
    } finally {
      wipe(sk);
    }
  }

  // ---- private keys -------------------------------------------------------------------------

  /** A fresh private key on `curve`, sealed under ctx. */
  newPrivateKey(curve: CurveId, ctx: AtRestContext): SealedKey {
    const sk = generatePrivateKey(curve);
    try {
      return { sealed: this.seal(sk, ctx), publicKey: getPublicKey(curve, sk, true) };
    } finally {
      wipe(sk);
    }
  }

  // ---- wallets --------------------------------------------------------------------------------

  /** A fresh English mnemonic of `words` words, sealed under ctx. */
  newWallet(words: number, ctx: AtRestContext): { sealedMnemonic: Uint8Array } {
    const m = utf8(generateMnemonic(words));
    try {
      return { sealedMnemonic: this.seal(m, ctx) };
    } finally {
      wipe(m);
    }
  }

  /**
   * Derives accounts from a sealed wallet: validates every spec first (errors name
   * `${fieldPrefix}[i].<field>`), then derives (BIP32 on the wasm core / SLIP-10 for Ed25519)
   * and seals each account's private key under its own context.
   */
  deriveAccounts(sealedMnemonic: Uint8Array, walletCtx: AtRestContext, specs: AccountToDerive[], fieldPrefix = 'accounts'): SealedAccount[] {
    const checked = specs.map((s, i) => validateAccountSpec(s, `${fieldPrefix}[${i}]`));
    if (specs.length === 0) return [];
    const seed = this.#seedOf(sealedMnemonic, walletCtx);
    try {
      return checked.map(({ curve, indices }, i) => {
        const spec = specs[i]!;
        const key = deriveFromSeed(curve, seed, indices);
        try {
          const pub = key.publicKey;
          const address = addressFromPublicKey(spec.addressFormat, curve, pub, `${fieldPrefix}[${i}].addressFormat`);
          return {
            curve, path: spec.path, addressFormat: spec.addressFormat, address, publicKey: publicKeyHex(curve, pub),
            sealed: this.seal(key.privateKey as Uint8Array, spec.ctx),
          };
        } finally {
          key.wipe();
        }
      });
    } finally {
      wipe(seed);
    }
  }

  #seedOf(sealedMnemonic: Uint8Array, ctx: AtRestContext): Uint8Array {
    return this.#with(sealedMnemonic, ctx, (m) => {
      const text = dec.decode(m);
      const nl = text.indexOf('\n');
      return nl >= 0 ? mnemonicToSeed(text.slice(0, nl), text.slice(nl + 1)) : mnemonicToSeed(text);
    });
  }

  // ---- signing ------------------------------------------------------------------------------

  /** sign_raw_payload with a sealed key (ECDSA on the wasm core, Ed25519 on noble). */
  signPayload(sealed: Uint8Array, ctx: AtRestContext, curve: CurveId, req: RawPayloadRequest): RawSignature {
    return this.sign(sealed, ctx, { op: 'payload', curve, request: req }) as RawSignature;
  }

  /** sign_raw_payloads with a sealed key through the core's batch path. */
  signPayloads(sealed: Uint8Array, ctx: AtRestContext, curve: CurveId, payloads: string[], encoding: string, hashFunction: string): RawSignature[] {
    return this.sign(sealed, ctx, { op: 'payloads', curve, payloads, encoding, hashFunction }) as RawSignature[];
  }

  /** sign_transaction (TRANSACTION_TYPE_ETHEREUM), secp256k1 only; hex without 0x. */
  signEthereumTransaction(sealed: Uint8Array, ctx: AtRestContext, curve: CurveId, unsignedTransaction: string, field = 'unsignedTransaction'): string {
    return this.sign(sealed, ctx, { op: 'transaction', curve, unsignedTransaction, field }) as string;
  }

  /** A signing job (signjob.ts) on this thread. */
  sign(sealed: Uint8Array, ctx: AtRestContext, job: SignJob): SignJobResult {
    const start = performance.now();
    const result = runSignJob(job, () => this.#open(sealed, ctx));
    observeSigning(job, start);
    return result;
  }

  /**
   * The same job on a signing thread (useWorkers), the key opened there; undefined when this
   * Vault has none. Rejects with the CryptoError sign() would throw, or SIGN_FAILED (also when
   * `check` is given and the stamp does not verify: then no key is opened).
   */
  signOffThread(sealed: Uint8Array, ctx: AtRestContext, job: SignJob, check?: StampCheck): Promise<SignJobResult> | undefined {
    const pool = this.#pool;
    if (!pool || pool.size === 0) return undefined;
    const start = performance.now();
    return pool.run(sealed, ctx, job, check).then((result) => { observeSigning(job, start); return result; });
  }

  // ---- worker pool ----------------------------------------------------------------------------

  /** Signing threads (signOffThread), each with its own wasm core; 0 = none. */
  useWorkers(workers: number): SignPool | undefined {
    this.#pool?.close();
    this.#pool = workers > 0 ? new SignPool(workers, this.#atRest) : undefined;
    return this.#pool;
  }

  get pool(): SignPool | undefined { return this.#pool; }

  /** Stops the worker pool (if any). */
  close(): void {
    this.#pool?.close();
    this.#pool = undefined;
  }

  // ---- export -------------------------------------------------------------------------------

  /** export_wallet: the mnemonic (with "\n" passphrase, if any) HPKE-sealed to targetPublicKey, signed envelope. */
  exportWallet(sealedMnemonic: Uint8Array, ctx: AtRestContext, targetPublicKey: string, organizationId: string): string {
    return this.#with(sealedMnemonic, ctx, (m) =>
      this.#withSigner((signer) => createExportBundle({ plaintext: m, targetPublicKey, organizationId, signerPrivateKey: signer })));
  }

  /** export_private_key / export_wallet_account: the raw 32-byte key. */
  exportKey(sealed: Uint8Array, ctx: AtRestContext, targetPublicKey: string, organizationId: string): string {
    return this.#with(sealed, ctx, (sk) =>
      this.#withSigner((signer) => createExportBundle({ plaintext: sk, targetPublicKey, organizationId, signerPrivateKey: signer })));
  }

  // ---- import -------------------------------------------------------------------------------

  /** init_import_* (and init_otp, without userId): a fresh target key (sealed under targetCtx) and the signed bundle. */
  initImport(targetCtx: AtRestContext, organizationId: string, userId?: string): { sealed: Uint8Array; importBundle: string } {
    const t = this.#withSigner((signer) => createImportBundle({ organizationId, ...(userId !== undefined ? { userId } : {}), signerPrivateKey: signer }));
    try {
      return { sealed: this.seal(t.targetPrivateKey, targetCtx), importBundle: t.importBundle };
    } finally {
      wipe(t.targetPrivateKey);
    }
  }

  /** import_wallet: opens the client's bundle with the sealed target key; returns the mnemonic sealed under walletCtx. */
  importWallet(sealedTarget: Uint8Array, targetCtx: AtRestContext, encryptedBundle: string, walletCtx: AtRestContext): { sealedMnemonic: Uint8Array } {
    const w = this.#with(sealedTarget, targetCtx, (tk) => openImportedWallet(encryptedBundle, tk, 'encryptedBundle'));
    const text = utf8(w.passphrase ? `${w.mnemonic}\n${w.passphrase}` : w.mnemonic);
    try {
      return { sealedMnemonic: this.seal(text, walletCtx) };
    } finally {
      wipe(text);
    }
  }

  /** import_private_key: opens the client's bundle; returns the key sealed under keyCtx and its public key. */
  importPrivateKey(sealedTarget: Uint8Array, targetCtx: AtRestContext, encryptedBundle: string, curve: CurveId, keyCtx: AtRestContext): SealedKey {
    const sk = this.#with(sealedTarget, targetCtx, (tk) => openImportedPrivateKey(encryptedBundle, tk, curve, 'encryptedBundle'));
    try {
      return { sealed: this.seal(sk, keyCtx), publicKey: getPublicKey(curve, sk, true) };
    } finally {
      wipe(sk);
    }
  }

  /** The uncompressed P-256 public key (hex) of a sealed private key (an import target). */
  publicKeyOfSealed(sealed: Uint8Array, ctx: AtRestContext): string {
    return this.#with(sealed, ctx, (sk) => bytesToHex(getPublicKey('p256', sk, false)));
  }

  /** import_secrets: opens the client's bundle (encryptSecretToBundle) with the sealed target key; returns it sealed under secretCtx. */
  importSecret(sealedTarget: Uint8Array, targetCtx: AtRestContext, secretPayload: string, secretCtx: AtRestContext, maxBytes: number, field: string): Uint8Array {
    const pt = this.#with(sealedTarget, targetCtx, (tk) => openEncryptedBundle(secretPayload, tk, field));
    try {
      if (pt.length > maxBytes) throw new CryptoError('INVALID_PAYLOAD', `the secret is larger than ${maxBytes} bytes`, field);
      return this.seal(pt, secretCtx);
    } finally {
      wipe(pt);
    }
  }

  /** Does a sealed secret open under ctx (used for health checks of stored rows)? */
  canOpen(sealed: Uint8Array, ctx: AtRestContext): boolean {
    try {
      wipe(this.#open(sealed, ctx));
      return true;
    } catch {
      return false;
    }
  }
}

/** A signing job that succeeded: its duration (single or batch) and the signatures it made, by curve. */
function observeSigning(job: SignJob, start: number): void {
  const batch = job.op === 'payloads';
  signDuration.observe({ curve: job.curve, mode: batch ? 'batch' : 'single' }, secondsSince(start));
  signatures.inc({ curve: job.curve }, batch ? job.payloads.length : 1);
}
