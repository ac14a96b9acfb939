// Storage details that users meet only on upgrade or power loss: the v11 migration keeps every
// activity (and its idempotency) from a v10 database, and with syncOffThread a commit is
// reported durable only after the WAL has been fsynced (src/storage/sqlite.ts WalSync).
import { describe, it, expect, afterEach } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../src/storage/migrations.js';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db } from '../../src/storage/types.js';
import { uuidV7 } from '../../src/activities/engine.js';
import { sqliteAtVersion } from '../storage/oldschema.js';

const dirs: string[] = [];
const stores: Db[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmpFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-storage-'));
  dirs.push(dir);
  return path.join(dir, 'kmas.sqlite');
}

describe('migration 11 (idempotency by request time and fingerprint)', () => {
  it('moves every activity of a v10 database, keeps its seq order and finds it by (timestampMs, fingerprint)', async () => {
    const file = tmpFile();
    // A database as the previous release left it: migrations 1…10 and a few activities.
    const old = sqliteAtVersion(file, 10);
    const ins = old.prepare('INSERT INTO activities (id, organization_id, type, status, fingerprint, created_ms, updated_ms, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    const rows = [0, 1, 2].map((i) => {
      const ts = String(1_790_000_000_000 + i);
      const record = { id: `a${i}`, organizationId: 'o', status: 'ACTIVITY_STATUS_COMPLETED', type: 'ACTIVITY_TYPE_X', timestampMs: ts };
      ins.run(`a${i}`, 'o', 'ACTIVITY_TYPE_X', 'ACTIVITY_STATUS_COMPLETED', `sha256:${i}`, 10 + i, 10 + i, JSON.stringify(record));
      return { id: `a${i}`, ts: Number(ts), fp: `sha256:${i}` };
    });
    old.close();

    const db = openSqliteDb(file);
    stores.push(db);
    await db.read(async (store) => {
      for (const r of rows) {
        const got = await store.activities.byFingerprint(r.fp, r.ts);
        expect(got?.id).toBe(r.id);
        expect(got?.requestMs).toBe(r.ts);
        expect(await store.activities.byFingerprint(r.fp, r.ts + 1)).toBeUndefined();
      }
      expect((await store.activities.list({ organizationId: 'o', limit: 10 }))!.map((a) => a.id)).toEqual(['a2', 'a1', 'a0']);
    });
    // The same (timestampMs, fingerprint) cannot be stored twice.
    await expect(db.write((store) => store.activities.insert({
      id: 'dup', organizationId: 'o', type: 'T', status: 'S', fingerprint: rows[0]!.fp, requestMs: rows[0]!.ts, createdMs: 1, updatedMs: 1, record: {},
    }))).rejects.toThrow(/UNIQUE/);
  });
});

describe('activity ids', () => {
  it('are RFC 9562 version 7 UUIDs that sort by their time', () => {
    const a = uuidV7(1_790_000_000_000);
    const b = uuidV7(1_790_000_000_001);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(a.replace(/-/g, '').slice(0, 12), 16)).toBe(1_790_000_000_000);
    expect(a < b).toBe(true);
    expect(uuidV7(5)).not.toBe(uuidV7(5));
  });
});

describe('durability off the event loop (syncOffThread)', () => {
  const org = (id: string) => ({ id, name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1 });

  it('settles a write only after an fsync of the WAL that started after its commit', async () => {
    const file = tmpFile();
    const store = openSqliteDb(file, { synchronous: 'FULL', syncOffThread: true });
    stores.push(store);
    // Until deferSyncs() (start-up), SQLite syncs every COMMIT itself: nothing to wait for.
    await store.write((tx) => tx.organizations.insert(org('o0')));
    store.deferSyncs!();
    const db = new Database(file, { readonly: true });
    try {
      // From now on SQLite runs at NORMAL: the store does the syncing.
      const synced: number[] = [];
      const realFdatasync = fs.fdatasync;
      let started = 0;
      (fs as { fdatasync: typeof fs.fdatasync }).fdatasync = ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
        const n = ++started; // this sync's number
        realFdatasync(fd, (e) => { synced.push(n); cb(e); });
      }) as typeof fs.fdatasync;
      try {
        const first = store.write((tx) => tx.organizations.insert(org('o1')));
        await first;
        expect(synced.length, 'first settled only after a sync had finished').toBeGreaterThanOrEqual(1);
        const syncsBefore = started;
        // a later write waits for a sync that started after its own commit
        await store.write((tx) => tx.organizations.insert(org('o2')));
        expect(started).toBeGreaterThan(syncsBefore);
        expect(synced.some((n) => n > syncsBefore), 'second settled only after a sync started after its commit had finished').toBe(true);
        while (synced.length < started) await new Promise((r) => setTimeout(r, 5)); // let the other syncs end
        expect((db.prepare('SELECT COUNT(*) AS n FROM organizations').get() as { n: number }).n).toBe(3);
      } finally {
        (fs as { fdatasync: typeof fs.fdatasync }).fdatasync = realFdatasync;
      }
    } finally {
      db.close();
    }
  });

  it('a failed fsync stops the store: later writes reject and it is no longer ready', async () => {
    const file = tmpFile();
    const store = openSqliteDb(file, { synchronous: 'FULL', syncOffThread: true });
    stores.push(store);
    store.deferSyncs!();
    await store.write((tx) => tx.organizations.insert(org('o1'))); // opens the WAL's descriptor
    const realFdatasync = fs.fdatasync;
    (fs as { fdatasync: typeof fs.fdatasync }).fdatasync = ((_fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
      const e = new Error('EIO: i/o error') as NodeJS.ErrnoException;
      e.code = 'EIO';
      setImmediate(() => cb(e));
    }) as typeof fs.fdatasync;
    try {
      await expect(store.write((tx) => tx.organizations.insert(org('o2')))).rejects.toThrow(/fsync of the SQLite WAL failed \(EIO\)/);
      expect(await store.isReady()).toBe(false);
      await expect(store.write((tx) => tx.organizations.insert(org('o3')))).rejects.toThrow(/EIO/);
    } finally {
      (fs as { fdatasync: typeof fs.fdatasync }).fdatasync = realFdatasync;
    }
  });
});
