// whoami through both real clients and a raw stamped request (wire-compat §2.6, replies.md).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, proxyStats, type TestServer } from './harness.js';
import { checkQueryReply, QUERY, SUBMIT } from './checks.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

describe('whoami', () => {
  it('@turnkey/sdk-server getWhoami names the root organization and user from bootstrap', async () => {
    const r: any = await ts.sdk.getWhoami();
    expect(r.organizationId).toBe(ts.orgId);
    expect(r.userId).toBe(ts.rootUserId);
    expect(r.organizationName).toBe(ts.server.bootstrap.organizationName);
    expect(r.username).toBeTypeOf('string');
    expect(r.username.length).toBeGreaterThan(0);
    checkQueryReply('whoami', r, ['organizationId', 'organizationName', 'userId', 'username'], ts.orgId);
  });

  it('@turnkey/http TurnkeyClient getWhoami gives the same identity', async () => {
    const r: any = await ts.http.getWhoami({ organizationId: ts.orgId });
    const s: any = await ts.sdk.getWhoami();
    for (const k of ['organizationId', 'organizationName', 'userId', 'username']) expect(r[k]).toBe(s[k]);
    checkQueryReply('whoami', r, ['organizationId', 'organizationName', 'userId', 'username'], ts.orgId);
  });

  it('both clients go through the recording proxy that validates every reply', async () => {
    const n0 = proxyStats.checked;
    await ts.sdk.getWhoami();
    expect(proxyStats.checked).toBe(n0 + 1);
    await ts.http.getWhoami({ organizationId: ts.orgId });
    expect(proxyStats.checked).toBe(n0 + 2);
  });

  it('each query reply carries a fresh specification activity id', async () => {
    const a: any = await ts.sdk.getWhoami();
    const b: any = await ts.sdk.getWhoami();
    expect(a.activity.id).not.toBe(b.activity.id);
  });

  it('a raw stamped request built with @noble/curves is accepted (stamp over the exact bytes)', async () => {
    const body = JSON.stringify({ organizationId: ts.orgId });
    const r = await ts.raw(QUERY('whoami'), body);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/application\/json/);
    expect(r.json.userId).toBe(ts.rootUserId);
    // non-canonical JSON (whitespace, key order) is fine as long as the stamp covers those bytes
    const body2 = `{ "organizationId" : "${ts.orgId}" ,"x":1}`;
    const r2 = await ts.raw(QUERY('whoami'), body2);
    expect(r2.status, r2.text).toBe(200);
    expect(r2.json.userId).toBe(ts.rootUserId);
  });

  it('tolerates the double slash a trailing "/" in baseUrl produces (wire-compat §2.1)', async () => {
    const body = JSON.stringify({ organizationId: ts.orgId });
    const r = await ts.raw('/' + QUERY('whoami'), body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.userId).toBe(ts.rootUserId);
  });

  it('whoami naming the parent organization answers with the sub-organization ids', async () => {
    const key = newP256Key();
    const probe = await ts.raw(SUBMIT('create_sub_organization'), submitBody('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8', ts.orgId, {
      subOrganizationName: 'sub', rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'sub-root', apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    }));
    expect(probe.status, probe.text).toBe(200);
    const subOrgId = probe.json.activity.result.createSubOrganizationResultV8.subOrganizationId;
    const r = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.organizationId).toBe(subOrgId);
  });
});
