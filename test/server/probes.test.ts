// Probes of references, ownership and odd values: requests that name things that do not exist or
// do not belong to the caller must never complete as if they did (refused 4xx with nothing
// stored, or an accepted-then-FAILED activity), and never a 5xx.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, uniqueName, newestActivityId, sleep, replyViolations, type TestServer, type RawKey } from './harness.js';
import { checkError, expectFieldViolation, QUERY, SUBMIT } from './checks.js';

let ts: TestServer;
let carol: { id: string; key: RawKey; apiKeyId: string };
const UNKNOWN = '00000000-0000-4000-8000-0000000000dd';

beforeAll(async () => {
  ts = await startTestServer();
  const key = newP256Key();
  const r: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('carol'), apiKeys: [{ apiKeyName: 'c', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  const u: any = await ts.sdk.getUser({ userId: r.userIds[0] });
  carol = { id: r.userIds[0], key, apiKeyId: u.user.apiKeys[0].apiKeyId };
});
afterAll(async () => { await ts?.stop(); });

/** Submits and requires: refused (4xx, nothing stored) or stored as FAILED — never COMPLETED. */
async function mustNotComplete(op: string, type: string, parameters: unknown, key?: RawKey) {
  const before = await newestActivityId(ts);
  const r = await ts.raw(SUBMIT(op), submitBody(type, ts.orgId, parameters), key ? { key } : {});
  if (r.status === 200) {
    expect(r.json.activity.status, `${op} ${JSON.stringify(parameters)} completed: ${JSON.stringify(r.json.activity.result).slice(0, 300)}`).toBe('ACTIVITY_STATUS_FAILED');
  } else {
    checkError(r, [400, 403, 404, 409], `${op} ${JSON.stringify(parameters)}`);
    expect(await newestActivityId(ts), `${op}: refused but stored`).toBe(before);
  }
  return r;
}

const whoami = (key: RawKey | { publicKey: string; privateKey: string }) => ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key });

describe('ownership of API keys', () => {
  it('a non-root user cannot delete the root user\'s key by naming itself as userId', async () => {
    await mustNotComplete('delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', { userId: carol.id, apiKeyIds: [ts.server.bootstrap.apiKeyId] }, carol.key);
    const r = await whoami(ts.rootKey);
    expect(r.status, 'the root key still works').toBe(200);
    expect(r.json.userId).toBe(ts.rootUserId);
  });

  it('root cannot delete a key under the wrong userId', async () => {
    await mustNotComplete('delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', { userId: ts.rootUserId, apiKeyIds: [carol.apiKeyId] });
    expect((await whoami(carol.key)).status).toBe(200);
  });

  it('registering another user\'s public key to oneself does not take over that identity', async () => {
    const r = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, {
      userId: carol.id, apiKeys: [{ apiKeyName: 'stolen', publicKey: ts.rootKey.publicKey, curveType: 'API_KEY_CURVE_P256' }],
    }), { key: carol.key });
    expect(r.status).toBeLessThan(500);
    const who = await whoami(ts.rootKey);
    expect(who.status).toBe(200);
    expect(who.json.userId, 'a stamp by the root key still acts as root').toBe(ts.rootUserId);
    const sub = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('still-root'), userIds: [] }));
    expect(sub.status, sub.text).toBe(200);
  });

  it('the same public key twice in one create_api_keys, or a key already registered to the user, is not a 5xx', async () => {
    const k = newP256Key();
    const r = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, {
      userId: carol.id, apiKeys: [{ apiKeyName: 'a', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256' }, { apiKeyName: 'b', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256' }],
    }));
    expect(r.status).toBeLessThan(500);
    const r2 = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, {
      userId: carol.id, apiKeys: [{ apiKeyName: 'again', publicKey: carol.key.publicKey, curveType: 'API_KEY_CURVE_P256' }],
    }));
    expect(r2.status).toBeLessThan(500);
    expect((await whoami(carol.key)).json.userId).toBe(carol.id);
  });
});

describe('the organization stays manageable', () => {
  it('the only root user cannot be deleted, and its key keeps working', async () => {
    await mustNotComplete('delete_users', 'ACTIVITY_TYPE_DELETE_USERS', { userIds: [ts.rootUserId] });
    const r = await whoami(ts.rootKey);
    expect(r.status).toBe(200);
    expect(r.json.userId).toBe(ts.rootUserId);
  });
});

