/**
 * Key and wallet repository: private keys, HD wallets, wallet accounts, pending import targets
 * and server secrets (the bundle signer). Secret columns hold ONLY values sealed by
 * src/crypto (AES-256-GCM under the master key); nothing here ever sees plaintext key material.
 */
import type Database from 'better-sqlite3';
import { bech32, bech32m } from '@scure/base';
import type { RowCache } from './rowcache.js';
import type { Sync } from './sync.js';
import type { ListPage, PageBySeq } from './paging.js';

export interface AddressEntry { format: string; address: string }

export interface PrivateKeyRow {
  id: string;
  organizationId: string;
  name: string;
  /** CURVE_SECP256K1 | CURVE_P256 | CURVE_ED25519 */
  curve: string;
  /** record form: compressed SEC1 hex (ECDSA) or raw 32-byte hex (Ed25519) */
  publicKey: string;
  addresses: AddressEntry[];
  /** sealed 32-byte private key */
  sealed: Uint8Array;
  imported: boolean;
  exported: boolean;
  createdMs: number;
  updatedMs: number;
}

export interface WalletRow {
  id: string;
  organizationId: string;
  name: string;
  /** sealed mnemonic (UTF-8, optional "\n" + passphrase) */
  sealedMnemonic: Uint8Array;
  imported: boolean;
  exported: boolean;
  createdMs: number;
  updatedMs: number;
}

export interface WalletAccountRow {
  id: string;
  organizationId: string;
  walletId: string;
  curve: string;
  pathFormat: string;
  path: string;
  addressFormat: string;
  address: string;
  publicKey: string;
  /** sealed derived private key of the account (so signing needs no seed derivation) */
  sealed: Uint8Array;
  name: string | null;
  /** exported on its own (export_wallet_account); the wallet's export covers it too */
  exported?: boolean;
  createdMs: number;
  updatedMs: number;
}

export interface ImportTargetRow {
  id: string;
  organizationId: string;
  userId: string;
  kind: 'wallet' | 'private_key' | 'secret';
  /** sealed P-256 target private key */
  sealed: Uint8Array;
  createdMs: number;
  expiresMs: number;
}

export type { ListPage } from './paging.js';

export interface KeyStore {
  privateKeys: {
    get(organizationId: string, id: string): Promise<PrivateKeyRow | undefined>;
    /** by one of its addresses (0x-hex addresses compared case-insensitively) */
    byAddress(organizationId: string, address: string): Promise<PrivateKeyRow | undefined>;
    /** newest first */
    list(organizationId: string): Promise<PrivateKeyRow[]>;
    insert(row: PrivateKeyRow): Promise<void>;
    markExported(organizationId: string, id: string, ms: number): Promise<void>;
    delete(organizationId: string, id: string): Promise<void>;
    count(organizationId: string): Promise<number>;
  };
  wallets: {
    get(organizationId: string, id: string): Promise<WalletRow | undefined>;
    list(organizationId: string): Promise<WalletRow[]>;
    insert(row: WalletRow): Promise<void>;
    rename(organizationId: string, id: string, name: string, ms: number): Promise<void>;
    markExported(organizationId: string, id: string, ms: number): Promise<void>;
    /** deletes the wallet and its accounts */
    delete(organizationId: string, id: string): Promise<void>;
    count(organizationId: string): Promise<number>;
  };
  accounts: {
    get(organizationId: string, id: string): Promise<WalletAccountRow | undefined>;
    byAddress(organizationId: string, address: string): Promise<WalletAccountRow | undefined>;
    inWalletByAddress(organizationId: string, walletId: string, address: string): Promise<WalletAccountRow | undefined>;
    /** `path` canonical (hardened written `'`); matches rows stored before paths were canonical (`h`, `H`) too. */
    inWalletByPath(organizationId: string, walletId: string, path: string): Promise<WalletAccountRow[]>;
    /** newest first; walletId undefined = all wallets of the organization; undefined when a cursor is unknown */
    list(organizationId: string, walletId: string | undefined, page: ListPage): Promise<WalletAccountRow[] | undefined>;
    listAll(organizationId: string, walletId: string): Promise<WalletAccountRow[]>;
    insert(row: WalletAccountRow): Promise<void>;
    markExported(organizationId: string, id: string, ms: number): Promise<void>;
    delete(organizationId: string, id: string): Promise<void>;
    count(organizationId: string): Promise<number>;
  };
  importTargets: {
    /** unexpired targets of the user and kind, newest first */
    listValid(organizationId: string, userId: string, kind: ImportTargetRow['kind'], nowMs: number): Promise<ImportTargetRow[]>;
    insert(row: ImportTargetRow): Promise<void>;
    /**
     * Uses a target up: false when it was gone already (a concurrent transaction used it first:
     * on PostgreSQL two nodes may both have listed it; the one whose delete finds no row must fail).
     */
    delete(id: string): Promise<boolean>;
    /** drops expired targets */
    purgeExpired(nowMs: number): Promise<void>;
  };
  secrets: {
    get(name: string): Promise<{ sealed: Uint8Array; publicKey: string } | undefined>;
    insert(name: string, sealed: Uint8Array, publicKey: string, ms: number): Promise<void>;
  };
}

