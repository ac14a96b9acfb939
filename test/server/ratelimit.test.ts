// Rate limits (issue 17): per API key and per organization, per node. A burst over the limit gets
// 429 in the error format (gRPC 8 RESOURCE_EXHAUSTED) with Retry-After, and stores nothing.
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { startTestServer, newP256Key, submitBody, testStorage, uniqueName, type RawReply, type TestServer } from './harness.js';
import { QUERY, SUBMIT } from './checks.js';

let ts: TestServer | undefined;
afterEach(async () => { await ts?.stop(); ts = undefined; });

function expect429(r: RawReply, limit: string): void {
  expect(r.status).toBe(429);
  expect(r.json).toMatchObject({ code: 8, message: expect.stringContaining(limit), details: expect.any(Array) });
  expect(r.json.details).toEqual([{ '@type': 'type.googleapis.com/errors.v1.TurnkeyErrorDetail', turnkeyErrorCode: 'RATE_LIMIT_EXCEEDED' }]);
  // Turnkey's text, up to its support address (which kmas replaces by the retry time)
  expect(r.json.message).toMatch(/^this (API key|organization) cannot execute activities because it has been rate limited\. Retry after \d+ s\.$/);
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('rate limits', () => {
  it('per API key: a burst of submits over the limit gets 429 with Retry-After, and nothing of those is stored', async () => {
    ts = await startTestServer({ rateLimitApiKey: 5, rateLimitOrganization: 0 });
    const s = ts;
    const userKey = newP256Key();
    await s.sdk.createApiKeys({ userId: s.rootUserId, apiKeys: [{ apiKeyName: uniqueName('second'), publicKey: userKey.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    const before = await (async () => { const r = await s.raw(QUERY('list_user_tags'), JSON.stringify({ organizationId: s.orgId }), { key: userKey }); return r.json.userTags.length as number; })();
    const burst = await Promise.all(Array.from({ length: 20 }, () => s.raw(SUBMIT('create_user_tag'),
      submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', s.orgId, { userTagName: uniqueName('burst'), userIds: [] }), { key: userKey })));
    const ok = burst.filter((r) => r.status === 200);
    const limited = burst.filter((r) => r.status === 429);
    expect(ok.length + limited.length, burst.map((r) => r.status).join()).toBe(20);
    expect(limited.length).toBeGreaterThan(0);
    expect(ok.length).toBeGreaterThan(0);
    for (const r of limited) expect429(r, 'API key');
    // what was stored: exactly the answered ones (read with another key: the limited key's bucket is empty)
    const after = (await s.raw(QUERY('list_user_tags'), JSON.stringify({ organizationId: s.orgId }))).json.userTags.length as number;
    expect(after - before).toBe(ok.length);
    // another key is not limited by this one's bucket
    expect((await s.raw(QUERY('whoami'), JSON.stringify({ organizationId: s.orgId }))).status).toBe(200);
  });

  it('per organization: two keys of one organization share its limit; RATE_LIMIT_API_KEY=0 leaves keys unlimited', async () => {
    ts = await startTestServer({ rateLimitApiKey: 0, rateLimitOrganization: 6 });
    const s = ts;
    const other = newP256Key();
    await s.sdk.createApiKeys({ userId: s.rootUserId, apiKeys: [{ apiKeyName: uniqueName('other'), publicKey: other.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    const q = JSON.stringify({ organizationId: s.orgId });
    const burst = await Promise.all(Array.from({ length: 16 }, (_, i) => s.raw(QUERY('whoami'), q, i % 2 ? { key: other } : {})));
    const limited = burst.filter((r) => r.status === 429);
    expect(limited.length, burst.map((r) => r.status).join()).toBeGreaterThan(0);
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    for (const r of limited) expect429(r, 'organization');
  });

  it('a request takes one token however often its write runs (PostgreSQL runs it again when what the node assumed changed)', async () => {
    // one a second, a request every 1.1 s: never refused. On PostgreSQL another connection changes
    // the root user's row before each request (as another node would), so the node's assumed auth
    // version is wrong, its check fails and the write runs again: still one token.
    ts = await startTestServer({ rateLimitApiKey: 1, rateLimitOrganization: 0 });
    const s = ts;
    const { databaseUrl } = await testStorage(s.dataDir);
    const other = databaseUrl === undefined ? undefined : new pg.Client({ connectionString: databaseUrl });
    await other?.connect();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 1_100));
        await other?.query('UPDATE users SET updated_ms = updated_ms + 1 WHERE id = $1', [s.rootUserId]);
        const r = await s.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', s.orgId, { userTagName: uniqueName('paced'), userIds: [] }));
        statuses.push(r.status);
      }
      expect(statuses).toEqual([200, 200, 200, 200]);
    } finally {
      await other?.end();
    }
  });

  it('an unverified stamp takes no token (a stranger cannot use up a key\'s limit)', async () => {
    ts = await startTestServer({ rateLimitApiKey: 2, rateLimitOrganization: 0 });
    const s = ts;
    const q = JSON.stringify({ organizationId: s.orgId });
    // the root key's public key with a signature over other bytes: 401 each, no token taken
    for (let i = 0; i < 6; i++) expect((await s.raw(QUERY('whoami'), q, { stampedBody: 'not the body' })).status).toBe(401);
    expect((await s.raw(QUERY('whoami'), q)).status).toBe(200);
  });
});
