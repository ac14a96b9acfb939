// The verifiable activity log through real stamped requests (runs on SQLite, and on PostgreSQL in
// the `postgres` project): every activity — FAILED and CONSENSUS_NEEDED ones, and each later vote
// and status change — is an entry; the entries recompute to the root of a checkpoint whose
// signature verifies with @noble/curves against the key the unauthenticated discovery endpoint
// serves (and bootstrap.json records); inclusion and consistency proofs verify with merkle.ts;
// bad input is a {code, message, details} 400; webhook deliveries carry the entry's index and a
// checkpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { base64 } from '@scure/base';
import { ed25519 } from '@noble/curves/ed25519.js';
import { leafHash, rootOf, verifyConsistency, verifyInclusion } from '../../src/tlog/merkle.js';
import { openCheckpoint, parseVerifierKey, type Verifier } from '../../src/tlog/note.js';
import { digestOf, parseEntry } from '../../src/tlog/entry.js';
import { newP256Key, sdkClient, startTestServer, submitBody, uniqueName, type TestServer } from '../server/harness.js';

let ts: TestServer;
let verifier: Verifier;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const query = (path: string, body: Record<string, unknown>) => ts.raw(`/public/v1/query/${path}`, JSON.stringify({ organizationId: ts.orgId, ...body }));
async function ok(path: string, body: Record<string, unknown> = {}): Promise<any> {
  const r = await query(path, body);
  expect(r.status, r.text).toBe(200);
  return r.json;
}
const bytes = (b64: string) => base64.decode(b64);
async function allEntries(): Promise<{ treeSize: number; entries: { index: string; activityId: string; entry: string }[] }> {
  const out: { index: string; activityId: string; entry: string }[] = [];
  let treeSize = 0;
  for (let start = 0; ; start += 1000) {
    const page = await ok('kmas_list_log_entries', { start: String(start), limit: '1000' });
    treeSize = Number(page.treeSize);
    out.push(...page.entries);
    if (page.entries.length < 1000) break;
  }
  return { treeSize, entries: out };
}
/** a checkpoint of the whole log as it is now (signed at that size on request) */
async function checkpointNow() {
  const { treeSize } = await allEntries();
  const c = await ok('kmas_get_log_checkpoint', { treeSize: String(treeSize) });
  return openCheckpoint(c.checkpoint, verifier);
}

describe('the log key', () => {
  it('is served without authentication at /.well-known/kmas-log-key, and bootstrap.json records it', async () => {
    const res = await fetch(`${ts.url}/.well-known/kmas-log-key`);
    expect(res.status).toBe(200);
    const k = await res.json() as { keyName: string; publicKey: string; verifierKey: string };
    verifier = parseVerifierKey(k.verifierKey);
    expect(Buffer.from(verifier.publicKey).toString('hex')).toBe(k.publicKey);
    expect(k.keyName).toBe(`kmas/${ts.orgId}`);
    const boot = JSON.parse(readFileSync(join(ts.dataDir, 'bootstrap.json'), 'utf8')) as { logPublicKey?: string };
    expect(boot.logPublicKey).toBe(k.publicKey);
    expect((await fetch(`${ts.url}/.well-known/kmas-log-key`, { method: 'POST' })).status).toBe(405);
  });
});

