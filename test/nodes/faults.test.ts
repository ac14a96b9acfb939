// Faults under load (issue 15, "Faults"): three `kmas serve` processes on one PostgreSQL and a
// dozen signing clients spread over them, each a client behind a load balancer: a request that
// fails (connection refused or reset, no answer in time, 503) is sent again, with the same bytes,
// to the next node. Then
//   1. one node after another is killed with SIGKILL mid-load and started again on its port, and
//   2. PostgreSQL itself is stopped abruptly (pg_ctl stop -m immediate) and started again.
// Afterwards, read through the API of a live node: every activity a client was told about (a 200
// with status COMPLETED) is stored exactly once with the result the client got; that result is a
// valid signature by the key over the payload (@noble/curves); the same body sent again gives the
// same activity; no request body, answered or not, became two activities. While PostgreSQL is
// down every failure is a 503 UNAVAILABLE (never a 500, never a 200 with a wrong answer) and the
// nodes stay up; once it is back they serve again without a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { controlTestCluster, freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { freshDataDir, rawRequest, sdkClient, sleep, stampFor, submitBody, type ApiKeyPair } from '../server/harness.js';
import { ensureBuilt, spawnServe, type ServeProcess } from '../server/build.js';

const available = postgresAvailable();
if (!available) missingPostgres('the fault tests (test/nodes/faults.test.ts)');

const SIGN = '/public/v1/submit/sign_raw_payload';
const CLIENTS = 12;
/** a client gives a body up (counted as unanswered) after this long without an answer */
const GIVE_UP_MS = 45_000;
/** one request with no reply in this long is treated as failed (and sent again elsewhere) */
const REQUEST_TIMEOUT_MS = 30_000;

interface Node {
  dataDir: string;
  env: Record<string, string>;
  proc?: ServeProcess;
  url: string;
  /** bodies this node acknowledged */
  acked: number;
}

/** One request body a client sent (as many times as it took). */
interface Sent {
  body: string;
  stamp: string;
  payload: string;
  attempts: number;
  /** when the attempt that got the 200 was sent (ms) */
  answeredAttemptAt?: number;
  /** the 200 COMPLETED reply's activity, when there was one */
  ack?: { id: string; fingerprint: string; r: string; s: string; v: string };
  unanswered?: boolean;
}

interface Load {
  sent: Sent[];
  /** 503 UNAVAILABLE replies (code 14) */
  unavailable: number;
  /** requests that got no HTTP reply (refused, reset, timed out) */
  noReply: number;
  /** attempts beyond each body's first */
  retries: number;
  /** anything a correct server never answers: another status, a 503 without code 14, a 200 that is not a valid completed signature */
  violations: string[];
  stop(): Promise<void>;
}

/** Runs `fn` over `items`, `n` at a time. */
async function inParallel<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) { const i = next++; await fn(items[i]!, i); }
  }));
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!await cond()) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

