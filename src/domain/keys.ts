/**
 * Keys and wallets in the domain: start-up of the Vault (master key, server keys), at-rest contexts, record shapes
 * (v1PrivateKey, v1Wallet, v1WalletAccount), signWith resolution and the mapping of src/crypto
 * errors to API errors. No plaintext key material passes through here: only sealed blobs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError, Grpc, invalidArgument, notFound } from '../errors.js';
import { CryptoError, loadOrCreateMasterKey, Vault, type AtRestContext, type CurveId, type ServerKeyKind } from '../crypto/index.js';
import type { Db, Tx } from '../storage/types.js';
import type { PrivateKeyRow, WalletAccountRow, WalletRow } from '../storage/keys.js';
import { timestamp } from './records.js';
import type { Logger } from '../log.js';

export const SIGNER_SECRET = 'bundle_signer';
export const WEBHOOK_SIGNER_SECRET = 'webhook_signer';
export const SESSION_SIGNER_SECRET = 'session_signer';
export const LOG_SIGNER_SECRET = 'log_signer';

/**
 * Start-up: master key (KMAS_MASTER_KEY, else DATA_DIR/master.key created 0600), bundle signer
 * (created on first start, stored sealed), Vault attached to the store. Returns the signer's
 * public key (uncompressed hex) and writes it into bootstrap.json when missing or different.
 */
/** The server's own keys: kind, the server_secrets row that holds each sealed, and its name in messages. */
export const SERVER_KEYS: readonly [ServerKeyKind, string, string][] = [
  ['bundleSigner', SIGNER_SECRET, 'bundle signer'],
  ['webhookSigner', WEBHOOK_SIGNER_SECRET, 'webhook signer'],
  ['sessionSigner', SESSION_SIGNER_SECRET, 'session signer'],
  ['logSigner', LOG_SIGNER_SECRET, 'log signer'],
];

export async function initKeys(db: Db, dataDir: string, masterKeyText: string | undefined, log: Logger, signWorkers = 0): Promise<{ signerPublicKey: string; vault: Vault }> {
  const mk = loadOrCreateMasterKey(dataDir, masterKeyText ? { KMAS_MASTER_KEY: masterKeyText } : {});
  for (const w of mk.warnings) log.warn(w);
  const vault = new Vault(mk.key);
  mk.key.fill(0);
  const serverKeys = SERVER_KEYS;
  const useStored = (kind: ServerKeyKind, label: string, stored: { sealed: Uint8Array; publicKey: string }) => {
    try {
      vault.useServerKey(kind, stored.sealed, stored.publicKey);
    } catch {
      throw new Error(`the stored ${label} key cannot be opened with this master key (KMAS_MASTER_KEY / DATA_DIR/master.key changed?)`);
    }
  };
  const stored = await db.read((tx) => Promise.all(serverKeys.map(([, secret]) => tx.keys.secrets.get(secret))));
  const missing = serverKeys.filter((_, i) => !stored[i]);
  serverKeys.forEach(([kind, , label], i) => { if (stored[i]) useStored(kind, label, stored[i]); });
  if (missing.length > 0) {
    // Made before the transaction; kept only where no other start stored one meanwhile.
    const made = missing.map(([kind]) => vault.createServerKey(kind));
    await db.write(async (tx) => {
      await tx.lock('bootstrap', 'server-keys');
      for (const [i, [kind, secret, label]] of missing.entries()) {
        const again = await tx.keys.secrets.get(secret);
        if (again) { useStored(kind, label, again); continue; }
        await tx.keys.secrets.insert(secret, made[i]!.sealed, made[i]!.publicKey, Date.now());
        log.info(`created the ${label} key`, { publicKey: made[i]!.publicKey, masterKeySource: mk.source });
      }
    });
  }
  if (signWorkers > 0) {
    const pool = vault.useWorkers(signWorkers);
    if (!pool || pool.size === 0) log.warn('SIGN_WORKERS is set but the worker script (dist/src/crypto/signworker.js) is missing; signing on the request thread');
  }
  const file = path.join(dataDir, 'bootstrap.json');
  try {
    const info = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    if (info.signerPublicKey !== vault.signerPublicKey || info.sessionSignerPublicKey !== vault.sessionSignerPublicKey || info.logPublicKey !== vault.logPublicKey) {
      info.signerPublicKey = vault.signerPublicKey;
      info.sessionSignerPublicKey = vault.sessionSignerPublicKey;
      // the verifiable activity log's key (raw Ed25519, hex); its note verifier key is at GET /.well-known/kmas-log-key
      info.logPublicKey = vault.logPublicKey;
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(info, null, 2) + '\n', { mode: 0o644 });
      fs.renameSync(tmp, file);
    }
  } catch (e) {
    log.warn('could not record signerPublicKey in bootstrap.json', { error: e instanceof Error ? e.message : String(e) });
  }
  return { signerPublicKey: vault.signerPublicKey, vault };
}