describe('references to things that do not exist', () => {
  it('create_api_keys for an unknown user', async () => {
    await mustNotComplete('create_api_keys', 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: UNKNOWN, apiKeys: [{ apiKeyName: 'x', publicKey: newP256Key().publicKey, curveType: 'API_KEY_CURVE_P256' }] });
  });
  it('update_user with an unknown tag id', async () => {
    await mustNotComplete('update_user', 'ACTIVITY_TYPE_UPDATE_USER', { userId: carol.id, userTagIds: [UNKNOWN] });
    const u: any = await ts.sdk.getUser({ userId: carol.id });
    expect(u.user.userTags).toEqual([]);
  });
  it('update_user with a private-key tag id as a user tag', async () => {
    const pk: any = await ts.sdk.createPrivateKeyTag({ privateKeyTagName: uniqueName('pkt'), privateKeyIds: [] });
    await mustNotComplete('update_user', 'ACTIVITY_TYPE_UPDATE_USER', { userId: carol.id, userTagIds: [pk.privateKeyTagId] });
  });
  it('create_users with an unknown user tag', async () => {
    await mustNotComplete('create_users', 'ACTIVITY_TYPE_CREATE_USERS_V4', { users: [{ userName: uniqueName('x'), apiKeys: [], authenticators: [], oauthProviders: [], userTags: [UNKNOWN] }] });
  });
  it('update_user_tag adding an unknown user', async () => {
    const t: any = await ts.sdk.createUserTag({ userTagName: uniqueName('t'), userIds: [] });
    await mustNotComplete('update_user_tag', 'ACTIVITY_TYPE_UPDATE_USER_TAG', { userTagId: t.userTagId, addUserIds: [UNKNOWN], removeUserIds: [] });
  });
  it('update_private_key_tag with an unknown tag / unknown private key', async () => {
    await mustNotComplete('update_private_key_tag', 'ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG', { privateKeyTagId: UNKNOWN, addPrivateKeyIds: [], removePrivateKeyIds: [] });
    const pk: any = await ts.sdk.createPrivateKeyTag({ privateKeyTagName: uniqueName('pkt'), privateKeyIds: [] });
    await mustNotComplete('update_private_key_tag', 'ACTIVITY_TYPE_UPDATE_PRIVATE_KEY_TAG', { privateKeyTagId: pk.privateKeyTagId, addPrivateKeyIds: [UNKNOWN], removePrivateKeyIds: [] });
  });
  it('delete_user_tags / delete_private_key_tags of unknown ids', async () => {
    await mustNotComplete('delete_user_tags', 'ACTIVITY_TYPE_DELETE_USER_TAGS', { userTagIds: [UNKNOWN] });
    await mustNotComplete('delete_private_key_tags', 'ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS', { privateKeyTagIds: [UNKNOWN] });
  });
  it('a user tag id passed to delete_private_key_tags (wrong tag type)', async () => {
    const t: any = await ts.sdk.createUserTag({ userTagName: uniqueName('ut'), userIds: [] });
    await mustNotComplete('delete_private_key_tags', 'ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS', { privateKeyTagIds: [t.userTagId] });
    const list: any = await ts.sdk.listUserTags();
    expect(list.userTags.map((x: any) => x.tagId)).toContain(t.userTagId);
  });
  it('remove_organization_feature of a feature that is not set', async () => {
    const r = await ts.raw(SUBMIT('remove_organization_feature'), submitBody('ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE', ts.orgId, { name: 'FEATURE_NAME_OTP_EMAIL_AUTH' }));
    expect(r.status, r.text).toBeLessThan(500);
  });
  it('queries naming unknown ids are 404', async () => {
    checkError(await ts.raw(QUERY('get_user'), JSON.stringify({ organizationId: ts.orgId, userId: UNKNOWN })), 404, 'get_user unknown');
    checkError(await ts.raw(QUERY('get_api_key'), JSON.stringify({ organizationId: ts.orgId, apiKeyId: UNKNOWN })), 404, 'get_api_key unknown');
  });
  it('a query activity id (from the specification wrapper) is not a stored activity', async () => {
    const who: any = await ts.sdk.getWhoami();
    checkError(await ts.raw(QUERY('get_activity'), JSON.stringify({ organizationId: ts.orgId, activityId: who.activity.id })), 404, 'query activity id');
  });
});

describe('required query fields', () => {
  for (const [op, field] of [['get_user', 'userId'], ['get_api_key', 'apiKeyId'], ['get_activity', 'activityId']] as const) {
    it(`${op} without ${field} is 400 with a field violation`, async () => {
      const r = await ts.raw(QUERY(op), JSON.stringify({ organizationId: ts.orgId }));
      checkError(r, 400, `${op} without ${field}`);
      expectFieldViolation(r, field);
    });
  }
  it('list_activities with an unknown filterByStatus / filterByType value is 400', async () => {
    const r1 = await ts.raw(QUERY('list_activities'), JSON.stringify({ organizationId: ts.orgId, filterByStatus: ['ACTIVITY_STATUS_NOPE'] }));
    checkError(r1, 400, 'bad filterByStatus');
    expectFieldViolation(r1, 'filterByStatus');
    const r2 = await ts.raw(QUERY('list_activities'), JSON.stringify({ organizationId: ts.orgId, filterByType: 'ACTIVITY_TYPE_CREATE_USER_TAG' }));
    checkError(r2, 400, 'filterByType not an array');
    expectFieldViolation(r2, 'filterByType');
  });
  it('organizationId of the wrong JSON type is 400', async () => {
    const r = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: 12 }));
    checkError(r, 400, 'numeric organizationId');
    expectFieldViolation(r, 'organizationId');
  });
});

