/**
 * `kmas migrate-store --from <DATA_DIR> --to postgres://…`: moves an embedded installation (the
 * SQLite file DATA_DIR/kmas.sqlite) into an empty PostgreSQL database, in one transaction.
 *
 * - Generic: every table of the SQLite file (but SQLite's own and schema_migrations) is copied into
 *   the PostgreSQL table of the same name (pgMigrations.ts, applied first), column by column, each
 *   value converted to the PostgreSQL column's type (INTEGER 0/1 → boolean, INTEGER → integer /
 *   bigint, BLOB → bytea, TEXT → text byte for byte, JSON documents included). A table or column
 *   with no counterpart, or a type with no conversion, stops the move before anything is written.
 *   A PostgreSQL identity column SQLite lacks (votes.seq stands for SQLite's rowid) takes the rowid.
 * - The source is never written: a server running on it (its -wal / -shm files are there, or a
 *   rollback journal) is refused; the file is copied to a private temporary directory and the
 *   copy is read (opening the source itself, even read-only, would leave -wal / -shm beside it).
 * - The target must be empty: any row in any table refuses the move, changing nothing. The tables
 *   are locked (EXCLUSIVE) for the copy, so a node started meanwhile waits and then finds the data.
 * - Server keys (bundle, webhook, session and log signer) are rows of server_secrets and move with the
 *   rest. The master key does not move: KMAS_MASTER_KEY must be the installation's own (its
 *   DATA_DIR/master.key or the KMAS_MASTER_KEY it ran with); nothing is re-sealed. The sealed rows
 *   must open with it, checked before (server keys of the source) and after the copy (every
 *   sealed key row read back from PostgreSQL, and one key of each kind and curve signs through
 *   the PostgreSQL repositories and verifies against its stored public key) — before COMMIT.
 * - Row counts of every table are compared (source vs target) before COMMIT.
 * - PostgreSQL's log_heads, which SQLite does not keep, are built from the copied log entries.
 * No key material is printed or logged: messages name tables, columns and ids only.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { MIGRATIONS } from './storage/migrations.js';
import { openSqliteDb } from './storage/sqlite.js';
import { headFromNodes, nodePlace } from './storage/logNodes.js';
import { migrateClient } from './storage/pgMigrations.js';
import { typeParsers } from './storage/postgres.js';
import { pgRepositories, type Queries, type Row } from './storage/postgresRepos.js';
import {
  MASTER_KEY_FILE, Vault, bytesToHex, equalBytes, hexToBytes, isEcdsaCurve, parseMasterKey, sha256, verifyDigest, verifyEd25519, wipe,
  type AtRestContext, type CurveId,
} from './crypto/index.js';
import {
  SERVER_KEYS, ctxAccount, ctxImportTarget, ctxPrivateKey, ctxSecret, ctxWallet, curveId,
} from './domain/keys.js';

export interface MoveOptions {
  /** the installation's DATA_DIR */
  dataDir: string;
  /** its SQLite file's name in DATA_DIR */
  dbFile: string;
  /** the empty target */
  databaseUrl: string;
  /** KMAS_MASTER_KEY (text: 64 hex or base64 of 32 bytes) */
  masterKey: string;
}

export interface MoveSummary {
  storage: 'postgres';
  from: string;
  /** the target's schema version (pgMigrations.ts) */
  schemaVersion: number;
  /** rows copied per table (each equal in source and target) */
  tables: Record<string, number>;
  rows: number;
  check: {
    /** server keys (server_secrets) opened and matched to their public keys */
    serverKeys: number;
    /** sealed rows (keys, mnemonics, accounts, secrets, import targets) read back and opened */
    sealedOpened: number;
    /** keys that signed on the target and verified against their stored public key */
    signed: { table: string; id: string; curve: string }[];
  };
}

/** A move refused before or during the copy; nothing was written to the target. */
export class MoveRefused extends Error {}

const SERVER_SECRETS = SERVER_KEYS.map(([kind, name]) => [kind, name] as const);

