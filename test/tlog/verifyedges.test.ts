// Edges of the log's verifier (src/tlog/verify.ts, merkle.ts, note.ts, entry.ts, src/logverify.ts)
// where it must refuse, or must not blame more than it can show: an export giving an index twice;
// a tamperer who also rewrote the server's stored tree (its proofs then match the altered entries,
// and a failing proof proves nothing); tree sizes past 2^32 (an honest proof must verify there as
// below); an entry's bytes behind a byte order mark; an empty checkpoint extension line (C2SP:
// extension lines are non-empty); a checkpoint of another organization than the one asked for.
// Independent truth: RFC 9162's proof definitions built here from the tree's definition (reference
// construction below), C2SP's note format signed with @noble/curves directly.
import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base64 } from '@scure/base';
import { entryBytes, entryOf, parseEntry } from '../../src/tlog/entry.js';
import { consistencyProof, leafHash, nodeHash, rootOf, verifyConsistency } from '../../src/tlog/merkle.js';
import { openCheckpoint, parseVerifierKey, signCheckpoint, verifierKey } from '../../src/tlog/note.js';
import { checkHistory, verifyEntries, type ExportedEntry } from '../../src/tlog/verify.js';
import { entriesFromJson, logVerify } from '../../src/logverify.js';

const sk = ed25519.utils.randomSecretKey();
const KEY = 'kmas/root';
const v = parseVerifierKey(verifierKey(KEY, ed25519.getPublicKey(sk)));
const ORG = 'org-a';
const record = (i: number, status = 'ACTIVITY_STATUS_COMPLETED') => ({ id: `act-${i}`, organizationId: ORG, type: 'T', status, fingerprint: 'f', timestampMs: '1', intent: {}, votes: [] });
const bytesOf = (i: number, status?: string) => entryBytes(entryOf(i, record(i, status), 1, 2));
const exp = (i: number, b: Uint8Array): ExportedEntry => ({ index: String(i), activityId: `act-${i}`, entry: base64.encode(b) });
const sign = (leaves: Uint8Array[]) => signCheckpoint({ origin: `${KEY}/${ORG}`, size: leaves.length, root: rootOf(leaves), extensions: [] }, KEY, sk);
const reader = (leaves: Uint8Array[]) => (level: number, index: number) => rootOf(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level));

