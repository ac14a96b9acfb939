// Edges of session and API key expiry: what a login may replace, what an expired key still counts
// for (the root-reachability rule), and what it may still have run (an activity awaiting approvals).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { rawRequest, sdkClient, sleep, startTestServer, uniqueName, type ApiKeyPair, type TestServer } from '../server/harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

function newKey(): ApiKeyPair {
  const sk = p256.utils.randomSecretKey();
  return { publicKey: bytesToHex(p256.getPublicKey(sk, true)), privateKey: bytesToHex(sk) };
}

async function subOrgWithKey(key: ApiKeyPair): Promise<string> {
  const r: any = await ts.sdk.createSubOrganization({
    subOrganizationName: uniqueName('sess'), rootQuorumThreshold: 1,
    rootUsers: [{ userName: 'root', authenticators: [], oauthProviders: [], apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }] }],
  } as any);
  expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
  return r.subOrganizationId;
}

const stampLogin = (orgId: string, key: ApiKeyPair, publicKey: string, ts0: number, expirationSeconds?: string) => rawRequest(ts.url, '/public/v1/submit/stamp_login', JSON.stringify({
  type: 'ACTIVITY_TYPE_STAMP_LOGIN', timestampMs: String(ts0), organizationId: orgId,
  parameters: { publicKey, ...(expirationSeconds ? { expirationSeconds } : {}) },
}), { key });

describe('stamp_login', () => {
  // Guards: stamp_login naming the caller's own permanent key leaves that key permanent (no lock-out when the session ends).
  it('a login with the only root user\'s permanent key does not turn it into an expiring one (the organization would be locked out)', async () => {
    const root = newKey();
    const orgId = await subOrgWithKey(root);
    const r = await stampLogin(orgId, root, root.publicKey, Date.now(), '1');
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await sleep(1500);
    const who = await rawRequest(ts.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: orgId }), { key: root });
    expect(who.status, `${who.text}: the sub-organization's only root credential is gone`).toBe(200);
  });
});

describe('an activity waiting for approvals', () => {
  // Guards: an approval does not run an activity on behalf of a key that has expired since it was requested.
  it('is not run for a session key that expired before the approval (as for one deleted meanwhile)', async () => {
    const session = newKey();
    const created: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('u'), userTags: [], authenticators: [], oauthProviders: [],
      apiKeys: [{ apiKeyName: 's', publicKey: session.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '5' }] }] } as any);
    expect(created.activity.status, JSON.stringify(created.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const r = await rawRequest(ts.url, '/public/v1/submit/create_wallet', JSON.stringify({
      type: 'ACTIVITY_TYPE_CREATE_WALLET', timestampMs: String(Date.now()), organizationId: ts.orgId,
      parameters: { walletName: uniqueName('w'), accounts: [] },
    }), { key: session });
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    await sleep(5500);
    const gone = await rawRequest(ts.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: ts.orgId }), { key: session });
    expect(gone.status).toBe(401);
    const approved: any = await ts.sdk.approveActivity({ fingerprint: r.json.activity.fingerprint } as any);
    expect(approved.activity.status, 'run on behalf of a session key that has expired').toBe('ACTIVITY_STATUS_FAILED');
  });
});

describe('API key expiry and the root-reachability rule', () => {
  // Guards: an expired API key does not count as a way in when delete_api_keys checks that a root user stays reachable.
  it('delete_api_keys may not leave the only root user holding nothing but an expired key', async () => {
    const short = newKey();
    const long = newKey();
    const r: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('expiry'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'root', authenticators: [], oauthProviders: [], apiKeys: [
        { apiKeyName: 'short', publicKey: short.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '1' },
        { apiKeyName: 'long', publicKey: long.publicKey, curveType: 'API_KEY_CURVE_P256' },
      ] }],
    } as any);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const subId = r.subOrganizationId as string;
    const userId = r.rootUserIds[0] as string;
    await sleep(1500);
    const expired = await ts.raw('/public/v1/query/whoami', JSON.stringify({ organizationId: subId }), { key: short });
    expect(expired.status).toBe(401);
    const asLong = sdkClient(ts.url, long, subId);
    const keys: any = await asLong.getApiKeys({ organizationId: subId, userId } as any);
    const longId = keys.apiKeys.find((k: any) => k.credential.publicKey === long.publicKey).apiKeyId;
    const del: any = await asLong.deleteApiKeys({ organizationId: subId, userId, apiKeyIds: [longId] } as any).catch((e: Error) => ({ activity: { status: String(e) } }));
    // Deleting the last live key locks the sub-organization out for good (its only key has expired).
    expect(del.activity.status, 'the organization is now locked out').not.toBe('ACTIVITY_STATUS_COMPLETED');
  });
});
