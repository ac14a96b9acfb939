// create_read_write_session through @turnkey/sdk-server: the credential bundle opens with
// @turnkey/crypto's decryptCredentialBundle, the key inside stamps requests as the session's user
// until it expires, invalidateExisting revokes earlier sessions, and only the user itself or a
// root user may open one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptCredentialBundle, generateP256KeyPair, verifySessionJwtSignature } from '@turnkey/crypto';
import { newP256Key, sdkClient, sleep, startTestServer, submitBody, uniqueName, type ApiKeyPair, type TestServer } from '../server/harness.js';
import { checkAwaitsConsensus } from '../server/checks.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

/** The API key pair inside a credential bundle, as a browser or app would recover it. */
function openBundle(bundle: string, embedded: string): ApiKeyPair {
  const privateKey = decryptCredentialBundle(bundle, embedded);
  return { privateKey, publicKey: bytesToHex(p256.getPublicKey(hexToBytes(privateKey), true)) };
}

async function session(client = ts.sdk, params: Record<string, unknown> = {}): Promise<{ r: any; key: ApiKeyPair }> {
  const kp = generateP256KeyPair();
  const r: any = await client.createReadWriteSession({ targetPublicKey: kp.publicKeyUncompressed, ...params } as any);
  expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  return { r, key: openBundle(r.credentialBundle, kp.privateKey) };
}

describe('create_read_write_session', () => {
  it('returns whoami fields and a credential bundle whose key acts as the user, registered as a 900 s session key', async () => {
    const { r, key } = await session();
    expect(r).toMatchObject({ organizationId: ts.orgId, userId: ts.rootUserId, organizationName: ts.server.bootstrap.organizationName });
    expect(r.username).toBeTypeOf('string');
    const asSession = sdkClient(ts.url, key, ts.orgId);
    const who: any = await asSession.getWhoami();
    expect(who.userId).toBe(ts.rootUserId);
    const w: any = await asSession.createWallet({ walletName: uniqueName('by-session'), accounts: [] } as any);
    expect(w.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const keys: any = await ts.sdk.getApiKeys({ userId: ts.rootUserId } as any);
    const k = keys.apiKeys.find((x: any) => x.apiKeyId === r.apiKeyId);
    expect(k.credential).toEqual({ publicKey: key.publicKey, type: 'CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256' });
    expect(k.expirationSeconds).toBe('900');
    expect(k.apiKeyName).toMatch(/^Read Write Session - \d+$/);
  });

  it('expires after expirationSeconds', async () => {
    const { key } = await session(ts.sdk, { expirationSeconds: '4', apiKeyName: 'short' });
    const body = JSON.stringify({ organizationId: ts.orgId });
    expect((await ts.raw('/public/v1/query/whoami', body, { key })).status).toBe(200);
    await sleep(4300);
    const late = await ts.raw('/public/v1/query/whoami', body, { key });
    expect(late.status, late.text).toBe(401);
  });

  it("invalidateExisting revokes the user's earlier sessions and keeps its other API keys", async () => {
    const a = await session();
    const b = await session(ts.sdk, { invalidateExisting: true });
    const body = JSON.stringify({ organizationId: ts.orgId });
    expect((await ts.raw('/public/v1/query/whoami', body, { key: a.key })).status).toBe(401);
    expect((await ts.raw('/public/v1/query/whoami', body, { key: b.key })).status).toBe(200);
    expect((await ts.raw('/public/v1/query/whoami', body)).status).toBe(200);
  });

  it('a root user opens one for another user; a non-root user only for itself', async () => {
    const plain = newP256Key();
    const made: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('plain'), apiKeys: [{ apiKeyName: 'k', publicKey: plain.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const plainId = made.userIds[0];
    const forPlain = await session(ts.sdk, { userId: plainId });
    expect((await sdkClient(ts.url, forPlain.key, ts.orgId).getWhoami() as any).userId).toBe(plainId);

    const own = await session(sdkClient(ts.url, plain, ts.orgId));
    expect(own.r.userId).toBe(plainId);
    const kp = generateP256KeyPair();
    const denied = await ts.raw('/public/v1/submit/create_read_write_session',
      submitBody('ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', ts.orgId, { targetPublicKey: kp.publicKeyUncompressed, userId: ts.rootUserId }), { key: plain });
    checkAwaitsConsensus(denied, 'a session for another user');
  });

  it('refuses a bad target key or expiry with 400 and stores nothing', async () => {
    const before = (await ts.sdk.getApiKeys({ userId: ts.rootUserId } as any) as any).apiKeys.length;
    for (const [params, field] of [
      [{ targetPublicKey: '04abcd' }, 'targetPublicKey'],
      [{}, 'targetPublicKey'],
      [{ targetPublicKey: generateP256KeyPair().publicKeyUncompressed, expirationSeconds: '0' }, 'expirationSeconds'],
    ] as [Record<string, unknown>, string][]) {
      const r = await ts.raw('/public/v1/submit/create_read_write_session', submitBody('ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', ts.orgId, params));
      expect(r.status, r.text).toBe(400);
      expect(r.json.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field))).toContain(field);
    }
    expect((await ts.sdk.getApiKeys({ userId: ts.rootUserId } as any) as any).apiKeys.length).toBe(before);
  });
});

describe('create_read_only_session', () => {
  it('gives the stamping user a one-hour read-only session JWT signed by the session signer; no key is made', async () => {
    const before = (await ts.sdk.getApiKeys({ userId: ts.rootUserId } as any) as any).apiKeys.length;
    const t0 = Math.floor(Date.now() / 1000);
    const r: any = await ts.sdk.createReadOnlySession({});
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.activity.type).toBe('ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION');
    const who: any = await ts.sdk.getWhoami({});
    expect(r).toMatchObject({ organizationId: who.organizationId, organizationName: who.organizationName, userId: who.userId, username: who.username });
    expect(Number(r.sessionExpiry)).toBeGreaterThanOrEqual(t0 + 3600);
    expect(Number(r.sessionExpiry)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
    expect(await verifySessionJwtSignature(r.session, ts.server.bootstrap.sessionSignerPublicKey!)).toBe(true);
    const claims = JSON.parse(atob(r.session.split('.')[1]));
    expect(claims).toEqual({ exp: Number(r.sessionExpiry), session_type: 'SESSION_TYPE_READ_ONLY', user_id: who.userId, organization_id: who.organizationId });
    expect((await ts.sdk.getApiKeys({ userId: ts.rootUserId } as any) as any).apiKeys.length).toBe(before);
  });

  it('a non-root user opens one for itself', async () => {
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('reader'), apiKeys: [{ apiKeyName: 'r', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const r: any = await sdkClient(ts.url, key, ts.orgId).createReadOnlySession({});
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.userId).toBe(u.userIds[0]);
    expect(JSON.parse(atob(r.session.split('.')[1])).user_id).toBe(u.userIds[0]);
  });
});
