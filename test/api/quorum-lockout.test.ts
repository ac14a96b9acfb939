// The root quorum's lock-out rule (README: a change that leaves fewer root users with an
// API key, passkey or OAuth identity than the root quorum's threshold fails).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, submitBody, uniqueName, newP256Key, sdkClient, sleep, type TestServer } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

let ts: TestServer;
// each test leaves the organization with a threshold of 2: a server of its own
beforeEach(async () => { ts = await startTestServer(); });
afterEach(async () => { await ts?.stop(); });

describe('root quorum lock-out', () => {
  // guards: an expired API key does not count its root user as reachable (defect 8, fixed in src/domain/apiKeys.ts by another patch)
  it('a root user whose only API key has expired cannot sign in: a quorum that counts on it is a lock-out and fails', async () => {
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('s'), apiKeys: [{ apiKeyName: 'short', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '1' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const s = u.userIds[0] as string;
    await sleep(1500);
    // the key is expired: S cannot stamp any more
    const who = await sdkClient(ts.url, key, ts.orgId).getWhoami().then(() => 'signed in', () => 'refused');
    expect(who).toBe('refused');
    const before: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
    const r = await ts.raw(SUBMIT('update_root_quorum'), submitBody('ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', ts.orgId, { threshold: 2, userIds: [before.configs.quorum.userIds[0], s] }));
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.status, 'a threshold of 2 with one root user able to sign in was accepted').toBe('ACTIVITY_STATUS_FAILED');
  });
  // guards: delete_oauth_providers applies the lock-out rule as delete_api_keys and delete_authenticators do
  it('delete_oauth_providers that leaves fewer reachable root users than the threshold fails and changes nothing', async () => {
    // the bootstrap root user may remove OAuth providers (set up while the threshold is 1)
    await ts.sdk.createPolicy({ policyName: uniqueName('root removes providers'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${ts.rootUserId}')`, condition: "activity.kind == 'DELETE_OAUTH_PROVIDERS'" });
    // X: a user whose only way in is an OAuth identity
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('x'), apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const x = u.userIds[0] as string;
    const p = await ts.raw(SUBMIT('create_oauth_providers'), submitBody('ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2', ts.orgId, {
      userId: x, oauthProviders: [{ providerName: 'google', oidcClaims: { iss: 'https://accounts.google.com', sub: uniqueName('sub'), aud: 'app' } }] }));
    expect(p.status, p.text).toBe(200);
    expect(p.json.activity.status, p.text).toBe('ACTIVITY_STATUS_COMPLETED');
    const res = p.json.activity.result; const providerId = (Object.values(res).find((v: any) => v?.providerIds) as any).providerIds[0];
    // two root users, both reachable, threshold 2
    const q: any = await ts.sdk.updateRootQuorum({ threshold: 2, userIds: [ts.rootUserId, x] } as any);
    expect(q.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const d = await ts.raw(SUBMIT('delete_oauth_providers'), submitBody('ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS', ts.orgId, { userId: x, providerIds: [providerId] }));
    expect(d.status, d.text).toBe(200);
    const providers: any = await ts.sdk.getOauthProviders({ userId: x } as any);
    expect(d.json.activity.status, 'X lost its only credential: one reachable root user remains for a threshold of 2').toBe('ACTIVITY_STATUS_FAILED');
    expect(providers.oauthProviders.map((o: any) => o.providerId)).toContain(providerId);
  });

});
