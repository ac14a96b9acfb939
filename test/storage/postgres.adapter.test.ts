// What the PostgreSQL adapter adds to the storage contract (postgres.contract.test.ts): its schema
// is SQLite's (tables, columns, unique constraints, indexes), its migrations are taken under a
// lock and refuse a newer schema, its writes are retried on a deadlock and never report a
// transaction PostgreSQL rolled back, and isReady() answers false (never throws) once the
// database is gone. Skipped loudly without PostgreSQL (pgcluster.ts).
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Counter } from 'prom-client';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import { openPostgresDb, type PostgresOptions } from '../../src/storage/postgres.js';
import { migratePostgres, PG_MIGRATIONS } from '../../src/storage/pgMigrations.js';
import type { Db } from '../../src/storage/types.js';
import { appendActivity } from '../../src/domain/activityLog.js';
import { leafHash } from '../../src/tlog/merkle.js';
import { mth } from '../tlog/reference.js';
import { dbGroupReruns, dbOrgData, dbPredictedWrites, dbStampContexts } from '../../src/metrics.js';
import { controlTestCluster, dropFreshDatabases, freshDatabase, missingPostgres, testDatabaseUrl } from './pgcluster.js';

const server = await testDatabaseUrl();

/** A prom-client counter's value for one label (0 before it was first counted). */
const counted = async <L extends string>(counter: Counter<L>, label: L, value: string): Promise<number> =>
  (await counter.get()).values.find((v) => v.labels[label] === value)?.value ?? 0;

/** table → column names, and every index as "table(columns)" marked unique / partial. */
interface Shape { columns: Record<string, string[]>; indexes: string[] }

/** statement names → texts, from every parse seen while patched (a name stands for one text in the whole process) */
const texts = new Map<string, string>();
/**
 * The statements bound on the wire while `fn` runs, by message (node-postgres's Connection,
 * patched meanwhile; whitespace folded; a statement parsed before any patch shows as its name).
 */
async function onTheWire<T>(fn: () => Promise<T>): Promise<{ value: T; messages: string[][] }> {
  const C = (pg as unknown as { Connection: { prototype: Record<string, (...a: any[]) => unknown> } }).Connection.prototype;
  const original = { parse: C.parse!, bind: C.bind!, sync: C.sync! };
  const messages: string[][] = [[]];
  C.parse = function (this: object, cfg: { name?: string; text: string }) { texts.set(cfg.name ?? '', cfg.text.replace(/\s+/g, ' ')); return original.parse.call(this, cfg); };
  C.bind = function (this: object, cfg: { statement?: string }) { messages.at(-1)!.push(texts.get(cfg.statement ?? '') ?? cfg.statement ?? ''); return original.bind.call(this, cfg); };
  C.sync = function (this: object) { messages.push([]); return original.sync.call(this); };
  try {
    const value = await fn();
    return { value, messages: messages.filter((m) => m.length > 0) };
  } finally { Object.assign(C, original); }
}

async function sqliteShape(): Promise<Shape> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-shape-'));
  try {
    const file = path.join(dir, 'kmas.sqlite');
    await openSqliteDb(file).close();
    const db = new Database(file, { readonly: true });
    try {
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'`).all() as { name: string }[]).map((t) => t.name);
      const columns: Record<string, string[]> = {};
      const indexes: string[] = [];
      for (const t of tables) {
        columns[t] = (db.prepare(`PRAGMA table_info(${t})`).all() as { name: string }[]).map((c) => c.name).sort();
        for (const ix of db.prepare(`PRAGMA index_list(${t})`).all() as { name: string; unique: number; partial: number }[]) {
          const cols = (db.prepare(`PRAGMA index_info(${ix.name})`).all() as { seqno: number; name: string }[]).sort((a, b) => a.seqno - b.seqno).map((c) => c.name);
          indexes.push(`${t}(${cols.join(', ')})${ix.unique ? ' unique' : ''}${ix.partial ? ' partial' : ''}`);
        }
      }
      return { columns, indexes: indexes.sort() };
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresShape(url: string): Promise<Shape> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const cols = await c.query<{ table_name: string; column_name: string }>(`SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name != 'schema_migrations'`);
    const columns: Record<string, string[]> = {};
    for (const r of cols.rows) (columns[r.table_name] ??= []).push(r.column_name);
    for (const t of Object.keys(columns)) columns[t]!.sort();
    const ix = await c.query<{ t: string; cols: string; uniq: boolean; partial: boolean }>(`
      SELECT t.relname AS t, ix.indisunique AS uniq, ix.indpred IS NOT NULL AS partial,
        (SELECT string_agg(a.attname, ', ' ORDER BY k.n) FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum) AS cols
      FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
      WHERE ns.nspname = 'public' AND t.relname != 'schema_migrations'`);
    const indexes = ix.rows.map((r) => `${r.t}(${r.cols})${r.uniq ? ' unique' : ''}${r.partial ? ' partial' : ''}`).sort();
    return { columns, indexes };
  } finally {
    await c.end();
  }
}

async function adminQuery(sql: string, args: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: server });
  await c.connect();
  try { return await c.query(sql, args); } finally { await c.end(); }
}

