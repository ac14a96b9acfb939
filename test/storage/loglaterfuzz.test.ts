// Later log entries on SQLite against the synchronous append, at random: the same write groups
// (stores, approvals of activities waiting for consensus, jobs that throw, nested savepoints rolled
// back, writes to two organizations at once, writes that make SQLite roll the whole transaction
// back, reads of the log, a close and reopen) go to a store that seals first entries on its thread
// and to one that appends every entry in its transaction. Each write must end the same way on
// both, and in the end each organization's entries must be byte for byte the same, with the head
// RFC 6962's definition over them (reference.ts), and every entry stored once.
// SEEDS, ROUNDS and BATCH make it longer.
import { afterAll, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteDb, type SqliteStoreOptions } from '../../src/storage/sqlite.js';
import type { Db, Tx } from '../../src/storage/types.js';
import { appendActivity, canonicalRecord } from '../../src/domain/activityLog.js';
import { leafHash } from '../../src/tlog/merkle.js';
import { mth } from '../tlog/reference.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-fuzz-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const ORGS = ['o1', 'o2', 'o3'];
const VOTE = { id: 'vote-1', selection: 'VOTE_SELECTION_APPROVED', userId: 'user-1' };
const rec = (org: string, i: number, status: string, votes: unknown[] = []) => ({
  id: `${org}-act-${i}`, organizationId: org, type: 'ACTIVITY_TYPE_CREATE_USER_TAG', status, fingerprint: `sha256:${org}:${i}`, timestampMs: String(1_000 + i),
  intent: { createUserTagIntent: { userTagName: `t${i}`, userIds: [] } }, result: null, votes,
});
async function store(tx: Tx, org: string, i: number, waits: boolean): Promise<void> {
  const r = rec(org, i, waits ? 'ACTIVITY_STATUS_CONSENSUS_NEEDED' : 'ACTIVITY_STATUS_COMPLETED');
  const c = canonicalRecord(r);
  const index = await appendActivity(tx, r, 10 * i, 10 * i, c, true);
  await tx.activities.insert({ id: r.id, organizationId: org, type: r.type, status: r.status, fingerprint: r.fingerprint, requestMs: i, createdMs: 10 * i, updatedMs: 10 * i, record: r, recordJson: c.text, logIndexes: [index] });
}
async function storeBoom(tx: Tx, org: string, i: number): Promise<void> {
  const r = { ...rec(org, i, 'ACTIVITY_STATUS_COMPLETED'), id: `${org}-boom-${i}` };
  const c = canonicalRecord(r);
  const index = await appendActivity(tx, r, 10 * i, 10 * i, c, true);
  await tx.activities.insert({ id: r.id, organizationId: org, type: r.type, status: r.status, fingerprint: r.fingerprint, requestMs: i, createdMs: 10 * i, updatedMs: 10 * i, record: r, recordJson: c.text, logIndexes: [index] });
}
const boomTrigger = (file: string) => { const raw = new Database(file); raw.exec("CREATE TRIGGER IF NOT EXISTS boom BEFORE INSERT ON activities WHEN NEW.id LIKE '%-boom-%' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END;"); raw.close(); };
async function approve(tx: Tx, org: string, i: number): Promise<void> {
  const r = rec(org, i, 'ACTIVITY_STATUS_COMPLETED', [VOTE]);
  const c = canonicalRecord(r);
  const index = await appendActivity(tx, r, 10 * i, 10 * i + 5, c);
  await tx.activities.update({ id: r.id, organizationId: org, type: r.type, status: r.status, fingerprint: r.fingerprint, requestMs: i, createdMs: 10 * i, updatedMs: 10 * i + 5, record: r, recordJson: c.text }, index);
}
type Op = (tx: Tx) => Promise<void>;
function rng(seed: number) { return () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; }; }

