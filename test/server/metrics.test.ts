// GET /metrics (issue 17 "Metrics"): the Prometheus exposition of the real server moves as the
// real clients drive the API, passes `promtool check metrics` (Debian's prometheus package; the
// check is skipped with a warning when promtool is missing), and can be moved to a port of its own
// behind a bearer token.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { startTestServer, newP256Key, submitBody, stampFor, uniqueName, sleep, type TestServer } from './harness.js';
import { QUERY, SUBMIT } from './checks.js';
import { sample } from './promtext.js';

async function scrape(url: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await fetch(url, { headers });
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
}

function promtool(): string | undefined {
  const r = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? 'promtool' : undefined;
}

let ts: TestServer;
let receiver: http.Server;
let received = 0;
beforeAll(async () => {
  ts = await startTestServer();
  receiver = http.createServer((req, res) => { req.resume(); req.on('end', () => { received++; res.writeHead(200); res.end(); }); });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
});
afterAll(async () => {
  await ts?.stop();
  await new Promise<void>((r) => { receiver?.close(() => r()); receiver?.closeAllConnections(); });
});

describe('GET /metrics', () => {
  it('counters and histograms move as the clients drive the API', async () => {
    const url = `${ts.directUrl}/metrics`;
    const before = await scrape(url);
    const op = ts.orgId;

    // queries and submits through the real clients
    await ts.sdk.getWhoami({ organizationId: op });
    await ts.sdk.getWhoami({ organizationId: op });
    const tag: any = await ts.sdk.createUserTag({ userTagName: uniqueName('m'), userIds: [] });
    expect(tag.userTagId).toBeTruthy();
    // a webhook endpoint, then an activity it hears of
    await ts.sdk.createWebhookEndpoint({ url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, name: 'metrics', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
    // signing, single and batch
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('w'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] } as any);
    const address = w.addresses[0];
    const digest = bytesToHex(sha256(new TextEncoder().encode('metrics')));
    await ts.sdk.signRawPayload({ signWith: address, payload: digest, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    await ts.sdk.signRawPayloads({ signWith: address, payloads: [digest, digest, digest], encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' } as any);

    // refusals at the stamp check, one per reason
    const q = JSON.stringify({ organizationId: op });
    expect((await ts.raw(QUERY('whoami'), q, { key: newP256Key() })).status).toBe(401); // unknown key
    expect((await ts.raw(QUERY('whoami'), q, { stamp: stampFor('other bytes', ts.rootKey) })).status).toBe(401); // bad signature
    expect((await ts.raw(QUERY('whoami'), q, { key: undefined })).status).toBe(401); // missing
    const stale = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', op, { userTagName: uniqueName('old'), userIds: [] }, String(Date.now() - 3_600_000));
    expect((await ts.raw(SUBMIT('create_user_tag'), stale)).status).toBe(400);

    // the webhook delivery is made after the reply: wait (bounded) for the receiver
    for (let i = 0; i < 100 && received === 0; i++) await sleep(50);
    expect(received, 'the receiver got a delivery').toBeGreaterThan(0);

    const after = await scrape(url);
    const moved = (name: string, labels: Record<string, string> = {}) => (sample(after, name, labels) || 0) - (sample(before, name, labels) || 0);
    expect(moved('kmas_http_requests_total', { operation: 'query/whoami', status: '200' })).toBe(2);
    expect(moved('kmas_http_requests_total', { operation: 'query/whoami', status: '401' })).toBe(3);
    expect(moved('kmas_http_requests_total', { operation: 'submit/create_user_tag', status: '400' })).toBe(1);
    expect(moved('kmas_http_request_duration_seconds_count', { operation: 'submit/create_user_tag' })).toBe(2);
    expect(moved('kmas_activities_total', { type: 'ACTIVITY_TYPE_CREATE_USER_TAG', status: 'ACTIVITY_STATUS_COMPLETED' })).toBe(1);
    expect(moved('kmas_activities_total', { status: 'ACTIVITY_STATUS_COMPLETED' })).toBe(5);
    expect(moved('kmas_stamp_verification_failures_total', { reason: 'unknown_key' })).toBe(1);
    expect(moved('kmas_stamp_verification_failures_total', { reason: 'bad_signature' })).toBe(1);
    expect(moved('kmas_stamp_verification_failures_total', { reason: 'missing_stamp' })).toBe(1);
    expect(moved('kmas_stamp_verification_failures_total', { reason: 'stale_timestamp' })).toBe(1);
    expect(moved('kmas_signatures_total', { curve: 'secp256k1' })).toBe(4);
    expect(moved('kmas_sign_duration_seconds_count', { curve: 'secp256k1', mode: 'single' })).toBe(1);
    expect(moved('kmas_sign_duration_seconds_count', { curve: 'secp256k1', mode: 'batch' })).toBe(1);
    expect(moved('kmas_db_commit_duration_seconds_count')).toBeGreaterThanOrEqual(5);
    expect(moved('kmas_webhook_deliveries_total', { kind: 'webhook', outcome: 'delivered' })).toBeGreaterThan(0);
    for (const kind of ['webhook', 'email', 'broadcast']) {
      expect(sample(after, 'kmas_outbox_depth', { kind }), `outbox depth of ${kind}`).toBeGreaterThanOrEqual(0);
      expect(sample(after, 'kmas_outbox_oldest_age_seconds', { kind }), `outbox age of ${kind}`).toBeGreaterThanOrEqual(0);
    }
    expect(sample(after, 'kmas_process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(after).toMatch(/^# TYPE kmas_http_request_duration_seconds histogram$/m);
    expect(after).not.toMatch(/^# TYPE \S+ summary$/m);
  });

  it('counts refusals of expired keys and of the IP allowlist by their reason', async () => {
    const s = await startTestServer({ trustProxy: ['loopback'] });
    try {
      const before = await scrape(`${s.directUrl}/metrics`);
      const key = newP256Key();
      await s.sdk.createApiKeys({ userId: s.rootUserId, apiKeys: [{ apiKeyName: uniqueName('short'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '1' }] } as any);
      await s.sdk.setIpAllowlist({ rules: [{ cidr: '127.0.0.0/8' }] } as any);
      const q = JSON.stringify({ organizationId: s.orgId });
      expect((await s.raw(QUERY('whoami'), q, { headers: { 'X-Forwarded-For': '192.0.2.1' } })).status).toBe(403);
      await sleep(2100);
      expect((await s.raw(QUERY('whoami'), q, { key })).status).toBe(401);
      const after = await scrape(`${s.directUrl}/metrics`);
      const moved = (reason: string) => (sample(after, 'kmas_stamp_verification_failures_total', { reason }) || 0) - (sample(before, 'kmas_stamp_verification_failures_total', { reason }) || 0);
      expect(moved('ip_allowlist')).toBe(1);
      expect(moved('expired_key')).toBe(1);
    } finally {
      await s.stop();
    }
  });

  it('passes promtool check metrics', async () => {
    const text = await scrape(`${ts.directUrl}/metrics`);
    const tool = promtool();
    if (!tool) {
      console.warn('WARNING: promtool is not installed (Debian package prometheus): the exposition was NOT checked with promtool check metrics');
      return;
    }
    const r = spawnSync(tool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    // promtool reports lint problems (e.g. a counter without _total) on stdout/stderr and exits non-zero
    expect(`${r.stdout}${r.stderr}`.trim(), 'promtool check metrics findings').toBe('');
    expect(r.status).toBe(0);
  });

  it('METRICS_PORT and METRICS_TOKEN: served on a port of its own, to the bearer of the token only', async () => {
    const token = 'metrics-token-' + uniqueName('t');
    const own = await startTestServer({ metricsPort: 0, metricsToken: token });
    try {
      expect(own.server.metricsUrl).not.toContain(`:${own.server.port}/`);
      const none = await fetch(own.server.metricsUrl);
      expect(none.status).toBe(401);
      expect(await none.json()).toMatchObject({ code: 16, message: expect.stringContaining('METRICS_TOKEN'), details: expect.any(Array) });
      expect((await fetch(own.server.metricsUrl, { headers: { Authorization: 'Bearer wrong-token-0000000' } })).status).toBe(401);
      const text = await scrape(own.server.metricsUrl, { Authorization: `Bearer ${token}` });
      expect(text).toContain('kmas_http_requests_total');
      // not on the API port
      const api = await fetch(`${own.directUrl}/metrics`);
      expect(api.status).toBe(404);
      expect(await api.json()).toMatchObject({ code: 5 });
    } finally {
      await own.stop();
    }
  });
});
