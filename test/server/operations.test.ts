// Every operation of issue 3 through the real clients, with the exact result keys the clients read
// (wire-compat §2.5/§2.6), the specification's nesting (replies.md), swagger validation of every
// reply, and the effect checked through the queries.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHash } from 'node:crypto';
import {
  startTestServer, newP256Key, submitBody, sdkClient, httpClient, createActivityPoller, uniqueName,
  type TestServer,
} from './harness.js';
import { checkQueryReply, checkSubmitReply, checkError, expectFieldViolation, fingerprintOf, QUERY, SUBMIT } from './checks.js';
import { assertDefinition } from './swagger.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const shapes = {
  create_users: { type: 'ACTIVITY_TYPE_CREATE_USERS_V4', intentKey: 'createUsersIntentV4', resultKey: 'createUsersResult' },
  delete_users: { type: 'ACTIVITY_TYPE_DELETE_USERS', intentKey: 'deleteUsersIntent', resultKey: 'deleteUsersResult' },
  update_user: { type: 'ACTIVITY_TYPE_UPDATE_USER', intentKey: 'updateUserIntent', resultKey: 'updateUserResult' },
  create_api_keys: { type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', intentKey: 'createApiKeysIntentV2', resultKey: 'createApiKeysResult' },
  delete_api_keys: { type: 'ACTIVITY_TYPE_DELETE_API_KEYS', intentKey: 'deleteApiKeysIntent', resultKey: 'deleteApiKeysResult' },
  create_user_tag: { type: 'ACTIVITY_TYPE_CREATE_USER_TAG', intentKey: 'createUserTagIntent', resultKey: 'createUserTagResult' },
  update_user_tag: { type: 'ACTIVITY_TYPE_UPDATE_USER_TAG', intentKey: 'updateUserTagIntent', resultKey: 'updateUserTagResult' },
  delete_user_tags: { type: 'ACTIVITY_TYPE_DELETE_USER_TAGS', intentKey: 'deleteUserTagsIntent', resultKey: 'deleteUserTagsResult' },
  create_private_key_tag: { type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', intentKey: 'createPrivateKeyTagIntent', resultKey: 'createPrivateKeyTagResult' },
  update_private_key_tag: { type: 'ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG', intentKey: 'updatePrivateKeyTagIntent', resultKey: 'updatePrivateKeyTagResult' },
  delete_private_key_tags: { type: 'ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS', intentKey: 'deletePrivateKeyTagsIntent', resultKey: 'deletePrivateKeyTagsResult' },
  set_organization_feature: { type: 'ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE', intentKey: 'setOrganizationFeatureIntent', resultKey: 'setOrganizationFeatureResult' },
  remove_organization_feature: { type: 'ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE', intentKey: 'removeOrganizationFeatureIntent', resultKey: 'removeOrganizationFeatureResult' },
} as const;
type Op = keyof typeof shapes;

/** Raw stamped submit as sdk-server would build it; checks the full reply and the fingerprint. */
async function submit(op: Op, parameters: Record<string, unknown>) {
  const body = submitBody(shapes[op].type, ts.orgId, parameters);
  const r = await ts.raw(SUBMIT(op), body);
  expect(r.status, `${op}: ${r.text.slice(0, 500)}`).toBe(200);
  const a = checkSubmitReply(op, r.json, shapes[op], ts.orgId, body);
  expect(a.intent[shapes[op].intentKey], `${op}: the intent echoes the parameters`).toMatchObject(parameters);
  return a.result[shapes[op].resultKey];
}

async function submitError(op: Op, parameters: Record<string, unknown>, status: number | number[]) {
  const body = submitBody(shapes[op].type, ts.orgId, parameters);
  const r = await ts.raw(SUBMIT(op), body);
  checkError(r, status, op);
  return r;
}

async function getUser(userId: string) {
  const r: any = await ts.sdk.getUser({ userId });
  checkQueryReply('get_user', r, ['user'], ts.orgId);
  return r.user;
}

describe('users and API keys', () => {
  let userId: string;
  const userKey = newP256Key();
  const userName = uniqueName('alice');

  it('create_users (CREATE_USERS_V4) through @turnkey/sdk-server: createUsersResult.userIds', async () => {
    const r: any = await ts.sdk.createUsers({
      users: [{
        userName, userEmail: 'alice@example.com', userPhoneNumber: '+14155550100',
        apiKeys: [{ apiKeyName: 'alice-key', publicKey: userKey.publicKey, curveType: 'API_KEY_CURVE_P256' }],
        authenticators: [], oauthProviders: [], userTags: [],
      }],
    } as any);
    expect(r.userIds).toEqual([expect.any(String)]);
    userId = r.userIds[0];
    checkSubmitReply('create_users', { activity: r.activity }, shapes.create_users, ts.orgId);
    expect(r.activity.intent.createUsersIntentV4.users[0].userName).toBe(userName);
  });

  it('get_user returns the v1User with its API key; list_users lists it beside the root user', async () => {
    const u = await getUser(userId);
    expect(u).toMatchObject({ userId, userName, userEmail: 'alice@example.com', userPhoneNumber: '+14155550100', userTags: [], authenticators: [], oauthProviders: [] });
    expect(u.apiKeys).toHaveLength(1);
    expect(u.apiKeys[0]).toMatchObject({ apiKeyName: 'alice-key', credential: { publicKey: userKey.publicKey, type: 'CREDENTIAL_TYPE_API_KEY_P256' } });
    const list: any = await ts.sdk.getUsers();
    checkQueryReply('list_users', list, ['users'], ts.orgId);
    const ids = list.users.map((x: any) => x.userId);
    expect(ids).toContain(userId);
    expect(ids).toContain(ts.rootUserId);
  });

  it('the new user acts with its own key (whoami through @turnkey/http)', async () => {
    const c = httpClient(ts.url, userKey);
    const r: any = await c.getWhoami({ organizationId: ts.orgId });
    expect(r).toMatchObject({ organizationId: ts.orgId, userId, username: userName });
    checkQueryReply('whoami', r, ['organizationId', 'organizationName', 'userId', 'username'], ts.orgId);
  });

  it('create_api_keys (CREATE_API_KEYS_V2): createApiKeysResult.apiKeyIds; get_api_key and get_api_keys show it', async () => {
    const k2 = newP256Key();
    const res = await submit('create_api_keys', { userId, apiKeys: [{ apiKeyName: 'second', publicKey: k2.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3600' }] });
    expect(res.apiKeyIds).toEqual([expect.any(String)]);
    const apiKeyId = res.apiKeyIds[0];
    const one: any = await ts.sdk.getApiKey({ apiKeyId });
    checkQueryReply('get_api_key', one, ['apiKey'], ts.orgId);
    expect(one.apiKey).toMatchObject({ apiKeyId, apiKeyName: 'second', expirationSeconds: '3600', credential: { publicKey: k2.publicKey, type: 'CREDENTIAL_TYPE_API_KEY_P256' } });
    const all: any = await ts.sdk.getApiKeys({ userId });
    checkQueryReply('get_api_keys', all, ['apiKeys'], ts.orgId);
    expect(all.apiKeys.map((k: any) => k.apiKeyId).sort()).toEqual([apiKeyId, (await getUser(userId)).apiKeys.find((k: any) => k.apiKeyName === 'alice-key').apiKeyId].sort());
    // the second key works
    const who: any = await httpClient(ts.url, k2).getWhoami({ organizationId: ts.orgId });
    expect(who.userId).toBe(userId);

    // delete_api_keys: deleteApiKeysResult.apiKeyIds; the key is gone and refused
    const del = await submit('delete_api_keys', { userId, apiKeyIds: [apiKeyId] });
    expect(del.apiKeyIds).toEqual([apiKeyId]);
    const gone = await ts.raw(QUERY('get_api_key'), JSON.stringify({ organizationId: ts.orgId, apiKeyId }));
    checkError(gone, 404, 'get_api_key of a deleted key');
    const refused = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key: k2 });
    checkError(refused, 401, 'stamp by a deleted API key');
  });

  it('get_api_keys without userId lists the keys of the organization (root key included)', async () => {
    const all: any = await ts.http.getApiKeys({ organizationId: ts.orgId });
    checkQueryReply('get_api_keys', all, ['apiKeys'], ts.orgId);
    const pubs = all.apiKeys.map((k: any) => k.credential.publicKey);
    expect(pubs).toContain(ts.rootKey.publicKey);
  });

  it('update_user: name, e-mail, E.164 phone; updateUserResult.userId', async () => {
    const res = await submit('update_user', { userId, userName: userName + '-2', userEmail: 'alice2@example.org', userPhoneNumber: '+442071838750' });
    expect(res).toEqual({ userId });
    expect(await getUser(userId)).toMatchObject({ userName: userName + '-2', userEmail: 'alice2@example.org', userPhoneNumber: '+442071838750' });
  });

  it('update_user refuses a malformed e-mail and a non-E.164 phone with google.rpc.BadRequest field violations, and changes nothing', async () => {
    const before = await getUser(userId);
    expectFieldViolation(await submitError('update_user', { userId, userEmail: 'not-an-email' }, 400), 'userEmail');
    expectFieldViolation(await submitError('update_user', { userId, userPhoneNumber: '0044 20 7183 8750' }, 400), 'userPhoneNumber');
    const after = await getUser(userId);
    expect(after.userEmail).toBe(before.userEmail);
    expect(after.userPhoneNumber).toBe(before.userPhoneNumber);
  });

  it('update_user with userTagIds sets the tags, an empty array clears them', async () => {
    const tag = await submit('create_user_tag', { userTagName: uniqueName('t'), userIds: [] });
    await submit('update_user', { userId, userTagIds: [tag.userTagId] });
    expect((await getUser(userId)).userTags).toEqual([tag.userTagId]);
    await submit('update_user', { userId, userTagIds: [] });
    expect((await getUser(userId)).userTags).toEqual([]);
  });

  it('delete_users: deleteUsersResult.userIds; the user is gone and its key refused', async () => {
    const key = newP256Key();
    const created = await submit('create_users', { users: [{ userName: uniqueName('bob'), apiKeys: [{ apiKeyName: 'b', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] });
    const bob = created.userIds[0];
    const r: any = await ts.sdk.deleteUsers({ userIds: [bob] });
    expect(r.userIds).toEqual([bob]);
    checkSubmitReply('delete_users', { activity: r.activity }, shapes.delete_users, ts.orgId);
    checkError(await ts.raw(QUERY('get_user'), JSON.stringify({ organizationId: ts.orgId, userId: bob })), 404, 'get_user of a deleted user');
    const list: any = await ts.sdk.getUsers();
    expect(list.users.map((u: any) => u.userId)).not.toContain(bob);
    checkError(await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key }), 401, 'stamp by a deleted user\'s key');
  });

  it('create_api_only_users (the older form): users with API keys (P-256 unless a curve is given) and tags; stamps work', async () => {
    const tag: any = await ts.sdk.createUserTag({ userTagName: uniqueName('bots'), userIds: [] });
    const k1 = newP256Key();
    // sdk-server 8.2.1 no longer has it; @turnkey/http does
    const reply: any = await ts.http.createApiOnlyUsers({ type: 'ACTIVITY_TYPE_CREATE_API_ONLY_USERS', organizationId: ts.orgId, timestampMs: String(Date.now()), parameters: { apiOnlyUsers: [
      { userName: uniqueName('bot-a'), userEmail: 'bot-a@example.com', userTags: [tag.userTagId], apiKeys: [{ apiKeyName: 'a', publicKey: k1.publicKey }] },
      { userName: uniqueName('bot-b'), userTags: [], apiKeys: [] },
    ] } } as any);
    expect(reply.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(reply.activity.type).toBe('ACTIVITY_TYPE_CREATE_API_ONLY_USERS');
    const r = reply.activity.result.createApiOnlyUsersResult;
    expect(r.userIds).toHaveLength(2);
    const a = await getUser(r.userIds[0]);
    expect(a).toMatchObject({ userEmail: 'bot-a@example.com', userTags: [tag.userTagId] });
    expect(a.apiKeys.map((k: any) => [k.credential.publicKey, k.credential.type])).toEqual([[k1.publicKey, 'CREDENTIAL_TYPE_API_KEY_P256']]);
    const who: any = await sdkClient(ts.url, k1, ts.orgId).getWhoami({});
    expect(who.userId).toBe(r.userIds[0]);
    const bad = await ts.raw(SUBMIT('create_api_only_users'), submitBody('ACTIVITY_TYPE_CREATE_API_ONLY_USERS', ts.orgId,
      { apiOnlyUsers: [{ userName: 'x', userTags: [], apiKeys: [], authenticators: [] }] }));
    checkError(bad, 400, 'passkeys for an API-only user');
    expectFieldViolation(bad, 'apiOnlyUsers[0]');
  });

  it('create_users refuses a bad parameter with a field violation (missing userName)', async () => {
    const r = await submitError('create_users', { users: [{ apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] }, 400);
    expectFieldViolation(r, 'userName');
  });
});

describe('user tags', () => {
  it('create_user_tag, list_user_tags, update_user_tag (rename, add, remove), delete_user_tags', async () => {
    const a = await submit('create_users', { users: [{ userName: uniqueName('u'), apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] });
    const uid = a.userIds[0];
    const name = uniqueName('team');
    const created = await submit('create_user_tag', { userTagName: name, userIds: [uid] });
    expect(created).toEqual({ userTagId: expect.any(String), userIds: [uid] });
    const tagId = created.userTagId;

    let list: any = await ts.sdk.listUserTags();
    checkQueryReply('list_user_tags', list, ['userTags'], ts.orgId);
    const tag = list.userTags.find((t: any) => t.tagId === tagId);
    expect(tag).toMatchObject({ tagId, tagName: name, tagType: 'TAG_TYPE_USER' });
    expect((await getUser(uid)).userTags).toEqual([tagId]);

    const renamed = uniqueName('renamed');
    const upd = await submit('update_user_tag', { userTagId: tagId, newUserTagName: renamed, addUserIds: [ts.rootUserId], removeUserIds: [uid] });
    expect(upd).toEqual({ userTagId: tagId });
    list = await ts.http.listUserTags({ organizationId: ts.orgId });
    expect(list.userTags.find((t: any) => t.tagId === tagId).tagName).toBe(renamed);
    expect((await getUser(uid)).userTags).toEqual([]);
    expect((await getUser(ts.rootUserId)).userTags).toContain(tagId);

    const del = await submit('delete_user_tags', { userTagIds: [tagId] });
    expect(del.userTagIds).toEqual([tagId]);
    expect(del.userIds).toEqual(expect.any(Array));
    list = await ts.sdk.listUserTags();
    expect(list.userTags.map((t: any) => t.tagId)).not.toContain(tagId);
    expect((await getUser(ts.rootUserId)).userTags).not.toContain(tagId);
  });

  it('create_user_tag through @turnkey/http with createActivityPoller returns the COMPLETED activity', async () => {
    const poll = createActivityPoller({ client: ts.http, requestFn: ts.http.createUserTag });
    const activity: any = await poll({ type: 'ACTIVITY_TYPE_CREATE_USER_TAG', timestampMs: String(Date.now()), organizationId: ts.orgId, parameters: { userTagName: uniqueName('polled'), userIds: [] } });
    expect(activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(activity.result.createUserTagResult.userTagId).toBeTypeOf('string');
    assertDefinition('v1Activity', activity);
  });

  it('update_user_tag refuses an unknown tag id, delete_user_tags an unknown id', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const r1 = await ts.raw(SUBMIT('update_user_tag'), submitBody(shapes.update_user_tag.type, ts.orgId, { userTagId: unknown, addUserIds: [], removeUserIds: [] }));
    expect([200, 400, 404], r1.text).toContain(r1.status);
    if (r1.status === 200) expect(r1.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    else checkError(r1, [400, 404], 'update_user_tag unknown');
  });
});

describe('private key tags', () => {
  it('create_private_key_tag, list_private_key_tags, update_private_key_tag (rename), delete_private_key_tags', async () => {
    const name = uniqueName('pk-tag');
    const created = await submit('create_private_key_tag', { privateKeyTagName: name, privateKeyIds: [] });
    expect(created).toEqual({ privateKeyTagId: expect.any(String), privateKeyIds: [] });
    const tagId = created.privateKeyTagId;
    let list: any = await ts.sdk.listPrivateKeyTags({});
    checkQueryReply('list_private_key_tags', list, ['privateKeyTags'], ts.orgId);
    expect(list.privateKeyTags.find((t: any) => t.tagId === tagId)).toMatchObject({ tagName: name, tagType: 'TAG_TYPE_PRIVATE_KEY' });
    // user tags and private-key tags are separate lists
    const users: any = await ts.sdk.listUserTags();
    expect(users.userTags.map((t: any) => t.tagId)).not.toContain(tagId);

    const renamed = uniqueName('pk-renamed');
    const upd = await submit('update_private_key_tag', { privateKeyTagId: tagId, newPrivateKeyTagName: renamed, addPrivateKeyIds: [], removePrivateKeyIds: [] });
    expect(upd).toEqual({ privateKeyTagId: tagId });
    list = await ts.http.listPrivateKeyTags({ organizationId: ts.orgId });
    expect(list.privateKeyTags.find((t: any) => t.tagId === tagId).tagName).toBe(renamed);

    const del = await submit('delete_private_key_tags', { privateKeyTagIds: [tagId] });
    expect(del).toEqual({ privateKeyTagIds: [tagId], privateKeyIds: expect.any(Array) });
    list = await ts.sdk.listPrivateKeyTags({});
    expect(list.privateKeyTags.map((t: any) => t.tagId)).not.toContain(tagId);
  });
});

describe('organization features and configs', () => {
  it('set_organization_feature returns the whole resulting feature list; get_organization_configs agrees', async () => {
    const r1 = await submit('set_organization_feature', { name: 'FEATURE_NAME_EMAIL_AUTH', value: 'true' });
    expect(r1.features).toEqual(expect.arrayContaining([{ name: 'FEATURE_NAME_EMAIL_AUTH', value: 'true' }]));
    const r2 = await submit('set_organization_feature', { name: 'FEATURE_NAME_WEBHOOK', value: 'https://hooks.example.com/kmas' });
    expect(r2.features).toEqual(expect.arrayContaining([
      { name: 'FEATURE_NAME_EMAIL_AUTH', value: 'true' },
      { name: 'FEATURE_NAME_WEBHOOK', value: 'https://hooks.example.com/kmas' },
    ]));
    expect(r2.features.length).toBe(r1.features.length + 1);
    const cfg: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
    checkQueryReply('get_organization_configs', cfg, ['configs'], ts.orgId);
    expect(cfg.configs.features).toEqual(expect.arrayContaining(r2.features));
    expect(cfg.configs.features.length).toBe(r2.features.length);
    // setting an existing feature replaces its value, not a second entry
    const r3 = await submit('set_organization_feature', { name: 'FEATURE_NAME_WEBHOOK', value: 'http://127.0.0.1:9/other' });
    expect(r3.features.filter((f: any) => f.name === 'FEATURE_NAME_WEBHOOK')).toEqual([{ name: 'FEATURE_NAME_WEBHOOK', value: 'http://127.0.0.1:9/other' }]);
  });

  it('FEATURE_NAME_WEBHOOK must be an http(s) URL (400 with a field violation)', async () => {
    for (const value of ['not a url', 'ftp://example.com/x', 'javascript:alert(1)']) {
      expectFieldViolation(await submitError('set_organization_feature', { name: 'FEATURE_NAME_WEBHOOK', value }, 400), 'value');
    }
    expectFieldViolation(await submitError('set_organization_feature', { name: 'FEATURE_NAME_NOPE', value: 'x' }, 400), 'name');
  });

  it('remove_organization_feature returns the remaining list', async () => {
    await submit('set_organization_feature', { name: 'FEATURE_NAME_SMS_AUTH', value: 'true' });
    const r: any = await ts.sdk.removeOrganizationFeature({ name: 'FEATURE_NAME_SMS_AUTH' } as any);
    checkSubmitReply('remove_organization_feature', { activity: r.activity }, shapes.remove_organization_feature, ts.orgId);
    expect(r.features.map((f: any) => f.name)).not.toContain('FEATURE_NAME_SMS_AUTH');
    const cfg: any = await ts.http.getOrganizationConfigs({ organizationId: ts.orgId });
    expect(cfg.configs.features).toEqual(r.features);
  });

  it('get_organization_configs carries the root quorum', async () => {
    const cfg: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
    expect(cfg.configs.quorum).toMatchObject({ threshold: 1, userIds: [ts.rootUserId] });
  });

  it('get_organization (@turnkey/http only) returns organizationData', async () => {
    await ts.sdk.createWallet({ walletName: 'org-data', accounts: [] } as any);
    const policy: any = await ts.sdk.createPolicy({ policyName: uniqueName('org-data'), effect: 'EFFECT_DENY', notes: 'n', condition: "activity.action == 'EXPORT'" } as any);
    const abi = JSON.stringify([{ type: 'function', name: 'ping', inputs: [], outputs: [], stateMutability: 'view' }]);
    const sci: any = await ts.sdk.createSmartContractInterface({ smartContractAddress: '0x00000000000000000000000000000000000000aa', smartContractInterface: abi, type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'ping' });
    await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'org-data', curve: 'CURVE_P256', privateKeyTags: [], addressFormats: [] }] } as any);
    const r: any = await ts.http.getOrganization({ organizationId: ts.orgId });
    checkQueryReply('get_organization', r, ['organizationData'], ts.orgId);
    expect(r.organizationData.organizationId).toBe(ts.orgId);
    expect(r.organizationData.name).toBe(ts.server.bootstrap.organizationName);
    // its members agree with the dedicated queries
    const users: any = await ts.sdk.getUsers();
    expect((r.organizationData.users ?? []).map((u: any) => u.userId).sort()).toEqual(users.users.map((u: any) => u.userId).sort());
    const cfg: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
    if (r.organizationData.features !== undefined) expect(r.organizationData.features).toEqual(expect.arrayContaining(cfg.configs.features ?? []));
    if (r.organizationData.rootQuorum !== undefined) expect(r.organizationData.rootQuorum).toEqual(cfg.configs.quorum);
    // wallets and private keys as list_wallets / list_private_keys give them
    const wallets: any = await ts.sdk.getWallets();
    expect(r.organizationData.wallets).toEqual(wallets.wallets);
    expect(r.organizationData.wallets.length).toBeGreaterThan(0);
    const keys: any = await ts.sdk.getPrivateKeys();
    expect(r.organizationData.privateKeys).toEqual(keys.privateKeys);
    expect(r.organizationData.privateKeys.length).toBeGreaterThan(0);
    // policies as list_policies gives them; interfaces by id, address and the SHA-256 of their text
    const policies: any = await ts.sdk.getPolicies({});
    expect(r.organizationData.policies).toEqual(policies.policies);
    expect(r.organizationData.policies.map((p: any) => p.policyId)).toContain(policy.policyId);
    expect(r.organizationData.smartContractInterfaceReferences).toEqual([{
      smartContractInterfaceId: sci.smartContractInterfaceId, smartContractAddress: '0x00000000000000000000000000000000000000aa',
      digest: createHash('sha256').update(abi).digest('hex'),
    }]);
    await ts.sdk.deletePolicy({ policyId: policy.policyId });
    if (r.organizationData.tags !== undefined) {
      const ut: any = await ts.sdk.listUserTags();
      const pt: any = await ts.sdk.listPrivateKeyTags({});
      expect(r.organizationData.tags.map((t: any) => t.tagId).sort()).toEqual([...ut.userTags, ...pt.privateKeyTags].map((t: any) => t.tagId).sort());
    }
  });

  it('create_invitations and delete_invitation: kept in organizationData.invitations; bad input names the field', async () => {
    const tag: any = await ts.sdk.createUserTag({ userTagName: uniqueName('invitees'), userIds: [] });
    const c: any = await ts.sdk.createInvitations({ invitations: [
      { receiverUserName: 'Ada', receiverUserEmail: 'ada@example.com', receiverUserTags: [tag.userTagId], accessType: 'ACCESS_TYPE_WEB', senderUserId: ts.rootUserId },
      { receiverUserName: 'Bob', receiverUserEmail: 'bob@example.com', receiverUserTags: [], accessType: 'ACCESS_TYPE_API', senderUserId: ts.rootUserId },
    ] } as any);
    expect(c.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(c.invitationIds).toHaveLength(2);
    const org: any = await ts.http.getOrganization({ organizationId: ts.orgId });
    checkQueryReply('get_organization', org, ['organizationData'], ts.orgId);
    expect(org.organizationData.invitations).toEqual([
      expect.objectContaining({ invitationId: c.invitationIds[0], receiverUserName: 'Ada', receiverEmail: 'ada@example.com', receiverUserTags: [tag.userTagId], accessType: 'ACCESS_TYPE_WEB', status: 'INVITATION_STATUS_CREATED', senderUserId: ts.rootUserId }),
      expect.objectContaining({ invitationId: c.invitationIds[1], receiverUserName: 'Bob', accessType: 'ACCESS_TYPE_API' }),
    ]);
    const d: any = await ts.sdk.deleteInvitation({ invitationId: c.invitationIds[0] } as any);
    expect(d.invitationId).toBe(c.invitationIds[0]);
    const after: any = await ts.http.getOrganization({ organizationId: ts.orgId });
    expect(after.organizationData.invitations.map((i: any) => i.invitationId)).toEqual([c.invitationIds[1]]);
    const T = 'ACTIVITY_TYPE_CREATE_INVITATIONS';
    const ok = { receiverUserName: 'Cy', receiverUserEmail: 'cy@example.com', receiverUserTags: [], accessType: 'ACCESS_TYPE_ALL', senderUserId: ts.rootUserId };
    for (const [inv, field] of [[{ ...ok, receiverUserEmail: 'not-an-address' }, 'invitations[0].receiverUserEmail'], [{ ...ok, accessType: 'ACCESS_TYPE_SMS' }, 'invitations[0].accessType']] as const) {
      const r = await ts.raw(SUBMIT('create_invitations'), submitBody(T, ts.orgId, { invitations: [inv] }));
      checkError(r, 400, field);
      expectFieldViolation(r, field);
    }
    checkError(await ts.raw(SUBMIT('create_invitations'), submitBody(T, ts.orgId, { invitations: [{ ...ok, senderUserId: 'nobody' }] })), 404, 'unknown sender');
    checkError(await ts.raw(SUBMIT('delete_invitation'), submitBody('ACTIVITY_TYPE_DELETE_INVITATION', ts.orgId, { invitationId: c.invitationIds[0] })), 404, 'deleted twice');
  });
});

describe('activities: get_activity and list_activities', () => {
  it('get_activity returns the stored record of a submit (both clients)', async () => {
    const body = submitBody(shapes.create_user_tag.type, ts.orgId, { userTagName: uniqueName('ga'), userIds: [] });
    const sub = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(sub.status, sub.text).toBe(200);
    const id = sub.json.activity.id;
    const viaSdk: any = await ts.sdk.getActivity({ activityId: id });
    const viaHttp: any = await ts.http.getActivity({ organizationId: ts.orgId, activityId: id });
    for (const got of [viaSdk, viaHttp]) {
      checkSubmitReply('create_user_tag', { activity: got.activity }, shapes.create_user_tag, ts.orgId, body);
      expect(got.activity.id).toBe(id);
      expect(got.activity.fingerprint).toBe(fingerprintOf(body));
      expect(got.activity.result).toEqual(sub.json.activity.result);
      expect(got.activity.intent).toEqual(sub.json.activity.intent);
      expect(got.activity.createdAt).toEqual(sub.json.activity.createdAt);
    }
  });

  it('get_activity of an unknown id is 404', async () => {
    checkError(await ts.raw(QUERY('get_activity'), JSON.stringify({ organizationId: ts.orgId, activityId: '00000000-0000-4000-8000-000000000000' })), 404, 'unknown activity');
  });

  it('list_activities: swagger reply, specification wrapper, filterByType and filterByStatus', async () => {
    await submit('create_private_key_tag', { privateKeyTagName: uniqueName('la'), privateKeyIds: [] });
    const all: any = await ts.sdk.getActivities({});
    checkQueryReply('list_activities', all, ['activities'], ts.orgId);
    expect(all.activities.length).toBe(10); // default limit 10, more than 10 exist by now
    const byType: any = await ts.sdk.getActivities({ filterByType: ['ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG'], paginationOptions: { limit: '100' } } as any);
    expect(byType.activities.length).toBeGreaterThan(0);
    for (const a of byType.activities) expect(a.type).toBe('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG');
    const done: any = await ts.http.getActivities({ organizationId: ts.orgId, filterByStatus: ['ACTIVITY_STATUS_COMPLETED'], paginationOptions: { limit: '100' } });
    for (const a of done.activities) expect(a.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const none: any = await ts.http.getActivities({ organizationId: ts.orgId, filterByStatus: ['ACTIVITY_STATUS_REJECTED'] });
    expect(none.activities).toEqual([]);
  });

  it('queries are not stored as activities', async () => {
    const before: any = await ts.sdk.getActivities({ paginationOptions: { limit: '1' } } as any);
    await ts.sdk.getWhoami();
    await ts.sdk.getUsers();
    const after: any = await ts.sdk.getActivities({ paginationOptions: { limit: '1' } } as any);
    expect(after.activities[0].id).toBe(before.activities[0].id);
  });

  it('sdk-server client built from the bootstrap key and org works for a submit (flattened result)', async () => {
    const c = sdkClient(ts.url, ts.rootKey, ts.orgId);
    const r: any = await c.createUserTag({ userTagName: uniqueName('flat'), userIds: [] });
    expect(r.userTagId).toBe(r.activity.result.createUserTagResult.userTagId);
  });
});
