// The refusal table of the README ("Refusals"), one test per row: the HTTP status and the whole
// {code, message, details} reply. Where Turnkey's reply is known (its error reference, the message
// checks in its SDKs' tests) kmas's must equal it byte for byte; the other rows pin kmas's own
// choice. Every refusal stores nothing.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, stampFor, sdkClient, uniqueName, allActivities, sleep, base64url, enc, signBody, type TestServer, type RawReply } from './harness.js';
import { SUBMIT, QUERY } from './checks.js';
import { SoftPasskey } from './softPasskey.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const detail = (turnkeyErrorCode: string) => ({ '@type': 'type.googleapis.com/errors.v1.TurnkeyErrorDetail', turnkeyErrorCode });
const badRequest = (...fields: string[]) => ({
  '@type': 'type.googleapis.com/google.rpc.BadRequest',
  fieldViolations: fields.map((field) => ({ field, description: expect.any(String) })),
});
const whoBody = (org = ts.orgId) => JSON.stringify({ organizationId: org });
const tagBody = (org = ts.orgId, ms = String(Date.now())) => submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', org, { userTagName: uniqueName('r'), userIds: [] }, ms);

/** Runs `send`, checks the reply is exactly `status` + `reply`, and that no activity was stored. */
async function refused(send: () => Promise<RawReply>, status: number, reply: { code: number; message: unknown; details: unknown[] }): Promise<RawReply> {
  const before = (await allActivities(ts)).length;
  const r = await send();
  expect(r.status, r.text.slice(0, 400)).toBe(status);
  expect(r.json).toEqual(reply);
  expect((await allActivities(ts)).length, 'nothing stored').toBe(before);
  return r;
}

