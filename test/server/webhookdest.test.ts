// Where webhooks may be sent (WEBHOOK_DESTINATIONS, src/domain/destinations.ts). The addresses are
// users' (with sub-organizations, an application's end users), and the server POSTs to them from
// inside its operator's network: under `public` no delivery reaches a loopback, private,
// link-local or reserved address, whether the URL gives it as an IP (refused when the endpoint is
// made) or as a name that resolves to one (refused at the delivery, which connects to the address
// it checked). The address classes are those of the IANA special-purpose registries (RFC 6890 and
// its updates); `auto` is `any` only on a loopback HOST.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { destinationsFor, isPublicAddress, refusedDestination } from '../../src/domain/destinations.js';
import { openDb } from '../../src/server.js';
import { loadConfig } from '../../src/config.js';
import { freshDataDir, sleep, startTestServer, submitBody, testStorage, uniqueName, allActivities, type TestServer } from './harness.js';
import { checkError, expectFieldViolation, SUBMIT } from './checks.js';

describe('address classes', () => {
  it('public addresses pass; loopback, private, link-local, CGNAT, multicast, reserved and IPv4-mapped forms of them do not', () => {
    const notPublic = [
      '127.0.0.1', '127.255.0.9', '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.254', '192.168.1.1', '169.254.169.254',
      '100.64.0.1', '100.127.255.254', '0.0.0.0', '0.1.2.3', '192.0.0.8', '192.0.2.1', '198.18.0.1', '198.51.100.7', '203.0.113.9',
      '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255',
      '::', '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'fec0::1', 'ff02::1', '2001:db8::1', '64:ff9b::7f00:1', '2002:7f00:1::1',
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254',
    ];
    const publicOnes = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '172.15.255.255', '100.128.0.1', '192.169.0.1', '2606:4700:4700::1111', '2a00:1450:4001::1', '::ffff:8.8.8.8'];
    expect(notPublic.filter(isPublicAddress)).toEqual([]);
    expect(publicOnes.filter((a) => !isPublicAddress(a))).toEqual([]);
    expect(isPublicAddress('example.com')).toBe(false); // not an address at all
  });

  it('auto is any on a loopback HOST only', () => {
    expect(['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost'].map((h) => destinationsFor('auto', h))).toEqual(Array(5).fill('any'));
    expect(['0.0.0.0', '::', '10.0.0.5', '203.0.113.1', 'kmas.internal'].map((h) => destinationsFor('auto', h))).toEqual(Array(5).fill('public'));
    expect([destinationsFor('public', '127.0.0.1'), destinationsFor('any', '0.0.0.0')]).toEqual(['public', 'any']);
  });

  it('URLs: IPs in any of their written forms, and localhost, are told apart before any delivery', () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://[::ffff:a9fe:a9fe]/latest', 'https://LOCALHOST/', 'http://api.localhost/', 'http://169.254.169.254/latest/meta-data/']) {
      expect(refusedDestination(url, 'public'), url).toBeTypeOf('string');
      expect(refusedDestination(url, 'any'), url).toBeUndefined();
    }
    for (const url of ['https://hooks.example.com/kmas', 'http://8.8.8.8/', 'https://[2606:4700::1111]/']) expect(refusedDestination(url, 'public'), url).toBeUndefined();
  });
});