const HEX_0X = /^0x[0-9a-fA-F]+$/;
/** bare hex public keys: Ed25519 (32 bytes), SEC1 compressed (33) and uncompressed (65) */
const HEX_KEY = /^(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{66}|[0-9a-fA-F]{130})$/;

/**
 * The form an address is looked up in (signWith, get_wallet_account, list_suborgs, …). An address
 * whose letter case means nothing is taken in lower case, the case kmas derives it in: hex (with
 * 0x: Ethereum, whose mixed case is only the EIP-55 checksum, Sui, Aptos; bare: hex public keys)
 * and bech32 / bech32m written all in upper case (BIP-173 and BIP-350 allow one case, either).
 * Others match exactly: base58 and base32 (the case is part of the address), mixed-case bech32
 * (invalid). Every stored key was derived in lower case, so stored keys are the same under this.
 */
export function addressKey(address: string): string {
  if (HEX_0X.test(address) || HEX_KEY.test(address)) return address.toLowerCase();
  const lower = address.toLowerCase();
  if (address !== lower && address === address.toUpperCase() && (bech32.decodeUnsafe(address) ?? bech32m.decodeUnsafe(address)) !== undefined) return lower;
  return address;
}

/**
 * A stored account path in its canonical form. Paths are stored canonical (hardened written `'`);
 * rows written before that keep the `h` / `H` the request used, and a stored path passed parsePath,
 * so the hardened mark is all that can differ. PATH_SQL is the same in SQL (SQLite and PostgreSQL).
 */
export function canonicalPath(path: string): string {
  return path.replace(/[hH]/g, "'");
}
export const PATH_SQL = "REPLACE(REPLACE(path, 'h', ''''), 'H', '''')";

type Row = Record<string, unknown>;
const bytes = (v: unknown): Uint8Array => new Uint8Array(v as Buffer);
const buf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