async function entries(db: Db, org: string): Promise<string[]> {
  await db.settleLog?.(org);
  const { head, rows } = await db.read(async (tx) => { const h = await tx.log.head(org); return { head: h, rows: await tx.log.entries(org, 0, h?.size ?? 0) }; });
  const bytes = rows.map((e) => e.entry);
  expect(rows.map((e) => e.index)).toEqual(bytes.map((_, i) => i));
  if (head) expect(Buffer.from(head.root).toString('hex')).toBe(Buffer.from(mth(bytes.map((b) => leafHash(b)))).toString('hex'));
  return bytes.map((b) => Buffer.from(b).toString('utf8'));
}

for (const seed of Array.from({ length: Number(process.env.SEEDS ?? 8) }, (_, k) => k + 1)) {
  it(`seed ${seed}`, async () => {
    const rand = rng(seed);
    const laterOpts: SqliteStoreOptions = { sealLogLater: true, sealDelayMs: seed % 3 === 0 ? 3_600_000 : 1 + (seed % 4) * 5, groupBudgetMs: 1 + (seed % 3) };
    const lf = path.join(dir, `l${seed}.sqlite`);
    const inf = path.join(dir, `i${seed}.sqlite`);
    // the schema first, then the trigger that stands for a disk fault on the 'boom' activities
    await openSqliteDb(lf, { synchronous: 'OFF' }).close();
    await openSqliteDb(inf, { synchronous: 'OFF' }).close();
    boomTrigger(lf); boomTrigger(inf);
    let later = openSqliteDb(lf, { synchronous: 'OFF', multiProcess: false, ...laterOpts });
    const inline = openSqliteDb(inf, { synchronous: 'OFF', multiProcess: false });
    let n = 0;
    const waiting: [string, number][] = [];
    for (let round = 0; round < Number(process.env.ROUNDS ?? 60); round++) {
      const batch: Op[] = [];
      const size = 1 + Math.floor(rand() * Number(process.env.BATCH ?? 8));
      for (let k = 0; k < size; k++) {
        const org = ORGS[Math.floor(rand() * ORGS.length)]!;
        const x = rand();
        const i = ++n;
        if (x < 0.45) { const w = rand() < 0.25; if (w) waiting.push([org, i]); batch.push((tx) => store(tx, org, i, w)); }
        else if (x < 0.6 && waiting.length > 0) { const [o, j] = waiting.splice(Math.floor(rand() * waiting.length), 1)[0]!; batch.push((tx) => approve(tx, o, j)); }
        else if (x < 0.7) batch.push(async (tx) => { await store(tx, org, i, false); throw new Error('job fails'); });
        else if (x < 0.8) { const j = ++n; batch.push(async (tx) => { await tx.savepoint(async () => { await store(tx, org, i, false); throw new Error('inner'); }).catch(() => {}); await store(tx, org, j, false); }); }
        else if (x < 0.85) { const j = ++n; const o2 = ORGS[(ORGS.indexOf(org) + 1) % 3]!; batch.push(async (tx) => { await store(tx, org, i, false); await store(tx, o2, j, false); }); }
        else if (x < 0.9) batch.push((tx) => storeBoom(tx, org, i));
        else batch.push((tx) => store(tx, org, i, false));
      }
      const run = (db: Db) => Promise.allSettled(batch.map((op) => db.write(op)));
      const [a, b] = await Promise.all([run(later), run(inline)]);
      expect(a.map((s) => s.status)).toEqual(b.map((s) => s.status));
      const y = rand();
      if (y < 0.3) await new Promise((r) => setTimeout(r, Math.floor(rand() * 40)));
      else if (y < 0.35) await later.settleLog?.(ORGS[Math.floor(rand() * 3)]);
      else if (y < 0.38) { await later.close(); later = openSqliteDb(lf, { synchronous: 'OFF', multiProcess: false, ...laterOpts }); }
    }
    await new Promise((r) => setTimeout(r, 100));
    for (const org of ORGS) expect(await entries(later, org)).toEqual(await entries(inline, org));
    await later.close();
    const raw = new Database(lf, { readonly: true });
    const cnt = (raw.prepare('SELECT count(*) AS n FROM log_entries').get() as { n: number }).n;
    raw.close();
    let want = 0;
    for (const org of ORGS) want += (await entries(inline, org)).length;
    expect(cnt).toBe(want);
    await inline.close();
  });
}