if (server === undefined) {
  it.skip(missingPostgres('the PostgreSQL adapter suite'), () => undefined); // visible in the report as skipped, never as passed
} else {
  const open: Db[] = [];
  afterAll(async () => {
    for (const d of open.splice(0)) await d.close();
    await dropFreshDatabases();
  });
  const track = (d: Db) => { open.push(d); return d; };

  describe('PostgreSQL schema and migrations', () => {
    it("has SQLite's tables, columns, unique constraints and indexes (seq identities standing for SQLite's rowid; log_heads, which SQLite derives; auth_versions, which a single SQLite process does not need)", async () => {
      const url = await freshDatabase();
      await migratePostgres(url);
      const lite = await sqliteShape();
      const post = await postgresShape(url);
      // SQLite's INTEGER PRIMARY KEY seq is the rowid (no index); on PostgreSQL it is a primary key.
      // votes is ordered by SQLite's implicit rowid; PostgreSQL has it as a seq column.
      // log_heads: SQLite derives an organization's head from its entries' rows (storage/logNodes.ts);
      // PostgreSQL keeps the row, whose lock serializes the appends of several nodes.
      // auth_versions: the versions cached stamp contexts are checked against (postgresRepos.ts StampContextCache).
      const pgOnly = (s: string) => /^\w+\(seq\) unique$/.test(s) || s.startsWith('log_heads(') || s.startsWith('auth_versions(');
      expect(Object.keys(lite.columns).length).toBeGreaterThanOrEqual(30);
      expect(lite.indexes.filter((s) => s.endsWith('unique')).length).toBeGreaterThanOrEqual(20);
      expect(post.indexes.filter((s) => !pgOnly(s))).toEqual(lite.indexes);
      const { log_heads: heads, auth_versions: versions, ...postColumns } = post.columns;
      expect(heads).toEqual(['frontier', 'organization_id', 'root', 'size', 'updated_ms']);
      expect(versions).toEqual(['n', 'scope']);
      expect({ ...postColumns, votes: post.columns.votes!.filter((c) => c !== 'seq') }).toEqual(lite.columns);
    });

    it('two nodes opening a new database at once apply each migration once', async () => {
      const url = await freshDatabase();
      const dbs = await Promise.all([openPostgresDb(url), openPostgresDb(url), openPostgresDb(url)]);
      dbs.forEach(track);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const { rows } = await c.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((r) => r.version)).toEqual(PG_MIGRATIONS.map((m) => m.version));
      } finally {
        await c.end();
      }
      expect(await migratePostgres(url)).toEqual({ applied: [], version: Math.max(...PG_MIGRATIONS.map((m) => m.version)) });
    });

    it('refuses a database whose schema is newer than this kmas knows', async () => {
      const url = await freshDatabase();
      await migratePostgres(url);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (999, 'from the future', 0)`);
      } finally {
        await c.end();
      }
      await expect(openPostgresDb(url)).rejects.toThrow(/schema version 999 is newer than this kmas \(\d+\); refusing to start/);
      await expect(migratePostgres(url)).rejects.toThrow(/newer than this kmas/);
    });
  });

  describe('PostgreSQL answers as SQLite does', () => {
    it('sub-organization filters, case folding, outbox kinds: the same results on both engines', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-diff-'));
      const lite = openSqliteDb(path.join(dir, 'kmas.sqlite'));
      const post = track(await openPostgresDb(await freshDatabase()));
      try {
        const parent = { id: 'p', name: 'parent', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
        const emails = ['Ann@Example.com', 'ÉLODIE@example.com', 'élodie@example.com', 'bob@example.com'];
        const fill = async (db: Db) => db.write(async (tx) => {
          await tx.organizations.insert(parent);
          for (const [i, email] of emails.entries()) {
            const o = { id: `s${i}`, name: i % 2 ? 'Odd' : 'odd', parentId: 'p', rootQuorumThreshold: 1, createdMs: 10 + (i >> 1), updatedMs: 1 };
            await tx.organizations.insert(o);
            const u = { id: `u${i}`, organizationId: o.id, name: `user${i}`, email, phoneNumber: `+1555000${i}`, isRoot: true, createdMs: 1, updatedMs: 1 };
            await tx.users.insert(u);
            await tx.apiKeys.insert({ id: `k${i}`, organizationId: o.id, userId: u.id, name: 'k', publicKey: `02ab${i}`, curve: 'API_KEY_CURVE_P256', credentialType: 'c', expirationSeconds: null, expiresAtMs: null, createdMs: 1, updatedMs: 1 });
            if (i < 2) await tx.verifiedContacts.mark(o.id, u.id, 'EMAIL', email.toLowerCase(), 1);
            await tx.webhooks.enqueue({ id: `d${i}`, organizationId: o.id, activityId: 'a', eventType: 'ACTIVITY_UPDATES', url: ['mailto:a@x', 'MAILTO:b@x', 'https://x', 'Mailto:c@x'][i]!, body: '{}', attempts: 0, nextAttemptMs: 5, createdMs: i });
          }
        });
        await fill(lite);
        await fill(post);
        const ask = (db: Db) => db.read(async (tx) => {
          const out: unknown[] = [];
          for (const filter of [
            { type: 'NAME' as const, value: 'odd' }, { type: 'USERNAME' as const, value: 'user1' },
            { type: 'EMAIL' as const, value: 'ann@example.COM' }, { type: 'EMAIL' as const, value: 'élodie@example.com' }, { type: 'EMAIL' as const, value: 'ÉLODIE@EXAMPLE.COM' },
            { type: 'PHONE_NUMBER' as const, value: '+15550002' }, { type: 'PUBLIC_KEY' as const, value: '02AB3' },
            { type: 'VERIFIED_EMAIL' as const, value: 'ANN@example.com' }, { type: 'VERIFIED_EMAIL' as const, value: 'ÉLODIE@example.com' },
            undefined,
          ]) {
            out.push(await tx.organizations.subOrgIds('p', filter, { limit: 10 }));
            out.push(await tx.organizations.subOrgIds('p', filter, { limit: 1, afterId: 's2' }));
            out.push(await tx.organizations.subOrgIds('p', filter, { limit: 10, beforeId: 's1' }));
          }
          out.push((await tx.webhooks.pending()).sort((a, b) => a.kind.localeCompare(b.kind)));
          out.push(await tx.organizations.childrenOf('p'));
          return out;
        });
        expect(await ask(post)).toEqual(await ask(lite));
      } finally {
        await lite.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('stamp contexts: served again only while the auth version of their rows holds', () => {
    const orgRow = (id: string) => ({ id, name: id, parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 });
    const userRow = (organizationId: string, id: string) => ({ id, organizationId, name: id, email: null, phoneNumber: null, isRoot: true, createdMs: 1, updatedMs: 1 });
    const keyRow = (organizationId: string, userId: string, id: string, publicKey: string) => ({
      id, organizationId, userId, name: id, publicKey, curve: 'API_KEY_CURVE_P256' as const, credentialType: 'CREDENTIAL_TYPE_API_KEY_P256',
      expirationSeconds: null, expiresAtMs: null, createdMs: 1, updatedMs: 1,
    });
    const listRow = (organizationId: string, publicKey: string, cidr: string) => ({
      organizationId, publicKey, enabled: true, onEvaluationError: 'DENY' as const, rules: [{ cidr, label: 'l', createdMs: 1 }], createdMs: 1, updatedMs: 1,
    });
    const PK = '02aa';
    /** A key with PK in organization o2, inserted with plain SQL (as another node or psql would). */
    const otherKeySql = (id: string) => `INSERT INTO api_keys (id, organization_id, user_id, name, public_key, curve, credential_type, created_ms, updated_ms) VALUES ('${id}', 'o2', 'o2-u', '${id}', '${PK}', 'API_KEY_CURVE_P256', 'CREDENTIAL_TYPE_API_KEY_P256', 2, 2)`;

    async function seeded(opts?: PostgresOptions) {
      const url = await freshDatabase();
      const db = track(await openPostgresDb(url, opts));
      await db.write(async (tx) => {
        for (const o of ['o1', 'o2']) {
          await tx.organizations.insert(orgRow(o));
          await tx.users.insert(userRow(o, `${o}-u`));
        }
        await tx.apiKeys.insert(keyRow('o1', 'o1-u', 'k1', PK));
      });
      // another connection, as another node or an operator with psql would change the rows
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      return { db, other, url, read: () => db.write((tx) => tx.apiKeys.stampContext(PK, 'o1')) };
    }

    it('a second read is the context already read (frozen), until a row it was read from changes, wherever the change is made', async () => {
      const { db, other, read } = await seeded();
      try {
        const count = (source: string) => counted(dbStampContexts, 'source', source);
        const first = await read();
        expect(first.keys.map((k) => k.id)).toEqual(['k1']);
        const [cached, fresh] = [await count('cached'), await count('read')];
        expect(await read()).toBe(first);
        expect([await count('cached') - cached, await count('read') - fresh]).toEqual([1, 0]);
        expect(Object.isFrozen(first.keys[0])).toBe(true);
        // each change below is made outside kmas; the next read must see it (a different object)
        const changes: [string, (c: Awaited<ReturnType<typeof read>>) => void][] = [
          ["UPDATE users SET name = 'renamed' WHERE id = 'o1-u'", (c) => expect(c.user?.name).toBe('renamed')],
          ["INSERT INTO ip_allowlists (organization_id, public_key, enabled, on_evaluation_error, rules, created_ms, updated_ms) VALUES ('o1', '', true, 'DENY', '[]', 1, 1)", (c) => expect(c.allowlists.organization?.enabled).toBe(true)],
          [otherKeySql('k2'),
            (c) => expect(c.keys.map((k) => k.id).sort()).toEqual(['k1', 'k2'])],
          ["UPDATE organizations SET root_quorum_threshold = 2 WHERE id = 'o1'", (c) => expect(c.organization?.rootQuorumThreshold).toBe(2)],
          ['TRUNCATE ip_allowlists', (c) => expect(c.allowlists.organization).toBeUndefined()],
          ["DELETE FROM api_keys WHERE id = 'k1'", (c) => { expect(c.keys.map((k) => k.id)).toEqual(['k2']); expect(c.user).toBeUndefined(); }],
        ];
        let before = first;
        for (const [sql, check] of changes) {
          await other.query(sql);
          const now = await read();
          expect(now, sql).not.toBe(before);
          check(now);
          expect(await read(), sql).toBe(now);
          before = now;
        }
        // a change of another organization's rows does not touch this context
        await other.query("UPDATE users SET name = 'x' WHERE id = 'o2-u'");
        expect(await read()).toBe(before);
        // what kmas's own repositories change, in a write that reads the context again afterwards, that write sees
        await db.write(async (tx) => { await tx.ipAllowlists.set(listRow('o1', PK, '192.0.2.0/24')); expect((await tx.apiKeys.stampContext(PK, 'o1')).allowlists.own?.rules[0]?.cidr).toBe('192.0.2.0/24'); });
        expect((await read()).allowlists.own?.rules[0]?.cidr).toBe('192.0.2.0/24');
      } finally {
        await other.end();
      }
    });

    it('a context read inside a write that rolls back is never served for the state committed after it (a version is never handed out twice)', async () => {
      const { db, other, read } = await seeded();
      try {
        await read();
        // the write adds a key with the same public key in another organization, reads the context
        // (kept with the version its own change made), and rolls back
        await expect(db.write(async (tx) => {
          await tx.apiKeys.insert(keyRow('o2', 'o2-u', 'k2', PK));
          expect((await tx.apiKeys.stampContext(PK, 'o1')).keys.map((x) => x.id).sort()).toEqual(['k1', 'k2']);
          throw new Error('rolled back');
        })).rejects.toThrow('rolled back');
        // Another such key commits: the same scopes change as many times as in the write that
        // rolled back, so versions counted up from the committed value would come back to its.
        await other.query(otherKeySql('k3'));
        expect((await read()).keys.map((x) => x.id).sort()).toEqual(['k1', 'k3']);
      } finally {
        await other.end();
      }
    });

    it('a public key no organization has is read each time, not kept', async () => {
      const { db, other } = await seeded();
      await other.end();
      const stranger = () => db.write((tx) => tx.apiKeys.stampContext('02ff', 'o1'));
      const first = await stranger();
      expect(first.keys).toEqual([]);
      expect(await stranger()).not.toBe(first);
    });

    it('the request locks, version checks and idempotency lookups of a group are one statement each, and every write gets the answer its own statement would have had', async () => {
      const { db, other, read } = await seeded();
      try {
        const PK2 = '02ab';
        await db.write(async (tx) => {
          await tx.apiKeys.insert(keyRow('o2', 'o2-u', 'k2', PK2));
          await tx.activities.insert({ id: 'done-before', organizationId: 'o1', type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: 'fp-2', requestMs: 7, createdMs: 1, updatedMs: 1, record: { id: 'done-before' }, logIndexes: [] });
        });
        // each key's stamp context read once: from now on a version check stands for it
        await read();
        await db.write((tx) => tx.apiKeys.stampContext(PK2, 'o2'));
        // one change seen by one of the writes below only: o2's key renamed outside kmas
        await other.query("UPDATE api_keys SET name = 'renamed' WHERE id = 'k2'");
        // the statements bound on the wire, by message
        let locked = 0;
        const { value: answers, messages } = await onTheWire(() => Promise.all(Array.from({ length: 6 }, (_, i) => db.write(async (tx) => {
          await tx.lock('request', `req-${i}`);
          const ctx = i % 2 === 0 ? await tx.apiKeys.stampContext(PK, 'o1') : await tx.apiKeys.stampContext(PK2, 'o2');
          const found = await tx.activities.byFingerprint(`fp-${i}`, 7);
          await tx.organizations.touch(i % 2 === 0 ? 'o1' : 'o2', 10 + i);
          // the merged statement took every write's lock, held by the transaction
          if (i === 5) locked = Number((await other.query<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted")).rows[0]!.n);
          return { org: ctx.organization?.id, keys: ctx.keys.map((k) => k.name), found: found?.id };
        }))));
        expect(answers).toEqual(Array.from({ length: 6 }, (_, i) => ({
          org: i % 2 === 0 ? 'o1' : 'o2', keys: [i % 2 === 0 ? 'k1' : 'renamed'], found: i === 2 ? 'done-before' : undefined,
        })));
        // the first message: the six locks and the six version checks, one statement each
        expect(messages[0]).toEqual(['BEGIN', 'SELECT pg_advisory_xact_lock(hashtext(k.name), hashtext(k.key)) FROM unnest($1::text[], $2::text[]) AS k(name, key)',
          'SELECT scope, n FROM auth_versions WHERE scope = ANY($1::text[])']);
        // and no message holds two statements of one kind: the lookups asked for in one turn are one
        const lookups = (m: string[]) => m.filter((t) => t.includes('FROM activities WHERE request_ms') || t.includes('AS k(request_ms, fingerprint), LATERAL')).length;
        expect(messages.map(lookups).filter((n) => n > 1)).toEqual([]);
        expect(messages.flat().filter((t) => t.includes('AS k(request_ms, fingerprint), LATERAL')).length).toBeGreaterThan(0);
        expect(locked).toBe(6);
        // the six were one transaction
        const r = await other.query<{ n: string }>("SELECT count(DISTINCT xmin::text) AS n FROM organizations WHERE id IN ('o1', 'o2')");
        expect(Number(r.rows[0]!.n)).toBe(1);
      } finally { await other.end(); }
    });

    describe('predicted writes: a lone write sends its reads as checks with its COMMIT, and runs again with them first when one fails', () => {
      const outcome = (what: string) => counted(dbPredictedWrites, 'outcome', what);
      let n = 0;
      /** What a submit's write does (pipeline.ts, engine.ts): request lock, stamp context, idempotency lookup, log append, activity row. */
      const submit = (db: Db, fp = `fp-${++n}`) => db.write(async (tx) => {
        // asked for in one turn, as the pipeline asks
        const locked = tx.lock('request', fp);
        const [ctx, found] = await Promise.all([tx.apiKeys.stampContext(PK, 'o1'), tx.activities.byFingerprint(fp, 7), locked]);
        if (found) return { user: ctx.user?.name, found: found.id, index: -1 };
        const id = `act-${fp}`;
        const record = { id, organizationId: 'o1', type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: fp, timestampMs: '7', intent: {}, result: {} };
        const index = await appendActivity(tx, record, 5, 5);
        await tx.activities.insert({ id, organizationId: 'o1', type: record.type, status: record.status, fingerprint: fp, requestMs: 7, createdMs: 5, updatedMs: 5, record, logIndexes: [index] });
        return { user: ctx.user?.name, found: undefined, index };
      });
      const logOf = async (db: Db) => db.read(async (tx) => ({ entries: await tx.log.entries('o1', 0, 1000), head: await tx.log.head('o1') }));

      it('once this node has read what a write reads, the write is one message; each kind of wrong prediction is caught in it, and the write runs again with its reads first', async () => {
        const { db, other, url } = await seeded();
        try {
          // the first writes read (nothing known yet: the stamp context, then its versions, then
          // the head); the next predicts: one message, BEGIN … COMMIT
          expect((await onTheWire(() => submit(db))).value.index).toBe(0);
          expect((await onTheWire(() => submit(db))).value.index).toBe(1);
          const committed = await outcome('committed');
          const second = await onTheWire(() => submit(db));
          expect(second.value).toEqual({ user: 'o1-u', found: undefined, index: 2 });
          expect(second.messages).toHaveLength(1);
          const [message] = second.messages;
          expect(message![0]).toBe('BEGIN');
          expect(message!.at(-1)).toBe('COMMIT');
          expect(message!.filter((t) => t.includes('kmas_expect')).map((t) => /'(KM00\d)'/.exec(t)?.[1])).toEqual(['KM001', 'KM002', 'KM003']);
          expect(message!.some((t) => t.startsWith('SELECT scope, n FROM auth_versions') || t.startsWith('SELECT * FROM activities') || t.startsWith('SELECT * FROM log_heads'))).toBe(false);
          expect(await outcome('committed') - committed).toBe(1);

          // versions: the user renamed outside kmas; the write sees the new name
          const versions = await outcome('versions');
          await other.query("UPDATE users SET name = 'renamed' WHERE id = 'o1-u'");
          expect(await submit(db)).toEqual({ user: 'renamed', found: undefined, index: 3 });
          expect(await outcome('versions') - versions).toBe(1);

          // request: an activity with the request stored by someone else; the write finds it
          const request = await outcome('request');
          await other.query(`INSERT INTO activities (id, organization_id, type, status, fingerprint, request_ms, created_ms, updated_ms, record, log_indexes)
            VALUES ('stored-elsewhere', 'o1', 'ACTIVITY_TYPE_X', 'ACTIVITY_STATUS_COMPLETED', 'fp-again', 7, 1, 1, '{}', '[]')`);
          expect(await submit(db, 'fp-again')).toEqual({ user: 'renamed', found: 'stored-elsewhere', index: -1 });
          expect(await outcome('request') - request).toBe(1);

          // head: another node appends to the same log; this node's next write finds it moved,
          // runs again after it, and then reads the head first for a while (no third failure)
          const head = await outcome('head');
          const node2 = track(await openPostgresDb(url));
          expect((await submit(node2)).index).toBe(4);
          expect((await submit(db)).index).toBe(5);
          expect(await outcome('head') - head).toBe(1);
          // (the other node predicted its own last head, which this one moved: the same for it)
          expect((await submit(node2)).index).toBe(6);
          expect(await outcome('head') - head).toBe(2);
          const paused = await onTheWire(() => submit(db));
          expect(paused.value.index).toBe(7);
          expect(paused.messages.flat().filter((t) => t.includes("'KM003'"))).toEqual([]);
          expect(await outcome('head') - head).toBe(2);

          // one gapless tree, every entry's activity stored once
          const { entries, head: h } = await logOf(db);
          expect(entries.map((e) => e.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
          expect(h!.size).toBe(8);
          expect(Buffer.from(h!.root).toString('hex')).toBe(Buffer.from(mth(entries.map((e) => leafHash(e.entry)))).toString('hex'));
          const ids = (await other.query<{ id: string }>("SELECT activity_id AS id FROM log_entries WHERE organization_id = 'o1' ORDER BY idx")).rows.map((r) => r.id);
          expect(new Set(ids).size).toBe(8);
        } finally { await other.end(); }
      });

      it('a predicted write that refuses is checked before its refusal stands: refused on a wrong prediction, it runs again on what is there', async () => {
        const { db, other } = await seeded();
        try {
          await submit(db);
          await submit(db);
          const refuseUnlessRenamed = () => db.write(async (tx) => {
            await tx.lock('request', 'fp-refusal');
            const ctx = await tx.apiKeys.stampContext(PK, 'o1');
            await tx.activities.byFingerprint('fp-refusal', 7);
            if (ctx.user?.name !== 'renamed') throw new Error(`refused: the user is ${ctx.user?.name}`);
            await tx.organizations.touch('o1', 99);
            return ctx.user.name;
          });
          // what the node predicts holds: the refusal stands, after one message of checks and ROLLBACK
          const standing = await onTheWire(() => refuseUnlessRenamed().catch((e: Error) => e.message));
          expect(standing.value).toBe('refused: the user is o1-u');
          expect(standing.messages).toHaveLength(1);
          expect(standing.messages[0]!.at(-1)).toBe('ROLLBACK');
          expect(standing.messages[0]!.filter((t) => t.includes('kmas_expect')).map((t) => /'(KM00\d)'/.exec(t)?.[1])).toEqual(['KM001', 'KM002']);
          // renamed outside kmas: the prediction is wrong, the refusal made on it does not stand
          const versions = await outcome('versions');
          await other.query("UPDATE users SET name = 'renamed' WHERE id = 'o1-u'");
          expect(await refuseUnlessRenamed()).toBe('renamed');
          expect(await outcome('versions') - versions).toBe(1);
          expect(Number((await other.query<{ u: string }>("SELECT updated_ms AS u FROM organizations WHERE id = 'o1'")).rows[0]!.u)).toBe(99);
        } finally { await other.end(); }
      });

      it('a node that changes rows a version covers reads the versions first next time, instead of assuming the old ones and running again', async () => {
        const { db, other } = await seeded();
        try {
          await submit(db);
          await submit(db);
          const [versions, committed] = [await outcome('versions'), await outcome('committed')];
          // a write of this node that changes the organization's row (its auth version moves), read
          // through the stamp as a submit reads it
          await db.write(async (tx) => { await tx.apiKeys.stampContext(PK, 'o1'); await tx.organizations.touch('o1', 99); });
          // the next write sends its reads first (no assumption to fail), the one after assumes again
          const { messages } = await onTheWire(() => submit(db));
          expect(messages.length).toBeGreaterThan(1);
          expect(await outcome('versions')).toBe(versions);
          await submit(db);
          expect(await outcome('versions')).toBe(versions);
          expect(await outcome('committed')).toBeGreaterThan(committed);
        } finally { await other.end(); }
      });

      it('a refusal decided on a wrong prediction does not stand while its check is still on the wire with a read the write did not wait for', async () => {
        const { db, other } = await seeded();
        try {
          await submit(db);
          await submit(db);
          const refuseUnlessRenamed = () => db.write(async (tx) => {
            const locked = tx.lock('request', 'fp-on-the-wire');
            const reading = tx.apiKeys.stampContext(PK, 'o1');
            const lookup = tx.activities.byFingerprint('fp-on-the-wire', 7);
            // asked for in the same turn (as the pipeline's prefetch does): it goes out with the checks
            const more = tx.organizations.get('o2');
            more.catch(() => undefined);
            const ctx = await reading;
            if (ctx.user?.name !== 'renamed') throw new Error(`refused: the user is ${ctx.user?.name}`);
            await Promise.all([locked, lookup, more]);
            return ctx.user.name;
          });
          // with nothing changed the refusal stands
          expect(await refuseUnlessRenamed().catch((e: Error) => e.message)).toBe('refused: the user is o1-u');
          await other.query("UPDATE users SET name = 'renamed' WHERE id = 'o1-u'");
          const versions = await outcome('versions');
          // the node assumed the versions it had read (user o1-u): that check fails, so the write runs again
          expect(await refuseUnlessRenamed().catch((e: Error) => e.message)).toBe('renamed');
          expect(await outcome('versions') - versions).toBe(1);
        } finally { await other.end(); }
      });

      it('a failed check whose statement error the write ignored still runs the write again (not the aborted transaction\'s refusal of what followed)', async () => {
        const { db, other } = await seeded();
        try {
          await submit(db);
          await submit(db);
          await other.query("UPDATE users SET name = 'renamed' WHERE id = 'o1-u'");
          const versions = await outcome('versions');
          const name = await db.write(async (tx) => {
            const locked = tx.lock('request', 'fp-ignoring');
            const [ctx] = await Promise.all([tx.apiKeys.stampContext(PK, 'o1'), tx.activities.byFingerprint('fp-ignoring', 7), locked]);
            // a read sent with the checks; its failure (the failed check's error) is ignored
            await tx.organizations.get('o1').catch(() => undefined);
            return ctx.user?.name;
          });
          expect(name).toBe('renamed');
          expect(await outcome('versions') - versions).toBe(1);
        } finally { await other.end(); }
      });

      it('predict: false sends every read first', async () => {
        const url = await freshDatabase();
        const seed = track(await openPostgresDb(url));
        await seed.write(async (tx) => {
          await tx.organizations.insert(orgRow('o1'));
          await tx.users.insert(userRow('o1', 'o1-u'));
          await tx.apiKeys.insert(keyRow('o1', 'o1-u', 'k1', PK));
        });
        const db = track(await openPostgresDb(url, { predict: false }));
        await submit(db);
        await submit(db);
        // the lock, version check and lookup; the head; the append, the row and COMMIT
        const { messages } = await onTheWire(() => submit(db));
        expect(messages).toHaveLength(3);
        expect(messages.flat().some((t) => t.includes('kmas_expect'))).toBe(false);
      });
    });

    describe("an organization's signing keys and webhook targets: served again only while its data version holds", () => {
      const ADDRESS = '0xAbC0000000000000000000000000000000000001';
      const ACCOUNT = '0xdEF0000000000000000000000000000000000002';
      // Counted per attempt: a predicted write (postgres.ts Predictions) that served a value kept
      // under a version changed since is refused at its COMMIT and serves again after reading, so
      // these counts are taken with every read sent first.
      async function withData() {
        const seed = await seeded({ predict: false });
        await seed.db.write(async (tx) => {
          await tx.keys.privateKeys.insert({ id: 'pk1', organizationId: 'o1', name: 'pk1', curve: 'CURVE_SECP256K1', publicKey: '02bb',
            addresses: [{ format: 'ADDRESS_FORMAT_ETHEREUM', address: ADDRESS }], sealed: new Uint8Array([1, 2, 3]), imported: false, exported: false, createdMs: 1, updatedMs: 1 });
          await tx.keys.wallets.insert({ id: 'w1', organizationId: 'o1', name: 'w1', sealedMnemonic: new Uint8Array([4]), imported: false, exported: false, createdMs: 1, updatedMs: 1 });
          await tx.keys.accounts.insert({ id: 'a1', organizationId: 'o1', walletId: 'w1', curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0",
            addressFormat: 'ADDRESS_FORMAT_ETHEREUM', address: ACCOUNT, publicKey: '02cc', sealed: new Uint8Array([5, 6]), name: null, createdMs: 1, updatedMs: 1 });
        });
        // as a submit reads them: the stamp check first (it reads the data version), then the data
        const look = () => seed.db.write(async (tx) => {
          await tx.apiKeys.stampContext(PK, 'o1');
          return {
            byId: await tx.keys.privateKeys.get('o1', 'pk1'),
            byAddress: await tx.keys.privateKeys.byAddress('o1', ADDRESS.toLowerCase()),
            account: await tx.keys.accounts.byAddress('o1', ACCOUNT),
            targets: await tx.webhooks.activityTargets('o1', 'f'),
          };
        });
        return { ...seed, look };
      }
      const count = async () => [await counted(dbOrgData, 'source', 'cached'), await counted(dbOrgData, 'source', 'read')];
      const since = async (before: number[]) => (await count()).map((n, i) => n - before[i]!);

      it('read once, then served without a statement until a row they were read from changes, wherever the change is made', async () => {
        const { other, look } = await withData();
        try {
          const first = await look();
          expect(first.byId?.name).toBe('pk1');
          expect(first.byAddress?.id).toBe('pk1');
          expect(first.account?.id).toBe('a1');
          expect(first.targets).toEqual({ feature: undefined, endpoints: [] });
          let before = await count();
          const again = await look();
          expect(again).toEqual(first);
          expect(await since(before)).toEqual([4, 0]);
          // a served key's bytes are its own: changing them changes nothing kept
          again.byId!.sealed.fill(0);
          expect([...(await look()).byId!.sealed]).toEqual([1, 2, 3]);
          // each change below is made outside kmas; the next look must see it, the one after serves it again
          const changes: [string, (v: Awaited<ReturnType<typeof look>>) => void][] = [
            ["UPDATE private_keys SET name = 'renamed' WHERE id = 'pk1'", (v) => expect(v.byId?.name).toBe('renamed')],
            ["UPDATE wallet_accounts SET name = 'named' WHERE id = 'a1'", (v) => expect(v.account?.name).toBe('named')],
            ["INSERT INTO features (organization_id, name, value) VALUES ('o1', 'f', 'https://example.test/hook')", (v) => expect(v.targets.feature).toBe('https://example.test/hook')],
            [`INSERT INTO webhook_endpoints (id, organization_id, url, name, is_active, subscriptions, created_ms, updated_ms)
              VALUES ('e1', 'o1', 'https://example.test/e1', 'e1', true, '[]', 1, 1)`, (v) => expect(v.targets.endpoints.map((e) => e.id)).toEqual(['e1'])],
            ["DELETE FROM private_key_addresses WHERE private_key_id = 'pk1'", (v) => { expect(v.byAddress).toBeUndefined(); expect(v.byId?.id).toBe('pk1'); }],
            ['TRUNCATE features', (v) => expect(v.targets.feature).toBeUndefined()],
            ["DELETE FROM wallets WHERE id = 'w1'", (v) => expect(v.account).toBeUndefined()], // its accounts go by ON DELETE CASCADE
            ["DELETE FROM private_keys WHERE id = 'pk1'", (v) => expect(v.byId).toBeUndefined()],
          ];
          for (const [sql, check] of changes) {
            await other.query(sql);
            before = await count();
            check(await look());
            expect(await since(before), sql).toEqual([0, 4]);
            before = await count();
            check(await look());
            expect(await since(before), sql).toEqual([4, 0]);
          }
          // a change of another organization's data does not touch this one's
          await other.query("INSERT INTO features (organization_id, name, value) VALUES ('o2', 'f', 'x')");
          before = await count();
          await look();
          expect(await since(before)).toEqual([4, 0]);
        } finally {
          await other.end();
        }
      });

      it("a write sees its own changes after its stamp check, where the node's kept value and the version that check read do not", async () => {
        const { db, other, look } = await withData();
        await other.end();
        await look();
        await look(); // served: kept at the version the next write's stamp check reads
        const seen = await db.write(async (tx) => {
          await tx.apiKeys.stampContext(PK, 'o1');
          await tx.keys.privateKeys.delete('o1', 'pk1');
          await tx.keys.accounts.delete('o1', 'a1');
          await tx.webhooks.insertEndpoint({ id: 'e2', organizationId: 'o1', url: 'https://example.test/e2', name: 'e2', isActive: true, subscriptions: [], createdMs: 1, updatedMs: 1 });
          return { byId: await tx.keys.privateKeys.get('o1', 'pk1'), account: await tx.keys.accounts.byAddress('o1', ACCOUNT), targets: await tx.webhooks.activityTargets('o1', 'f') };
        });
        expect(seen.byId).toBeUndefined();
        expect(seen.account).toBeUndefined();
        expect(seen.targets.endpoints.map((e) => e.id)).toEqual(['e2']);
        const after = await look();
        expect([after.byId, after.account, after.targets.endpoints.length]).toEqual([undefined, undefined, 1]);
      });

      it('a key read inside a write that rolls back is never served for the state committed after it', async () => {
        const { db, other, look } = await withData();
        try {
          await look();
          await expect(db.write(async (tx) => {
            await tx.apiKeys.stampContext(PK, 'o1');
            await tx.keys.privateKeys.markExported('o1', 'pk1', 9);
            expect((await tx.keys.privateKeys.get('o1', 'pk1'))?.exported).toBe(true); // read and kept with the version its own change made
            throw new Error('rolled back');
          })).rejects.toThrow('rolled back');
          // one change of the same scope commits: a version counted up from the committed value would be the rolled-back one's
          await other.query("UPDATE private_keys SET updated_ms = 2 WHERE id = 'pk1'");
          const now = await look();
          expect([now.byId?.exported, now.byId?.updatedMs]).toEqual([false, 2]);
        } finally {
          await other.end();
        }
      });
    });
  });

  describe('PostgreSQL unit of work', () => {
    it('a deadlock between two writes is retried: both commit', async () => {
      // two group transactions at once, so that the second write does not wait for the first
      const db = track(await openPostgresDb(await freshDatabase(), { writeGroups: 2 }));
      let runs = 0;
      let bothHoldOne!: () => void;
      const holding = new Promise<void>((r) => { let n = 0; bothHoldOne = () => { if (++n === 2) r(); }; });
      const crossing = (first: string, second: string) => db.write(async (tx) => {
        runs++;
        // sender-nonce: a lock taken at once (request, approval and one-time-code go with the next statement)
        await tx.lock('sender-nonce', first);
        bothHoldOne();
        await holding;
        await tx.lock('sender-nonce', second);
        return first;
      });
      // the second write is asked for once the first one's group has started: two transactions
      const first = crossing('x', 'y');
      await new Promise((r) => setImmediate(r));
      expect(await Promise.all([first, crossing('y', 'x')])).toEqual(['x', 'y']);
      expect(runs).toBe(3); // one of them ran again after PostgreSQL broke the deadlock
    });

    it('a write whose statement failed is not reported as committed even when the callback caught the error', async () => {
      const db = track(await openPostgresDb(await freshDatabase()));
      const o = { id: 'o1', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
      await db.write((tx) => tx.organizations.insert(o));
      await expect(db.write(async (tx) => {
        await tx.organizations.rename('o1', 'lost', 2);
        await tx.organizations.insert(o).catch(() => undefined); // duplicate key, swallowed
      })).rejects.toThrow(/rolled back/);
      expect((await db.read((tx) => tx.organizations.get('o1')))!.name).toBe('o');
    });

    it('a lock sent with the next statement is held before that statement reads: racing read-modify-writes under one lock lose nothing', async () => {
      const db = track(await openPostgresDb(await freshDatabase(), { poolSize: 8 }));
      const o = { id: 'o1', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 0 };
      await db.write((tx) => tx.organizations.insert(o));
      for (const name of ['request', 'approval', 'one-time-code', 'sender-nonce'] as const) {
        const before = (await db.read((tx) => tx.organizations.get('o1')))!.updatedMs;
        await Promise.all(Array.from({ length: 12 }, () => db.write(async (tx) => {
          await tx.lock(name, 'the-key');
          const seen = (await tx.organizations.get('o1'))!.updatedMs;
          await new Promise((r) => setTimeout(r, 2));
          await tx.organizations.touch('o1', seen + 1);
        })));
        expect((await db.read((tx) => tx.organizations.get('o1')))!.updatedMs).toBe(before + 12);
      }
    });

    describe('a deferred write (the log append) goes with the COMMIT, or before the next statement', () => {
      const org = { id: "o'1\\x", name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
      const allBytes = new Uint8Array(256).map((_, i) => i);
      const entry = (index: number, activityId = `a'${index}\\ é`) => ({ organizationId: org.id, index, activityId, entry: allBytes.slice(index), createdMs: 2 ** 40 + index });
      const node = (level: number, index: number) => ({ level, index, hash: allBytes.slice(level, level + 32) });
      const head = (size: number) => ({ organizationId: org.id, size, frontier: allBytes.slice(0, 32 * (size % 3)), root: allBytes.slice(size, size + 32), updatedMs: size });

      it('values of every kind arrive as they were (quotes, backslashes, every byte, empty and full arrays, large numbers), on new and reused connections', async () => {
        const db = track(await openPostgresDb(await freshDatabase(), { poolSize: 2 }));
        await db.write((tx) => tx.organizations.insert(org));
        for (let i = 0; i < 6; i++) {
          await db.write(async (tx) => {
            const h = await tx.log.takeHead(org.id);
            expect(h?.size ?? 0).toBe(i);
            // the nodes an append stores are some it completes (levels 0…k ending at its entry: storage/logNodes.ts)
            await tx.log.append(entry(i), i === 5 ? [node(0, 5), node(1, 2)] : i % 2 ? [] : [node(0, i)], head(i + 1));
          });
        }
        await db.read(async (tx) => {
          expect(await tx.log.entries(org.id, 0, 10)).toEqual([0, 1, 2, 3, 4, 5].map((i) => entry(i)));
          expect(await tx.log.head(org.id)).toEqual(head(6));
          expect(await tx.log.nodes(org.id, [{ level: 0, index: 4 }, { level: 1, index: 2 }, { level: 0, index: 5 }])).toEqual(expect.arrayContaining([node(0, 4), node(1, 2)]));
          expect(await tx.log.nodes(org.id, [{ level: 0, index: 3 }])).toEqual([]);
        });
      });

      it('a deferred write that breaks a constraint fails its unit: nothing of it is stored, and the next units work', async () => {
        const db = track(await openPostgresDb(await freshDatabase(), { poolSize: 1 }));
        await db.write(async (tx) => { await tx.organizations.insert(org); await tx.log.append(entry(0), [], head(1)); });
        await expect(db.write(async (tx) => {
          await tx.organizations.rename(org.id, 'lost', 5);
          await tx.log.append(entry(0, 'again'), [], head(1)); // index 0 is taken
        })).rejects.toThrow(/duplicate key/);
        await db.read(async (tx) => {
          expect((await tx.organizations.get(org.id))!.name).toBe('o');
          expect((await tx.log.entries(org.id, 0, 10)).map((e) => e.activityId)).toEqual([entry(0).activityId]);
        });
        await db.write((tx) => tx.log.append(entry(1), [], head(2)));
        expect(await db.read((tx) => tx.log.head(org.id))).toEqual(head(2));
      });

      it('a statement first parsed in a message that then fails is still known to the connection: the next unit runs it', async () => {
        const db = track(await openPostgresDb(await freshDatabase(), { poolSize: 1 }));
        await db.write(async (tx) => { await tx.organizations.insert(org); await tx.log.insertEntry(entry(0)); });
        // the append's first use on this connection: parsed, then refused (index 0 is taken)
        await expect(db.write((tx) => tx.log.append(entry(0, 'again'), [node(0, 0)], head(1)))).rejects.toThrow(/duplicate key/);
        await db.write((tx) => tx.log.append(entry(1), [node(0, 1)], head(2)));
        await db.read(async (tx) => {
          expect((await tx.log.entries(org.id, 0, 10)).map((e) => e.activityId)).toEqual([entry(0).activityId, entry(1).activityId]);
          expect(await tx.log.nodes(org.id, [{ level: 0, index: 0 }, { level: 0, index: 1 }])).toEqual([node(0, 1)]);
        });
      });

      it('the unit\'s next statement sees it; a savepoint that is undone takes it away', async () => {
        const db = track(await openPostgresDb(await freshDatabase()));
        await db.write((tx) => tx.organizations.insert(org));
        await db.write(async (tx) => {
          await tx.log.append(entry(0), [], head(1));
          expect((await tx.log.takeHead(org.id))!.size).toBe(1);
          expect((await tx.log.entries(org.id, 0, 10)).map((e) => e.index)).toEqual([0]);
          await expect(tx.savepoint(async () => {
            await tx.log.append(entry(1), [], head(2));
            throw new Error('undone');
          })).rejects.toThrow('undone');
          expect((await tx.log.takeHead(org.id))!.size).toBe(1);
          // an append inside a savepoint that was sent before it was undone goes too
          await expect(tx.savepoint(async () => {
            await tx.log.append(entry(1), [], head(2));
            expect((await tx.log.entries(org.id, 0, 10)).map((e) => e.index)).toEqual([0, 1]);
            throw new Error('undone');
          })).rejects.toThrow('undone');
          expect((await tx.log.takeHead(org.id))!.size).toBe(1);
          await tx.log.append(entry(1), [], head(2));
        });
        expect((await db.read((tx) => tx.log.entries(org.id, 0, 10))).map((e) => e.index)).toEqual([0, 1]);
      });
    });

    describe('group commit: writes asked for together share one transaction', () => {
      const o = (id: string) => ({ id, name: id, parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 });
      const xminOf = async (url: string, ids: string[]) => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          const r = await c.query<{ id: string; x: string }>('SELECT id, xmin::text AS x FROM organizations WHERE id = ANY($1)', [ids]);
          return new Map(r.rows.map((row) => [row.id, row.x]));
        } finally { await c.end(); }
      };

      it('writes asked for in one turn commit in one transaction; a later one in another', async () => {
        const url = await freshDatabase();
        const db = track(await openPostgresDb(url));
        const ids = ['g1', 'g2', 'g3', 'g4', 'g5', 'g6'];
        await Promise.all(ids.map((id) => db.write((tx) => tx.organizations.insert(o(id)))));
        await db.write((tx) => tx.organizations.insert(o('later')));
        const x = await xminOf(url, [...ids, 'later']);
        expect(new Set(ids.map((id) => x.get(id))).size).toBe(1);
        expect(x.get('later')).not.toBe(x.get('g1'));
      });

      it('groupWaitMs: after a group of several the next waits for more writes; after a lone write the next starts at once', async () => {
        const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
        // four at once, then one, then three 50 ms later, then one, then one 50 ms later
        const sequence = async (db: Db, p: string) => {
          await Promise.all(['a', 'b', 'c', 'd'].map((id) => db.write((tx) => tx.organizations.insert(o(`${p}${id}`)))));
          const first = db.write((tx) => tx.organizations.insert(o(`${p}e`)));
          await pause(50);
          await Promise.all([first, ...['f', 'g', 'h'].map((id) => db.write((tx) => tx.organizations.insert(o(`${p}${id}`))))]);
          // the last group held four: a lone write waits for company, and the group it ends up in
          // holds one, so the write after it starts at once
          await db.write((tx) => tx.organizations.insert(o(`${p}i`)));
          const lone = db.write((tx) => tx.organizations.insert(o(`${p}j`)));
          await pause(50);
          await Promise.all([lone, db.write((tx) => tx.organizations.insert(o(`${p}k`)))]);
        };
        const url = await freshDatabase();
        const waiting = track(await openPostgresDb(url, { groupWaitMs: 400 }));
        const eager = track(await openPostgresDb(url));
        await sequence(waiting, 'w');
        await sequence(eager, 'x');
        const x = await xminOf(url, [...'abcdefghijk'].flatMap((c) => [`w${c}`, `x${c}`]));
        const same = (a: string, b: string) => x.get(a) === x.get(b);
        // with the wait, the write alone and the three after it are one transaction
        expect(['wf', 'wg', 'wh'].map((id) => same('we', id))).toEqual([true, true, true]);
        expect(same('wa', 'we')).toBe(false);
        // and after the lone write, the next did not wait for the one 50 ms later
        expect(same('wj', 'wk')).toBe(false);
        // without it, the write alone starts at once
        expect(same('xe', 'xf')).toBe(false);
      });

      it('one write of a group throws: its error reaches its caller, nothing of it is stored, the others commit', async () => {
        const url = await freshDatabase();
        const db = track(await openPostgresDb(url));
        const runs = new Map<string, number>();
        const write = (id: string, fail: boolean) => db.write(async (tx) => {
          runs.set(id, (runs.get(id) ?? 0) + 1);
          await tx.organizations.insert(o(id));
          if (fail) throw new Error(`refused ${id}`);
          return id;
        });
        const errors = () => counted(dbGroupReruns, 'reason', 'error');
        const before = await errors();
        const outcomes = await Promise.allSettled([write('a', false), write('b', true), write('c', false)]);
        expect(outcomes.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['a', 'refused b', 'c']);
        expect([...(await xminOf(url, ['a', 'b', 'c'])).keys()].sort()).toEqual(['a', 'c']);
        // the group rolled back and each ran again alone
        expect([...runs.values()]).toEqual([2, 2, 2]);
        expect(await errors()).toBe(before + 1);
      });

      it('two writes of a group taking one named lock run again each alone, one after the other', async () => {
        const db = track(await openPostgresDb(await freshDatabase()));
        let runs = 0;
        const seen: number[] = [];
        let counter = 0;
        const bump = () => db.write(async (tx) => {
          runs++;
          await tx.lock('sender-nonce', 'one address');
          const mine = counter;
          await tx.organizations.get('x'); // a round trip while holding the lock
          counter = mine + 1;
          seen.push(mine);
        });
        const reruns = () => counted(dbGroupReruns, 'reason', 'conflict');
        const before = await reruns();
        await Promise.all([bump(), bump()]);
        expect(runs).toBe(4); // together (the second one's lock: GroupConflict), then each alone
        expect(await reruns()).toBe(before + 1); // and the metric says so
        // alone, the lock orders them: the second reads what the first wrote
        const [p, q] = seen.slice(-2).sort((x, y) => x - y);
        expect(q! - p!).toBe(1);
      });

      it('a savepoint undone in one write takes none of the statements another write of the group issued meanwhile', async () => {
        const url = await freshDatabase();
        const db = track(await openPostgresDb(url));
        let inside!: () => void;
        const entered = new Promise<void>((r) => { inside = r; });
        let issued!: () => void;
        const other = new Promise<void>((r) => { issued = r; });
        const a = db.write(async (tx) => {
          await tx.organizations.insert(o('kept-a'));
          await expect(tx.savepoint(async () => {
            await tx.organizations.insert(o('undone'));
            inside();
            await other; // b's insert is asked for now, while this savepoint is open
            await tx.organizations.get('undone');
            throw new Error('undone');
          })).rejects.toThrow('undone');
        });
        const b = db.write(async (tx) => {
          await entered;
          const p = tx.organizations.insert(o('kept-b'));
          issued();
          await p;
        });
        await Promise.all([a, b]);
        expect([...(await xminOf(url, ['kept-a', 'kept-b', 'undone'])).keys()].sort()).toEqual(['kept-a', 'kept-b']);
      });

      it('savepoints of a group\'s writes do not wait for each other: their reads share messages, and one undone after reading only keeps the group whole', async () => {
        const url = await freshDatabase();
        const db = track(await openPostgresDb(url));
        await db.write((tx) => tx.organizations.insert(o('seen')));
        const runs = new Map<string, number>();
        let inside = 0;
        let most = 0;
        const write = (id: string, fail: boolean) => db.write(async (tx) => {
          runs.set(id, (runs.get(id) ?? 0) + 1);
          await tx.organizations.insert(o(`${id}-outside`));
          const inSavepoint = tx.savepoint(async () => {
            inside++;
            most = Math.max(most, inside);
            try {
              expect((await tx.organizations.get('seen'))!.name).toBe('seen'); // a read, while the others are inside theirs
              if (fail) throw new Error('undone after reading');
              await tx.organizations.insert(o(id));
            } finally { inside--; }
          });
          if (fail) await expect(inSavepoint).rejects.toThrow('undone after reading');
          else await inSavepoint;
        });
        await Promise.all([write('s1', false), write('s2', true), write('s3', false), write('s4', false)]);
        expect(most).toBe(4); // all four inside their savepoints at once
        const x = await xminOf(url, ['s1', 's1-outside', 's2', 's2-outside', 's3', 's3-outside', 's4', 's4-outside']);
        expect([...x.keys()].sort()).toEqual(['s1', 's1-outside', 's2-outside', 's3', 's3-outside', 's4', 's4-outside']);
        expect(new Set(x.values()).size).toBe(1); // one transaction: none ran again alone
        expect([...runs.values()]).toEqual([1, 1, 1, 1]);
      });

      it('appends of one group to one organization\'s log follow each other: one gapless tree, as RFC 6962 defines it, sent as one statement (and the group\'s activity rows as one more)', async () => {
        const url = await freshDatabase();
        const db = track(await openPostgresDb(url));
        const org = o('logged');
        await db.write((tx) => tx.organizations.insert(org));
        const record = (i: number) => ({ id: `act-${i}`, organizationId: org.id, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `fp${i}`, timestampMs: '1', intent: { i }, result: {} });
        // each write appends its activity's entry and stores its row, as the engine does; the
        // statements bound on the wire are counted
        const { messages } = await onTheWire(async () => {
          let done = 0;
          for (const size of [8, 8, 8]) {
            const from = done;
            const indexes = await Promise.all(Array.from({ length: size }, (_, i) => db.write(async (tx) => {
              const r = record(from + i);
              const index = await appendActivity(tx, r, 5, 5);
              await tx.activities.insert({ id: r.id, organizationId: org.id, type: r.type, status: r.status, fingerprint: r.fingerprint, requestMs: 1, createdMs: 5, updatedMs: 5, record: r, logIndexes: [index] });
              return index;
            })));
            expect([...indexes].sort((x, y) => x - y)).toEqual(Array.from({ length: size }, (_, i) => from + i));
            done += size;
          }
          // one write appending 40 entries: at most 32 go in one statement
          await db.write(async (tx) => { for (let i = 0; i < 40; i++) await appendActivity(tx, record(done + i), 5, 5); });
        });
        const bound = messages.flat();
        // a group's entries and the head after them are one statement, its rows another; the
        // write of 40 sent two (32 and 8)
        expect(bound.filter((t) => t.includes('INSERT INTO log_entries'))).toHaveLength(5);
        expect(bound.filter((t) => t.startsWith('INSERT INTO activities'))).toHaveLength(3);
        const { entries, head, rows } = await db.read(async (tx) => ({
          entries: await tx.log.entries(org.id, 0, 100), head: await tx.log.head(org.id), rows: await tx.activities.count(org.id),
        }));
        expect(rows).toBe(24);
        expect(entries.map((e) => e.index)).toEqual(Array.from({ length: 64 }, (_, i) => i));
        expect(head!.size).toBe(64);
        expect(Buffer.from(head!.root).toString('hex')).toBe(Buffer.from(mth(entries.map((e) => leafHash(e.entry)))).toString('hex'));
        // each round's appends were one transaction (none had to run again alone)
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          const r = await c.query<{ n: string }>('SELECT count(DISTINCT xmin::text) AS n FROM log_entries WHERE organization_id = $1', [org.id]);
          expect(Number(r.rows[0]!.n)).toBe(4);
        } finally { await c.end(); }
      });

    });


    it('a savepoint whose statement broke a constraint is undone, and the write goes on to commit', async () => {
      const db = track(await openPostgresDb(await freshDatabase()));
      const o = { id: 'o1', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
      await db.write(async (tx) => {
        await tx.organizations.insert(o);
        await expect(tx.savepoint(async () => {
          await tx.organizations.rename('o1', 'undone', 2);
          await tx.organizations.insert(o); // duplicate key
        })).rejects.toThrow();
        await tx.organizations.touch('o1', 3);
      });
      expect(await db.read((tx) => tx.organizations.get('o1'))).toEqual({ ...o, updatedMs: 3 });
    });

    it('peek: reads without a transaction (each statement its own snapshot); it refuses writes and locks, which would not be held', async () => {
      const url = await freshDatabase();
      const db = track(await openPostgresDb(url));
      const o = { id: 'o1', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
      await db.write((tx) => tx.organizations.insert(o));
      expect(await db.peek((tx) => tx.organizations.get('o1'))).toEqual(o);
      await expect(db.peek((tx) => tx.organizations.rename('o1', 'changed', 2))).rejects.toThrow(/only reads/);
      await expect(db.peek((tx) => tx.lock('request', 'x'))).rejects.toThrow(/no locks/);
      expect((await db.read((tx) => tx.organizations.get('o1')))!.name).toBe('o');
      // each statement sees the latest commit: a write committed between two statements of one peek is seen by the second
      const seen = await db.peek(async (tx) => {
        const before = (await tx.organizations.get('o1'))!.name;
        await db.write((w) => w.organizations.rename('o1', 'later', 3));
        return [before, (await tx.organizations.get('o1'))!.name];
      });
      expect(seen).toEqual(['o', 'later']);
      // a read, by contrast, keeps its snapshot
      const kept = await db.read(async (tx) => {
        const before = (await tx.organizations.get('o1'))!.name;
        await db.write((w) => w.organizations.rename('o1', 'latest', 4));
        return [before, (await tx.organizations.get('o1'))!.name];
      });
      expect(kept).toEqual(['later', 'later']);
    });

    it('afterCommit callbacks run after the commit, and one that throws does not fail the write', async () => {
      const db = track(await openPostgresDb(await freshDatabase()));
      const ran: string[] = [];
      const warn = process.emitWarning;
      process.emitWarning = () => undefined;
      try {
        expect(await db.write(async (tx) => {
          tx.afterCommit(() => { throw new Error('boom'); });
          tx.afterCommit(() => ran.push('second'));
          return 1;
        })).toBe(1);
      } finally {
        process.emitWarning = warn;
      }
      expect(ran).toEqual(['second']);
    });

    it('a connection that breaks inside a write fails that write only; the next one gets a new connection', async () => {
      const url = await freshDatabase();
      const db = track(await openPostgresDb(url));
      await expect(db.write(async (tx) => {
        await tx.organizations.count();
        // The server ends this node's connections (as a restart would) while the write waits between statements.
        await adminQuery('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [new URL(url).pathname.slice(1)]);
        await new Promise((r) => setTimeout(r, 200));
        return tx.organizations.count();
      })).rejects.toThrow();
      expect(await db.write((tx) => tx.organizations.count())).toBe(0);
      expect(await db.isReady()).toBe(true);
    });

    it('statements prepared before another node changed a table are prepared again', async () => {
      const url = await freshDatabase();
      const db = track(await openPostgresDb(url, { poolSize: 1 }));
      const o = { id: 'o1', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
      await db.write((tx) => tx.organizations.insert(o));
      expect(await db.read((tx) => tx.organizations.get('o1'))).toEqual(o);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try { await c.query('ALTER TABLE organizations ADD COLUMN added_later text'); } finally { await c.end(); }
      expect(await db.read((tx) => tx.organizations.get('o1'))).toEqual(o);
      expect(await db.write(async (tx) => { await tx.organizations.touch('o1', 2); return tx.organizations.get('o1'); })).toEqual({ ...o, updatedMs: 2 });
      // also when the callback catches the failure (and reports something else)
      const c2 = new pg.Client({ connectionString: url });
      await c2.connect();
      try { await c2.query('ALTER TABLE organizations ADD COLUMN added_even_later text'); } finally { await c2.end(); }
      let runs = 0;
      expect(await db.read(async (tx) => { runs++; return tx.organizations.get('o1').catch(() => 'caught'); })).toEqual({ ...o, updatedMs: 2 });
      expect(runs).toBe(2);
    });

    it('isReady: true while the database answers, false (not an error) once it is gone', async () => {
      const url = await freshDatabase();
      const db = track(await openPostgresDb(url));
      expect(await db.isReady()).toBe(true);
      await adminQuery(`DROP DATABASE ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
      expect(await db.isReady()).toBe(false);
      await expect(db.read((tx) => tx.organizations.count())).rejects.toThrow();
    });

    // Last: it stops the server (only when the server is this process's throwaway cluster).
    it('the server stopped abruptly: units fail and isReady is false; started again: both recover without a reopen', async (ctx) => {
      const db = track(await openPostgresDb(await freshDatabase(), { connectTimeoutMs: 1000 }));
      const o = { id: 'o1', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
      await db.write((tx) => tx.organizations.insert(o));
      if (!(await controlTestCluster('stop'))) ctx.skip();
      try {
        expect(await db.isReady()).toBe(false);
        await expect(db.write((tx) => tx.organizations.touch('o1', 2))).rejects.toThrow();
        await expect(db.read((tx) => tx.organizations.get('o1'))).rejects.toThrow();
      } finally {
        await controlTestCluster('start');
      }
      expect(await db.isReady()).toBe(true);
      await db.write((tx) => tx.organizations.touch('o1', 3));
      expect((await db.read((tx) => tx.organizations.get('o1')))!.updatedMs).toBe(3);
    });
  });
}
