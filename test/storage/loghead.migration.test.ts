// SQLite migration 29 drops log_heads: an organization's head is derived from its entries' rows
// (the last index, the frontier nodes in their nodes columns: storage/logNodes.ts headFromNodes).
// A store of the previous layout, with its head rows, upgrades to the same heads — size, frontier,
// root and time — for logs of every shape of frontier, and appends continue the same trees. The
// truth is RFC 6962's tree head written out from its definition over the entries' own bytes.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bytesToHex } from '@noble/hashes/utils.js';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import { foldNodes } from '../../src/storage/logNodes.js';
import { appendActivity, inclusionProofOf } from '../../src/domain/activityLog.js';
import { activityEntryBytes } from '../../src/tlog/entry.js';
import { Frontier, leafHash, verifyInclusion } from '../../src/tlog/merkle.js';
import { mth } from '../tlog/reference.js';
import { afterSqliteUpgrade, sqliteAtVersion } from './oldschema.js';

const record = (org: string, i: number) => ({ id: `act-${i}`, organizationId: org, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `sha256:${i}`, timestampMs: String(i), intent: { i }, result: {}, votes: [] });
/** logs of these sizes: one subtree, every bit set, a lone leaf after a large subtree, … */
const SIZES = [1, 2, 3, 7, 8, 13, 64, 129];
const hex = (b: Uint8Array) => bytesToHex(b);

describe('SQLite migration 29 (the log head derived from the entries)', () => {
  const dirs: string[] = [];
  afterAll(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

  it('logs with head rows upgrade to the same heads without them, and appends continue their trees', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-loghead-'));
    dirs.push(dir);
    const file = path.join(dir, 'kmas.sqlite');
    const old = sqliteAtVersion(file, 28);
    const heads = new Map<string, { size: number; frontier: string; root: string; updatedMs: number; leaves: Uint8Array[] }>();
    old.transaction(() => {
      for (const size of SIZES) {
        const org = `org-${size}`;
        const f = new Frontier();
        const leaves: Uint8Array[] = [];
        for (let i = 0; i < size; i++) {
          const entry = activityEntryBytes(i, record(org, i), 1000 + i, 1000 + i);
          leaves.push(leafHash(entry));
          const made = f.append(leafHash(entry));
          old.prepare('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms, nodes) VALUES (?, ?, ?, ?, ?, ?)').run(org, i, `act-${i}`, entry, 1000 + i, foldNodes(i, made));
        }
        const frontier = Buffer.concat(f.nodes.map((n) => n.hash));
        old.prepare('INSERT INTO log_heads (organization_id, size, frontier, root, updated_ms) VALUES (?, ?, ?, ?, ?)').run(org, size, frontier, f.root(), 1000 + size - 1);
        heads.set(org, { size, frontier: hex(frontier), root: hex(f.root()), updatedMs: 1000 + size - 1, leaves });
      }
    })();
    old.close();

    await afterSqliteUpgrade(file, (raw) => {
      expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'log_heads'").all()).toEqual([]);
    }, async (db) => {
      for (const [org, want] of heads) {
        const got = (await db.read((tx) => tx.log.head(org)))!;
        expect({ size: got.size, frontier: hex(got.frontier), root: hex(got.root), updatedMs: got.updatedMs }, org)
          .toEqual({ size: want.size, frontier: want.frontier, root: want.root, updatedMs: want.updatedMs });
        expect(want.root).toBe(hex(mth(want.leaves)));
      }
      expect(await db.read((tx) => tx.log.head('org-none'))).toBeUndefined();
      // appends continue each tree; the derived head, proofs and the definition agree
      for (const [org, want] of heads) {
        const more = 5;
        await db.write(async (tx) => { for (let i = want.size; i < want.size + more; i++) expect(await appendActivity(tx, record(org, i), 2000 + i, 2000 + i)).toBe(i); });
        const all = (await db.read((tx) => tx.log.entries(org, 0, want.size + more))).map((e) => leafHash(e.entry));
        expect(all.slice(0, want.size).map(hex)).toEqual(want.leaves.map(hex));
        const n = want.size + more;
        const head = (await db.read((tx) => tx.log.head(org)))!;
        expect([head.size, hex(head.root), head.updatedMs]).toEqual([n, hex(mth(all)), 2000 + n - 1]);
        for (const m of [0, want.size - 1, n - 1]) expect(verifyInclusion(all[m]!, m, n, await db.read((tx) => inclusionProofOf(tx, org, m, n)), head.root)).toBe(true);
      }
    });
    // a fresh process (no head in memory) derives the same heads
    const again = openSqliteDb(file, { multiProcess: false });
    try {
      for (const [org, want] of heads) expect((await again.read((tx) => tx.log.head(org)))!.size).toBe(want.size + 5);
    } finally {
      await again.close();
    }
  });
});