describe('the log verifier at its edges', () => {
  it('when the server\'s stored tree was rewritten with an altered entry, it names the prefix proven genuine and does not blame entry 0 as the first altered', async () => {
    const genuine = Array.from({ length: 8 }, (_, i) => bytesOf(i));
    const note = sign(genuine.map(leafHash));
    const altered = genuine.slice(); altered[5] = bytesOf(5, 'ACTIVITY_STATUS_FAILED');
    const alteredLeaves = altered.map(leafHash);
    // the server's proofs come from its stored nodes, rewritten to match the altered entry
    const source = { consistency: async (m: number, n: number) => consistencyProof(m, n, reader(alteredLeaves)) };
    const r = await verifyEntries(altered.map((b, i) => exp(i, b)), note, v, source);
    expect(r.ok).toBe(false);
    // no proof verifies, so no prefix beyond the empty one is proven: the message says "or one after it"
    expect(r.problem!.index).toBe(0);
    expect(r.problem!.message).toMatch(/entry 0 \(activity act-0\) or one after it; the server's own tree agrees with the altered entries/);
    expect(r.problem!.message).not.toMatch(/is the first that differs/);
    // the server's proofs from the genuine tree still locate it exactly
    const honest = { consistency: async (m: number, n: number) => consistencyProof(m, n, reader(genuine.map(leafHash))) };
    const exact = await verifyEntries(altered.map((b, i) => exp(i, b)), note, v, honest);
    expect(exact.problem!.index).toBe(5);
    expect(exact.problem!.message).toMatch(/entry 5 \(activity act-5\) is the first that differs from what was signed/);
  });

  it('an index given twice at the end of the export (two different entry 2s) is refused', async () => {
    const g = [0, 1, 2].map((i) => bytesOf(i));
    const note = sign(g.map(leafHash));
    const file = [exp(0, g[0]!), exp(1, g[1]!), exp(2, g[2]!), exp(2, bytesOf(2, 'ACTIVITY_STATUS_FAILED'))];
    const r = await verifyEntries(entriesFromJson(file), note, v);
    expect(r.ok).toBe(false);
    expect(r.problem).toMatchObject({ index: 2, message: 'entry 2 is given twice: the export was altered' });
  });

  it('an entry 1 given twice in the middle is named as such, not as a deleted entry 2', async () => {
    const g = [0, 1, 2].map((i) => bytesOf(i));
    const note = sign(g.map(leafHash));
    const file = [exp(0, g[0]!), exp(1, g[1]!), exp(1, bytesOf(1, 'ACTIVITY_STATUS_FAILED')), exp(2, g[2]!)];
    const r = await verifyEntries(entriesFromJson(file), note, v);
    expect(r.problem).toMatchObject({ index: 1, message: 'entry 1 is given twice: the export was altered' });
  });

  it('an honest consistency proof verifies for sizes past 2^32 as below (and a wrong one does not)', () => {
    // a virtual tree whose leaves are all the same hash: MTH depends on the size only
    const L = leafHash(new Uint8Array([7]));
    const memo = new Map<number, Uint8Array>();
    const split = (n: number) => { let k = 1; while (k * 2 < n) k *= 2; return k; };
    const mth = (n: number): Uint8Array => {
      if (n === 1) return L;
      let h = memo.get(n);
      if (!h) { const k = split(n); h = nodeHash(mth(k), mth(n - k)); memo.set(n, h); }
      return h;
    };
    const sub = (m: number, n: number, b: boolean): Uint8Array[] => {
      if (m === n) return b ? [] : [mth(n)];
      const k = split(n);
      return m <= k ? [...sub(m, k, b), mth(n - k)] : [...sub(m - k, n - k, false), mth(k)];
    };
    // control: the same construction verifies below 2^32
    expect(verifyConsistency(4 + 2 ** 20, 8 + 2 ** 20, mth(4 + 2 ** 20), mth(8 + 2 ** 20), sub(4 + 2 ** 20, 8 + 2 ** 20, true))).toBe(true);
    for (const [old, nu] of [[2 ** 32 + 4, 2 ** 32 + 8], [2 ** 33, 2 ** 33 + 3], [2 ** 40 + 2 ** 32, 2 ** 41]]) {
      expect(verifyConsistency(old!, nu!, mth(old!), mth(nu!), sub(old!, nu!, true))).toBe(true);
      expect(verifyConsistency(old!, nu!, mth(old! - 1), mth(nu!), sub(old!, nu!, true))).toBe(false);
    }
  });

  it('an entry\'s bytes behind a byte order mark are not its canonical form', () => {
    const b = bytesOf(0);
    expect(parseEntry(b).index).toBe(0);
    expect(() => parseEntry(new Uint8Array([0xef, 0xbb, 0xbf, ...b]))).toThrow('the entry is not UTF-8 JSON');
  });

  it('a checkpoint with an empty extension line is refused, one with a non-empty extension is read', () => {
    const noteOf = (text: string) => {
      const sig = ed25519.sign(new TextEncoder().encode(text), sk);
      return `${text}\n\u2014 ${KEY} ${base64.encode(new Uint8Array([...v.hash, ...sig]))}\n`;
    };
    const root = base64.encode(new Uint8Array(32));
    expect(() => openCheckpoint(noteOf(`${KEY}/${ORG}\n0\n${root}\n\n`), v)).toThrow('the checkpoint has an empty extension line');
    expect(openCheckpoint(noteOf(`${KEY}/${ORG}\n0\n${root}\nextra\n`), v).extensions).toEqual(['extra']);
  });

  it('kmas log verify --organization refuses a genuine checkpoint and entries of another organization', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-verify-'));
    try {
      const g = [0, 1, 2].map((i) => bytesOf(i));
      fs.writeFileSync(path.join(dir, 'cp.txt'), sign(g.map(leafHash)));
      fs.writeFileSync(path.join(dir, 'entries.json'), JSON.stringify({ entries: g.map((b, i) => exp(i, b)) }));
      fs.writeFileSync(path.join(dir, 'key.txt'), verifierKey(KEY, ed25519.getPublicKey(sk)));
      const run = async (...more: string[]) => {
        const lines: string[] = [];
        const code = await logVerify(['--checkpoint', path.join(dir, 'cp.txt'), '--key', path.join(dir, 'key.txt'), '--entries', path.join(dir, 'entries.json'), ...more], (l) => lines.push(l));
        return { code, lines };
      };
      expect(await run()).toEqual({ code: 0, lines: [`verified: 3 entries make the signed root of ${KEY}/${ORG}`] });
      expect(await run('--organization', ORG)).toEqual({ code: 0, lines: [`verified: 3 entries make the signed root of ${KEY}/${ORG}`] });
      expect(await run('--organization', 'org-b')).toEqual({ code: 1, lines: [`FAILED: the checkpoint is the log of ${KEY}/${ORG}, not of organization org-b`] });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('control: rollback / same-size rewrite are reported', async () => {
    const g = Array.from({ length: 6 }, (_, i) => bytesOf(i)).map(leafHash);
    const saved = sign(g);
    const rb = await checkHistory(saved, v, { checkpoint: async () => sign(g.slice(0, 4)), consistency: async () => [] });
    expect(rb.history).toBe('rolled-back');
    const g2 = g.slice(); g2[2] = leafHash(new Uint8Array([1]));
    const rw = await checkHistory(saved, v, { checkpoint: async () => sign(g2), consistency: async () => [] });
    expect(rw.history).toBe('rewritten');
  });
});
