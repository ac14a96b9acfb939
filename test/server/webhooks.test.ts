// Webhooks (src/webhooks.ts) against a real HTTP receiver on loopback: every activity of an
// organization with FEATURE_NAME_WEBHOOK, and of its sub-organizations, is POSTed there, signed as
// @turnkey/crypto's verifyTurnkeyWebhookSignature checks it with the key the JWKS endpoint publishes;
// 5xx and network failures are retried with the same event id, 3xx/4xx are not; the outbox lives in
// SQLite and survives a restart.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openDb } from '../../src/server.js';
import { loadConfig } from '../../src/config.js';
import { verifyTurnkeyWebhookSignature, type TurnkeyWebhookVerificationKey } from '@turnkey/crypto';
import { freshDataDir, newP256Key, onSqlite, sdkClient, sleep, startTestServer, testStorage, uniqueName, type TestServer } from './harness.js';
import { controlTestCluster } from '../storage/pgcluster.js';
import { checkAwaitsConsensus } from './checks.js';

interface Received { headers: http.IncomingHttpHeaders; body: Buffer; path: string }

/** A webhook receiver: records every request; answers with the next status of `replies` (then `statusOf`'s, or 200). */
class Receiver {
  readonly got: Received[] = [];
  replies: (number | 'hang')[] = [];
  /** The status of a request once `replies` is empty. */
  statusOf: (r: Received) => number = () => 200;
  /** Delay before each reply (ms). */
  delayMs = 0;
  #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got = { headers: req.headers, body: Buffer.concat(chunks), path: req.url ?? '' };
      this.got.push(got);
      const r = this.replies.shift() ?? this.statusOf(got);
      if (r === 'hang') return;
      if (this.delayMs > 0) { setTimeout(() => { res.writeHead(r); res.end('ok'); }, this.delayMs); return; }
      if (r >= 300 && r < 400) res.writeHead(r, { Location: `${this.url}/elsewhere` });
      else res.writeHead(r, { 'Content-Type': 'text/plain' });
      res.end('ok');
    });
  });
  url = '';
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }
  /** Waits until `n` requests arrived (or fails after `ms`). */
  async waitFor(n: number, ms = 10_000): Promise<Received[]> {
    const t0 = Date.now();
    while (this.got.length < n) {
      if (Date.now() - t0 > ms) throw new Error(`receiver got ${this.got.length} of ${n} requests in ${ms} ms`);
      await sleep(10);
    }
    return this.got;
  }
  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

let ts: TestServer;
let rx: Receiver;
let keys: TurnkeyWebhookVerificationKey[];

beforeAll(async () => {
  rx = await new Receiver().start();
  // a generous timeout: on a loaded machine a slow answer must not turn into an (admitted) repeat delivery
  ts = await startTestServer({ webhookRetryMs: 50, webhookTimeoutMs: 10_000 });
  const jwks = await fetch(`${ts.directUrl}/public/v1/discovery/webhooks/jwks`);
  const doc: any = await jwks.json();
  keys = doc.keys.map((k: any) => ({ keyId: k.kid, publicKey: Buffer.from(k.x, 'base64url').toString('hex') }));
});
afterAll(async () => { await ts?.stop(); await rx?.close(); });
afterEach(() => { rx.got.length = 0; rx.replies = []; });

const verify = (r: Received, body: Buffer = r.body) =>
  verifyTurnkeyWebhookSignature({ headers: r.headers as Record<string, string>, body: new Uint8Array(body), verificationKeys: keys, maxTimestampAgeMs: 60_000 });

/** Rows still waiting in the outbox (read through a storage handle of its own, as another process would). */
async function outbox(dataDir: string): Promise<number> {
  const db = await openDb(loadConfig({ overrides: { dataDir, ...await testStorage(dataDir) } }));
  try { return (await db.read((tx) => tx.webhooks.pending())).reduce((n, p) => n + p.count, 0); } finally { await db.close(); }
}

