// Authorization without policies: root users may do everything in their organization; a non-root
// user may read, and change only its own user (tag membership aside) and its own API keys;
// everything else waits for approval (ACTIVITY_STATUS_CONSENSUS_NEEDED) and changes nothing until
// then. Policies and approvals themselves: test/api/policies.test.ts.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, sdkClient, uniqueName, newestActivityId, type TestServer, type RawKey } from './harness.js';
import { checkAwaitsConsensus, checkError, checkQueryReply, checkSubmitReply, QUERY, SUBMIT } from './checks.js';

let ts: TestServer;
let carol: { id: string; key: RawKey };
let dave: { id: string; key: RawKey };
let tagId: string;

async function createUser(name: string) {
  const key = newP256Key();
  const r: any = await ts.sdk.createUsers({ users: [{ userName: name, apiKeys: [{ apiKeyName: name, publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  return { id: r.userIds[0] as string, key };
}

beforeAll(async () => {
  ts = await startTestServer();
  carol = await createUser(uniqueName('carol'));
  dave = await createUser(uniqueName('dave'));
  const t: any = await ts.sdk.createUserTag({ userTagName: uniqueName('tag'), userIds: [] });
  tagId = t.userTagId;
});
afterAll(async () => { await ts?.stop(); });

const asCarol = (op: string, type: string, parameters: unknown) =>
  ts.raw(SUBMIT(op), submitBody(type, ts.orgId, parameters), { key: carol.key });

describe('non-root user', () => {
  it('may read: whoami, list_users, get_user, get_api_keys, list_user_tags, list_activities, get_organization_configs', async () => {
    const c = sdkClient(ts.url, carol.key, ts.orgId);
    const who: any = await c.getWhoami();
    expect(who.userId).toBe(carol.id);
    checkQueryReply('list_users', await c.getUsers(), ['users'], ts.orgId);
    checkQueryReply('get_user', await c.getUser({ userId: ts.rootUserId }), ['user'], ts.orgId);
    checkQueryReply('get_api_keys', await c.getApiKeys({ userId: dave.id }), ['apiKeys'], ts.orgId);
    checkQueryReply('list_user_tags', await c.listUserTags(), ['userTags'], ts.orgId);
    checkQueryReply('get_organization_configs', await c.getOrganizationConfigs({ organizationId: ts.orgId }), ['configs'], ts.orgId);
    const acts: any = await c.getActivities({});
    expect(acts.activities.length).toBeGreaterThan(0);
  });

  it('may update its own user', async () => {
    const r = await asCarol('update_user', 'ACTIVITY_TYPE_UPDATE_USER', { userId: carol.id, userName: 'carol-renamed' });
    expect(r.status, r.text).toBe(200);
    checkSubmitReply('update_user', r.json, { type: 'ACTIVITY_TYPE_UPDATE_USER', intentKey: 'updateUserIntent', resultKey: 'updateUserResult' }, ts.orgId);
  });

  it('may create and delete its own API keys', async () => {
    const k = newP256Key();
    const c = await asCarol('create_api_keys', 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: carol.id, apiKeys: [{ apiKeyName: 'own', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256' }] });
    expect(c.status, c.text).toBe(200);
    const id = c.json.activity.result.createApiKeysResult.apiKeyIds[0];
    const d = await asCarol('delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', { userId: carol.id, apiKeyIds: [id] });
    expect(d.status, d.text).toBe(200);
    expect(d.json.activity.result.deleteApiKeysResult.apiKeyIds).toEqual([id]);
  });

  const forbidden: [string, string, string, () => unknown][] = [
    ['update another user', 'update_user', 'ACTIVITY_TYPE_UPDATE_USER', () => ({ userId: dave.id, userName: 'hijacked' })],
    ['update the root user', 'update_user', 'ACTIVITY_TYPE_UPDATE_USER', () => ({ userId: ts.rootUserId, userEmail: 'evil@example.com' })],
    ['change its own tag membership', 'update_user', 'ACTIVITY_TYPE_UPDATE_USER', () => ({ userId: carol.id, userTagIds: [tagId] })],
    ['delete another user', 'delete_users', 'ACTIVITY_TYPE_DELETE_USERS', () => ({ userIds: [dave.id] })],
    ['add an API key to another user', 'create_api_keys', 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', () => ({ userId: dave.id, apiKeys: [{ apiKeyName: 'x', publicKey: newP256Key().publicKey, curveType: 'API_KEY_CURVE_P256' }] })],
    ['delete the root user\'s API key', 'delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', () => ({ userId: ts.rootUserId, apiKeyIds: [ts.server.bootstrap.apiKeyId] })],
    ['create a user tag', 'create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', () => ({ userTagName: 'x', userIds: [] })],
    ['update a user tag', 'update_user_tag', 'ACTIVITY_TYPE_UPDATE_USER_TAG', () => ({ userTagId: tagId, addUserIds: [carol.id], removeUserIds: [] })],
    ['delete user tags', 'delete_user_tags', 'ACTIVITY_TYPE_DELETE_USER_TAGS', () => ({ userTagIds: [tagId] })],
    ['create a private key tag', 'create_private_key_tag', 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', () => ({ privateKeyTagName: 'x', privateKeyIds: [] })],
    ['set an organization feature', 'set_organization_feature', 'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE', () => ({ name: 'FEATURE_NAME_EMAIL_AUTH', value: 'true' })],
    ['remove an organization feature', 'remove_organization_feature', 'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE', () => ({ name: 'FEATURE_NAME_EMAIL_AUTH' })],
  ];

  for (const [what, op, type, params] of forbidden) {
    it(`may not ${what} without approval: the activity waits (CONSENSUS_NEEDED)`, async () => {
      const before = await newestActivityId(ts);
      const r = await asCarol(op, type, params());
      checkAwaitsConsensus(r, what);
      expect(await newestActivityId(ts)).not.toBe(before);
    });
  }

  it('may not create users: an operation that checks tokens outside the store cannot wait for approvals (403, nothing stored)', async () => {
    const before = await newestActivityId(ts);
    const r = await asCarol('create_users', 'ACTIVITY_TYPE_CREATE_USERS_V4', { users: [{ userName: 'x', apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] });
    checkError(r, 403, 'create users');
    expect(r.json.message).toMatch(/cannot wait for approvals/);
    expect(await newestActivityId(ts)).toBe(before);
  });

  it('the refused changes did not happen', async () => {
    const d: any = await ts.sdk.getUser({ userId: dave.id });
    expect(d.user.userName).not.toBe('hijacked');
    const root: any = await ts.sdk.getUser({ userId: ts.rootUserId });
    expect(root.user.userEmail ?? '').not.toBe('evil@example.com');
    expect(root.user.apiKeys.map((k: any) => k.apiKeyId)).toContain(ts.server.bootstrap.apiKeyId);
  });

  it('the sdk-server client surfaces a policy\'s explicit deny (403) as TurnkeyRequestError code 7', async () => {
    const p: any = await ts.sdk.createPolicy({ policyName: 'no tags', effect: 'EFFECT_DENY', condition: "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", consensus: '', notes: '' });
    const c = sdkClient(ts.url, carol.key, ts.orgId);
    await expect(c.createUserTag({ userTagName: 'nope', userIds: [] })).rejects.toMatchObject({ code: 7 });
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });
});

describe('root user', () => {
  it('may change other users and their keys', async () => {
    const r: any = await ts.sdk.updateUser({ userId: dave.id, userName: 'dave-by-root' } as any);
    expect(r.userId).toBe(dave.id);
    const k = newP256Key();
    const r2: any = await ts.sdk.createApiKeys({ userId: dave.id, apiKeys: [{ apiKeyName: 'by-root', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    expect(r2.apiKeyIds).toHaveLength(1);
    const r3 = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key: k });
    expect(r3.json.userId).toBe(dave.id);
  });
});
