// Passkeys: registration (create_authenticators, create_users, create_sub_organization) from
// WebAuthn attestations, and X-Stamp-Webauthn stamps, made by a software authenticator built from
// the WebAuthn data formats with @noble/curves (keys, signatures) and CBOR from @simplewebauthn;
// requests go through @turnkey/http's TurnkeyClient with a stamper of that authenticator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { startTestServer, submitBody, uniqueName, type TestServer } from '../server/harness.js';
import { SoftPasskey, b64u, enc } from '../server/softPasskey.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

/** A request carrying only the given X-Stamp-Webauthn (no X-Stamp). */
const raw = (path: string, body: string, stamp: string) => ts.raw(path, body, { key: undefined, headers: { 'X-Stamp-Webauthn': stamp } });
const withAttestation = (p: ReturnType<SoftPasskey['params']>, over: object) => ({ ...p, attestation: { ...p.attestation, ...over } });
const fieldsOf = (r: { json: any }): string[] => r.json.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));

describe('passkeys', () => {
  it('create_authenticators registers a passkey; its stamps work through @turnkey/http for queries, submits and signing', async () => {
    const pk = new SoftPasskey();
    const made: any = await ts.sdk.createAuthenticators({ userId: ts.rootUserId, authenticators: [pk.params()] } as any);
    expect(made.authenticatorIds).toHaveLength(1);
    const listed: any = await ts.sdk.getAuthenticators({ userId: ts.rootUserId } as any);
    const a = listed.authenticators.find((x: any) => x.authenticatorId === made.authenticatorIds[0]);
    expect(a).toMatchObject({
      credentialId: pk.credentialId, attestationType: 'none', transports: ['AUTHENTICATOR_TRANSPORT_INTERNAL'], authenticatorName: 'soft passkey',
      credential: { publicKey: pk.publicKey, type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR' }, aaguid: '00000000-0000-0000-0000-000000000000',
    });
    expect((await ts.sdk.getAuthenticator({ authenticatorId: a.authenticatorId } as any) as any).authenticator).toEqual(a);
    const users: any = await ts.sdk.getUsers();
    expect(users.users.find((u: any) => u.userId === ts.rootUserId).authenticators.map((x: any) => x.authenticatorId)).toContain(a.authenticatorId);

    const c = pk.client(ts.url);
    expect((await c.getWhoami({ organizationId: ts.orgId })).userId).toBe(ts.rootUserId);
    const w: any = await c.createWallet({ type: 'ACTIVITY_TYPE_CREATE_WALLET', timestampMs: String(Date.now()), organizationId: ts.orgId,
      parameters: { walletName: uniqueName('by-passkey'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] } });
    expect(w.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const address = w.activity.result.createWalletResult.addresses[0];
    const digest = keccak_256(enc.encode('signed with a passkey stamp'));
    const s: any = await c.signRawPayload({ type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', timestampMs: String(Date.now()), organizationId: ts.orgId,
      parameters: { signWith: address, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' } });
    const r = s.activity.result.signRawPayloadResult;
    const pub = secp256k1.Signature.fromBytes(hexToBytes(r.r + r.s)).addRecoveryBit(Number(r.v)).recoverPublicKey(digest).toBytes(false);
    expect(`0x${bytesToHex(keccak_256(pub.slice(1)).slice(-20))}`).toBe(address.toLowerCase());
  });

  it('refuses stamps over other bytes, unknown credentials, malformed headers and replayed counters', async () => {
    const pk = new SoftPasskey(undefined, undefined, true);
    await ts.sdk.createAuthenticators({ userId: ts.rootUserId, authenticators: [pk.params()] } as any);
    const body = JSON.stringify({ organizationId: ts.orgId });
    expect((await raw('/public/v1/query/whoami', body, pk.stamp(body))).status).toBe(200);
    expect((await raw('/public/v1/query/whoami', body, pk.stamp(body, { challengeOf: body + ' ' }))).status).toBe(401);
    const stranger = new SoftPasskey();
    const unknown = await raw('/public/v1/query/whoami', body, stranger.stamp(body));
    expect(unknown.status).toBe(401);
    expect(unknown.json.details[0].turnkeyErrorCode ?? JSON.stringify(unknown.json)).toMatch(/CREDENTIAL_NOT_FOUND/);
    expect((await raw('/public/v1/query/whoami', body, 'not json')).status).toBe(401);
    // The credential id with base64 padding is the same credential.
    const padded = JSON.parse(pk.stamp(body));
    padded.credentialId += '='.repeat((4 - (padded.credentialId.length % 4)) % 4);
    expect(padded.credentialId).toMatch(/=$/);
    expect((await raw('/public/v1/query/whoami', body, JSON.stringify(padded))).status).toBe(200);
    // The authenticator counts its signatures: an old stamp (lower counter) is refused.
    const old = pk.stamp(body);
    expect((await raw('/public/v1/query/whoami', body, pk.stamp(body))).status).toBe(200);
    expect((await raw('/public/v1/query/whoami', body, old)).status).toBe(401);
  });

  it('checks attestations: challenge, type, packed signature; FEATURE_NAME_WEBAUTHN_ORIGINS limits origins', async () => {
    const pk = new SoftPasskey();
    const submit = (params: object) => ts.raw('/public/v1/submit/create_authenticators',
      submitBody('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', ts.orgId, { userId: ts.rootUserId, authenticators: [params] }));
    const cases: [object, string][] = [
      [pk.params(undefined, { clientChallenge: b64u('other') }), 'authenticators[0].challenge'],
      [pk.params(undefined, { type: 'webauthn.get' }), 'authenticators[0].attestation.clientDataJson'],
      [pk.params(undefined, { fmt: 'badpacked' }), 'authenticators[0].attestation'],
      [withAttestation(pk.params(), { credentialId: b64u(randomBytes(16)) }), 'authenticators[0].attestation.credentialId'],
    ];
    for (const [params, field] of cases) {
      const r = await submit(params);
      expect(r.status, r.text).toBe(200);
      expect(r.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
      expect(r.json.activity.failure.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field))).toContain(field);
    }
    const packed = new SoftPasskey();
    expect((await submit(packed.params(undefined, { fmt: 'packed' }))).json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const bad = await ts.raw('/public/v1/submit/create_authenticators', submitBody('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', ts.orgId, { userId: ts.rootUserId, authenticators: [{ authenticatorName: 'x' }] }));
    expect(bad.status).toBe(400);
    expect(fieldsOf(bad).some((f) => f.startsWith('authenticators[0]'))).toBe(true);
    // An attestation object that is not CBOR at all is malformed input, refused before any activity.
    const junk = await submit(withAttestation(pk.params(), { attestationObject: b64u('junk') }));
    expect(junk.status, junk.text).toBe(400);
    expect(fieldsOf(junk)).toContain('authenticators[0].attestation.attestationObject');

    await ts.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBAUTHN_ORIGINS', value: 'https://wallet.example.com' } as any);
    try {
      const elsewhere = new SoftPasskey('https://evil.example.org', 'example.org');
      expect((await submit(elsewhere.params())).json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
      const body = JSON.stringify({ organizationId: ts.orgId });
      expect((await raw('/public/v1/query/whoami', body, packed.stamp(body))).status).toBe(200);
      expect((await raw('/public/v1/query/whoami', body, packed.stamp(body, { origin: 'https://evil.example.org' }))).status).toBe(401);
    } finally {
      await ts.sdk.removeOrganizationFeature({ name: 'FEATURE_NAME_WEBAUTHN_ORIGINS' } as any);
    }
  });

  // guards: FEATURE_NAME_WEBAUTHN_ORIGINS takes origins only (an entry no clientDataJSON origin can equal shut every passkey out)
  it('FEATURE_NAME_WEBAUTHN_ORIGINS refuses an entry that is no origin (400 naming value) and keeps what was set', async () => {
    const pk = new SoftPasskey();
    await ts.sdk.createAuthenticators({ userId: ts.rootUserId, authenticators: [pk.params()] } as any);
    const body = JSON.stringify({ organizationId: ts.orgId });
    const set = (value: string) => ts.raw('/public/v1/submit/set_organization_feature', submitBody('ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE', ts.orgId, { name: 'FEATURE_NAME_WEBAUTHN_ORIGINS', value }));
    try {
      for (const value of ['wallet.example.com', 'https://wallet.example.com/', 'https://wallet.example.com/login', 'https://Wallet.example.com', 'https://wallet.example.com,wallet.example.com']) {
        const r = await set(value);
        expect(r.status, `${value}: ${r.text}`).toBe(400);
        expect(fieldsOf(r)).toEqual(['value']);
        const configs: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
        expect(configs.configs.features.find((f: any) => f.name === 'FEATURE_NAME_WEBAUTHN_ORIGINS'), value).toBeUndefined();
        expect((await raw('/public/v1/query/whoami', body, pk.stamp(body))).status, `the passkey still stamps after ${value}`).toBe(200);
      }
      for (const value of ['https://wallet.example.com http://localhost:3000', 'https://wallet.example.com, android:apk-key-hash:Gx4ZlUt_hIqVVvQx0O6Pdlwz1W1Fy8kXbB3Lx9f5s8A']) {
        const r = await set(value);
        expect(r.status, `${value}: ${r.text}`).toBe(200);
        expect(r.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      }
      expect((await raw('/public/v1/query/whoami', body, pk.stamp(body))).status).toBe(200);
    } finally {
      await ts.sdk.removeOrganizationFeature({ name: 'FEATURE_NAME_WEBAUTHN_ORIGINS' } as any).catch(() => undefined);
    }
  });

  it('users and sub-organization root users created with a passkey act with it; deleting the last credential of a quorum fails', async () => {
    const pk = new SoftPasskey();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('passkey-user'), apiKeys: [], authenticators: [pk.params()], oauthProviders: [], userTags: [] }] } as any);
    expect((await pk.client(ts.url).getWhoami({ organizationId: ts.orgId })).userId).toBe(u.userIds[0]);

    const rootPk = new SoftPasskey();
    const sub: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('passkey-sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'owner', apiKeys: [], authenticators: [rootPk.params()], oauthProviders: [] }],
    } as any);
    const byCredential: any = await ts.sdk.getSubOrgIds({ filterType: 'CREDENTIAL_ID', filterValue: rootPk.credentialId } as any);
    expect(byCredential.organizationIds).toEqual([sub.subOrganizationId]);
    const asOwner = rootPk.client(ts.url);
    expect((await asOwner.getWhoami({ organizationId: sub.subOrganizationId })).organizationId).toBe(sub.subOrganizationId);
    const mine: any = await asOwner.getAuthenticators({ organizationId: sub.subOrganizationId, userId: sub.rootUserIds[0] });
    const del: any = await asOwner.deleteAuthenticators({ type: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS', timestampMs: String(Date.now()), organizationId: sub.subOrganizationId,
      parameters: { userId: sub.rootUserIds[0], authenticatorIds: [mine.authenticators[0].authenticatorId] } });
    expect(del.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(del.activity.failure.message).toMatch(/locked out/);
    expect((await asOwner.getWhoami({ organizationId: sub.subOrganizationId })).userId).toBe(sub.rootUserIds[0]);
  });
});