/** Polls `cond` every 25 ms until it holds; fails naming `what` after `ms`. */
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!await cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for: ${what}`);
    await sleep(25);
  }
}

describe('webhooks', () => {
  it('the JWKS endpoint publishes one Ed25519 key, unauthenticated and cacheable', async () => {
    const r = await fetch(`${ts.url}/public/v1/discovery/webhooks/jwks`);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('public, max-age=86400, s-maxage=86400, stale-if-error=604800');
    const doc: any = await r.json();
    expect(doc.keys).toHaveLength(1);
    expect(doc.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', turnkey_signature_algorithm: 'ed25519', turnkey_signature_version: 'v1' });
    expect(Buffer.from(doc.keys[0].x, 'base64url')).toHaveLength(32);
    const post = await fetch(`${ts.url}/public/v1/discovery/webhooks/jwks`, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('once FEATURE_NAME_WEBHOOK is set, each activity arrives as the activity object, signed as @turnkey/crypto verifies', async () => {
    await ts.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `${rx.url}/hook` } as any);
    await rx.waitFor(1);
    rx.got.length = 0;
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('hooked'), accounts: [] } as any);
    const [r] = await rx.waitFor(1);
    expect(r!.path).toBe('/hook');
    expect(r!.headers['content-type']).toBe('application/json');
    expect(r!.headers['x-turnkey-event-type']).toBe('ACTIVITY_UPDATES');
    expect(r!.headers['x-turnkey-organization-id']).toBe(ts.orgId);
    expect(r!.headers['x-turnkey-webhook-version']).toBe('1');
    const activity = JSON.parse(r!.body.toString('utf8'));
    expect(activity.id).toBe(w.activity.id);
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(activity.result.createWalletResult.walletId).toBe(w.walletId);
    const v = verify(r!);
    expect(v).toMatchObject({ ok: true, eventId: r!.headers['x-turnkey-event-id'], keyId: keys[0]!.keyId });
    // The oracle refuses a changed body and an unknown key.
    const changedId = w.walletId.replace(/.$/, (c: string) => (c === '0' ? '1' : '0'));
    const tampered = Buffer.from(r!.body.toString('utf8').replace(w.walletId, changedId));
    expect(verify(r!, tampered).ok).toBe(false);
    expect(verifyTurnkeyWebhookSignature({ headers: r!.headers as any, body: new Uint8Array(r!.body), verificationKeys: [{ keyId: keys[0]!.keyId, publicKey: '11'.repeat(32) }], maxTimestampAgeMs: 60_000 }).ok).toBe(false);
  });

  it('failed activities are announced too, and so are the activities of sub-organizations (to the parent)', async () => {
    const name = uniqueName('dup');
    await ts.sdk.createUserTag({ userTagName: name, userIds: [] });
    await rx.waitFor(1);
    rx.got.length = 0;
    const failed: any = await ts.sdk.createUserTag({ userTagName: name, userIds: [] }).catch((e: unknown) => e);
    const [a] = await rx.waitFor(1);
    expect(JSON.parse(a!.body.toString('utf8')).status).toBe('ACTIVITY_STATUS_FAILED');
    expect(failed).toBeDefined();
    rx.got.length = 0;

    const key = newP256Key();
    const sub: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('hooked-sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'u', apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    } as any);
    await rx.waitFor(1);
    rx.got.length = 0;
    const subClient = sdkClient(ts.url, key, sub.subOrganizationId);
    const w: any = await subClient.createWallet({ walletName: 'in-sub', accounts: [] } as any);
    const [r] = await rx.waitFor(1);
    expect(r!.headers['x-turnkey-organization-id']).toBe(sub.subOrganizationId);
    expect(JSON.parse(r!.body.toString('utf8')).id).toBe(w.activity.id);
    expect(verify(r!).ok).toBe(true);
    // a signature (whose store reads its addresses with the transaction's first statements) reaches the parent too
    rx.got.length = 0;
    const k: any = await subClient.createPrivateKeys({ privateKeys: [{ privateKeyName: 'sub-key', curve: 'CURVE_SECP256K1', addressFormats: [], privateKeyTags: [] }] } as any);
    await rx.waitFor(1);
    rx.got.length = 0;
    const signed: any = await subClient.signRawPayload({ signWith: k.privateKeys[0].privateKeyId, payload: '11'.repeat(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' } as any);
    const [s] = await rx.waitFor(1);
    expect(s!.headers['x-turnkey-organization-id']).toBe(sub.subOrganizationId);
    expect(JSON.parse(s!.body.toString('utf8')).id).toBe(signed.activity.id);
  });

  it('retries 5xx with the same event id and a fresh signature until delivered; gives up at once on 4xx and redirects', async () => {
    rx.replies = [503, 500, 200];
    await ts.sdk.createWallet({ walletName: uniqueName('retry'), accounts: [] } as any);
    const got = await rx.waitFor(3);
    const ids = new Set(got.map((r) => r.headers['x-turnkey-event-id']));
    expect(ids.size).toBe(1);
    expect(new Set(got.map((r) => r.headers['x-turnkey-signature'])).size).toBe(3);
    for (const r of got) expect(verify(r).ok).toBe(true);
    await sleep(300);
    expect(rx.got).toHaveLength(3);
    expect(await outbox(ts.dataDir)).toBe(0);

    // Addresses no request may go to are given up too (credentials in the URL, a port the Fetch standard blocks).
    rx.got.length = 0;
    for (const bad of ['http://user:secret@127.0.0.1:9/x', 'http://127.0.0.1:9/x']) {
      const e: any = await ts.sdk.createWebhookEndpoint({ url: bad, name: 'unusable', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
      await sleep(300);
      expect(await outbox(ts.dataDir)).toBe(0);
      await ts.sdk.deleteWebhookEndpoint({ endpointId: e.endpointId } as any);
    }
    // The feature's address got both activities of both rounds.
    await rx.waitFor(4);
    await sleep(100);
    expect(rx.got).toHaveLength(4);
    rx.got.length = 0;

    for (const status of [404, 429, 302]) {
      rx.got.length = 0;
      rx.replies = [status];
      await ts.sdk.createWallet({ walletName: uniqueName(`gone-${status}`), accounts: [] } as any);
      await rx.waitFor(1);
      await sleep(300);
      expect(rx.got.map((r) => r.path), String(status)).toEqual(['/hook']);
      expect(await outbox(ts.dataDir)).toBe(0);
    }
  });

  it('once the feature is removed nothing is queued (the removal itself included)', async () => {
    await ts.sdk.removeOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK' } as any);
    await ts.sdk.createWallet({ walletName: uniqueName('quiet'), accounts: [] } as any);
    await sleep(300);
    expect(rx.got).toHaveLength(0);
    expect(await outbox(ts.dataDir)).toBe(0);
  });
});

describe('webhook outbox across a restart', () => {
  it('an event whose delivery was cut off by the shutdown is delivered by the next start, with the same event id', async () => {
    const dataDir = freshDataDir();
    const rx2 = await new Receiver().start();
    let first: TestServer | undefined = await startTestServer({ dataDir, webhookRetryMs: 50, webhookTimeoutMs: 5000 });
    let second: TestServer | undefined;
    try {
      await first.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: rx2.url } as any);
      await rx2.waitFor(1);
      rx2.replies = ['hang'];
      const w: any = await first.sdk.createWallet({ walletName: 'before-restart', accounts: [] } as any);
      const [, hung] = await rx2.waitFor(2);
      await first.stop(true);
      first = undefined;
      expect(await outbox(dataDir)).toBe(1);

      second = await startTestServer({ dataDir, webhookRetryMs: 50, webhookTimeoutMs: 300 });
      const got = await rx2.waitFor(3, 15_000);
      const again = got[2]!;
      expect(again.headers['x-turnkey-event-id']).toBe(hung!.headers['x-turnkey-event-id']);
      expect(JSON.parse(again.body.toString('utf8')).id).toBe(w.activity.id);
      expect(verifyTurnkeyWebhookSignature({ headers: again.headers as any, body: new Uint8Array(again.body), verificationKeys: await jwksOf(second), maxTimestampAgeMs: 60_000 }).ok).toBe(true);
      await sleep(200);
      expect(await outbox(dataDir)).toBe(0);
    } finally {
      await first?.stop();
      await second?.stop();
      await rx2.close();
    }
  }, 30_000);
});

async function jwksOf(t: TestServer): Promise<TurnkeyWebhookVerificationKey[]> {
  const doc: any = await (await fetch(`${t.directUrl}/public/v1/discovery/webhooks/jwks`)).json();
  return doc.keys.map((k: any) => ({ keyId: k.kid, publicKey: Buffer.from(k.x, 'base64url').toString('hex') }));
}

describe('webhook endpoints (create_webhook_endpoint & co.)', () => {
  let ep: TestServer;
  let rxA: Receiver;
  let rxB: Receiver;
  beforeAll(async () => {
    rxA = await new Receiver().start();
    rxB = await new Receiver().start();
    ep = await startTestServer({ webhookRetryMs: 50 });
  });
  afterAll(async () => { await ep?.stop(); await rxA?.close(); await rxB?.close(); });

  it('an endpoint subscribed to ACTIVITY_UPDATES receives signed activities; list, update and delete manage it', async () => {
    const made: any = await ep.sdk.createWebhookEndpoint({ url: `${rxA.url}/a`, name: 'A', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
    expect(made.webhookEndpoint).toEqual({
      endpointId: made.endpointId, organizationId: ep.orgId, url: `${rxA.url}/a`, name: 'A', isActive: true,
      subscriptions: [{ eventType: 'ACTIVITY_UPDATES', isActive: true }],
    });
    const listed: any = await ep.sdk.listWebhookEndpoints({} as any);
    expect(listed.webhookEndpoints).toEqual([made.webhookEndpoint]);

    await rxA.waitFor(1); // the create_webhook_endpoint activity itself
    rxA.got.length = 0;
    const w: any = await ep.sdk.createWallet({ walletName: uniqueName('ep'), accounts: [] } as any);
    const [r] = await rxA.waitFor(1);
    expect(r!.path).toBe('/a');
    expect(JSON.parse(r!.body.toString('utf8')).id).toBe(w.activity.id);
    expect(verifyTurnkeyWebhookSignature({ headers: r!.headers as any, body: new Uint8Array(r!.body), verificationKeys: await jwksOf(ep), maxTimestampAgeMs: 60_000 }).ok).toBe(true);

    const off: any = await ep.sdk.updateWebhookEndpoint({ endpointId: made.endpointId, isActive: false, name: 'A (paused)' } as any);
    expect(off.webhookEndpoint).toMatchObject({ isActive: false, name: 'A (paused)', url: `${rxA.url}/a` });
    await sleep(200);
    rxA.got.length = 0;
    await ep.sdk.createWallet({ walletName: uniqueName('paused'), accounts: [] } as any);
    await sleep(300);
    expect(rxA.got).toHaveLength(0);

    const del: any = await ep.sdk.deleteWebhookEndpoint({ endpointId: made.endpointId } as any);
    expect(del.endpointId).toBe(made.endpointId);
    expect((await ep.sdk.listWebhookEndpoints({} as any) as any).webhookEndpoints).toEqual([]);
    const again = await ep.raw('/public/v1/submit/delete_webhook_endpoint', JSON.stringify({ parameters: { endpointId: made.endpointId }, organizationId: ep.orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_DELETE_WEBHOOK_ENDPOINT' }));
    expect(again.status, again.text).toBe(404);
  });

  it('sends each address once per activity; inactive or non-activity subscriptions receive nothing; sub-organization activities reach the parent', async () => {
    await ep.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `${rxA.url}/same` } as any);
    await ep.sdk.createWebhookEndpoint({ url: `${rxA.url}/same`, name: 'dup', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
    await ep.sdk.createWebhookEndpoint({ url: `${rxB.url}/balances`, name: 'balances', subscriptions: [{ eventType: 'BALANCE_CONFIRMED_UPDATES' }, { eventType: 'ACTIVITY_UPDATES', isActive: false }] } as any);
    // One delivery to /same for each of these three activities (the feature and the endpoint share it).
    await rxA.waitFor(3);
    await sleep(300);
    expect(rxA.got).toHaveLength(3);
    rxA.got.length = 0;
    rxB.got.length = 0;
    const key = newP256Key();
    const sub: any = await ep.sdk.createSubOrganization({
      subOrganizationName: uniqueName('ep-sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'u', apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    } as any);
    await rxA.waitFor(1);
    await sdkClient(ep.url, key, sub.subOrganizationId).createWallet({ walletName: 'w', accounts: [] } as any);
    const got = await rxA.waitFor(2);
    await sleep(300);
    expect(rxA.got).toHaveLength(2);
    expect(got.map((r) => r.headers['x-turnkey-organization-id'])).toEqual([ep.orgId, sub.subOrganizationId]);
    expect(rxB.got).toHaveLength(0);
  });

  it('refuses bad endpoints field by field, and non-root users, storing nothing', async () => {
    const before = (await ep.sdk.listWebhookEndpoints({} as any) as any).webhookEndpoints.length;
    const body = (parameters: object, type = 'ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT') =>
      JSON.stringify({ parameters, organizationId: ep.orgId, timestampMs: String(Date.now()), type });
    const cases: [object, string][] = [
      [{ url: 'ftp://example.com/x', name: 'n' }, 'url'],
      [{ url: 'http://example.com/x', name: '' }, 'name'],
      [{ url: 'http://example.com/x', name: 'n', subscriptions: [{ eventType: 'SHOE_SIZE' }] }, 'subscriptions[0].eventType'],
      [{ url: 'http://example.com/x', name: 'n', subscriptions: [{ eventType: 'ACTIVITY_UPDATES', filtersJson: '{"type":"x"}' }] }, 'subscriptions[0].filtersJson'],
      [{ url: 'http://example.com/x', name: 'n', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }, { eventType: 'ACTIVITY_UPDATES' }] }, 'subscriptions[1].eventType'],
    ];
    for (const [params, field] of cases) {
      const r = await ep.raw('/public/v1/submit/create_webhook_endpoint', body(params));
      expect(r.status, r.text).toBe(400);
      expect(r.json.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field))).toContain(field);
    }
    const upd = await ep.raw('/public/v1/submit/update_webhook_endpoint', body({ endpointId: 'nope', url: 'http://example.com' }, 'ACTIVITY_TYPE_UPDATE_WEBHOOK_ENDPOINT'));
    expect(upd.status, upd.text).toBe(404);

    const plain = newP256Key();
    await ep.sdk.createUsers({ users: [{ userName: uniqueName('plain'), apiKeys: [{ apiKeyName: 'k', publicKey: plain.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const waits = await ep.raw('/public/v1/submit/create_webhook_endpoint', body({ url: 'http://example.com/x', name: 'n' }), { key: plain });
    checkAwaitsConsensus(waits, 'non-root create_webhook_endpoint');
    expect((await ep.sdk.listWebhookEndpoints({} as any) as any).webhookEndpoints).toHaveLength(before);
  });
});

describe('retries of an endpoint that changed', () => {
  // guards: the retries queued for an endpoint go nowhere once it is deleted or paused, and to its new address once it moved
  it('an event waiting for a retry is not sent to an endpoint deleted or paused since, and goes to the new address of one that moved, or of FEATURE_NAME_WEBHOOK (same event id)', async () => {
    const rx4 = await new Receiver().start();
    // a retry 2.5 s after a 503: the addresses change well before it
    const t = await startTestServer({ webhookRetryMs: 2500 });
    try {
      const create = async (path: string) => ((await t.sdk.createWebhookEndpoint({ url: `${rx4.url}${path}`, name: path, subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any)) as any).endpointId as string;
      const deleted = await create('/deleted');
      const moved = await create('/moved');
      const paused = await create('/paused');
      await t.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `${rx4.url}/feature` } as any);
      // the three creations' own events (1 + 2 + 3) and the feature's (4), delivered
      await rx4.waitFor(10);
      await until('the outbox empty', async () => await outbox(t.dataDir) === 0);
      // create_wallet events fail at the four addresses (a retry waits); everything else is taken
      const isWallet = (r: Received) => JSON.parse(r.body.toString('utf8')).type === 'ACTIVITY_TYPE_CREATE_WALLET';
      rx4.statusOf = (r) => (isWallet(r) && !['/new', '/feature-new'].includes(r.path) ? 503 : 200);
      rx4.got.length = 0;
      const w: any = await t.sdk.createWallet({ walletName: uniqueName('changed'), accounts: [] } as any);
      const wallets = () => rx4.got.filter(isWallet);
      await until('the first attempt at each address', () => wallets().length >= 4);
      await t.sdk.deleteWebhookEndpoint({ endpointId: deleted } as any);
      await t.sdk.updateWebhookEndpoint({ endpointId: moved, url: `${rx4.url}/new` } as any);
      await t.sdk.updateWebhookEndpoint({ endpointId: paused, isActive: false } as any);
      await t.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `${rx4.url}/feature-new` } as any);
      // past the first retry (2.5 s after the first attempts; before the change, every one went to the old address)
      await until('the retries at the new addresses', () => wallets().filter((r) => r.path.endsWith('new')).length >= 2, 8_000).catch(() => undefined);
      await sleep(1_500);
      const got = wallets();
      expect(got.map((r) => r.path).sort()).toEqual(['/deleted', '/feature', '/feature-new', '/moved', '/new', '/paused']);
      expect(got.every((r) => JSON.parse(r.body.toString('utf8')).id === w.activity.id)).toBe(true);
      const eventId = (path: string) => got.find((r) => r.path === path)!.headers['x-turnkey-event-id'];
      expect(eventId('/new')).toBe(eventId('/moved'));
      expect(eventId('/feature-new')).toBe(eventId('/feature'));
      expect(await outbox(t.dataDir)).toBe(0);
    } finally {
      await t.stop();
      await rx4.close();
    }
  }, 30_000);

  // guards: an event queued by a transaction that read the addresses before they changed (another node's) is not sent to an address its event no longer goes to
  it('an event left waiting for an address its organization no longer sends to is dropped when it comes due, not sent', async () => {
    const rx5 = await new Receiver().start();
    const t = await startTestServer({ webhookRetryMs: 50, outboxPollMs: 100 });
    try {
      await t.sdk.createWebhookEndpoint({ url: `${rx5.url}/live`, name: 'live', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
      await rx5.waitFor(1);
      rx5.got.length = 0;
      // two rows as a node that read the addresses before /gone was removed leaves them: one for
      // the address still in use, one for the one gone
      const db = await openDb(loadConfig({ overrides: { dataDir: t.dataDir, ...await testStorage(t.dataDir) } }));
      try {
        const now = Date.now();
        await db.write(async (tx) => {
          for (const path of ['/gone', '/live']) {
            await tx.webhooks.enqueue({ id: crypto.randomUUID(), organizationId: t.orgId, activityId: 'late', eventType: 'ACTIVITY_UPDATES', url: `${rx5.url}${path}`, body: '{"id":"late"}', attempts: 0, nextAttemptMs: now, createdMs: now });
          }
        });
      } finally { await db.close(); }
      await rx5.waitFor(1);
      await sleep(300);
      expect(rx5.got.map((r) => r.path)).toEqual(['/live']);
      expect(await outbox(t.dataDir)).toBe(0);
    } finally {
      await t.stop();
      await rx5.close();
    }
  }, 30_000);
});

describe('webhook backlog', () => {
  it('more events than delivery slots (8) at once, against a slow receiver: every one arrives once', async () => {
    const slow = await new Receiver().start();
    slow.delayMs = 100;
    const t = await startTestServer();
    try {
      await t.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: slow.url } as any);
      await slow.waitFor(1);
      const made = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        t.sdk.createWallet({ walletName: `backlog-${i}`, accounts: [] } as any) as Promise<any>));
      const got = await slow.waitFor(31, 20_000);
      await sleep(300);
      expect(slow.got).toHaveLength(31);
      const ids = got.slice(1).map((r) => JSON.parse(r.body.toString('utf8')).id).sort();
      expect(ids).toEqual(made.map((m) => m.activity.id).sort());
      expect(await outbox(t.dataDir)).toBe(0);
    } finally {
      await t.stop();
      await slow.close();
    }
  }, 30_000);
});

// Last in this file: it stops the test process's PostgreSQL for a moment.
describe.skipIf(onSqlite)('webhook outbox while PostgreSQL is briefly down', () => {
  it('a retry that comes due while the database does not answer is made once it is back, with no request to kick it (OUTBOX_POLL_MS)', async (ctx) => {
    const rx3 = await new Receiver().start();
    const t = await startTestServer({ webhookRetryMs: 1500, outboxPollMs: 200 });
    let down = false;
    try {
      rx3.replies = [503];
      await t.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: rx3.url } as any);
      const [first] = await rx3.waitFor(1);
      // the 503 is recorded (a retry in 1.5 s); then the database goes away past that time
      await sleep(300);
      down = await controlTestCluster('stop');
      if (!down) ctx.skip('PostgreSQL is not this test process\'s own cluster (KMAS_TEST_DATABASE_URL): it cannot be stopped here');
      await sleep(2500);
      await controlTestCluster('start');
      down = false;
      // nothing is submitted: only the outbox's own look every OUTBOX_POLL_MS can find the due retry
      const got = await rx3.waitFor(2, 10_000);
      expect(got[1]!.headers['x-turnkey-event-id']).toBe(first!.headers['x-turnkey-event-id']);
      expect(verifyTurnkeyWebhookSignature({ headers: got[1]!.headers as any, body: new Uint8Array(got[1]!.body), verificationKeys: await jwksOf(t), maxTimestampAgeMs: 60_000 }).ok).toBe(true);
    } finally {
      if (down) await controlTestCluster('start');
      await t.stop();
      await rx3.close();
    }
  }, 60_000);
});