async function nonRootUser() {
  const key = newP256Key();
  const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('u'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  return { id: u.userIds[0] as string, key };
}

describe('refusals as Turnkey gives them (known replies, byte for byte)', () => {
  it('an explicit deny: 403, code 7, "policy engine denied request explicitly", no details (as @turnkey/viem\'s tests show it)', async () => {
    const user = await nonRootUser();
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('deny'), effect: 'EFFECT_DENY', condition: "activity.resource == 'USER'", consensus: '', notes: '' });
    try {
    const r = await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(), { key: user.key }), 403, { code: 7, message: 'policy engine denied request explicitly', details: [] });
    // the client renders it exactly as Turnkey's does
    const err = await sdkClient(ts.url, user.key, ts.orgId).createUserTag({ userTagName: uniqueName('x'), userIds: [] }).then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toBe('Turnkey error 7: policy engine denied request explicitly (Details: [])');
    expect(r.text).not.toContain(deny.policyId);
    } finally {
      await ts.sdk.deletePolicy({ policyId: deny.policyId });
    }
  });

  it('a stamp that does not verify: 401, code 16, "could not verify api key signature"', async () => {
    const body = whoBody();
    await refused(() => ts.raw(QUERY('whoami'), body, { stamp: stampFor(whoBody() + ' ', ts.rootKey) }), 401,
      { code: 16, message: 'could not verify api key signature', details: [detail('SIGNATURE_INVALID')] });
    await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(), { stamp: stampFor('other bytes', ts.rootKey) }), 401,
      { code: 16, message: 'could not verify api key signature', details: [detail('SIGNATURE_INVALID')] });
  });

  it('a passkey stamp that does not verify: 401, code 16, "could not verify WebAuthN signature"', async () => {
    const pk = new SoftPasskey();
    await ts.sdk.createAuthenticators({ userId: ts.rootUserId, authenticators: [pk.params()] } as any);
    const body = whoBody();
    await refused(() => ts.raw(QUERY('whoami'), body, { key: undefined, headers: { 'X-Stamp-Webauthn': pk.stamp(body, { challengeOf: 'other bytes' }) } }), 401,
      { code: 16, message: 'could not verify WebAuthN signature', details: [detail('SIGNATURE_INVALID')] });
  });

  it('no stamp: 401, code 16, "cannot authenticate public API activity request without a stamp (X-Stamp/X-Stamp-Webauthn header)"', async () => {
    const reply = { code: 16, message: 'cannot authenticate public API activity request without a stamp (X-Stamp/X-Stamp-Webauthn header)', details: [detail('SIGNATURE_MISSING')] };
    await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(), { key: undefined }), 401, reply);
    await refused(() => ts.raw(QUERY('whoami'), whoBody(), { key: undefined }), 401, reply);
  });

  it('a stamp that is not one: 401, code 16, "malformed activity stamp"', async () => {
    await refused(() => ts.raw(QUERY('whoami'), whoBody(), { stamp: '!!!' }), 401, { code: 16, message: 'malformed activity stamp', details: [detail('SIGNATURE_INVALID')] });
    await refused(() => ts.raw(QUERY('whoami'), whoBody(), { stamp: stampFor(whoBody(), ts.rootKey, { scheme: 'SIGNATURE_SCHEME_NOPE' }) }), 401,
      { code: 16, message: 'malformed activity stamp', details: [detail('SIGNATURE_INVALID')] });
  });

  it('an unknown API key: 401, code 16, "could not find public key in organization or its parent organization" (what @turnkey/core reads as an expired session)', async () => {
    await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(), { key: newP256Key() }), 401,
      { code: 16, message: 'could not find public key in organization or its parent organization', details: [detail('PUBLIC_KEY_NOT_FOUND')] });
  });

  it('an unknown passkey: 401, code 16, "credential ID could not be found in organization or its parent organization"', async () => {
    const stranger = new SoftPasskey();
    const body = whoBody();
    await refused(() => ts.raw(QUERY('whoami'), body, { key: undefined, headers: { 'X-Stamp-Webauthn': stranger.stamp(body) } }), 401,
      { code: 16, message: 'credential ID could not be found in organization or its parent organization', details: [detail('CREDENTIAL_NOT_FOUND')] });
  });

  it('an organization the key does not belong to: 401, code 16, the same "could not find public key" reply', async () => {
    const subWith = async (key: ReturnType<typeof newP256Key>) => ((await ts.sdk.createSubOrganization({ subOrganizationName: uniqueName('sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'r', apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }] } as any)) as any).subOrganizationId as string;
    const keyA = newP256Key();
    await subWith(keyA);
    const b = await subWith(newP256Key());
    const reply = { code: 16, message: 'could not find public key in organization or its parent organization', details: [detail('PUBLIC_KEY_NOT_FOUND')] };
    // a sibling sub-organization's key
    await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(b), { key: keyA }), 401, reply);
    // a sub-organization's key in its parent
    await refused(() => ts.raw(QUERY('list_users'), whoBody(ts.orgId), { key: keyA }), 401, reply);
  });

  it('a parent organization\'s key writing into a sub-organization: 403, code 7, "request not authorized" (Turnkey\'s example of it)', async () => {
    const sub: any = await ts.sdk.createSubOrganization({ subOrganizationName: uniqueName('child'), rootQuorumThreshold: 1, rootUsers: [{ userName: 'r', apiKeys: [{ apiKeyName: 'k', publicKey: newP256Key().publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }] } as any);
    await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(sub.subOrganizationId)), 403,
      { code: 7, message: 'request not authorized', details: [detail('REQUEST_NOT_AUTHORIZED')] });
  });

  it('an unknown organization: 404, code 5, "no organization found with the given ID"', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const reply = { code: 5, message: 'no organization found with the given ID', details: [detail('ORGANIZATION_NOT_FOUND')] };
    await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(unknown)), 404, reply);
    await refused(() => ts.raw(QUERY('list_users'), whoBody(unknown)), 404, reply);
  });

  it('an organization id that is no UUID: 400, code 3, "malformed organization ID provided"', async () => {
    await refused(() => ts.raw(QUERY('list_users'), whoBody('not-a-uuid')), 400,
      { code: 3, message: 'malformed organization ID provided', details: [detail('INVALID_ORGANIZATION_ID'), badRequest('organizationId')] });
  });

  it('a body that is not JSON: 400, code 3, "bad request body"', async () => {
    await refused(() => ts.raw(SUBMIT('create_user_tag'), '{"type":'), 400, { code: 3, message: 'bad request body', details: [detail('REQUEST_INVALID')] });
  });

  it('approving an unknown fingerprint: 404, code 5, Turnkey\'s "No activity found with fingerprint" text', async () => {
    await refused(() => ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint: 'sha256:' + 'ab'.repeat(32) })), 404,
      { code: 5, message: 'No activity found with fingerprint. Consensus activities must target an existing activity by fingerprint', details: [detail('ACTIVITY_NOT_FOUND')] });
  });
});

