// The SQLite adapter keeps its log heads in memory (src/storage/logHeads.ts). What would go wrong
// with a stale head is an append at a taken index (refused by log_entries' primary key) or a tree
// that is not its entries' tree; both are checked here against RFC 6962's tree head written out
// from its definition: a write that throws after appending (its savepoint rolled back) in the
// middle of a group, and two connections on one file appending in turn (a pool of processes).
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db } from '../../src/storage/types.js';
import { appendActivity, inclusionProofOf } from '../../src/domain/activityLog.js';
import { leafHash, nodeHash, verifyInclusion } from '../../src/tlog/merkle.js';
import { mth } from '../tlog/reference.js';


const dirs: string[] = [];
afterAll(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });
const file = () => { const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-logheads-')); dirs.push(d); return path.join(d, 'kmas.sqlite'); };
let n = 0;
const append = (db: Db, org: string, fail = false) => db.write(async (tx) => {
  const i = n++;
  const index = await appendActivity(tx, { id: `act-${i}`, organizationId: org, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `sha256:${i}`, timestampMs: String(i), intent: { i }, result: {}, votes: [] }, i, i);
  if (fail) throw new Error('refused after appending');
  return index;
});

/** The stored head is the tree of the stored entries, and its last entry proves against it. */
async function consistent(db: Db, org: string, size: number): Promise<void> {
  const leaves = (await db.read((tx) => tx.log.entries(org, 0, size + 10))).map((e) => leafHash(e.entry));
  expect(leaves).toHaveLength(size);
  const head = (await db.read((tx) => tx.log.head(org)))!;
  expect(head.size).toBe(size);
  expect(bytesToHex(head.root)).toBe(bytesToHex(mth(leaves)));
  const proof = await db.read((tx) => inclusionProofOf(tx, org, size - 1, size));
  expect(verifyInclusion(leaves[size - 1]!, size - 1, size, proof, head.root)).toBe(true);
}

describe('the SQLite adapter\'s log heads in memory', () => {
  it('a write that throws after its append leaves the group\'s other appends, and the next ones, on the right indexes', async () => {
    const db = openSqliteDb(file(), { synchronous: 'OFF', multiProcess: false });
    try {
      for (let round = 0; round < 5; round++) {
        // queued in one turn: one group transaction, each write in its savepoint
        const outcomes = await Promise.allSettled([append(db, 'o1'), append(db, 'o1', true), append(db, 'o2'), append(db, 'o1'), append(db, 'o2', true), append(db, 'o1', true)]);
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'rejected', 'rejected']);
        const got = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
        expect(got).toEqual([2 * round, round, 2 * round + 1]);
      }
      await append(db, 'o1');
      await consistent(db, 'o1', 11);
      await consistent(db, 'o2', 5);
    } finally {
      await db.close();
    }
  });

  it('two connections on one file (a pool of processes) append in turn to one log', async () => {
    const f = file();
    const a = openSqliteDb(f, { synchronous: 'OFF' });
    const b = openSqliteDb(f, { synchronous: 'OFF' });
    try {
      const indexes: number[] = [];
      for (let i = 0; i < 30; i++) {
        indexes.push(await append(i % 3 === 0 ? b : a, 'shared'));
        if (i % 7 === 0) indexes.push(...await Promise.all([append(a, 'shared'), append(b, 'shared')]));
      }
      expect([...indexes].sort((x, y) => x - y)).toEqual(indexes.map((_, i) => i));
      await consistent(a, 'shared', indexes.length);
      await consistent(b, 'shared', indexes.length);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
