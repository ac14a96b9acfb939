// The server's log at 10,000 entries, through the real store (SQLite): appendActivity's O(log n)
// frontier appends, and inclusion / consistency proofs read from the stored subtree hashes
// (withNodes), against RFC 6962's recursive tree head written out plainly here over the entries'
// own bytes (not the stored nodes). No npm implementation of RFC 6962 is installed to serve as a
// second oracle (see the report of issue 16); the definition is the oracle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db } from '../../src/storage/types.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { appendActivity, CHECKPOINT_INTERVAL_MS, consistencyProofOf, inclusionProofOf, latestCheckpoint, LogSigner } from '../../src/domain/activityLog.js';
import { openCheckpoint, parseVerifierKey } from '../../src/tlog/note.js';
import { leafHash, nodeHash, verifyConsistency, verifyInclusion } from '../../src/tlog/merkle.js';
import { mth } from './reference.js';

const N = 10_000;
const ORG = 'org-stored';
let dir: string;
let db: Db;
let leaves: Uint8Array[];


beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-storedlog-'));
  db = openSqliteDb(path.join(dir, 'kmas.sqlite'), { synchronous: 'OFF', multiProcess: false });
  for (let start = 0; start < N; start += 1000) {
    await db.write(async (tx) => {
      for (let i = start; i < start + 1000; i++) {
        await appendActivity(tx, { id: `act-${i}`, organizationId: ORG, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `sha256:${i}`, timestampMs: String(i), intent: { i }, result: {}, votes: [] }, i, i);
      }
    });
  }
  leaves = (await db.read((tx) => tx.log.entries(ORG, 0, N))).map((e) => leafHash(e.entry));
}, 120_000);
afterAll(async () => { await db?.close(); fs.rmSync(dir, { recursive: true, force: true }); });

describe('the stored log at 10,000 entries', () => {
  it('its head is the RFC tree head of its entries, and every prefix\'s proofs verify against the definition\'s roots', async () => {
    expect(leaves).toHaveLength(N);
    const head = (await db.read((tx) => tx.log.head(ORG)))!;
    expect(head.size).toBe(N);
    expect(bytesToHex(head.root)).toBe(bytesToHex(mth(leaves)));
    let seed = 11;
    const rnd = (k: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % k; };
    const sizes = [1, 2, 3, 1023, 1024, 1025, 4096, 8191, N, ...Array.from({ length: 12 }, () => 1 + rnd(N))];
    for (const n of sizes) {
      const root = mth(leaves.slice(0, n));
      for (const m of [0, n - 1, rnd(n)]) {
        const path = await db.read((tx) => inclusionProofOf(tx, ORG, m, n));
        expect(path.length).toBeLessThanOrEqual(Math.ceil(Math.log2(n)));
        expect(verifyInclusion(leaves[m]!, m, n, path, root), `inclusion ${m} of ${n}`).toBe(true);
        if (n > 1) expect(verifyInclusion(leaves[(m + 1) % n]!, m, n, path, root), `another leaf at ${m} of ${n}`).toBe(false);
      }
      const m = 1 + rnd(n);
      const proof = await db.read((tx) => consistencyProofOf(tx, ORG, m, n));
      expect(verifyConsistency(m, n, mth(leaves.slice(0, m)), root, proof), `consistency ${m} → ${n}`).toBe(true);
      if (m < n) expect(verifyConsistency(m, n, mth([...leaves.slice(0, m - 1), leaves[n - 1]!]), root, proof), `a rewritten prefix ${m} → ${n}`).toBe(false);
    }
  });

  it('checkpoints: signed when asked and the tree has grown, at most once per interval, never again for the same size; old ones kept', async () => {
    const sk = ed25519.utils.randomSecretKey();
    const signer = new LogSigner('root-1', bytesToHex(ed25519.getPublicKey(sk)), (m) => ed25519.sign(m, sk));
    const v = parseVerifierKey(signer.verifierKey);
    const t0 = 1_000_000;
    const first = await latestCheckpoint(db, signer, ORG, t0);
    const cp = openCheckpoint(first.note, v);
    expect([cp.origin, cp.size, bytesToHex(cp.root)]).toEqual([`kmas/root-1/${ORG}`, N, bytesToHex(mth(leaves))]);
    await db.write((tx) => appendActivity(tx, { id: 'act-extra', organizationId: ORG, type: 'T', status: 'S', fingerprint: 'f', timestampMs: '1', intent: {}, result: {}, votes: [] }, 1, 1));
    // grown, but the latest is younger than the interval: it stands
    expect((await latestCheckpoint(db, signer, ORG, t0 + CHECKPOINT_INTERVAL_MS - 1)).note).toBe(first.note);
    const second = await latestCheckpoint(db, signer, ORG, t0 + CHECKPOINT_INTERVAL_MS);
    expect(openCheckpoint(second.note, v).size).toBe(N + 1);
    // not grown: no new signature however late
    expect((await latestCheckpoint(db, signer, ORG, t0 + 100 * CHECKPOINT_INTERVAL_MS)).note).toBe(second.note);
    expect((await db.read((tx) => tx.log.checkpoint(ORG, N)))!.note).toBe(first.note);
  });
});
