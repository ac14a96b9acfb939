// The SQLite adapter's WAL checkpoints run on a thread of their own once the server defers its
// syncs (sqliteUnit.ts WalCheckpointer): the pages commits write reach the database file without
// the committing connection copying them, and the main connection checkpoints itself only past a
// far higher threshold. Observed from the outside: the database file grows while the writes go on.
import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db } from '../../src/storage/types.js';

const dirs: string[] = [];
const open: Db[] = [];
afterEach(async () => {
  for (const d of open.splice(0)) await d.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** 300 writes of ~4 KB each (about 1.2 MB of WAL), then the database file's size after `waitMs`. */
async function fileGrowth(deferSyncs: boolean, waitMs: number): Promise<{ before: number; after: number; wal: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-checkpoint-'));
  dirs.push(dir);
  const file = path.join(dir, 'kmas.sqlite');
  const db = openSqliteDb(file, { synchronous: 'FULL', syncOffThread: true, multiProcess: false });
  open.push(db);
  if (deferSyncs) db.deferSyncs?.();
  const org = { id: randomUUID(), name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 };
  await db.write((tx) => tx.organizations.insert(org));
  await new Promise((r) => setTimeout(r, waitMs));
  const before = fs.statSync(file).size;
  for (let i = 0; i < 300; i++) {
    const record = { id: randomUUID(), filler: 'x'.repeat(4000), n: i };
    await db.write((tx) => tx.activities.insert({
      id: record.id, organizationId: org.id, type: 'T', status: 'S', fingerprint: `sha256:${i}`, requestMs: i, createdMs: i, updatedMs: i, record, recordJson: JSON.stringify(record),
    }));
  }
  await db.durable();
  await new Promise((r) => setTimeout(r, waitMs));
  return { before, after: fs.statSync(file).size, wal: fs.statSync(`${file}-wal`).size };
}

describe('SQLite WAL checkpoints', () => {
  it('run on their own thread once syncs are deferred: the database file takes the committed pages', async () => {
    const threaded = await fileGrowth(true, 1000);
    expect(threaded.after - threaded.before).toBeGreaterThan(1_000_000);
  });

  it('without it (and below the main connection\'s own threshold) the pages stay in the WAL', async () => {
    const plain = await fileGrowth(false, 1000);
    // SQLite's default automatic checkpoint (1,000 pages) may run once: far less than all of it
    expect(plain.wal).toBeGreaterThan(1_000_000);
  });
});