describe('odd values', () => {
  it('expirationSeconds: a key with "5" works at once and is refused after it expires', async () => {
    // 5 s rather than less: "at once" must hold even when a loaded CI machine stalls for a while
    const k = newP256Key();
    const r: any = await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName('five'), publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '5' }] } as any);
    expect(r.apiKeyIds).toHaveLength(1);
    expect((await whoami(k)).status, 'usable before expiry').toBe(200);
    await sleep(5300);
    checkError(await whoami(k), 401, 'after expiry');
  });

  it('expirationSeconds that is not a positive decimal string is 400 with a field violation', async () => {
    const wrong: string[] = [];
    for (const expirationSeconds of ['soon', '-5', '1.5', 60, '0x10', '1e3']) {
      const before = await newestActivityId(ts);
      const r = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, {
        userId: ts.rootUserId, apiKeys: [{ apiKeyName: 'x', publicKey: newP256Key().publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds }],
      }));
      if (r.status !== 400) { wrong.push(`${JSON.stringify(expirationSeconds)} → ${r.status} ${r.json?.activity?.status ?? ''}`); continue; }
      checkError(r, 400, `expirationSeconds ${JSON.stringify(expirationSeconds)}`);
      expectFieldViolation(r, 'expirationSeconds');
      expect(await newestActivityId(ts)).toBe(before);
    }
    expect(wrong, 'expirationSeconds is a uint64 decimal string (swagger v1ApiKeyParamsV2, wire-compat §2.5)').toEqual([]);
  });

  it('a huge expirationSeconds does not wrap around into an already-expired key, nor a 5xx', async () => {
    const k = newP256Key();
    const r = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, {
      userId: ts.rootUserId, apiKeys: [{ apiKeyName: 'forever', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '99999999999999999999' }],
    }));
    expect(r.status, r.text).toBeLessThan(500);
    if (r.status === 200 && r.json.activity.status === 'ACTIVITY_STATUS_COMPLETED') {
      expect((await whoami(k)).status, 'a key accepted with a huge lifetime must be usable').toBe(200);
    }
  });

  it('empty userName and empty tag names are refused', async () => {
    expectFieldViolation(await mustNotComplete('update_user', 'ACTIVITY_TYPE_UPDATE_USER', { userId: carol.id, userName: '' }), 'userName');
    expectFieldViolation(await mustNotComplete('create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', { userTagName: '', userIds: [] }), 'userTagName');
  });

  it('set_organization_feature with a non-string value is 400', async () => {
    const r = await ts.raw(SUBMIT('set_organization_feature'), submitBody('ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE', ts.orgId, { name: 'FEATURE_NAME_EMAIL_AUTH', value: true }));
    checkError(r, 400, 'boolean value');
    expectFieldViolation(r, 'value');
  });

  it('Content-Encoding the server cannot decode is a 4xx JSON error, not a 5xx', async () => {
    const wrong: string[] = [];
    for (const enc of ['gzip', 'deflate', 'br', 'x-nope', 'identity']) {
      const r = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { headers: { 'Content-Encoding': enc } });
      if (r.status >= 500) { wrong.push(`${enc} → ${r.status} ${r.text.slice(0, 120)}`); continue; }
      if (r.status !== 200) checkError(r, [400, 415], `Content-Encoding ${enc}`);
    }
    replyViolations.splice(0); // the 5xx replies are reported by the assertion below
    expect(wrong, 'a body that is not in its declared Content-Encoding is bad input').toEqual([]);
  });

  it('a tiny, empty or truncated compressed body is a 400 at once (not held until the request timeout), and stores nothing', async () => {
    const { gzipSync, deflateSync, brotliCompressSync } = await import('node:zlib');
    const plain = Buffer.from(submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('zip'), userIds: [] }));
    const whole = { gzip: gzipSync(plain), deflate: deflateSync(plain), br: brotliCompressSync(plain) };
    const before = await newestActivityId(ts);
    for (const [enc, z] of Object.entries(whole)) {
      for (const body of [Buffer.alloc(0), z.subarray(0, 1), z.subarray(0, 3), z.subarray(0, z.length - 2)]) {
        const t0 = Date.now();
        const r = await ts.raw(SUBMIT('create_user_tag'), body, { headers: { 'Content-Encoding': enc } });
        checkError(r, 400, `${enc}, ${body.length} of ${z.length} bytes`);
        expect(Date.now() - t0, `${enc}, ${body.length} bytes: answered at once`).toBeLessThan(5_000);
      }
    }
    expect(await newestActivityId(ts)).toBe(before);
  });

  it('a body starting with a UTF-8 BOM is answered without a 5xx', async () => {
    const r = await ts.raw(QUERY('whoami'), '\ufeff' + JSON.stringify({ organizationId: ts.orgId }));
    expect(r.status, r.text).toBeLessThan(500);
  });
});
