// The subtree hashes moved from log_nodes rows into their entries' rows (log_entries.nodes:
// SQLite migration 27, PostgreSQL migration 3): a log stored in the previous layout — a log_nodes
// row per node, by (level, idx) — upgrades to the same entries and the same tree. The truth is RFC 6962's tree head written out from its
// definition over the entries' own bytes; the old rows are made here from the entries with
// merkle.ts's Frontier, as the previous appendActivity stored them.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { MIGRATIONS } from '../../src/storage/migrations.js';
import { openPostgresDb } from '../../src/storage/postgres.js';
import type { Db } from '../../src/storage/types.js';
import { appendActivity, consistencyProofOf, inclusionProofOf } from '../../src/domain/activityLog.js';
import { activityEntryBytes } from '../../src/tlog/entry.js';
import { Frontier, leafHash, nodeHash, verifyConsistency, verifyInclusion, type Node } from '../../src/tlog/merkle.js';
import { dropFreshDatabases, freshDatabase, missingPostgres, testDatabaseUrl } from './pgcluster.js';
import { mth } from '../tlog/reference.js';
import { afterSqliteUpgrade, postgresAtVersion, sqliteAtVersion } from './oldschema.js';

const ORG = 'org-upgraded';
const OLD = 300;


const record = (i: number) => ({ id: `act-${i}`, organizationId: ORG, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `sha256:${i}`, timestampMs: String(i), intent: { i }, result: {}, votes: [] });

/** The rows a log of OLD entries had in the previous layout: entries, every completed node by (level, idx), the head. */
function oldLog() {
  const entries = Array.from({ length: OLD }, (_, i) => activityEntryBytes(i, record(i), i, i));
  const f = new Frontier();
  const nodes: Node[] = [];
  for (const e of entries) nodes.push(...f.append(leafHash(e)));
  const frontier = Buffer.concat(f.nodes.map((n) => n.hash));
  return { entries, nodes, head: { size: f.size, frontier, root: f.root() } };
}

/** Proofs from the upgraded store against the definition, then more appends on top of the old tree. */
async function checkUpgraded(db: Db): Promise<void> {
  const { entries } = oldLog();
  const leaves = entries.map(leafHash);
  for (const n of [1, 2, 3, 64, 127, 128, 129, 255, OLD]) {
    const root = mth(leaves.slice(0, n));
    for (const m of [0, Math.floor(n / 2), n - 1]) {
      const proof = await db.read((tx) => inclusionProofOf(tx, ORG, m, n));
      expect(verifyInclusion(leaves[m]!, m, n, proof, root)).toBe(true);
    }
    const c = await db.read((tx) => consistencyProofOf(tx, ORG, n, OLD));
    expect(verifyConsistency(n, OLD, root, mth(leaves), c)).toBe(true);
  }
  const more = 70;
  await db.write(async (tx) => { for (let i = OLD; i < OLD + more; i++) await appendActivity(tx, record(i), i, i); });
  const all = (await db.read((tx) => tx.log.entries(ORG, 0, OLD + more))).map((e) => leafHash(e.entry));
  expect(all.slice(0, OLD).map(bytesToHex)).toEqual(leaves.map(bytesToHex));
  const head = (await db.read((tx) => tx.log.head(ORG)))!;
  expect(head.size).toBe(OLD + more);
  expect(bytesToHex(head.root)).toBe(bytesToHex(mth(all)));
  for (const m of [0, 5, OLD - 1, OLD, OLD + more - 1]) {
    const proof = await db.read((tx) => inclusionProofOf(tx, ORG, m, OLD + more));
    expect(verifyInclusion(all[m]!, m, OLD + more, proof, head.root)).toBe(true);
  }
  const c = await db.read((tx) => consistencyProofOf(tx, ORG, OLD, OLD + more));
  expect(verifyConsistency(OLD, OLD + more, mth(leaves), head.root, c)).toBe(true);
}

describe('SQLite migration 27 (the nodes in their entries\' rows)', () => {
  const dirs: string[] = [];
  afterAll(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

  it('a log stored by (level, idx) upgrades to the same tree: its proofs verify and appends continue it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-lognodes-'));
    dirs.push(dir);
    const file = path.join(dir, 'kmas.sqlite');
    const old = sqliteAtVersion(file, 26);
    const log = oldLog();
    old.transaction(() => {
      log.entries.forEach((e, i) => old.prepare('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms) VALUES (?, ?, ?, ?, ?)').run(ORG, i, `act-${i}`, e, i));
      for (const n of log.nodes) old.prepare('INSERT INTO log_nodes (organization_id, level, idx, hash) VALUES (?, ?, ?, ?)').run(ORG, n.level, n.index, n.hash);
      old.prepare('INSERT INTO log_heads (organization_id, size, frontier, root, updated_ms) VALUES (?, ?, ?, ?, ?)').run(ORG, log.head.size, log.head.frontier, log.head.root, 1);
    })();
    old.close();

    await afterSqliteUpgrade(file, (raw) => {
      // every node's 32 bytes, and nothing else, are in the entries' rows now
      expect((raw.prepare('SELECT SUM(length(nodes)) AS n FROM log_entries').get() as { n: number }).n).toBe(32 * log.nodes.length);
      expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'log_nodes'").all()).toEqual([]);
      // a rowid table now, still keyed (organization_id, idx) (the index by activity went in migration 28)
      expect(raw.prepare("SELECT wr FROM pragma_table_list WHERE name = 'log_entries'").get()).toEqual({ wr: 0 });
      expect(raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log_entries' ORDER BY name").all())
        .toEqual([{ name: 'sqlite_autoindex_log_entries_1' }]);
    }, async (db) => {
      await checkUpgraded(db);
    });
  });
});

const server = await testDatabaseUrl();
if (server === undefined) {
  it.skip(missingPostgres('PostgreSQL migration 3 (the nodes in their entries\' rows)'), () => undefined);
} else {
  describe('PostgreSQL migration 3 (the nodes in their entries\' rows)', () => {
    afterAll(async () => { await dropFreshDatabases(); });

    it('a log stored by (level, idx) upgrades to the same tree: its proofs verify and appends continue it', async () => {
      const url = await freshDatabase();
      const log = oldLog();
      await postgresAtVersion(url, 2, async (c) => {
        for (const [i, e] of log.entries.entries()) {
          await c.query('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms) VALUES ($1, $2, $3, $4, $5)', [ORG, i, `act-${i}`, Buffer.from(e), i]);
        }
        for (const n of log.nodes) await c.query('INSERT INTO log_nodes (organization_id, level, idx, hash) VALUES ($1, $2, $3, $4)', [ORG, n.level, n.index, Buffer.from(n.hash)]);
        await c.query('INSERT INTO log_heads (organization_id, size, frontier, root, updated_ms) VALUES ($1, $2, $3, $4, 1)', [ORG, log.head.size, log.head.frontier, Buffer.from(log.head.root)]);
      });
      const db = await openPostgresDb(url);
      try {
        await checkUpgraded(db);
      } finally {
        await db.close();
      }
    });
  });
}