describe.runIf(available)('faults: three kmas processes on one PostgreSQL under signing load', () => {
  const nodes: Node[] = [];
  let notBuilt: string | undefined;
  let orgId = '';
  let root: ApiKeyPair;
  let signWith = '';
  let publicKey: Uint8Array;

  async function start(n: Node): Promise<void> {
    n.proc = await spawnServe(n.dataDir, { env: n.env, timeoutMs: 60_000 });
    n.url = n.proc.url;
    // the next start of this node takes the same port, as a load balancer's backend would
    n.env.PORT = new URL(n.url).port;
  }

  beforeAll(async () => {
    notBuilt = ensureBuilt();
    if (notBuilt) return;
    const databaseUrl = await freshDatabase();
    const masterKey = randomBytes(32).toString('hex');
    for (let i = 0; i < 3; i++) {
      nodes.push({
        dataDir: freshDataDir(), url: '', acked: 0,
        env: { DATABASE_URL: databaseUrl, KMAS_MASTER_KEY: masterKey, RATE_LIMIT_API_KEY: '0', RATE_LIMIT_ORGANIZATION: '0', PORT: '0' },
      });
    }
    // the first creates the root organization, the others find it
    await start(nodes[0]!);
    await Promise.all(nodes.slice(1).map(start));
    root = JSON.parse(readFileSync(join(nodes[0]!.dataDir, 'root-api-key.json'), 'utf8'));
    orgId = JSON.parse(readFileSync(join(nodes[0]!.dataDir, 'bootstrap.json'), 'utf8')).organizationId;
    const sdk = sdkClient(nodes[1]!.url, root, orgId);
    const made: any = await sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'faults', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] } as any);
    signWith = made.privateKeys[0].privateKeyId;
    const got: any = await sdk.getPrivateKey({ privateKeyId: signWith } as any);
    publicKey = hexToBytes(got.privateKey.publicKey);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.proc?.stop('SIGKILL')));
    for (const n of nodes) rmSync(n.dataDir, { recursive: true, force: true });
  });

  /** POSTs exact bytes with a stamp; undefined when no HTTP reply came (refused, reset, timed out). */
  async function post(url: string, body: string, stamp: string): Promise<{ status: number; json: any; text: string } | undefined> {
    try {
      const res = await fetch(url + SIGN, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Stamp': stamp }, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await res.text();
      let json: any;
      try { json = JSON.parse(text); } catch { json = undefined; }
      return { status: res.status, json, text };
    } catch {
      return undefined;
    }
  }

  /** Whether a 200 reply is what a correct server gives: a completed activity, its signature valid for the payload. */
  function wrongAnswer(reply: { json: any; text: string }, payload: string): string | undefined {
    const a = reply.json?.activity;
    if (a?.status !== 'ACTIVITY_STATUS_COMPLETED') return `200 with status ${a?.status}: ${reply.text.slice(0, 300)}`;
    const sig = a.result?.signRawPayloadResult;
    if (typeof sig?.r !== 'string' || typeof sig?.s !== 'string') return `200 without a signature: ${reply.text.slice(0, 300)}`;
    const ok = secp256k1.verify(hexToBytes(sig.r.padStart(64, '0') + sig.s.padStart(64, '0')), hexToBytes(payload), publicKey, { prehash: false, lowS: false });
    return ok ? undefined : `200 whose signature does not verify for payload ${payload}`;
  }

  /**
   * CLIENTS clients, each signing one fresh payload after another; a new body goes to the next
   * node in turn, a failed attempt to the node after (same body, same stamp), until a 200 or
   * GIVE_UP_MS. stop() lets each finish the body in hand.
   */
  function startLoad(): Load {
    let stopping = false;
    const load: Load = { sent: [], unavailable: 0, noReply: 0, retries: 0, violations: [], stop: async () => { stopping = true; await running; } };
    const client = async (c: number) => {
      let turn = c;
      while (!stopping) {
        const payload = randomBytes(32).toString('hex');
        const body = submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', orgId, { signWith, payload, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
        const sent: Sent = { body, stamp: stampFor(body, root), payload, attempts: 0 };
        load.sent.push(sent);
        const t0 = Date.now();
        let at = turn++ % nodes.length;
        for (;;) {
          const node = nodes[at]!;
          sent.attempts++;
          if (sent.attempts > 1) load.retries++;
          const sentAt = Date.now();
          const reply = await post(node.url, body, sent.stamp);
          if (reply?.status === 200) {
            sent.answeredAttemptAt = sentAt;
            const wrong = wrongAnswer(reply, payload);
            if (wrong) { load.violations.push(wrong); break; }
            const a = reply.json.activity;
            const sig = a.result.signRawPayloadResult;
            sent.ack = { id: a.id, fingerprint: a.fingerprint, r: sig.r, s: sig.s, v: sig.v };
            node.acked++;
            break;
          }
          if (reply === undefined) load.noReply++;
          else if (reply.status === 503 && reply.json?.code === 14) load.unavailable++;
          else { load.violations.push(`${reply.status} from node ${at}: ${reply.text.slice(0, 300)}`); break; }
          if (Date.now() - t0 > GIVE_UP_MS) { sent.unanswered = true; break; }
          at = (at + 1) % nodes.length;
          await sleep(30 + Math.random() * 70);
        }
        // a client's own pace between bodies (keeps the number of activities to check moderate)
        await sleep(Math.random() * 30);
      }
    };
    const running = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    return load;
  }

  /** Every activity of the organization through list_activities (newest first, 100 a page). */
  async function listAll(url: string): Promise<any[]> {
    const out: any[] = [];
    let after: string | undefined;
    for (;;) {
      const r = await rawRequest(url, '/public/v1/query/list_activities', JSON.stringify({ organizationId: orgId, paginationOptions: after ? { limit: '100', after } : { limit: '100' } }), { key: root });
      expect(r.status, r.text).toBe(200);
      out.push(...r.json.activities);
      if (r.json.activities.length < 100) return out;
      after = r.json.activities.at(-1).id;
    }
  }

  /**
   * What the clients were told is what is stored, once: checked through a live node's API. Returns
   * how many unanswered bodies became an activity (at most one each).
   */
  async function checkNothingLostOrDoubled(load: Load): Promise<{ acked: number; unansweredStored: number; storedBeforeAnswer: number }> {
    const url = nodes.find((n) => n.proc?.child.exitCode === null && n.proc.child.signalCode === null)!.url;
    const all = await listAll(url);
    const byFingerprint = new Map<string, number>();
    const byPayload = new Map<string, any[]>();
    for (const a of all) {
      byFingerprint.set(a.fingerprint, (byFingerprint.get(a.fingerprint) ?? 0) + 1);
      const payload = a.intent?.signRawPayloadIntentV2?.payload;
      if (typeof payload === 'string') byPayload.set(payload, [...(byPayload.get(payload) ?? []), a]);
    }
    expect([...byFingerprint].filter(([, n]) => n > 1), 'fingerprints stored more than once').toEqual([]);
    const acked = load.sent.filter((s) => s.ack);
    let unansweredStored = 0;
    // acknowledged bodies an earlier, cut-off attempt had stored: the retry found that activity
    let storedBeforeAnswer = 0;
    for (const s of load.sent) {
      const stored = byPayload.get(s.payload) ?? [];
      // the fingerprint is SHA-256 of the exact body bytes: the same body is one activity
      const fingerprint = `sha256:${createHash('sha256').update(s.body).digest('hex')}`;
      expect(byFingerprint.get(fingerprint) ?? 0, 'one body, at most one activity').toBeLessThanOrEqual(1);
      expect(stored.length, `payload ${s.payload}: at most one activity`).toBeLessThanOrEqual(1);
      if (s.ack) {
        expect(stored.map((a) => a.id), 'an acknowledged body is stored once, as the activity its reply named').toEqual([s.ack.id]);
        expect(s.ack.fingerprint).toBe(fingerprint);
        const createdMs = Number(stored[0].createdAt.seconds) * 1000 + Math.floor(Number(stored[0].createdAt.nanos) / 1e6);
        if (createdMs < s.answeredAttemptAt!) storedBeforeAnswer++;
      } else if (stored.length > 0) unansweredStored++;
    }
    // each acknowledged activity by id, with the result its client got
    await inParallel(acked, 8, async (s) => {
      const r = await rawRequest(url, '/public/v1/query/get_activity', JSON.stringify({ organizationId: orgId, activityId: s.ack!.id }), { key: root });
      expect(r.status, r.text).toBe(200);
      expect(r.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      expect(r.json.activity.fingerprint).toBe(s.ack!.fingerprint);
      expect(r.json.activity.result.signRawPayloadResult).toEqual({ r: s.ack!.r, s: s.ack!.s, v: s.ack!.v });
    });
    // the same bytes sent again, to any node, are that activity
    await inParallel(acked, 8, async (s, i) => {
      const r = await rawRequest(nodes[i % nodes.length]!.url, SIGN, s.body, { stamp: s.stamp });
      expect(r.status, r.text).toBe(200);
      expect(r.json.activity.id, 'a resubmitted acknowledged body names the same activity').toBe(s.ack!.id);
    });
    return { acked: acked.length, unansweredStored, storedBeforeAnswer };
  }

  it('kill -9 of one node after another under load: every acknowledged activity is stored once with its result', async (ctx) => {
    if (notBuilt) ctx.skip(notBuilt);
    const t0 = Date.now();
    const load = startLoad();
    const restarts: number[] = [];
    try {
      for (const victim of [1, 2, 0]) {
        const n = nodes[victim]!;
        // the load runs on every node before the kill
        const before = load.sent.filter((s) => s.ack).length;
        await waitFor('acknowledged activities before the kill', () => load.sent.filter((s) => s.ack).length >= before + 40, 30_000);
        await sleep(Math.random() * 200);
        await n.proc!.stop('SIGKILL');
        const down = Date.now();
        await start(n);
        restarts.push(Date.now() - down);
        // back in the rotation: it acknowledges requests again
        const acked = n.acked;
        await waitFor(`node ${victim} to acknowledge requests after its restart`, () => n.acked >= acked + 10, 30_000);
      }
    } finally {
      await load.stop();
    }
    const loadMs = Date.now() - t0;
    expect(load.violations, 'replies no correct server gives').toEqual([]);
    expect(load.noReply, 'requests cut off by the kills (a test that killed nothing proves nothing)').toBeGreaterThan(0);
    const t1 = Date.now();
    const { acked, unansweredStored, storedBeforeAnswer } = await checkNothingLostOrDoubled(load);
    const unanswered = load.sent.filter((s) => s.unanswered).length;
    expect(unanswered, 'every client got its answer in the end (through another node)').toBe(0);
    console.log(`[faults] kill -9 ×3: ${load.sent.length} bodies, ${acked} acknowledged (per node ${nodes.map((n) => n.acked).join('/')}), ` +
      `${load.noReply} cut off, ${load.unavailable} × 503, ${load.retries} retries, ${storedBeforeAnswer} stored by a cut-off attempt and found by the retry, ${unanswered} unanswered (${unansweredStored} of them stored); ` +
      `restarts ${restarts.map((ms) => `${(ms / 1000).toFixed(1)}s`).join(', ')}; load ${(loadMs / 1000).toFixed(1)}s, checks ${((Date.now() - t1) / 1000).toFixed(1)}s`);
  }, 240_000);

  it('PostgreSQL stopped abruptly under load: 503 meanwhile (never 500, never a wrong answer), recovery on its own, nothing acknowledged lost', async (ctx) => {
    if (notBuilt) ctx.skip(notBuilt);
    const t0 = Date.now();
    const logFrom = nodes.map((n) => n.proc!.output().length);
    const load = startLoad();
    let pgDown = false;
    let downMs = 0;
    let recoverMs = 0;
    const readyDuringOutage: number[] = [];
    try {
      await waitFor('acknowledged activities before the stop', () => load.sent.filter((s) => s.ack).length >= 40, 30_000);
      pgDown = await controlTestCluster('stop');
      if (!pgDown) ctx.skip('PostgreSQL is not this test process\'s own cluster (KMAS_TEST_DATABASE_URL): it cannot be stopped here');
      const down = Date.now();
      for (const n of nodes) readyDuringOutage.push((await fetch(`${n.url}/readyz`)).status);
      await sleep(Math.max(0, 2500 - (Date.now() - down)));
      await controlTestCluster('start');
      pgDown = false;
      downMs = Date.now() - down;
      // every node ready again without a restart, and serving the clients
      const up = Date.now();
      for (const n of nodes) await waitFor(`/readyz 200 on ${n.url}`, async () => (await fetch(`${n.url}/readyz`).catch(() => undefined))?.status === 200, 30_000);
      recoverMs = Date.now() - up;
      const acked = nodes.map((n) => n.acked);
      await waitFor('every node to acknowledge requests after the restart of PostgreSQL', () => nodes.every((n, i) => n.acked >= acked[i]! + 10), 30_000);
    } finally {
      if (pgDown) await controlTestCluster('start');
      await load.stop();
    }
    const loadMs = Date.now() - t0;
    expect(readyDuringOutage, '/readyz while PostgreSQL is down').toEqual([503, 503, 503]);
    expect(load.violations, 'replies no correct server gives (a 500, a 503 without code 14, a wrong 200)').toEqual([]);
    expect(load.noReply, 'the nodes stayed up and answered every request').toBe(0);
    expect(nodes.every((n) => n.proc!.child.exitCode === null && n.proc!.child.signalCode === null), 'no node died').toBe(true);
    expect(load.unavailable, 'the outage was seen: requests answered 503 meanwhile').toBeGreaterThan(0);
    const retried = load.sent.filter((s) => s.attempts > 1);
    expect(retried.filter((s) => !s.ack), 'every request that met the outage succeeded on a retry').toEqual([]);
    // the nodes' log lines of those 503s say why: a request cut off mid-way (its connection ended
    // by the shutdown), a connection refused, a server still starting up
    const reasons = nodes.flatMap((n, i) => n.proc!.output().slice(logFrom[i]).split('\n'))
      .filter((l) => l.includes('"status":503') && l.includes('/submit/')).map((l) => String(JSON.parse(l).reason));
    const cutMidway = reasons.filter((r) => /terminat/i.test(r)).length;
    const refused = reasons.filter((r) => /ECONNREFUSED/.test(r)).length;
    const t2 = Date.now();
    const { acked, unansweredStored, storedBeforeAnswer } = await checkNothingLostOrDoubled(load);
    const unanswered = load.sent.filter((s) => s.unanswered).length;
    expect(unanswered).toBe(0);
    console.log(`[faults] PostgreSQL stop -m immediate: ${load.sent.length} bodies, ${acked} acknowledged, ${load.unavailable} × 503 (${cutMidway} cut mid-request, ${refused} refused a connection, ${reasons.length - cutMidway - refused} while it started), ${load.retries} retries ` +
      `(${retried.length} bodies retried, all acknowledged; ${storedBeforeAnswer} stored by an attempt answered 503), ${unanswered} unanswered (${unansweredStored} stored); down ${(downMs / 1000).toFixed(1)}s, ` +
      `all ready ${(recoverMs / 1000).toFixed(1)}s after the start; load ${(loadMs / 1000).toFixed(1)}s, checks ${((Date.now() - t2) / 1000).toFixed(1)}s`);
  }, 240_000);
});