export const KEYS_MIGRATION_SQL = `
  CREATE TABLE private_keys (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL REFERENCES organizations(id),
    name TEXT NOT NULL,
    curve TEXT NOT NULL,
    public_key TEXT NOT NULL,
    addresses TEXT NOT NULL,
    sealed BLOB NOT NULL,
    imported INTEGER NOT NULL DEFAULT 0,
    exported INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
  );
  CREATE INDEX private_keys_org ON private_keys(organization_id, seq);
  CREATE TABLE private_key_addresses (
    private_key_id TEXT NOT NULL REFERENCES private_keys(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    address_key TEXT NOT NULL
  );
  CREATE INDEX private_key_addresses_lookup ON private_key_addresses(organization_id, address_key);
  CREATE INDEX private_key_addresses_key ON private_key_addresses(private_key_id);

  CREATE TABLE wallets (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL REFERENCES organizations(id),
    name TEXT NOT NULL,
    sealed_mnemonic BLOB NOT NULL,
    imported INTEGER NOT NULL DEFAULT 0,
    exported INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
  );
  CREATE INDEX wallets_org ON wallets(organization_id, seq);

  CREATE TABLE wallet_accounts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL,
    wallet_id TEXT NOT NULL REFERENCES wallets(id) ON DELETE CASCADE,
    curve TEXT NOT NULL,
    path_format TEXT NOT NULL,
    path TEXT NOT NULL,
    address_format TEXT NOT NULL,
    address TEXT NOT NULL,
    address_key TEXT NOT NULL,
    public_key TEXT NOT NULL,
    sealed BLOB NOT NULL,
    name TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
  );
  CREATE INDEX wallet_accounts_org ON wallet_accounts(organization_id, seq);
  CREATE INDEX wallet_accounts_wallet ON wallet_accounts(wallet_id, seq);
  CREATE INDEX wallet_accounts_address ON wallet_accounts(organization_id, address_key);

  CREATE TABLE import_targets (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    sealed BLOB NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
  );
  CREATE INDEX import_targets_user ON import_targets(organization_id, user_id, kind, created_ms);

  CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    public_key TEXT NOT NULL,
    created_ms INTEGER NOT NULL
  );
`;

