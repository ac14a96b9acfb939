// The indexes of an activity's log entries moved from an index of log_entries by activity
// (log_entries_activity) into the activity's row (activities.log_indexes: SQLite migration 28,
// PostgreSQL migration 4). A store of the previous layout upgrades to the same answers: each
// activity lists its entries' indexes, oldest first, those of another organization's log are not
// its own, an activity with no entry lists none, and later changes add to the list.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openPostgresDb } from '../../src/storage/postgres.js';
import type { Db } from '../../src/storage/types.js';
import { dropFreshDatabases, freshDatabase, missingPostgres, testDatabaseUrl } from './pgcluster.js';
import { afterSqliteUpgrade, postgresAtVersion, sqliteAtVersion } from './oldschema.js';

const ORG = 'org-upgraded';
const OTHER = 'org-other';
const act = (n: number) => `0000000${n}-0000-7000-8000-${String(n).padStart(12, '0')}`;

/** Activities 1…4 of ORG; the log's entries: (organization, index, activity). Activity 3 has none (stored before the log). */
const ACTIVITIES = [1, 2, 3, 4];
const ENTRIES: [string, number, string][] = [
  [ORG, 0, act(1)], [ORG, 1, act(2)], [ORG, 2, act(1)], [ORG, 3, act(4)], [ORG, 4, act(1)], [ORG, 5, act(2)],
  // an entry naming activity 4 in another organization's log is not activity 4's
  [OTHER, 0, act(4)],
];
const activityRow = (n: number): unknown[] => [act(n), ORG, 'ACTIVITY_TYPE_X', 'ACTIVITY_STATUS_COMPLETED', 1_790_000_000_000 + n, `sha256:${n}`, n, n, JSON.stringify({ n })];
const INSERT_ACTIVITY = 'INSERT INTO activities (id, organization_id, type, status, request_ms, fingerprint, created_ms, updated_ms, record)';

async function checkUpgraded(db: Db): Promise<void> {
  await db.read(async (tx) => {
    expect(await tx.log.indexesOf(ORG, act(1))).toEqual([0, 2, 4]);
    expect(await tx.log.indexesOf(ORG, act(2))).toEqual([1, 5]);
    expect(await tx.log.indexesOf(ORG, act(3))).toEqual([]);
    expect(await tx.log.indexesOf(ORG, act(4))).toEqual([3]);
    expect(await tx.log.indexesOf(OTHER, act(4))).toEqual([]);
    expect((await tx.activities.get(ORG, act(1)))!.logIndexes).toEqual([0, 2, 4]);
  });
  // a later change of an upgraded activity adds its entry's index; one of an activity with none starts the list
  const [one, three] = await db.read(async (tx) => [(await tx.activities.get(ORG, act(1)))!, (await tx.activities.get(ORG, act(3)))!]);
  await db.write(async (tx) => {
    await tx.activities.update({ ...one, status: 'ACTIVITY_STATUS_FAILED', updatedMs: 9 }, 6);
    await tx.activities.update({ ...three, status: 'ACTIVITY_STATUS_FAILED', updatedMs: 9 }, 7);
  });
  expect(await db.read((tx) => tx.log.indexesOf(ORG, act(1)))).toEqual([0, 2, 4, 6]);
  expect(await db.read((tx) => tx.log.indexesOf(ORG, act(3)))).toEqual([7]);
}

describe('SQLite migration 28 (the indexes of an activity\'s entries in its row)', () => {
  const dirs: string[] = [];
  afterAll(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

  it('a store indexed by activity upgrades to the same indexes per activity, and the index is gone', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-logindexes-'));
    dirs.push(dir);
    const file = path.join(dir, 'kmas.sqlite');
    const old = sqliteAtVersion(file, 27);
    old.transaction(() => {
      for (const n of ACTIVITIES) old.prepare(`${INSERT_ACTIVITY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...activityRow(n));
      for (const [o, i, a] of ENTRIES) old.prepare('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms, nodes) VALUES (?, ?, ?, ?, ?, ?)').run(o, i, a, Buffer.from([i]), i, Buffer.alloc(32));
    })();
    old.close();

    await afterSqliteUpgrade(file, (raw) => {
      expect(raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log_entries' ORDER BY name").all())
        .toEqual([{ name: 'sqlite_autoindex_log_entries_1' }]);
      expect(raw.prepare('SELECT id, log_indexes FROM activities ORDER BY id').all())
        .toEqual([{ id: act(1), log_indexes: '0,2,4' }, { id: act(2), log_indexes: '1,5' }, { id: act(3), log_indexes: '' }, { id: act(4), log_indexes: '3' }]);
    }, async (db) => {
      await checkUpgraded(db);
    });
  });
});

const server = await testDatabaseUrl();
if (server === undefined) {
  it.skip(missingPostgres('PostgreSQL migration 4 (the indexes of an activity\'s entries in its row)'), () => undefined);
} else {
  describe('PostgreSQL migration 4 (the indexes of an activity\'s entries in its row)', () => {
    afterAll(async () => { await dropFreshDatabases(); });

    it('a store indexed by activity upgrades to the same indexes per activity, and the index is gone', async () => {
      const url = await freshDatabase();
      await postgresAtVersion(url, 3, async (c) => {
        for (const n of ACTIVITIES) await c.query(`${INSERT_ACTIVITY} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, activityRow(n));
        for (const [o, i, a] of ENTRIES) {
          await c.query('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms, nodes) VALUES ($1, $2, $3, $4, $5, $6)', [o, i, a, Buffer.from([i]), i, Buffer.alloc(32)]);
        }
      });
      const db = await openPostgresDb(url);
      try {
        const check = new pg.Client({ connectionString: url });
        await check.connect();
        try {
          expect((await check.query("SELECT indexname FROM pg_indexes WHERE tablename = 'log_entries' ORDER BY indexname")).rows).toEqual([{ indexname: 'log_entries_pkey' }]);
          expect((await check.query('SELECT id, log_indexes FROM activities ORDER BY id')).rows)
            .toEqual([{ id: act(1), log_indexes: '0,2,4' }, { id: act(2), log_indexes: '1,5' }, { id: act(3), log_indexes: '' }, { id: act(4), log_indexes: '3' }]);
        } finally { await check.end(); }
        await checkUpgraded(db);
      } finally {
        await db.close();
      }
    });
  });
}