/** The rows sealed under the master key, and the at-rest context each is bound to. */
const SEALED: { table: string; column: string; ctx: (org: string, id: string) => AtRestContext }[] = [
  { table: 'private_keys', column: 'sealed', ctx: ctxPrivateKey },
  { table: 'wallets', column: 'sealed_mnemonic', ctx: ctxWallet },
  { table: 'wallet_accounts', column: 'sealed', ctx: ctxAccount },
  { table: 'org_secrets', column: 'sealed', ctx: ctxSecret },
  { table: 'import_targets', column: 'sealed', ctx: ctxImportTarget },
];

const ROWID = '__kmas_rowid';
/** rows read from SQLite per page; at most this many rows per INSERT (and under 65535 parameters) */
const PAGE = 1000;

const q = (name: string): string => `"${name.replace(/"/g, '""')}"`;

interface PgColumn { name: string; type: string; nullable: boolean; hasDefault: boolean; identity: boolean }
interface Plan {
  table: string;
  /** SQLite column (or ROWID) → PostgreSQL column */
  cols: { from: string; to: PgColumn }[];
  rowid: boolean;
  /** a foreign key of the table to itself (organizations.parent_id): parents are inserted first */
  selfRef?: { col: string; ref: string };
}

export async function migrateStore(opts: MoveOptions): Promise<MoveSummary> {
  const key = parseMasterKey(opts.masterKey);
  checkKeyFile(opts.dataDir, key);
  const vault = new Vault(key);
  wipe(key);
  const snapshot = snapshotSource(opts.dataDir, opts.dbFile);
  try {
    let src = new Database(snapshot.file, { readonly: true, fileMustExist: true });
    try {
      checkSourceVersion(src, snapshot.source);
      checkSourceServerKeys(src, vault);
      // log entries whose index an activity took but which were never sealed (the server stopped
      // before its thread had: storage/logLater.ts) are sealed in the copy, from the activities' rows
      src.close();
      const copy = openSqliteDb(snapshot.file, { multiProcess: false });
      try { await copy.settleLog?.(); } finally { await copy.close(); }
      src = new Database(snapshot.file, { readonly: true, fileMustExist: true });
      return await copyInto(src, vault, opts.databaseUrl, snapshot.source);
    } finally {
      if (src.open) src.close();
    }
  } finally {
    vault.close();
    fs.rmSync(snapshot.dir, { recursive: true, force: true });
  }
}

/** DATA_DIR/master.key, when there is one, must be the key given. */
function checkKeyFile(dataDir: string, key: Uint8Array): void {
  const file = path.join(dataDir, MASTER_KEY_FILE);
  if (!fs.existsSync(file)) return;
  const raw = fs.readFileSync(file);
  let fileKey: Uint8Array;
  try {
    fileKey = raw.length === 32 ? new Uint8Array(raw) : parseMasterKey(raw.toString('utf8'));
  } catch {
    throw new MoveRefused(`${file} does not hold a 32-byte key (hex or base64)`);
  } finally {
    raw.fill(0);
  }
  const same = equalBytes(fileKey, key);
  wipe(fileKey);
  if (!same) {
    throw new MoveRefused(`KMAS_MASTER_KEY is not this installation's master key (${file} differs): give the PostgreSQL nodes and this command the key in that file`);
  }
}

/** A private copy of the SQLite file (the source is never opened, so never written). */
function snapshotSource(dataDir: string, dbFile: string): { source: string; dir: string; file: string } {
  const source = path.join(path.resolve(dataDir), dbFile);
  if (!fs.existsSync(source)) throw new MoveRefused(`no embedded installation at ${source} (is --from the installation's DATA_DIR?)`);
  const open = () => [`${source}-wal`, `${source}-shm`, `${source}-journal`].filter((f) => fs.existsSync(f));
  const busy = (when: string) => {
    const files = open();
    if (files.length > 0) {
      throw new MoveRefused(`${files.map((f) => path.basename(f)).join(' and ')} ${files.length > 1 ? 'are' : 'is'} beside ${source}${when}: a kmas server is running on ${path.dirname(source)} (or one stopped without closing the database). Stop it first; after a crash, start and stop kmas on it once`);
    }
  };
  busy('');
  const before = fs.statSync(source);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-migrate-store-'));
  const file = path.join(dir, dbFile);
  try {
    fs.copyFileSync(source, file, fs.constants.COPYFILE_EXCL);
    fs.chmodSync(file, 0o600);
    busy(' now');
    const after = fs.statSync(source);
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || after.ino !== before.ino) {
      throw new MoveRefused(`${source} changed while it was read: a kmas server is running on it; stop it first`);
    }
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return { source, dir, file };
}