const pkFrom = (r: Row): PrivateKeyRow => ({
  id: r.id as string, organizationId: r.organization_id as string, name: r.name as string, curve: r.curve as string,
  publicKey: r.public_key as string, addresses: JSON.parse(r.addresses as string) as AddressEntry[], sealed: bytes(r.sealed),
  imported: r.imported === 1, exported: r.exported === 1, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const walletFrom = (r: Row): WalletRow => ({
  id: r.id as string, organizationId: r.organization_id as string, name: r.name as string, sealedMnemonic: bytes(r.sealed_mnemonic),
  imported: r.imported === 1, exported: r.exported === 1, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const accountFrom = (r: Row): WalletAccountRow => ({
  id: r.id as string, organizationId: r.organization_id as string, walletId: r.wallet_id as string, curve: r.curve as string,
  pathFormat: r.path_format as string, path: canonicalPath(r.path as string), addressFormat: r.address_format as string, address: r.address as string,
  publicKey: r.public_key as string, sealed: bytes(r.sealed), name: (r.name as string | null) ?? null,
  exported: r.exported === 1, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const targetFrom = (r: Row): ImportTargetRow => ({
  id: r.id as string, organizationId: r.organization_id as string, userId: r.user_id as string, kind: r.kind as ImportTargetRow['kind'],
  sealed: bytes(r.sealed), createdMs: r.created_ms as number, expiresMs: r.expires_ms as number,
});

/** The SQLite implementation over the Store's better-sqlite3 handle (tables from KEYS_MIGRATION_SQL). */
export function sqliteKeyStore(db: Database.Database, cache: RowCache, pageBySeq: PageBySeq): Sync<KeyStore> {
  const q = (sql: string) => db.prepare<unknown[], Row>(sql);
  // Every signing request resolves its key (by id or address): those lookups are cached, and
  // every write of a key, wallet or account clears the cache (rowcache.ts).
  const pkById = cache.map<PrivateKeyRow>();
  const pkByAddress = cache.map<PrivateKeyRow>();
  const accountByAddress = cache.map<WalletAccountRow>();
  const copyKey = <T extends { sealed: Uint8Array }>(r: T): T => ({ ...r, sealed: new Uint8Array(r.sealed) });
  const copyPk = (r: PrivateKeyRow): PrivateKeyRow => ({ ...copyKey(r), addresses: r.addresses.map((a) => ({ ...a })) });
  const written = () => cache.clear();
  const s = {
    pkGet: q('SELECT * FROM private_keys WHERE organization_id = ? AND id = ?'),
    pkByAddr: q(`SELECT k.* FROM private_key_addresses a JOIN private_keys k ON k.id = a.private_key_id
                 WHERE a.organization_id = ? AND a.address_key = ? ORDER BY k.seq LIMIT 1`),
    pkList: q('SELECT * FROM private_keys WHERE organization_id = ? ORDER BY seq DESC'),
    pkInsert: q(`INSERT INTO private_keys (id, organization_id, name, curve, public_key, addresses, sealed, imported, exported, created_ms, updated_ms)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    pkAddrInsert: q('INSERT INTO private_key_addresses (private_key_id, organization_id, address_key) VALUES (?, ?, ?)'),
    pkExported: q('UPDATE private_keys SET exported = 1, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    pkAddrDelete: q('DELETE FROM private_key_addresses WHERE private_key_id = ?'),
    pkDelete: q('DELETE FROM private_keys WHERE organization_id = ? AND id = ?'),
    pkCount: q('SELECT COUNT(*) AS n FROM private_keys WHERE organization_id = ?'),

    wGet: q('SELECT * FROM wallets WHERE organization_id = ? AND id = ?'),
    wList: q('SELECT * FROM wallets WHERE organization_id = ? ORDER BY seq DESC'),
    wInsert: q(`INSERT INTO wallets (id, organization_id, name, sealed_mnemonic, imported, exported, created_ms, updated_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
    wRename: q('UPDATE wallets SET name = ?, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    wExported: q('UPDATE wallets SET exported = 1, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    wDeleteAccounts: q('DELETE FROM wallet_accounts WHERE organization_id = ? AND wallet_id = ?'),
    wDelete: q('DELETE FROM wallets WHERE organization_id = ? AND id = ?'),
    wCount: q('SELECT COUNT(*) AS n FROM wallets WHERE organization_id = ?'),

    aGet: q('SELECT * FROM wallet_accounts WHERE organization_id = ? AND id = ?'),
    aExported: q('UPDATE wallet_accounts SET exported = 1, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    aDelete: q('DELETE FROM wallet_accounts WHERE organization_id = ? AND id = ?'),
    aByAddr: q('SELECT * FROM wallet_accounts WHERE organization_id = ? AND address_key = ? ORDER BY seq LIMIT 1'),
    aInWalletByAddr: q('SELECT * FROM wallet_accounts WHERE organization_id = ? AND wallet_id = ? AND address_key = ? ORDER BY seq LIMIT 1'),
    aInWalletByPath: q(`SELECT * FROM wallet_accounts WHERE organization_id = ? AND wallet_id = ? AND ${PATH_SQL} = ? ORDER BY seq`),
    aAll: q('SELECT * FROM wallet_accounts WHERE organization_id = ? AND wallet_id = ? ORDER BY seq'),
    aInsert: q(`INSERT INTO wallet_accounts (id, organization_id, wallet_id, curve, path_format, path, address_format, address, address_key,
                public_key, sealed, name, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    aCount: q('SELECT COUNT(*) AS n FROM wallet_accounts WHERE organization_id = ?'),

    tValid: q(`SELECT * FROM import_targets WHERE organization_id = ? AND user_id = ? AND kind = ? AND expires_ms > ?
               ORDER BY created_ms DESC, id`),
    tInsert: q('INSERT INTO import_targets (id, organization_id, user_id, kind, sealed, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    tDelete: q('DELETE FROM import_targets WHERE id = ?'),
    tPurge: q('DELETE FROM import_targets WHERE expires_ms <= ?'),

    secGet: q('SELECT * FROM server_secrets WHERE name = ?'),
    secInsert: q('INSERT INTO server_secrets (name, sealed, public_key, created_ms) VALUES (?, ?, ?, ?)'),
  };

  function listAccounts(org: string, walletId: string | undefined, page: ListPage): WalletAccountRow[] | undefined {
    return walletId === undefined
      ? pageBySeq('wallet_accounts', org, page)?.map(accountFrom)
      : pageBySeq('wallet_accounts', org, page, ['wallet_id = ?'], [walletId])?.map(accountFrom);
  }

  return {
    privateKeys: {
      get: (org, id) => cache.get(pkById, `${org}/${id}`, () => { const r = s.pkGet.get(org, id); return r ? pkFrom(r) : undefined; }, copyPk),
      byAddress: (org, address) => {
        const key = addressKey(address);
        return cache.get(pkByAddress, `${org}/${key}`, () => { const r = s.pkByAddr.get(org, key); return r ? pkFrom(r) : undefined; }, copyPk);
      },
      list: (org) => s.pkList.all(org).map(pkFrom),
      insert: (k) => {
        written();
        s.pkInsert.run(k.id, k.organizationId, k.name, k.curve, k.publicKey, JSON.stringify(k.addresses), buf(k.sealed),
          k.imported ? 1 : 0, k.exported ? 1 : 0, k.createdMs, k.updatedMs);
        for (const a of new Set(k.addresses.map((x) => addressKey(x.address)))) s.pkAddrInsert.run(k.id, k.organizationId, a);
      },
      markExported: (org, id, ms) => { written(); s.pkExported.run(ms, org, id); },
      delete: (org, id) => { written(); s.pkAddrDelete.run(id); s.pkDelete.run(org, id); },
      count: (org) => s.pkCount.get(org)!.n as number,
    },
    wallets: {
      get: (org, id) => { const r = s.wGet.get(org, id); return r ? walletFrom(r) : undefined; },
      list: (org) => s.wList.all(org).map(walletFrom),
      insert: (w) => {
        written();
        s.wInsert.run(w.id, w.organizationId, w.name, buf(w.sealedMnemonic), w.imported ? 1 : 0, w.exported ? 1 : 0, w.createdMs, w.updatedMs);
      },
      rename: (org, id, name, ms) => { written(); s.wRename.run(name, ms, org, id); },
      markExported: (org, id, ms) => { written(); s.wExported.run(ms, org, id); },
      delete: (org, id) => { written(); s.wDeleteAccounts.run(org, id); s.wDelete.run(org, id); },
      count: (org) => s.wCount.get(org)!.n as number,
    },
    accounts: {
      get: (org, id) => { const r = s.aGet.get(org, id); return r ? accountFrom(r) : undefined; },
      byAddress: (org, address) => {
        const key = addressKey(address);
        return cache.get(accountByAddress, `${org}/${key}`, () => { const r = s.aByAddr.get(org, key); return r ? accountFrom(r) : undefined; }, copyKey);
      },
      inWalletByAddress: (org, w, address) => { const r = s.aInWalletByAddr.get(org, w, addressKey(address)); return r ? accountFrom(r) : undefined; },
      inWalletByPath: (org, w, path) => s.aInWalletByPath.all(org, w, path).map(accountFrom),
      list: listAccounts,
      listAll: (org, w) => s.aAll.all(org, w).map(accountFrom),
      insert: (a) => {
        written();
        s.aInsert.run(a.id, a.organizationId, a.walletId, a.curve, a.pathFormat, a.path, a.addressFormat, a.address, addressKey(a.address),
          a.publicKey, buf(a.sealed), a.name, a.createdMs, a.updatedMs);
      },
      markExported: (org, id, ms) => { written(); s.aExported.run(ms, org, id); },
      delete: (org, id) => { written(); s.aDelete.run(org, id); },
      count: (org) => s.aCount.get(org)!.n as number,
    },
    importTargets: {
      listValid: (org, user, kind, now) => s.tValid.all(org, user, kind, now).map(targetFrom),
      insert: (t) => { s.tInsert.run(t.id, t.organizationId, t.userId, t.kind, buf(t.sealed), t.createdMs, t.expiresMs); },
      delete: (id) => s.tDelete.run(id).changes > 0,
      purgeExpired: (now) => { s.tPurge.run(now); },
    },
    secrets: {
      get: (name) => {
        const r = s.secGet.get(name);
        return r ? { sealed: bytes(r.sealed), publicKey: r.public_key as string } : undefined;
      },
      insert: (name, sealed, publicKey, ms) => { s.secInsert.run(name, buf(sealed), publicKey, ms); },
    },
  };
}