/** A receiver on loopback that records what reaches it. */
async function receiver(): Promise<{ url: string; port: number; got: string[]; close(): Promise<void> }> {
  const got: string[] = [];
  const server = http.createServer((req, res) => { req.resume(); req.on('end', () => { got.push(req.url ?? ''); res.writeHead(200).end('ok'); }); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, port, got, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

async function outboxRows(dataDir: string): Promise<number> {
  const db = await openDb(loadConfig({ overrides: { dataDir, ...await testStorage(dataDir) } }));
  try { return (await db.read((tx) => tx.webhooks.pending())).length; } finally { await db.close(); }
}

describe('WEBHOOK_DESTINATIONS=public', () => {
  let ts: TestServer;
  beforeAll(async () => { ts = await startTestServer({ webhookDestinations: 'public' }); });
  afterAll(async () => { await ts?.stop(); });

  it('an endpoint or FEATURE_NAME_WEBHOOK at a non-public address is a 400 naming the field, and nothing is stored', async () => {
    const count = (await allActivities(ts)).length;
    for (const url of ['http://127.0.0.1:8080/hook', 'http://[::1]/hook', 'http://localhost:3000/', 'http://169.254.169.254/latest/meta-data/', 'http://10.1.2.3/']) {
      const r = await ts.raw(SUBMIT('create_webhook_endpoint'), submitBody('ACTIVITY_TYPE_CREATE_WEBHOOK_ENDPOINT', ts.orgId, { url, name: uniqueName('hook'), subscriptions: [] }));
      checkError(r, 400, url);
      expectFieldViolation(r, 'url');
      expect(r.json.message).toMatch(/WEBHOOK_DESTINATIONS=public/);
      const f = await ts.raw(SUBMIT('set_organization_feature'), submitBody('ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE', ts.orgId, { name: 'FEATURE_NAME_WEBHOOK', value: url }));
      checkError(f, 400, url);
      expectFieldViolation(f, 'value');
    }
    // a public address is taken; moving it to a private one is refused
    const made: any = await ts.sdk.createWebhookEndpoint({ url: 'https://hooks.example.com/kmas', name: uniqueName('public hook'), subscriptions: [] } as any);
    const moved = await ts.raw(SUBMIT('update_webhook_endpoint'), submitBody('ACTIVITY_TYPE_UPDATE_WEBHOOK_ENDPOINT', ts.orgId, { endpointId: made.endpointId, url: 'http://192.168.0.10/' }));
    checkError(moved, 400);
    expectFieldViolation(moved, 'url');
    expect((await ts.sdk.listWebhookEndpoints({} as any) as any).webhookEndpoints.map((e: any) => e.url)).toEqual(['https://hooks.example.com/kmas']);
    expect((await allActivities(ts)).length).toBe(count + 1);
    await ts.sdk.deleteWebhookEndpoint({ endpointId: made.endpointId } as any);
  });
});

describe('deliveries under WEBHOOK_DESTINATIONS=public', () => {
  it('addresses stored before (an IP, and a name that resolves to loopback) receive nothing: each delivery is given up, not retried', async () => {
    const rx = await receiver();
    const dataDir = freshDataDir();
    let ts: TestServer | undefined = await startTestServer({ dataDir, webhookRetryMs: 50, webhookTimeoutMs: 5000 });
    try {
      // made where any address is allowed (a loopback HOST's auto)
      await ts.sdk.createWebhookEndpoint({ url: `${rx.url}/by-ip`, name: uniqueName('ip'), subscriptions: [{ eventType: 'ACTIVITY_UPDATES', isActive: true }] } as any);
      await ts.sdk.createWebhookEndpoint({ url: `http://localhost:${rx.port}/by-name`, name: uniqueName('name'), subscriptions: [{ eventType: 'ACTIVITY_UPDATES', isActive: true }] } as any);
      await ts.sdk.createUserTag({ userTagName: uniqueName('any'), userIds: [] });
      for (let i = 0; i < 500 && !(rx.got.includes('/by-ip') && rx.got.includes('/by-name')); i++) await sleep(10);
      expect(new Set(rx.got)).toEqual(new Set(['/by-ip', '/by-name'])); // both reach the receiver under `any`
      await ts.stop(true);
      ts = undefined;

      ts = await startTestServer({ dataDir, webhookRetryMs: 50, webhookTimeoutMs: 5000, webhookDestinations: 'public' });
      rx.got.length = 0;
      await ts.sdk.createUserTag({ userTagName: uniqueName('public'), userIds: [] });
      for (let i = 0; i < 500 && await outboxRows(dataDir) > 0; i++) await sleep(20);
      expect(await outboxRows(dataDir)).toBe(0); // given up: gone from the outbox
      await sleep(300); // a retry (50 ms backoff) would have arrived by now
      expect(rx.got).toEqual([]);
    } finally {
      await ts?.stop();
      await rx.close();
    }
  });
});
