// Group commit (src/storage/sqliteUnit.ts): writes queued in the same turn of the event loop share
// one transaction; each runs in its own savepoint; they settle only after the COMMIT; a failing
// write rolls back only its own changes. And the row cache behind the SQLite repositories.
import { describe, it, expect, afterEach } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db, Tx } from '../../src/storage/types.js';
import { ApiError, Grpc } from '../../src/errors.js';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(async () => {
  for (const s of dbs.splice(0)) await s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function fresh(opts: { groupBudgetMs?: number; multiProcess?: boolean } = {}): Promise<{ db: Db; file: string; org: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-gc-'));
  dirs.push(dir);
  const file = path.join(dir, 'kmas.sqlite');
  const db = openSqliteDb(file, { synchronous: 'FULL', ...opts });
  dbs.push(db);
  const org = 'org-1';
  await db.write((tx) => tx.organizations.insert({ id: org, name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 }));
  return { db, file, org };
}

const tag = (tx: Tx, org: string, id: string) =>
  tx.tags.insert({ id, organizationId: org, name: id, type: 'TAG_TYPE_USER', createdMs: 1, updatedMs: 1 });

/** What another connection (another process) sees: only committed data. */
function committedTags(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try { return (db.prepare('SELECT id FROM tags ORDER BY id').all() as { id: string }[]).map((r) => r.id); } finally { db.close(); }
}

describe('group commit', () => {
  it('runs the writes of one turn in one transaction and settles them after its commit', async () => {
    // a budget no loaded machine exhausts: this test is about grouping, not about the budget's split
    const { db, file, org } = await fresh({ groupBudgetMs: 60_000 });
    const events: string[] = [];
    const seenByOthers: string[][] = [];
    const job = (id: string, fail?: 'api') => db.write(async (tx) => {
      await tag(tx, org, id);
      events.push(`work ${id}`);
      // inside the group nothing is visible to other connections yet
      seenByOthers.push(committedTags(file));
      if (fail) throw new ApiError(Grpc.ALREADY_EXISTS, 'refused');
      return id;
    }).then((v) => { events.push(`reply ${id}`); seenByOthers.push(committedTags(file)); return v; });

    const results = await Promise.allSettled([job('a'), job('b', 'api'), job('c')]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: 'a' });
    expect(results[1]!.status).toBe('rejected');
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(ApiError);
    expect(results[2]).toEqual({ status: 'fulfilled', value: 'c' });
    // all three ran before the first reply: one shared transaction
    expect(events.slice(0, 3)).toEqual(['work a', 'work b', 'work c']);
    expect(events.slice(3)).toEqual(['reply a', 'reply c']);
    // uncommitted while working; committed (a and c, not b) before any reply
    expect(seenByOthers.slice(0, 3)).toEqual([[], [], []]);
    expect(seenByOthers.slice(3)).toEqual([['a', 'c'], ['a', 'c']]);
  });

  it('a write that fails with a non-API error does not take the others of its group with it', async () => {
    const { db, file, org } = await fresh();
    const results = await Promise.allSettled([
      db.write((tx) => tag(tx, org, 'x')),
      db.write(async (tx) => { await tag(tx, org, 'y'); await tag(tx, org, 'y'); }), // UNIQUE violation: a SqliteError
      db.write((tx) => tag(tx, org, 'z')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).not.toBeInstanceOf(ApiError);
    expect(committedTags(file)).toEqual(['x', 'z']);
  });

  it('while another connection (another pool process) holds the write lock, waits without stopping the event loop', async () => {
    const { db, file, org } = await fresh({ multiProcess: true });
    const other = new Database(file);
    other.pragma('busy_timeout = 5000');
    other.prepare('BEGIN IMMEDIATE').run();
    other.prepare("INSERT INTO tags (id, organization_id, name, type, created_ms, updated_ms) VALUES ('held', ?, 'held', 'TAG_TYPE_USER', 1, 1)").run(org);
    let done = false;
    const p = db.write(async (tx) => { await tag(tx, org, 'queued'); return 'ok'; }).then((v) => { done = true; return v; });
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 30)); // timers still fire: the queue is not blocked in SQLite
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(done).toBe(false);
    expect(committedTags(file)).toEqual([]);
    other.prepare('COMMIT').run();
    other.close();
    expect(await p).toBe('ok');
    expect(committedTags(file)).toEqual(['held', 'queued']);
  });

  it('a group stops taking writes after its time budget; the rest commit in the next group, in order', async () => {
    const { db, file, org } = await fresh();
    const events: string[] = [];
    const busy = (ms: number) => { const t = performance.now(); while (performance.now() - t < ms) { /* a heavy write */ } };
    const job = (id: string, ms: number) => db.write(async (tx) => { await tag(tx, org, id); busy(ms); events.push(`work ${id}`); })
      .then(() => { events.push(`reply ${id}: ${committedTags(file).join(',')}`); });
    await Promise.all([job('h1', 30), job('l1', 0), job('l2', 0)]);
    // h1 alone exceeded the budget: committed and answered before l1 and l2 ran
    expect(events).toEqual(['work h1', 'reply h1: h1', 'work l1', 'work l2', 'reply l1: h1,l1,l2', 'reply l2: h1,l1,l2']);
  });

  it('a write queued after a flush goes into the next group', async () => {
    const { db, file, org } = await fresh();
    await db.write((tx) => tag(tx, org, 'first'));
    expect(committedTags(file)).toEqual(['first']);
    await db.write((tx) => tag(tx, org, 'second'));
    expect(committedTags(file)).toEqual(['first', 'second']);
  });
});

describe('API key lookup cache (src/storage/sqlite.ts)', () => {
  const key = (id: string, org: string, user: string, publicKey: string) => ({
    id, organizationId: org, userId: user, name: id, publicKey, curve: 'API_KEY_CURVE_P256' as const,
    credentialType: 'CREDENTIAL_TYPE_API_KEY_P256', expirationSeconds: null, expiresAtMs: null, createdMs: 1, updatedMs: 1,
  });
  const user = (tx: Tx, org: string, id: string) => tx.users.insert({ id, organizationId: org, name: id, email: null, phoneNumber: null, isRoot: true, createdMs: 1, updatedMs: 1 });
  const byPk = (db: Db, pk: string) => db.read((tx) => tx.apiKeys.byPublicKey(pk));

  it('sees inserts and deletes of this connection, and never rows of a rolled-back transaction', async () => {
    const { db, org } = await fresh();
    await db.write((tx) => user(tx, org, 'u1'));
    expect(await byPk(db, '02aa')).toEqual([]);
    await db.write((tx) => tx.apiKeys.insert(key('k1', org, 'u1', '02aa')));
    expect((await byPk(db, '02aa')).map((k) => k.id)).toEqual(['k1']);
    await expect(db.write(async (tx) => {
      await tx.apiKeys.insert(key('k2', org, 'u1', '02bb'));
      expect((await tx.apiKeys.byPublicKey('02bb')).map((k) => k.id)).toEqual(['k2']); // own uncommitted row
      throw new Error('roll back');
    })).rejects.toThrow('roll back');
    expect(await byPk(db, '02bb')).toEqual([]);
    await db.write((tx) => tx.apiKeys.delete(org, 'k1'));
    expect(await byPk(db, '02aa')).toEqual([]);
  });

  const nextTurn = () => new Promise((r) => setImmediate(r));

  it('drops what it holds when another connection (another pool process) commits', async () => {
    const { db, file, org } = await fresh();
    await db.write(async (tx) => { await user(tx, org, 'u1'); await tx.apiKeys.insert(key('k1', org, 'u1', '02aa')); });
    expect((await byPk(db, '02aa')).map((k) => k.id)).toEqual(['k1']);
    const other = openSqliteDb(file, { synchronous: 'FULL' });
    dbs.push(other);
    await other.write((tx) => tx.apiKeys.delete(org, 'k1'));
    // A write transaction starts from the latest commit and never acts on older cached rows.
    expect(await db.write((tx) => tx.apiKeys.byPublicKey('02aa'))).toEqual([]);
    await other.write((tx) => tx.apiKeys.insert(key('k3', org, 'u1', '02aa')));
    await nextTurn();
    expect((await byPk(db, '02aa')).map((k) => k.id)).toEqual(['k3']);
    await other.write((tx) => tx.apiKeys.delete(org, 'k3'));
    await nextTurn();
    expect(await byPk(db, '02aa')).toEqual([]);
  });

  it('caches organizations, users and signing keys by the same rules', async () => {
    const ETH = '0x' + 'aB'.repeat(20);
    const { db, file, org } = await fresh();
    await db.write((tx) => user(tx, org, 'u1'));
    expect((await db.read((tx) => tx.users.get(org, 'u1')))?.name).toBe('u1');
    const got = (await db.read((tx) => tx.organizations.get(org)))!;
    got.name = 'changed by the caller';
    expect((await db.read((tx) => tx.organizations.get(org)))!.name).toBe('o'); // callers get copies
    const other = openSqliteDb(file, { synchronous: 'FULL' });
    dbs.push(other);
    await other.write((tx) => tx.users.delete(org, 'u1'));
    expect(await db.write((tx) => tx.users.get(org, 'u1'))).toBeUndefined();
    await db.write((tx) => user(tx, org, 'u2'));
    expect(await db.write(async (tx) => {
      await tx.users.delete(org, 'u2');
      return tx.users.get(org, 'u2'); // own uncommitted delete
    })).toBeUndefined();

    const pk = { id: 'pk1', organizationId: org, name: 'k', curve: 'CURVE_SECP256K1', publicKey: '02bb', addresses: [{ format: 'ADDRESS_FORMAT_ETHEREUM', address: ETH }],
      sealed: new Uint8Array([1, 2, 3]), imported: false, exported: false, createdMs: 1, updatedMs: 1 };
    await db.write((tx) => tx.keys.privateKeys.insert(pk));
    const a = (await db.read((tx) => tx.keys.privateKeys.byAddress(org, ETH.toLowerCase())))!;
    a.sealed.fill(0); // a caller wiping its copy does not reach the cache
    expect([...(await db.read((tx) => tx.keys.privateKeys.get(org, 'pk1')))!.sealed]).toEqual([1, 2, 3]);
    expect([...(await db.read((tx) => tx.keys.privateKeys.byAddress(org, ETH.toUpperCase().replace('0X', '0x'))))!.sealed]).toEqual([1, 2, 3]);
    await other.write((tx) => tx.keys.privateKeys.delete(org, 'pk1'));
    expect(await db.write((tx) => tx.keys.privateKeys.byAddress(org, ETH.toLowerCase()))).toBeUndefined();
    await nextTurn();
    expect(await db.read((tx) => tx.keys.privateKeys.get(org, 'pk1'))).toBeUndefined();
  });
});