describe('refusals whose Turnkey text is not published (kmas\'s own, pinned)', () => {
  it('a stamp scheme naming a member of every JavaScript object (constructor, __proto__…): 401 "malformed activity stamp"', async () => {
    const body = whoBody();
    for (const scheme of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const stamp = base64url(enc.encode(JSON.stringify({ publicKey: ts.rootKey.publicKey, scheme, signature: signBody(enc.encode(body), { ...ts.rootKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256' }) })));
      const r = await ts.raw(QUERY('whoami'), body, { stamp });
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({ code: 16, message: 'malformed activity stamp' });
    }
  });

  it('a stamp that does not verify gets the same refusal whether its public key is registered or not (no one learns which keys exist without holding one)', async () => {
    const body = whoBody();
    const stranger = newP256Key();
    const badFor = (key: typeof stranger) => stampFor('other bytes', key);
    for (const key of [ts.rootKey, stranger]) {
      await refused(() => ts.raw(QUERY('whoami'), body, { stamp: badFor(key as typeof stranger) }), 401,
        { code: 16, message: 'could not verify api key signature', details: [detail('SIGNATURE_INVALID')] });
    }
    // the stranger's good stamp: its key is not registered
    await refused(() => ts.raw(QUERY('whoami'), body, { key: stranger }), 401,
      { code: 16, message: 'could not find public key in organization or its parent organization', details: [detail('PUBLIC_KEY_NOT_FOUND')] });
  });

  it('a passkey assertion is used once: sent several times at once, and after a newer one won a race (the counter never goes back)', async () => {
    const pk = new SoftPasskey(undefined, undefined, true);
    await ts.sdk.createAuthenticators({ userId: ts.rootUserId, authenticators: [pk.params()] } as any);
    const body = whoBody();
    const send = (stamp: string) => ts.raw(QUERY('whoami'), body, { key: undefined, headers: { 'X-Stamp-Webauthn': stamp } });
    const same = pk.stamp(body);
    expect((await Promise.all([send(same), send(same), send(same)])).map((r) => r.status).sort()).toEqual([200, 401, 401]);
    // an older and a newer assertion at once: whichever is stored last, the newer one cannot be used again
    const older = pk.stamp(body);
    const newer = pk.stamp(body);
    await Promise.all([send(newer), send(older)]);
    await refused(() => send(newer), 401, { code: 16, message: 'could not verify WebAuthN signature', details: [detail('SIGNATURE_INVALID')] });
    await refused(() => send(older), 401, { code: 16, message: 'could not verify WebAuthN signature', details: [detail('SIGNATURE_INVALID')] });
    expect((await send(pk.stamp(body))).status).toBe(200);
  });

  it('an expired API key: 401, code 16, carrying the text @turnkey/core matches for an expired session', async () => {
    const key = newP256Key();
    await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName('short'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '1' }] } as any);
    await sleep(1100);
    await refused(() => ts.raw(QUERY('whoami'), whoBody(), { key }), 401,
      { code: 16, message: `Unauthenticated desc = expired api key publicKey: ${key.publicKey}`, details: [detail('API_KEY_EXPIRED')] });
  });

  it('a stale, a future and a seconds timestampMs: 400, code 3, naming timestampMs', async () => {
    const now = Date.now();
    for (const [ms, words] of [[now - 3_600_000, /too old/], [now + 3_600_000, /future/], [Math.floor(now / 1000), /milliseconds/]] as const) {
      const r = await refused(() => ts.raw(SUBMIT('create_user_tag'), tagBody(ts.orgId, String(ms))), 400,
        { code: 3, message: expect.stringMatching(words), details: [detail('REQUEST_INVALID'), badRequest('timestampMs')] });
      expect(r.json.message).toContain('timestampMs');
    }
  });

  it('an unknown id (signWith): 404, code 5, naming it', async () => {
    await refused(() => ts.raw(SUBMIT('sign_raw_payload'), submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ts.orgId, { signWith: '0x' + '12'.repeat(20), payload: 'ab'.repeat(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' })), 404,
      { code: 5, message: expect.stringContaining('signWith'), details: [detail('PRIVATE_KEY_NOT_FOUND'), badRequest('signWith')] });
  });

  it('an id the organization does not have, in any operation (user, tag, API key, private key): 404, code 5, nothing stored', async () => {
    const ghost = '00000000-0000-4000-8000-0000000000aa';
    const cases: [string, string, unknown][] = [
      ['update_user', 'ACTIVITY_TYPE_UPDATE_USER', { userId: ghost, userName: 'ghost' }],
      ['delete_users', 'ACTIVITY_TYPE_DELETE_USERS', { userIds: [ghost] }],
      ['create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', { userTagName: uniqueName('ghosts'), userIds: [ghost] }],
      ['update_user_tag', 'ACTIVITY_TYPE_UPDATE_USER_TAG', { userTagId: ghost, newUserTagName: 'x', addUserIds: [], removeUserIds: [] }],
      ['delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', { userId: ts.rootUserId, apiKeyIds: [ghost] }],
      ['create_private_key_tag', 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', { privateKeyTagName: uniqueName('pk'), privateKeyIds: [ghost] }],
      ['delete_private_keys', 'ACTIVITY_TYPE_DELETE_PRIVATE_KEYS', { privateKeyIds: [ghost], deleteWithoutExport: true }],
      ['delete_policy', 'ACTIVITY_TYPE_DELETE_POLICY', { policyId: ghost }],
    ];
    for (const [op, type, params] of cases) {
      await refused(() => ts.raw(SUBMIT(op), submitBody(type, ts.orgId, params)), 404,
        { code: 5, message: expect.any(String), details: expect.arrayContaining([expect.objectContaining({ '@type': 'type.googleapis.com/errors.v1.TurnkeyErrorDetail' })]) });
    }
  });

  it('a validation failure: 400, code 3, a BadRequest naming the field', async () => {
    await refused(() => ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 5, userIds: [] })), 400,
      { code: 3, message: expect.any(String), details: [detail('REQUEST_INVALID'), badRequest('userTagName')] });
  });

  it('a body over the limit: 413, code 8', async () => {
    await refused(() => ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: 'x'.repeat(1_100_000), userIds: [] })), 413,
      { code: 8, message: 'request body is larger than the server accepts', details: [detail('REQUEST_TOO_LARGE')] });
  });

  it('an implicit deny is no refusal: the activity waits for approvals (200, ACTIVITY_STATUS_CONSENSUS_NEEDED), as on Turnkey', async () => {
    const user = await nonRootUser();
    const r = await ts.raw(SUBMIT('create_user_tag'), tagBody(), { key: user.key });
    expect(r.status).toBe(200);
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
  });
});