function checkSourceVersion(src: Database.Database, source: string): void {
  const known = Math.max(...MIGRATIONS.map((m) => m.version));
  let version: number;
  try {
    version = (src.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
  } catch {
    throw new MoveRefused(`${source} is not a kmas database (no schema_migrations)`);
  }
  if (version > known) throw new MoveRefused(`${source} is at schema version ${version}, newer than this kmas (${known}): use the kmas it was written by`);
  if (version < known) throw new MoveRefused(`${source} is at schema version ${version}; this kmas moves version ${known}: start and stop this kmas on it once (or run kmas migrate --data-dir) first`);
}

/** The source's server keys open with the master key given (a wrong key stops here, before the target is touched). */
function checkSourceServerKeys(src: Database.Database, vault: Vault): void {
  const rows = src.prepare('SELECT name, sealed, public_key FROM server_secrets').all() as { name: string; sealed: Buffer; public_key: string }[];
  for (const [kind, name] of SERVER_SECRETS) {
    const r = rows.find((x) => x.name === name);
    if (!r) continue;
    try {
      vault.useServerKey(kind, new Uint8Array(r.sealed), r.public_key);
    } catch {
      throw new MoveRefused(`the installation's ${name} key does not open with KMAS_MASTER_KEY: it is not the master key this installation sealed its keys under (its DATA_DIR/${MASTER_KEY_FILE}, or the KMAS_MASTER_KEY it ran with)`);
    }
  }
}

async function copyInto(src: Database.Database, vault: Vault, url: string, source: string): Promise<MoveSummary> {
  const client = new pg.Client({ connectionString: url, application_name: 'kmas migrate-store', types: typeParsers() });
  await client.connect();
  try {
    // Refused before the migrations too: a database holding anything is left exactly as it was.
    const before = await pgTables(client);
    const filled = await tablesWithRows(client, [...before.keys()].filter((t) => t !== 'schema_migrations'));
    if (filled.length > 0) throw notEmpty(filled);
    const { version } = await migrateClient(client);

    await client.query('BEGIN');
    try {
      const tables = await pgTables(client);
      const kmasTables = [...tables.keys()].filter((t) => t !== 'schema_migrations');
      // Writers (a node starting on this database) wait until the copy is committed.
      await client.query(`LOCK TABLE ${kmasTables.map(q).join(', ')} IN EXCLUSIVE MODE`);
      const filledNow = await tablesWithRows(client, kmasTables);
      if (filledNow.length > 0) throw notEmpty(filledNow);

      const plans = await planCopy(src, client, tables);
      const counts: Record<string, number> = {};
      for (const plan of plans) counts[plan.table] = await copyTable(src, client, plan);
      for (const plan of plans) await resetIdentities(client, plan);
      await buildLogHeads(src, client);

      // Counts: source vs target, every table.
      const mismatches: string[] = [];
      for (const plan of plans) {
        const expected = Number((src.prepare(`SELECT COUNT(*) AS n FROM ${q(plan.table)}`).get() as { n: number }).n);
        const got = Number((await client.query<{ n: number }>(`SELECT COUNT(*)::bigint AS n FROM ${q(plan.table)}`)).rows[0]!.n);
        if (expected !== got || counts[plan.table] !== expected) mismatches.push(`${plan.table}: ${expected} in SQLite, ${got} in PostgreSQL`);
      }
      if (mismatches.length > 0) throw new Error(`row counts differ after the copy (nothing was committed): ${mismatches.join('; ')}`);

      const check = await selfCheck(client, vault);
      await client.query('COMMIT');
      const ordered = Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
      return {
        storage: 'postgres', from: source, schemaVersion: version, tables: ordered,
        rows: Object.values(counts).reduce((a, b) => a + b, 0), check,
      };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

function notEmpty(tables: string[]): MoveRefused {
  return new MoveRefused(`the target database is not empty (rows in ${tables.join(', ')}): migrate-store moves an installation into an empty database only; nothing was changed`);
}

/** Tables of the current schema and their columns. */
async function pgTables(client: pg.Client): Promise<Map<string, Map<string, PgColumn>>> {
  const { rows } = await client.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null; is_identity: string }>(`
    SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, c.column_default, c.is_identity
    FROM information_schema.columns c JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
    ORDER BY c.table_name, c.ordinal_position`);
  const out = new Map<string, Map<string, PgColumn>>();
  for (const r of rows) {
    let cols = out.get(r.table_name);
    if (!cols) out.set(r.table_name, cols = new Map());
    cols.set(r.column_name, {
      name: r.column_name, type: r.data_type, nullable: r.is_nullable === 'YES', hasDefault: r.column_default !== null, identity: r.is_identity === 'YES',
    });
  }
  return out;
}

async function tablesWithRows(client: pg.Client, tables: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const t of tables) {
    const { rows } = await client.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${q(t)}) AS any`);
    if (rows[0]!.any) out.push(t);
  }
  return out;
}

/** What goes where, in an order the foreign keys accept; every problem found at once, before a row is written. */
async function planCopy(src: Database.Database, client: pg.Client, tables: Map<string, Map<string, PgColumn>>): Promise<Plan[]> {
  const list = src.prepare("SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main'").all() as { name: string; type: string; wr: number }[];
  const problems: string[] = [];
  const plans = new Map<string, Plan>();
  for (const t of list) {
    if (t.name.startsWith('sqlite_') || t.name === 'schema_migrations' || t.type === 'view' || t.type === 'shadow') continue;
    if (t.type !== 'table') { problems.push(`SQLite table ${t.name} is a ${t.type} table: it cannot be moved`); continue; }
    const target = tables.get(t.name);
    if (!target) { problems.push(`SQLite table ${t.name} has no PostgreSQL counterpart`); continue; }
    const srcCols = (src.prepare(`SELECT name FROM pragma_table_info(?)`).all(t.name) as { name: string }[]).map((c) => c.name);
    const cols: Plan['cols'] = [];
    for (const c of srcCols) {
      const to = target.get(c);
      if (!to) problems.push(`SQLite column ${t.name}.${c} has no PostgreSQL counterpart`);
      else cols.push({ from: c, to });
    }
    for (const to of target.values()) {
      if (srcCols.includes(to.name)) continue;
      // an identity that stands for SQLite's rowid (insertion order), e.g. votes.seq
      if (to.identity && t.wr === 0) cols.push({ from: ROWID, to });
      else if (!to.nullable && !to.hasDefault && !to.identity) problems.push(`PostgreSQL column ${t.name}.${to.name} (NOT NULL, no default) has no SQLite counterpart`);
    }
    for (const c of cols) {
      if (!CONVERTIBLE.has(c.to.type)) problems.push(`no conversion into PostgreSQL type ${c.to.type} (${t.name}.${c.to.name})`);
    }
    plans.set(t.name, { table: t.name, cols, rowid: t.wr === 0 });
  }
  if (problems.length > 0) throw new MoveRefused(`the SQLite and PostgreSQL schemas do not match (nothing was written):\n  ${problems.join('\n  ')}`);

  // Foreign keys of the target: parents first; a table's key to itself orders its rows instead.
  const { rows: fks } = await client.query<{ child: string; parent: string; cols: string; refcols: string }>(`
    SELECT ch.relname AS child, pa.relname AS parent,
      (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS cols,
      (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum) AS refcols
    FROM pg_constraint c JOIN pg_class ch ON ch.oid = c.conrelid JOIN pg_class pa ON pa.oid = c.confrelid
    WHERE c.contype = 'f' AND ch.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`);
  const parents = new Map<string, Set<string>>();
  for (const fk of fks) {
    const plan = plans.get(fk.child);
    if (!plan) continue;
    if (fk.child === fk.parent) {
      if (fk.cols.includes(',')) throw new MoveRefused(`${fk.child}: a multi-column foreign key to itself is not supported`);
      plan.selfRef = { col: fk.cols, ref: fk.refcols };
    } else if (plans.has(fk.parent)) {
      let s = parents.get(fk.child);
      if (!s) parents.set(fk.child, s = new Set());
      s.add(fk.parent);
    }
  }
  const ordered: Plan[] = [];
  const done = new Set<string>();
  const visiting = new Set<string>();
  const visit = (t: string) => {
    if (done.has(t)) return;
    if (visiting.has(t)) throw new MoveRefused(`the foreign keys of ${t} form a cycle: no insertion order exists`);
    visiting.add(t);
    for (const p of [...(parents.get(t) ?? [])].sort()) visit(p);
    visiting.delete(t);
    done.add(t);
    ordered.push(plans.get(t)!);
  };
  for (const t of [...plans.keys()].sort()) visit(t);
  return ordered;
}

const INTEGER_RANGE: Record<string, [bigint, bigint]> = {
  smallint: [-(2n ** 15n), 2n ** 15n - 1n],
  integer: [-(2n ** 31n), 2n ** 31n - 1n],
  bigint: [-(2n ** 63n), 2n ** 63n - 1n],
};
const CONVERTIBLE = new Set(['boolean', 'smallint', 'integer', 'bigint', 'text', 'character varying', 'bytea']);

const kindOf = (v: unknown): string => (Buffer.isBuffer(v) ? 'BLOB' : typeof v === 'bigint' ? 'INTEGER' : typeof v === 'number' ? 'REAL' : typeof v === 'string' ? 'TEXT' : typeof v);

/** One SQLite value as the PostgreSQL column's type takes it (and as postgresRepos.ts reads it back). */
function convert(v: unknown, to: PgColumn, where: () => string): unknown {
  if (v === null || v === undefined) return null;
  const wrong = () => new MoveRefused(`${where()}: PostgreSQL column of type ${to.type}, the SQLite value is ${kindOf(v)}`);
  switch (to.type) {
    case 'boolean':
      if (v === 0n || v === 1n) return v === 1n;
      throw wrong();
    case 'smallint': case 'integer': case 'bigint': {
      if (typeof v !== 'bigint') throw wrong();
      const [lo, hi] = INTEGER_RANGE[to.type]!;
      if (v < lo || v > hi) throw new MoveRefused(`${where()}: the value does not fit PostgreSQL's ${to.type}`);
      return v.toString();
    }
    case 'text': case 'character varying':
      if (typeof v !== 'string') throw wrong();
      return v;
    case 'bytea':
      if (!Buffer.isBuffer(v)) throw wrong();
      return v;
    default:
      throw wrong();
  }
}

/** Copies one table's rows (rowid order, parents before children for a key to itself); returns how many. */
async function copyTable(src: Database.Database, client: pg.Client, plan: Plan): Promise<number> {
  const { table, cols } = plan;
  const select = `SELECT ${plan.rowid ? `rowid AS ${ROWID}, ` : ''}* FROM ${q(table)}`;
  const overriding = cols.some((c) => c.to.identity) ? ' OVERRIDING SYSTEM VALUE' : '';
  const head = `INSERT INTO ${q(table)} (${cols.map((c) => q(c.to.name)).join(', ')})${overriding} VALUES `;
  const perInsert = Math.max(1, Math.min(PAGE, Math.floor(60_000 / cols.length)));
  let copied = 0;

  const insert = async (rows: Record<string, unknown>[]) => {
    for (let i = 0; i < rows.length; i += perInsert) {
      const chunk = rows.slice(i, i + perInsert);
      const values: unknown[] = [];
      const tuples = chunk.map((r) => {
        const at = () => `${table}${plan.rowid ? ` (rowid ${String(r[ROWID])})` : ''}`;
        const ps = cols.map((c) => {
          values.push(convert(r[c.from], c.to, () => `${at()}.${c.to.name}`));
          return `$${values.length}`;
        });
        return `(${ps.join(', ')})`;
      });
      await client.query(head + tuples.join(', '), values);
      copied += chunk.length;
    }
  };

  if (plan.selfRef) {
    // Small tables (organizations): all rows, each after the row it refers to.
    const all = src.prepare(`${select}${plan.rowid ? ' ORDER BY rowid' : ''}`).safeIntegers(true).all() as Record<string, unknown>[];
    const { col, ref } = plan.selfRef;
    const present = new Set(all.map((r) => String(r[ref])));
    const placed = new Set<string>();
    const ordered: Record<string, unknown>[] = [];
    let rest = all;
    while (rest.length > 0) {
      const next = rest.filter((r) => r[col] === null || !present.has(String(r[col])) || placed.has(String(r[col])));
      if (next.length === 0) throw new MoveRefused(`${table}: its rows refer to each other in a cycle (${col} → ${ref})`);
      for (const r of next) { placed.add(String(r[ref])); ordered.push(r); }
      const taken = new Set(next);
      rest = rest.filter((r) => !taken.has(r));
    }
    await insert(ordered);
    return copied;
  }
  if (!plan.rowid) {
    await insert(src.prepare(select).safeIntegers(true).all() as Record<string, unknown>[]);
    return copied;
  }
  const page = src.prepare(`${select} WHERE rowid > ? ORDER BY rowid LIMIT ${PAGE}`).safeIntegers(true);
  let after: bigint = -(2n ** 63n);
  for (;;) {
    const rows = page.all(after) as Record<string, unknown>[];
    if (rows.length === 0) break;
    await insert(rows);
    after = rows[rows.length - 1]![ROWID] as bigint;
  }
  return copied;
}

/**
 * PostgreSQL's log_heads, which SQLite has no table for (it derives an organization's head from its
 * log's entries: storage/logNodes.ts headFromNodes): one row per organization with a log, derived
 * the same way from the source's entries. An append on PostgreSQL then continues the same tree.
 */
async function buildLogHeads(src: Database.Database, client: pg.Client): Promise<void> {
  const lasts = src.prepare(`SELECT e.organization_id, e.idx, e.created_ms FROM log_entries e
    JOIN (SELECT organization_id, MAX(idx) AS idx FROM log_entries GROUP BY organization_id) m ON m.organization_id = e.organization_id AND m.idx = e.idx`)
    .all() as { organization_id: string; idx: number; created_ms: number }[];
  const node = src.prepare('SELECT substr(nodes, ?, 32) AS hash FROM log_entries WHERE organization_id = ? AND idx = ?');
  for (const last of lasts) {
    const org = last.organization_id;
    const head = headFromNodes(org, last.idx + 1, last.created_ms, (level, index) => {
      const at = nodePlace(level, index);
      const r = node.get(at.offset + 1, org, at.entry) as { hash: Buffer } | undefined;
      return r ? new Uint8Array(r.hash) : undefined;
    });
    await client.query('INSERT INTO log_heads (organization_id, size, frontier, root, updated_ms) VALUES ($1, $2, $3, $4, $5)',
      [org, head.size, Buffer.from(head.frontier), Buffer.from(head.root), head.updatedMs]);
  }
}

/** Identity columns continue after the largest value copied. */
async function resetIdentities(client: pg.Client, plan: Plan): Promise<void> {
  for (const c of plan.cols) {
    if (!c.to.identity) continue;
    await client.query(`SELECT setval(pg_get_serial_sequence($1, $2), m) FROM (SELECT MAX(${q(c.to.name)}) AS m FROM ${q(plan.table)}) x WHERE m IS NOT NULL`,
      [q(plan.table), c.to.name]);
  }
}

const CHECK_MESSAGE = new TextEncoder().encode('kmas migrate-store: a moved key still signs');

/**
 * Reads the moved keys back from PostgreSQL (inside the copy's transaction): every server key
 * and sealed row opens with the master key; the first private key and wallet account of each
 * curve, read through the PostgreSQL repositories, signs, and the signature verifies against the
 * public key stored beside it.
 */
async function selfCheck(client: pg.Client, vault: Vault): Promise<MoveSummary['check']> {
  const queries: Queries = {
    all: async (sql, args) => (await client.query<Row>(sql, args)).rows,
    get: async (sql, args) => (await client.query<Row>(sql, args)).rows[0],
    run: async (sql, args) => (await client.query<Row>(sql, args)).rowCount ?? 0,
  };
  const tx = pgRepositories(queries);
  let serverKeys = 0;
  for (const [kind, name] of SERVER_SECRETS) {
    const s = await tx.keys.secrets.get(name);
    if (!s) continue;
    try {
      vault.useServerKey(kind, s.sealed, s.publicKey);
    } catch {
      throw new Error(`the moved ${name} key does not open or does not match its public key (nothing was committed)`);
    }
    serverKeys++;
  }
  let sealedOpened = 0;
  for (const s of SEALED) {
    const { rows } = await client.query<{ organization_id: string; id: string; sealed: Buffer }>(
      `SELECT organization_id, id, ${q(s.column)} AS sealed FROM ${q(s.table)}`);
    const bad = rows.filter((r) => !vault.canOpen(new Uint8Array(r.sealed), s.ctx(r.organization_id, r.id)));
    if (bad.length > 0) {
      throw new Error(`${bad.length} sealed row(s) of ${s.table} do not open with KMAS_MASTER_KEY after the move (e.g. id ${bad[0]!.id}; nothing was committed)`);
    }
    sealedOpened += rows.length;
  }
  const signed: MoveSummary['check']['signed'] = [];
  const firsts = async (table: string) => (await client.query<{ organization_id: string; id: string; curve: string }>(
    `SELECT DISTINCT ON (curve) organization_id, id, curve FROM ${q(table)} ORDER BY curve, seq`)).rows;
  for (const r of await firsts('private_keys')) {
    const k = await tx.keys.privateKeys.get(r.organization_id, r.id);
    if (!k) throw new Error(`private key ${r.id} cannot be read back through the PostgreSQL adapter`);
    signs(vault, k.sealed, ctxPrivateKey(k.organizationId, k.id), k.curve, k.publicKey, `private key ${k.id}`);
    signed.push({ table: 'private_keys', id: k.id, curve: k.curve });
  }
  for (const r of await firsts('wallet_accounts')) {
    const a = await tx.keys.accounts.get(r.organization_id, r.id);
    if (!a) throw new Error(`wallet account ${r.id} cannot be read back through the PostgreSQL adapter`);
    signs(vault, a.sealed, ctxAccount(a.organizationId, a.id), a.curve, a.publicKey, `wallet account ${a.id}`);
    signed.push({ table: 'wallet_accounts', id: a.id, curve: a.curve });
  }
  return { serverKeys, sealedOpened, signed };
}

function signs(vault: Vault, sealed: Uint8Array, ctx: AtRestContext, apiCurve: string, publicKey: string, what: string): void {
  const curve: CurveId | undefined = curveId(apiCurve);
  if (curve === undefined) throw new Error(`${what} has an unknown curve ${apiCurve}`);
  const ecdsa = isEcdsaCurve(curve);
  const sig = vault.signPayload(sealed, ctx, curve, {
    payload: bytesToHex(CHECK_MESSAGE), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: ecdsa ? 'HASH_FUNCTION_SHA256' : 'HASH_FUNCTION_NOT_APPLICABLE',
  });
  const rs = hexToBytes(sig.r + sig.s);
  const pub = hexToBytes(publicKey);
  const ok = ecdsa ? verifyDigest(curve, rs, sha256(CHECK_MESSAGE), pub) : verifyEd25519(rs, CHECK_MESSAGE, pub);
  if (!ok) throw new Error(`${what} no longer signs as its stored public key says after the move (nothing was committed)`);
}
