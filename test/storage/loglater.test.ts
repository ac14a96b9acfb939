// Later log entries on SQLite (src/storage/logLater.ts): an activity's first entry takes its index
// in the activity's transaction and is sealed after the commit by a thread, or from the
// activity's row by whichever connection needs it first (after a crash, another process).
// Independent truth: the same activities appended by the synchronous path (every entry built and
// hashed in its transaction: what PostgreSQL does, and what the RFC and entry tests hold to the
// definitions) give the same bytes, and the tree head is RFC 6962's recursive definition
// (reference.ts) over the entries' own bytes.
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteDb, type SqliteStoreOptions } from '../../src/storage/sqlite.js';
import type { Db, Tx } from '../../src/storage/types.js';
import { appendActivity, canonicalRecord } from '../../src/domain/activityLog.js';
import { leafHash } from '../../src/tlog/merkle.js';
import { logSealed } from '../../src/metrics.js';
import { mth } from '../tlog/reference.js';

const ORG = 'org-later';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-loglater-'));
const opened: Db[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
let files = 0;
const open = (opts: SqliteStoreOptions, file = path.join(dir, `db${++files}.sqlite`)): { db: Db; file: string } => {
  const db = openSqliteDb(file, { synchronous: 'OFF', multiProcess: false, ...opts });
  opened.push(db);
  return { db, file };
};

const sealed = async (where: string): Promise<number> => (await logSealed.get()).values.find((v) => v.labels.where === where)?.value ?? 0;

const VOTE = { id: 'vote-1', selection: 'VOTE_SELECTION_APPROVED', userId: 'user-1' };
const record = (i: number, status: string, votes: unknown[] = []) => ({
  id: `act-${i}`, organizationId: ORG, type: 'ACTIVITY_TYPE_CREATE_USER_TAG', status, fingerprint: `sha256:${i}`, timestampMs: String(1_000 + i),
  intent: { createUserTagIntent: { userTagName: `tag "${i}" é\u2028`, userIds: [] } }, result: status === 'ACTIVITY_STATUS_COMPLETED' ? { createUserTagResult: { userTagId: `t-${i}` } } : null, votes,
});

/** Stores activity i as the engine does (its first entry may be sealed later); one waiting for consensus when `waits`. */
async function store(tx: Tx, i: number, waits = false): Promise<number> {
  const r = record(i, waits ? 'ACTIVITY_STATUS_CONSENSUS_NEEDED' : 'ACTIVITY_STATUS_COMPLETED');
  const c = canonicalRecord(r);
  const index = await appendActivity(tx, r, 10 * i, 10 * i, c, true);
  await tx.activities.insert({ id: r.id, organizationId: ORG, type: r.type, status: r.status, fingerprint: r.fingerprint, requestMs: i, createdMs: 10 * i, updatedMs: 10 * i, record: r, recordJson: c.text, logIndexes: [index] });
  return index;
}

/** Approves activity i (stored waiting): a second entry, and its row changed. */
async function approve(tx: Tx, i: number): Promise<number> {
  const r = record(i, 'ACTIVITY_STATUS_COMPLETED', [VOTE]);
  const c = canonicalRecord(r);
  const index = await appendActivity(tx, r, 10 * i, 10 * i + 5, c);
  await tx.activities.update({ id: r.id, organizationId: ORG, type: r.type, status: r.status, fingerprint: r.fingerprint, requestMs: i, createdMs: 10 * i, updatedMs: 10 * i + 5, record: r, recordJson: c.text }, index);
  return index;
}

/** The log as stored: entries' bytes, and the head's root checked against the definition over them. */
async function stored(db: Db): Promise<Uint8Array[]> {
  await db.settleLog?.(ORG);
  const { head, entries } = await db.read(async (tx) => {
    const h = await tx.log.head(ORG);
    return { head: h, entries: await tx.log.entries(ORG, 0, h?.size ?? 0) };
  });
  const bytes = entries.map((e) => e.entry);
  expect(entries.map((e) => e.index)).toEqual(bytes.map((_, i) => i));
  expect(Buffer.from(head!.root).toString('hex')).toBe(Buffer.from(mth(bytes.map((b) => leafHash(b)))).toString('hex'));
  return bytes;
}

/** Waits on the event loop without timers (the tests below fake setTimeout): the sealing thread answers meanwhile. */
const spin = async (ms: number): Promise<void> => {
  const end = performance.now() + ms;
  while (performance.now() < end) await new Promise((r) => setImmediate(r));
};

/**
 * A fault of the disk, as SQLite meets it (a full disk, an I/O error): it rolls the whole
 * transaction back. A trigger raises it on the inserts `when` selects, while the table `fault`
 * holds a row; clear() ends it.
 */
function fault(file: string, table: string, when: string): { clear(): void } {
  const raw = new Database(file);
  raw.exec(`CREATE TABLE fault (x INTEGER); INSERT INTO fault VALUES (1);
    CREATE TRIGGER fault_${table} BEFORE INSERT ON ${table} WHEN ${when} AND EXISTS (SELECT 1 FROM fault) BEGIN SELECT RAISE(ROLLBACK, 'disk fault'); END;`);
  raw.close();
  return { clear: () => { const r = new Database(file); r.exec('DELETE FROM fault'); r.close(); } };
}

const rowsIn = (file: string): number => {
  const raw = new Database(file, { readonly: true });
  try { return (raw.prepare('SELECT count(*) AS n FROM log_entries').get() as { n: number }).n; } finally { raw.close(); }
};

/** Waits (real timers) until the file holds n log rows, failing after limitMs: no reader asks for them meanwhile. */
async function rowsStored(file: string, n: number, limitMs: number): Promise<void> {
  for (let waited = 0; rowsIn(file) < n; waited += 20) {
    expect(waited).toBeLessThan(limitMs);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('later log entries (SQLite)', () => {
  afterEach(() => { vi.useRealTimers(); });

  it('sealed by the thread after their commits, they are byte for byte the entries appended in the transaction', async () => {
    const later = open({ sealLogLater: true }).db;
    const inline = open({}).db;
    const [thread0, request0] = [await sealed('thread'), await sealed('request')];
    let firsts = 0;
    for (const db of [later, inline]) {
      // lone writes, groups of writes, activities waiting for consensus and their approvals among them
      for (let i = 0; i < 10; i++) await db.write((tx) => store(tx, i, i % 4 === 0));
      await Promise.all(Array.from({ length: 12 }, (_, k) => db.write((tx) => store(tx, 10 + k, k % 5 === 0))));
      await db.write((tx) => approve(tx, 4));
      await Promise.all([db.write((tx) => store(tx, 30)), db.write((tx) => approve(tx, 8)), db.write((tx) => store(tx, 31))]);
      await db.write(async (tx) => { await store(tx, 32); await approve(tx, 10); await store(tx, 33); });
      if (db === later) firsts = 26;
    }
    // the thread seals them without anyone asking: every entry taken is stored in the end
    const taken = (await inline.read((tx) => tx.log.head(ORG)))!.size;
    expect(taken).toBe(26 + 3);
    for (let waited = 0; (await later.read((tx) => tx.log.head(ORG)))?.size !== taken; waited += 20) {
      expect(waited).toBeLessThan(15_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    const want = await stored(inline);
    const got = await stored(later);
    expect(got.map((b) => Buffer.from(b).toString('utf8'))).toEqual(want.map((b) => Buffer.from(b).toString('utf8')));
    // each first entry was sealed once: by the thread, or on the request thread by an approval that came first
    const byThread = (await sealed('thread')) - thread0;
    expect(byThread).toBeGreaterThan(0);
    expect(byThread + (await sealed('request')) - request0).toBe(firsts);
    // the activities' rows hold the indexes the entries are at
    const indexes = await later.read(async (tx) => Promise.all([4, 8, 10, 31].map((i) => tx.log.indexesOf(ORG, `act-${i}`))));
    const reference = await inline.read(async (tx) => Promise.all([4, 8, 10, 31].map((i) => tx.log.indexesOf(ORG, `act-${i}`))));
    expect(indexes).toEqual(reference);
    expect(indexes[0]).toHaveLength(2);
  });

  it('what a connection holds unsealed when it closes is sealed then, whatever it wrote since (rows it caches included)', async () => {
    const { db, file } = open({ sealLogLater: true, sealDelayMs: 3_600_000 });
    const inline = open({}).db;
    for (const d of [db, inline]) {
      await d.write((tx) => tx.organizations.insert({ id: ORG, name: 'later', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 }));
      for (let i = 0; i < 9; i++) await d.write((tx) => store(tx, i));
      // last, a write of a cached table (the organization's row): it drops the adapter's cached rows, not what it holds of the log
      await d.write((tx) => tx.organizations.touch(ORG, 2));
    }
    expect(rowsIn(file)).toBe(0);
    await db.close();
    expect(rowsIn(file)).toBe(9);
    const again = open({ multiProcess: true }, file).db;
    expect((await stored(again)).map((e) => Buffer.from(e).toString('utf8'))).toEqual((await stored(inline)).map((e) => Buffer.from(e).toString('utf8')));
  });

  it('entries a process took but never sealed (a crash, another connection) are sealed from the activities\' rows by the next connection that needs them', async () => {
    // the thread is given nothing for an hour: what this connection takes stays unsealed
    const { db: a, file } = open({ sealLogLater: true, sealDelayMs: 3_600_000 });
    const inline = open({}).db;
    const steps: [Db, (tx: Tx) => Promise<number>][] = [];
    for (let i = 0; i < 20; i++) steps.push([a, (tx) => store(tx, i, i === 3)]);
    for (const [db, step] of steps) await db.write(step);
    for (const [, step] of steps) await inline.write(step);
    expect(rowsIn(file)).toBe(0);
    // a second connection to the same file (as after a restart, or another process) reads the log
    const b = open({ multiProcess: true }, file).db;
    expect((await stored(b)).map((e) => Buffer.from(e).toString('utf8'))).toEqual((await stored(inline)).map((e) => Buffer.from(e).toString('utf8')));
    expect(rowsIn(file)).toBe(20);
    // both go on: the first leaves its entries unsealed again, the second appends in its
    // transactions (sealing the first's before its own), an approval among them
    const more: [Db, (tx: Tx) => Promise<number>][] = [
      [a, (tx) => store(tx, 20)], [a, (tx) => store(tx, 21)], [b, (tx) => store(tx, 22)], [a, (tx) => store(tx, 23)],
      [a, (tx) => approve(tx, 3)], [a, (tx) => store(tx, 24)], [b, (tx) => store(tx, 25)], [a, (tx) => store(tx, 26)],
    ];
    for (const [db, step] of more) await db.write(step);
    for (const [, step] of more) await inline.write(step);
    const want = (await stored(inline)).map((e) => Buffer.from(e).toString('utf8'));
    expect(want).toHaveLength(28);
    expect((await stored(b)).map((e) => Buffer.from(e).toString('utf8'))).toEqual(want);
    // the first connection, closed, seals what it still holds (nothing is left: the second sealed it)
    await a.close();
    expect(rowsIn(file)).toBe(28);
  });
  it('a write group whose first step, storing the thread\'s rows, loses the transaction runs its writes alone: no index is taken twice and the log stays whole', async () => {
    const { db, file } = open({ sealLogLater: true, sealDelayMs: 5 });
    const inline = open({}).db;
    const disk = fault(file, 'log_entries', "NEW.activity_id = 'act-1'");
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await db.write((tx) => store(tx, 1));
    vi.advanceTimersByTime(5); // the entry goes to the thread
    await spin(1_000); // its row comes back and waits for the next group
    // one group of two writes: its BEGIN stores act-1's row, and the fault rolls the transaction back
    const results = await Promise.allSettled([db.write((tx) => store(tx, 2)), db.write((tx) => store(tx, 3))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(results.map((r) => (r as PromiseFulfilledResult<number>).value)).toEqual([1, 2]);
    disk.clear();
    // nobody reads the log: the entries are sealed all the same, at a later group's BEGIN
    vi.runOnlyPendingTimers();
    vi.useRealTimers();
    await rowsStored(file, 3, 10_000);
    for (const i of [1, 2, 3]) await inline.write((tx) => store(tx, i));
    expect((await stored(db)).map((e) => Buffer.from(e).toString('utf8'))).toEqual((await stored(inline)).map((e) => Buffer.from(e).toString('utf8')));
  });

  it('rows stored by a group whose transaction then fails whole are made again and stored, with no reader asking', async () => {
    const { db, file } = open({ sealLogLater: true, sealDelayMs: 5 });
    const disk = fault(file, 'activities', "NEW.id = 'act-99'");
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await db.write((tx) => store(tx, 1));
    vi.advanceTimersByTime(5);
    await spin(1_000); // act-1's row is back: it waits for the next group
    vi.advanceTimersByTime(10); // the pump after the reply runs, with nothing new to send
    // the next write stores act-1's row at its BEGIN, then fails, and the whole transaction with it
    await expect(db.write((tx) => store(tx, 99))).rejects.toThrow('disk fault');
    disk.clear();
    vi.runOnlyPendingTimers();
    vi.useRealTimers();
    await rowsStored(file, 1, 5_000);
    expect((await stored(db)).length).toBe(1);
  });
});