// ---- at-rest contexts ---------------------------------------------------------------------------

export const ctxPrivateKey = (organizationId: string, id: string): AtRestContext => ({ kind: 'private_key', organizationId, recordId: id });
export const ctxWallet = (organizationId: string, id: string): AtRestContext => ({ kind: 'wallet_mnemonic', organizationId, recordId: id });
export const ctxAccount = (organizationId: string, id: string): AtRestContext => ({ kind: 'wallet_account_key', organizationId, recordId: id });
export const ctxSecret = (organizationId: string, id: string): AtRestContext => ({ kind: 'org_secret', organizationId, recordId: id });
export const ctxImportTarget = (organizationId: string, id: string): AtRestContext => ({ kind: 'import_target', organizationId, recordId: id });

/** Import targets from init_import_* are single-use and expire after this long. */
export const IMPORT_TARGET_TTL_MS = 60 * 60 * 1000;

// ---- curves -----------------------------------------------------------------------------------

export const API_CURVES = ['CURVE_SECP256K1', 'CURVE_P256', 'CURVE_ED25519'] as const;
export type ApiCurveName = (typeof API_CURVES)[number];
const CURVE_ID: Record<ApiCurveName, CurveId> = { CURVE_SECP256K1: 'secp256k1', CURVE_P256: 'p256', CURVE_ED25519: 'ed25519' };
export const curveId = (c: string): CurveId => CURVE_ID[c as ApiCurveName];

// ---- records ----------------------------------------------------------------------------------

export async function privateKeyRecord(tx: Tx, k: PrivateKeyRow): Promise<Record<string, unknown>> {
  return privateKeyRecordOf(k, await tx.tags.tagsOf(k.id, 'TAG_TYPE_PRIVATE_KEY'));
}

/** v1PrivateKey of each key of one organization: one read of the tags, whatever the number of keys. */
export async function privateKeyRecords(tx: Tx, organizationId: string, keys: PrivateKeyRow[]): Promise<Record<string, unknown>[]> {
  const tags = new Map<string, string[]>();
  if (keys.length > 0) {
    for (const { tagId, memberId } of await tx.tags.memberships(organizationId, 'TAG_TYPE_PRIVATE_KEY')) {
      let l = tags.get(memberId); if (!l) tags.set(memberId, l = []); l.push(tagId);
    }
  }
  return keys.map((k) => privateKeyRecordOf(k, tags.get(k.id) ?? []));
}

function privateKeyRecordOf(k: PrivateKeyRow, tagIds: string[]): Record<string, unknown> {
  return {
    privateKeyId: k.id,
    publicKey: k.publicKey,
    privateKeyName: k.name,
    curve: k.curve,
    addresses: k.addresses.map((a) => ({ format: a.format, address: a.address })),
    privateKeyTags: tagIds,
    createdAt: timestamp(k.createdMs),
    updatedAt: timestamp(k.updatedMs),
    exported: k.exported,
    imported: k.imported,
  };
}

export function walletRecord(w: WalletRow): Record<string, unknown> {
  return {
    walletId: w.id, walletName: w.name, createdAt: timestamp(w.createdMs), updatedAt: timestamp(w.updatedMs),
    exported: w.exported, imported: w.imported,
  };
}

const CAIP2: Record<string, string> = { ADDRESS_FORMAT_ETHEREUM: 'eip155', ADDRESS_FORMAT_SOLANA: 'solana' };

export function accountRecord(a: WalletAccountRow, wallet?: WalletRow): Record<string, unknown> {
  const out: Record<string, unknown> = {
    walletAccountId: a.id, organizationId: a.organizationId, walletId: a.walletId, curve: a.curve, pathFormat: a.pathFormat,
    path: a.path, addressFormat: a.addressFormat, address: a.address, createdAt: timestamp(a.createdMs), updatedAt: timestamp(a.updatedMs),
    publicKey: a.publicKey,
  };
  if (a.name !== null) out.name = a.name;
  const caip = CAIP2[a.addressFormat];
  if (caip) out.caip2Prefix = caip;
  if (wallet) out.walletDetails = walletRecord(wallet);
  return out;
}

// ---- signWith ---------------------------------------------------------------------------------

