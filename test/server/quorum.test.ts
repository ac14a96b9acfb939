// update_root_quorum and update_organization_name through @turnkey/sdk-server: who is a root user changes what they may do,
// a change that would lock the organization out fails and changes nothing, a non-root user's change
// waits for approval; a root user renames the organization. Quorums above one: test/api/policies.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAwaitsConsensus } from './checks.js';
import { newP256Key, sdkClient, startTestServer, submitBody, uniqueName, type RawKey, type TestServer } from './harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

async function newUser(withKey = true): Promise<{ id: string; key: RawKey }> {
  const key = newP256Key();
  const r: any = await ts.sdk.createUsers({ users: [{
    userName: uniqueName('member'), apiKeys: withKey ? [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }] : [],
    authenticators: [], oauthProviders: [], userTags: [],
  }] } as any);
  return { id: r.userIds[0], key };
}
const quorum = async () => ((await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId }) as any).configs.quorum);
const submit = (params: object, key?: RawKey) =>
  ts.raw('/public/v1/submit/update_root_quorum', submitBody('ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', ts.orgId, params), key ? { key } : {});

describe('update_root_quorum', () => {
  it('makes exactly the given users root users; their rights follow', async () => {
    const b = await newUser();
    const asB = sdkClient(ts.url, b.key, ts.orgId);
    const waits = await ts.raw('/public/v1/submit/create_wallet', submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: 'x', accounts: [] }), { key: b.key });
    checkAwaitsConsensus(waits, 'non-root create_wallet');

    const r: any = await ts.sdk.updateRootQuorum({ threshold: 1, userIds: [ts.rootUserId, b.id] } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await quorum()).toEqual({ threshold: 1, userIds: [ts.rootUserId, b.id] });
    expect((await asB.createWallet({ walletName: uniqueName('by-b'), accounts: [] } as any) as any).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');

    // B alone: the bootstrap user loses its root rights, B gives them back.
    await asB.updateRootQuorum({ threshold: 1, userIds: [b.id] } as any);
    expect((await quorum()).userIds).toEqual([b.id]);
    const lost = await ts.raw('/public/v1/submit/create_wallet', submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: 'y', accounts: [] }));
    checkAwaitsConsensus(lost, 'former root create_wallet');
    await asB.updateRootQuorum({ threshold: 1, userIds: [ts.rootUserId] } as any);
    expect(await quorum()).toEqual({ threshold: 1, userIds: [ts.rootUserId] });
  });

  it('a quorum of users without API keys would lock the organization out: FAILED, nothing changes', async () => {
    const c = await newUser(false);
    const r = await submit({ threshold: 1, userIds: [c.id] });
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(r.json.activity.failure.message).toMatch(/locked out/);
    expect(await quorum()).toEqual({ threshold: 1, userIds: [ts.rootUserId] });
  });

  it('refuses a threshold above the number of users and bad lists, storing nothing; a non-root user\'s change waits for approval', async () => {
    const b = await newUser();
    for (const [params, field] of [
      [{ threshold: 3, userIds: [ts.rootUserId, b.id] }, 'threshold'],
      [{ threshold: 0, userIds: [ts.rootUserId] }, 'threshold'],
      [{ threshold: 1, userIds: [] }, 'userIds'],
      [{ threshold: 1, userIds: [ts.rootUserId, ts.rootUserId] }, 'userIds'],
    ] as [object, string][]) {
      const r = await submit(params);
      expect(r.status, r.text).toBe(400);
      const fields: string[] = r.json.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));
      expect(fields.some((f) => f.startsWith(field)), JSON.stringify(fields)).toBe(true);
    }
    const waits = await submit({ threshold: 1, userIds: [b.id] }, b.key);
    checkAwaitsConsensus(waits, 'non-root update_root_quorum');
    const unknown = await submit({ threshold: 1, userIds: ['00000000-0000-4000-8000-000000000000'] });
    expect(unknown.status, unknown.text).toBe(404); // an unknown user: nothing stored
    expect(await quorum()).toEqual({ threshold: 1, userIds: [ts.rootUserId] });
  });
});

describe('update_organization_name', () => {
  it('renames the organization (whoami and get_organization follow); refuses an empty name; a non-root user\'s rename waits', async () => {
    const r: any = await ts.sdk.updateOrganizationName({ organizationName: 'Renamed Org' } as any);
    expect(r).toMatchObject({ organizationId: ts.orgId, organizationName: 'Renamed Org' });
    expect((await ts.sdk.getWhoami() as any).organizationName).toBe('Renamed Org');
    expect((await ts.http.getOrganization({ organizationId: ts.orgId }) as any).organizationData.name).toBe('Renamed Org');
    const empty = await ts.raw('/public/v1/submit/update_organization_name', submitBody('ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME', ts.orgId, { organizationName: ' ' }));
    expect(empty.status, empty.text).toBe(400);
    const b = await newUser();
    const waits = await ts.raw('/public/v1/submit/update_organization_name', submitBody('ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME', ts.orgId, { organizationName: 'Mine' }), { key: b.key });
    checkAwaitsConsensus(waits, 'non-root rename');
    expect((await ts.sdk.getWhoami() as any).organizationName).toBe('Renamed Org');
  });
});