describe('entries, checkpoints and proofs', () => {
  let failedId: string;
  let pendingId: string;

  it('every activity is in the log: COMPLETED, FAILED, and each step of one that waited for an approval', async () => {
    const name = uniqueName('tag');
    await ts.sdk.createUserTag({ userTagName: name, userIds: [] });
    // a name taken: the activity is stored FAILED, and logged
    const dup = await ts.raw('/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: name, userIds: [] }));
    expect(dup.status, dup.text).toBe(200);
    expect(dup.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    failedId = dup.json.activity.id;
    // a non-root user's create_wallet waits for the root user's approval
    const key = newP256Key();
    await ts.sdk.createUsers({ users: [{ userName: uniqueName('member'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const waits = await ts.raw('/public/v1/submit/create_wallet', submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: uniqueName('w'), accounts: [] }), { key });
    expect(waits.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    pendingId = waits.json.activity.id;
    const approved: any = await ts.sdk.approveActivity({ fingerprint: waits.json.activity.fingerprint });
    expect(approved.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');

    const { treeSize, entries } = await allEntries();
    expect(entries.map((e) => Number(e.index))).toEqual(Array.from({ length: treeSize }, (_, i) => i));
    const parsed = entries.map((e) => parseEntry(bytes(e.entry)));
    parsed.forEach((p, i) => { expect(p.index).toBe(i); expect(p.organizationId).toBe(ts.orgId); expect(p.activityId).toBe(entries[i]!.activityId); });
    // every activity of the organization has entries; its latest entry matches the activity as served
    const acts: any[] = (await ts.sdk.getActivities({ paginationOptions: { limit: '100' } } as any)).activities;
    expect(acts.length).toBeGreaterThan(3);
    for (const a of acts) {
      const mine = parsed.filter((p) => p.activityId === a.id);
      expect(mine.length, a.type).toBeGreaterThan(0);
      const last = mine[mine.length - 1]!;
      expect(last.status).toBe(a.status);
      expect(last.fingerprint).toBe(a.fingerprint);
      expect(last.intent).toEqual(a.intent);
      const full = (await ts.sdk.getActivity({ activityId: a.id })).activity;
      expect(last.recordDigest).toBe(digestOf(full));
    }
    expect(parsed.filter((p) => p.activityId === failedId).map((p) => p.status)).toEqual(['ACTIVITY_STATUS_FAILED']);
    const steps = parsed.filter((p) => p.activityId === pendingId);
    expect(steps.map((p) => [p.status, p.votes.length])).toEqual([['ACTIVITY_STATUS_CONSENSUS_NEEDED', 1], ['ACTIVITY_STATUS_COMPLETED', 2]]);
    // queries are not activities: asking added nothing
    expect((await allEntries()).treeSize).toBe(treeSize);
  });

  it('a checkpoint verifies with the discovery key (C2SP note, noble Ed25519) and its root is the tree of the entries', async () => {
    const { treeSize, entries } = await allEntries();
    const c = await ok('kmas_get_log_checkpoint', { treeSize: String(treeSize) });
    const cp = openCheckpoint(c.checkpoint, verifier);
    expect(cp.origin).toBe(`kmas/${ts.orgId}/${ts.orgId}`);
    expect(c.origin).toBe(cp.origin);
    expect(cp.size).toBe(treeSize);
    expect(base64.encode(cp.root)).toBe(c.rootHash);
    expect(cp.root).toEqual(rootOf(entries.map((e) => leafHash(bytes(e.entry)))));
    // the note's signature, checked directly with noble: Ed25519 over the text, after the 4-byte key hash
    const [text, sigLine] = c.checkpoint.split('\n\n') as [string, string];
    const raw = base64.decode(sigLine.trim().split(' ')[2]!);
    expect(ed25519.verify(raw.subarray(4), new TextEncoder().encode(`${text}\n`), verifier.publicKey)).toBe(true);
    // the latest checkpoint (no size asked) is a verified one, never beyond the log
    const latest = await ok('kmas_get_log_checkpoint');
    expect(openCheckpoint(latest.checkpoint, verifier).size).toBeLessThanOrEqual(treeSize);
    // asked again at one size: the checkpoint kept then
    expect((await ok('kmas_get_log_checkpoint', { treeSize: String(treeSize) })).checkpoint).toBe(c.checkpoint);
  });

  it('inclusion proofs (by activity id, by index) and consistency proofs verify against signed roots', async () => {
    const old = await checkpointNow();
    for (let i = 0; i < 3; i++) await ts.sdk.createUserTag({ userTagName: uniqueName('more'), userIds: [] });
    const cp = await checkpointNow();
    expect(cp.size).toBe(old.size + 3);

    const byId = await ok('kmas_get_log_inclusion_proof', { activityId: failedId, treeSize: String(cp.size) });
    expect(parseEntry(bytes(byId.entry)).activityId).toBe(failedId);
    expect(verifyInclusion(leafHash(bytes(byId.entry)), Number(byId.index), cp.size, byId.proof.map(bytes), cp.root)).toBe(true);
    expect(verifyInclusion(leafHash(bytes(byId.entry)), Number(byId.index) + 1, cp.size, byId.proof.map(bytes), cp.root)).toBe(false);
    for (const index of [0, old.size - 1, cp.size - 1]) {
      const p = await ok('kmas_get_log_inclusion_proof', { index: String(index), treeSize: String(cp.size) });
      expect(verifyInclusion(bytes(p.leafHash), index, cp.size, p.proof.map(bytes), cp.root)).toBe(true);
      expect(bytes(p.leafHash)).toEqual(leafHash(bytes(p.entry)));
    }
    // the latest entry of the activity that waited: its COMPLETED step
    const pend = await ok('kmas_get_log_inclusion_proof', { activityId: pendingId, treeSize: String(cp.size) });
    expect(parseEntry(bytes(pend.entry)).status).toBe('ACTIVITY_STATUS_COMPLETED');

    const cons = await ok('kmas_get_log_consistency_proof', { fromSize: String(old.size), toSize: String(cp.size) });
    expect(verifyConsistency(old.size, cp.size, old.root, cp.root, cons.proof.map(bytes))).toBe(true);
    expect(verifyConsistency(old.size, cp.size, cp.root, old.root, cons.proof.map(bytes))).toBe(false);
    // without toSize: against the latest checkpoint, which the reply carries
    const toLatest = await ok('kmas_get_log_consistency_proof', { fromSize: 1 });
    const latest = openCheckpoint(toLatest.checkpoint, verifier);
    expect(Number(toLatest.toSize)).toBe(latest.size);
    const first = await ok('kmas_get_log_checkpoint', { treeSize: '1' });
    expect(verifyConsistency(1, latest.size, openCheckpoint(first.checkpoint, verifier).root, latest.root, toLatest.proof.map(bytes))).toBe(true);
  });

  it('bad input is a {code, message, details} 400 that names the field; an unknown activity is a 404', async () => {
    const { treeSize } = await allEntries();
    const cases: [string, Record<string, unknown>, string][] = [
      ['kmas_get_log_checkpoint', { treeSize: String(treeSize + 5) }, 'treeSize'],
      ['kmas_get_log_checkpoint', { treeSize: '-1' }, 'treeSize'],
      ['kmas_get_log_checkpoint', { treeSize: 'ten' }, 'treeSize'],
      ['kmas_get_log_inclusion_proof', {}, 'activityId'],
      ['kmas_get_log_inclusion_proof', { activityId: failedId, index: '0' }, 'activityId'],
      ['kmas_get_log_inclusion_proof', { index: String(treeSize), treeSize: String(treeSize) }, 'index'],
      ['kmas_get_log_inclusion_proof', { index: '0', treeSize: String(treeSize + 1) }, 'treeSize'],
      ['kmas_get_log_consistency_proof', {}, 'fromSize'],
      ['kmas_get_log_consistency_proof', { fromSize: '5', toSize: '4' }, 'fromSize'],
      ['kmas_get_log_consistency_proof', { fromSize: '1', toSize: String(treeSize + 1) }, 'toSize'],
      ['kmas_list_log_entries', { limit: '0' }, 'limit'],
      ['kmas_list_log_entries', { limit: '1001' }, 'limit'],
      ['kmas_list_log_entries', { start: String(treeSize + 1) }, 'start'],
    ];
    for (const [path, body, field] of cases) {
      const r = await query(path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}: ${r.text}`).toBe(400);
      expect(r.json.code).toBe(3);
      expect(typeof r.json.message).toBe('string');
      expect(JSON.stringify(r.json.details), `${path} ${JSON.stringify(body)}`).toContain(field);
    }
    const unknown = await query('kmas_get_log_inclusion_proof', { activityId: '00000000-0000-7000-8000-000000000000' });
    expect(unknown.status).toBe(404);
    // unstamped: refused like every query
    const anon = await ts.raw('/public/v1/query/kmas_get_log_checkpoint', JSON.stringify({ organizationId: ts.orgId }), { key: undefined });
    expect(anon.status).toBe(401);
  });

  it('any user of the organization may ask (not only root users)', async () => {
    const key = newP256Key();
    await ts.sdk.createUsers({ users: [{ userName: uniqueName('reader'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const r = await ts.raw('/public/v1/query/kmas_get_log_checkpoint', JSON.stringify({ organizationId: ts.orgId }), { key });
    expect(r.status, r.text).toBe(200);
    expect(openCheckpoint(r.json.checkpoint, verifier).origin).toBe(`kmas/${ts.orgId}/${ts.orgId}`);
    const asMember = sdkClient(ts.url, key, ts.orgId);
    expect((await asMember.getActivities({} as any)).activities.length).toBeGreaterThan(0);
  });
});

describe('webhook deliveries', () => {
  it('carry the entry\'s index and a signed checkpoint in `kmasLog`, besides the activity object', async () => {
    const got: string[] = [];
    const rx = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => { got.push(Buffer.concat(chunks).toString('utf8')); res.writeHead(200).end(); });
    });
    await new Promise<void>((resolve) => rx.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(rx.address() as { port: number }).port}/hook`;
      await ts.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: url } as any);
      const t: any = await ts.sdk.createUserTag({ userTagName: uniqueName('hooked'), userIds: [] });
      const id = t.activity.id;
      let body: any;
      for (let i = 0; i < 300 && !body; i++) {
        body = got.map((g) => JSON.parse(g)).find((b) => b.id === id);
        if (!body) await new Promise((r) => setTimeout(r, 50));
      }
      expect(body, 'the webhook for the activity arrived').toBeDefined();
      expect(body.status).toBe('ACTIVITY_STATUS_COMPLETED');
      expect(body.type).toBe('ACTIVITY_TYPE_CREATE_USER_TAG');
      const proof = await ok('kmas_get_log_inclusion_proof', { activityId: id, treeSize: String((await allEntries()).treeSize) });
      expect(body.kmasLog.index).toBe(Number(proof.index));
      const cp = openCheckpoint(body.kmasLog.checkpoint, verifier);
      expect(cp.origin).toBe(`kmas/${ts.orgId}/${ts.orgId}`);
      // the checkpoint is one the log really had: consistent with the log now
      const now = await checkpointNow();
      const cons = await ok('kmas_get_log_consistency_proof', { fromSize: String(cp.size), toSize: String(now.size) });
      expect(verifyConsistency(cp.size, now.size, cp.root, now.root, cons.proof.map(bytes))).toBe(true);
    } finally {
      await ts.sdk.removeOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK' } as any);
      rx.close();
    }
  });
});