/** What a signWith names: a private key (by id or address) or a wallet account (by address). */
export interface SigningKey {
  kind: 'private_key' | 'wallet_account';
  /** private key id, or wallet account id */
  id: string;
  /** the private key id the specification's intent names (wallet accounts: the account id) */
  privateKeyId: string;
  curve: CurveId;
  apiCurve: string;
  /** hex, as stored (Ed25519: the raw 32 bytes) */
  publicKey: string;
  sealed: Uint8Array;
  ctx: AtRestContext;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Resolves signWith inside the organization; 404 naming `field` when nothing matches. */
export async function resolveSigningKey(tx: Tx, organizationId: string, signWith: string, field = 'signWith'): Promise<SigningKey> {
  // An id first, then a private key's address, then a wallet account's. kmas's ids are UUIDs and no
  // address format has their shape, so for anything else the three reads are asked at once (on
  // PostgreSQL: one message instead of three, for the common signWith, an account's address).
  let pk: PrivateKeyRow | undefined;
  let acct: WalletAccountRow | undefined;
  if (UUID.test(signWith)) {
    pk = await tx.keys.privateKeys.get(organizationId, signWith) ?? await tx.keys.privateKeys.byAddress(organizationId, signWith);
    if (!pk) acct = await tx.keys.accounts.byAddress(organizationId, signWith);
  } else {
    const [byId, byAddress, account] = await Promise.all([
      tx.keys.privateKeys.get(organizationId, signWith), tx.keys.privateKeys.byAddress(organizationId, signWith), tx.keys.accounts.byAddress(organizationId, signWith),
    ]);
    pk = byId ?? byAddress;
    acct = account;
  }
  if (pk) {
    return { kind: 'private_key', id: pk.id, privateKeyId: pk.id, curve: curveId(pk.curve), apiCurve: pk.curve, publicKey: pk.publicKey, sealed: pk.sealed, ctx: ctxPrivateKey(organizationId, pk.id) };
  }
  if (acct) {
    return { kind: 'wallet_account', id: acct.id, privateKeyId: acct.id, curve: curveId(acct.curve), apiCurve: acct.curve, publicKey: acct.publicKey, sealed: acct.sealed, ctx: ctxAccount(organizationId, acct.id) };
  }
  throw new ApiError(Grpc.NOT_FOUND, `${field}: no private key or wallet account of this organization has the id or address ${signWith.slice(0, 128)}`,
    { turnkeyErrorCode: 'PRIVATE_KEY_NOT_FOUND', fieldViolations: [{ field, description: 'names no private key id, private key address or wallet account address of this organization' }] });
}

// ---- errors -----------------------------------------------------------------------------------

/** src/crypto errors → API errors: caller input → 400 naming the field; stored-data failures → 500. */
export function toApiError(e: unknown, defaultField?: string): unknown {
  if (!(e instanceof CryptoError)) return e;
  const field = e.field ?? defaultField;
  if (e.code === 'SIGN_FAILED' || e.code === 'INVALID_MASTER_KEY' || (e.code === 'DECRYPTION_FAILED' && e.field === undefined)) {
    return new ApiError(Grpc.INTERNAL, 'internal error while using key material', { turnkeyErrorCode: 'INTERNAL' });
  }
  const message = field ? `${field}: ${e.message}` : e.message;
  return invalidArgument(message, field ? [{ field, description: e.message }] : undefined);
}

/** Runs fn, converting src/crypto errors into API errors. */
export function cryptoCall<T>(fn: () => T, defaultField?: string): T {
  try {
    return fn();
  } catch (e) {
    throw toApiError(e, defaultField);
  }
}

export async function requireWallet(tx: Tx, organizationId: string, walletId: string, field = 'walletId'): Promise<WalletRow> {
  const w = await tx.keys.wallets.get(organizationId, walletId);
  if (!w) {
    throw new ApiError(Grpc.NOT_FOUND, `wallet ${walletId.slice(0, 100)} not found`,
      { turnkeyErrorCode: 'WALLET_NOT_FOUND', fieldViolations: [{ field, description: 'names no wallet of this organization' }] });
  }
  return w;
}

export async function requirePrivateKey(tx: Tx, organizationId: string, id: string, field = 'privateKeyId'): Promise<PrivateKeyRow> {
  const k = await tx.keys.privateKeys.get(organizationId, id);
  if (!k) {
    throw new ApiError(Grpc.NOT_FOUND, `private key ${id.slice(0, 100)} not found`,
      { turnkeyErrorCode: 'PRIVATE_KEY_NOT_FOUND', fieldViolations: [{ field, description: 'names no private key of this organization' }] });
  }
  return k;
}

export { notFound };
