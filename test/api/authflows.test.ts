// The authentication flows against real parts on loopback: an OIDC issuer (discovery document and
// JWKS over HTTP, RS256 ID tokens made with jose) and an SMTP server (smtp-server; messages parsed
// with mailparser). An application's backend (the parent organization's root key, through
// @turnkey/sdk-server) runs the flows for a sub-organization's user; what they hand out is opened
// with @turnkey/crypto (decryptCredentialBundle, verifySessionJwtSignature) and used to stamp.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptCredentialBundle, encryptOtpCodeToBundle, generateP256KeyPair, verifyOtpVerificationToken, verifySessionJwtSignature } from '@turnkey/crypto';
import { freshDataDir, sdkClient, sleep, startTestServer, uniqueName, type ApiKeyPair, type TestServer } from '../server/harness.js';
import { SoftPasskey } from '../server/softPasskey.js';
import { startMailSink, type MailSink } from '../server/mailsink.js';

// ---- a loopback OIDC issuer ------------------------------------------------------------------

interface Issuer { url: string; token(claims: Record<string, unknown>, opts?: { exp?: string; key?: CryptoKey }): Promise<string>; close(): Promise<void> }

async function startIssuer(): Promise<Issuer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const server = http.createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const body = req.url === '/.well-known/openid-configuration' ? { issuer: base, jwks_uri: `${base}/jwks` }
      : req.url === '/jwks' ? { keys: [jwk] } : undefined;
    res.writeHead(body ? 200 : 404, { 'Content-Type': 'application/json' }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    token: (claims, opts = {}) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(String(claims.iss ?? url))
      .setAudience('app-client-id').setIssuedAt().setExpirationTime(opts.exp ?? '5m').sign(opts.key ?? privateKey),
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

// ---- a loopback SMTP server ------------------------------------------------------------------

let sink: MailSink;
const nextMail = (to: string): ReturnType<MailSink['nextMail']> => sink.nextMail(to);

// ---- the server ------------------------------------------------------------------------------

let ts: TestServer;
let issuer: Issuer;

beforeAll(async () => {
  issuer = await startIssuer();
  sink = await startMailSink();
  ts = await startTestServer({ oidcIssuers: [issuer.url], smtpUrl: sink.url, mailFrom: 'Example Wallet <login@wallet.example>' } as never);
});
afterAll(async () => {
  await ts?.stop();
  await issuer?.close();
  await sink?.close();
});

const nonce = (publicKey: string) => bytesToHex(sha256(new TextEncoder().encode(publicKey)));

/** The API key pair inside a credential bundle, as a browser would recover it. */
function openBundle(bundle: string, embedded: string): ApiKeyPair {
  const privateKey = decryptCredentialBundle(bundle, embedded);
  return { privateKey, publicKey: bytesToHex(p256.getPublicKey(hexToBytes(privateKey), true)) };
}

/** A sub-organization with one root user (e-mail address, optional OAuth identity), made by the parent. */
async function subOrg(opts: { email?: string; subject?: string; apiKey?: boolean; flags?: Record<string, boolean> } = {}): Promise<{ id: string; userId: string; email: string; key: ApiKeyPair }> {
  const email = opts.email ?? `${uniqueName('u')}@example.com`.toLowerCase();
  const key = p256.utils.randomSecretKey();
  const r: any = await ts.sdk.createSubOrganization({
    subOrganizationName: uniqueName('app-user'), rootQuorumThreshold: 1, ...opts.flags,
    rootUsers: [{
      userName: 'alice', userEmail: email, authenticators: [],
      apiKeys: opts.apiKey ? [{ apiKeyName: 'k', publicKey: bytesToHex(p256.getPublicKey(key, true)), curveType: 'API_KEY_CURVE_P256' }] : [],
      oauthProviders: opts.subject ? [{ providerName: 'loopback', oidcToken: await issuer.token({ sub: opts.subject }) }] : [],
    }],
  } as any);
  expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
  return { id: r.subOrganizationId, userId: r.rootUserIds[0], email, key: { publicKey: bytesToHex(p256.getPublicKey(key, true)), privateKey: bytesToHex(key) } };
}

const whoamiAs = (key: ApiKeyPair, orgId: string) => sdkClient(ts.url, key, orgId).getWhoami() as Promise<any>;

describe('OAuth', () => {
  it('links an identity at sub-organization creation; oauth gives its user a key in a credential bundle', async () => {
    const sub = await subOrg({ subject: uniqueName('google-sub') });
    const providers: any = await ts.sdk.getOauthProviders({ organizationId: sub.id, userId: sub.userId } as any);
    expect(providers.oauthProviders).toHaveLength(1);
    expect(providers.oauthProviders[0]).toMatchObject({ providerName: 'loopback', issuer: issuer.url, audience: 'app-client-id' });
    const subject = providers.oauthProviders[0].subject;
    // list_suborgs finds the sub-organization by a token of that identity.
    const found: any = await ts.sdk.getSubOrgIds({ filterType: 'OIDC_TOKEN', filterValue: await issuer.token({ sub: subject }) } as any);
    expect(found.organizationIds).toEqual([sub.id]);
    const other: any = await ts.sdk.getSubOrgIds({ filterType: 'OIDC_TOKEN', filterValue: await issuer.token({ sub: 'someone-else' }) } as any);
    expect(other.organizationIds).toEqual([]);

    const target = generateP256KeyPair();
    const oidcToken = await issuer.token({ sub: subject, nonce: nonce(target.publicKeyUncompressed) });
    const r: any = await ts.sdk.oauth({ organizationId: sub.id, oidcToken, targetPublicKey: target.publicKeyUncompressed } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.userId).toBe(sub.userId);
    const key = openBundle(r.credentialBundle, target.privateKey);
    const who = await whoamiAs(key, sub.id);
    expect(who).toMatchObject({ organizationId: sub.id, userId: sub.userId });
    const keys: any = await ts.sdk.getApiKeys({ organizationId: sub.id, userId: sub.userId } as any);
    expect(keys.apiKeys.find((k: any) => k.apiKeyId === r.apiKeyId).credential).toEqual({ publicKey: key.publicKey, type: 'CREDENTIAL_TYPE_OAUTH_KEY_P256' });
  });

  it('refuses tokens that are not bound, expired, foreign or forged, and identities nobody has; nothing is stored', async () => {
    const subject = uniqueName('s');
    const sub = await subOrg({ subject });
    const target = generateP256KeyPair();
    const pk = target.publicKeyUncompressed;
    const before = (await ts.sdk.getActivities({ organizationId: sub.id } as any) as any).activities.length;
    const { privateKey: otherKey } = await generateKeyPair('RS256');
    const cases: [string, string, RegExp][] = [
      ['wrong nonce', await issuer.token({ sub: subject, nonce: nonce('04' + 'ab'.repeat(64)) }), /nonce/],
      ['no nonce', await issuer.token({ sub: subject }), /nonce/],
      ['expired', await issuer.token({ sub: subject, nonce: nonce(pk) }, { exp: '-2m' }), /expired/],
      ['untrusted issuer', await issuer.token({ sub: subject, nonce: nonce(pk), iss: 'https://evil.example' }), /not trusted/],
      ['forged signature', await issuer.token({ sub: subject, nonce: nonce(pk) }, { key: otherKey }), /signature/],
      ['not a JWT', 'abc.def', /compact JWT/],
    ];
    for (const [what, oidcToken, msg] of cases) {
      const res = await ts.raw('/public/v1/submit/oauth', JSON.stringify({
        type: 'ACTIVITY_TYPE_OAUTH', timestampMs: String(Date.now()), organizationId: sub.id, parameters: { oidcToken, targetPublicKey: pk },
      }));
      expect(res.status, what).toBe(400);
      expect(res.json.message, what).toMatch(msg);
      expect(res.json.details.flatMap((d: any) => d.fieldViolations ?? []).map((f: any) => f.field), what).toContain('oidcToken');
    }
    expect((await ts.sdk.getActivities({ organizationId: sub.id } as any) as any).activities.length).toBe(before);
    // A valid token of an identity no user has: 404, nothing stored (an unknown id).
    const stranger: any = await ts.sdk.oauth({ organizationId: sub.id, oidcToken: await issuer.token({ sub: 'nobody', nonce: nonce(pk) }), targetPublicKey: pk } as any).catch((e: unknown) => e);
    expect(stranger.message).toMatch(/^Turnkey error 5: no user of this organization has this OAuth identity/);
    expect((await ts.sdk.getActivities({ organizationId: sub.id } as any) as any).activities.length).toBe(before);
  });

  it('create/get/delete_oauth_providers by the user itself, not by the parent; an identity links to one user', async () => {
    const sub = await subOrg({ apiKey: true });
    const asUser = sdkClient(ts.url, sub.key, sub.id);
    const subject = uniqueName('gh');
    // The parent may not: linking an identity it controls would let it log in as the user.
    const byParent = await ts.sdk.createOauthProviders({ organizationId: sub.id, userId: sub.userId, oauthProviders: [{ providerName: 'p', oidcClaims: { iss: issuer.url, sub: 'parent-owned', aud: 'app-client-id' } }] } as any)
      .then(() => undefined, (e: Error) => e);
    expect(String(byParent)).toMatch(/Turnkey error 7/);
    const created: any = await asUser.createOauthProviders({ organizationId: sub.id, userId: sub.userId, oauthProviders: [{ providerName: 'github', oidcToken: await issuer.token({ sub: subject }) }] } as any);
    expect(created.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(created.providerIds).toHaveLength(1);
    const user: any = await asUser.getUser({ organizationId: sub.id, userId: sub.userId } as any);
    expect(user.user.oauthProviders.map((p: any) => p.providerId)).toEqual(created.providerIds);
    const again: any = await asUser.createOauthProviders({ organizationId: sub.id, userId: sub.userId, oauthProviders: [{ providerName: 'dup', oidcToken: await issuer.token({ sub: subject }) }] } as any);
    expect(again.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(again.activity.failure.message).toMatch(/already linked/);
    // V2 may give the claims instead of a token.
    const byClaims: any = await asUser.createOauthProviders({ organizationId: sub.id, userId: sub.userId, oauthProviders: [{ providerName: 'apple', oidcClaims: { iss: 'https://appleid.apple.com', sub: 'x1', aud: 'com.example' } }] } as any);
    expect(byClaims.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const deleted: any = await asUser.deleteOauthProviders({ organizationId: sub.id, userId: sub.userId, providerIds: created.providerIds } as any);
    expect(deleted.providerIds).toEqual(created.providerIds);
    const after: any = await asUser.getOauthProviders({ organizationId: sub.id, userId: sub.userId } as any);
    expect(after.oauthProviders.map((p: any) => p.providerName)).toEqual(['apple']);
  });

  it('oauth_login registers the client\'s key and returns a session JWT that @turnkey/crypto verifies with the published key', async () => {
    const subject = uniqueName('s');
    const sub = await subOrg({ subject });
    const sk = p256.utils.randomSecretKey();
    const publicKey = bytesToHex(p256.getPublicKey(sk, true));
    const r: any = await ts.sdk.oauthLogin({ organizationId: sub.id, oidcToken: await issuer.token({ sub: subject, nonce: nonce(publicKey) }), publicKey, expirationSeconds: '600' } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const signer = ts.server.bootstrap.sessionSignerPublicKey!;
    expect(signer).toMatch(/^04[0-9a-f]{128}$/);
    expect(await verifySessionJwtSignature(r.session, signer)).toBe(true);
    expect(await verifySessionJwtSignature(r.session.replace(/\.[^.]+\./, (m: string) => m.slice(0, -2) + 'A.'), signer)).toBe(false);
    const [, payload] = r.session.split('.');
    const claims = JSON.parse(atob(payload)); // as @turnkey/core parseSession reads it
    expect(claims).toMatchObject({ public_key: publicKey, session_type: 'SESSION_TYPE_READ_WRITE', user_id: sub.userId, organization_id: sub.id });
    expect(claims.exp).toBeGreaterThan(Date.now() / 1000 + 590);
    const who = await whoamiAs({ publicKey, privateKey: bytesToHex(sk) }, sub.id);
    expect(who.userId).toBe(sub.userId);
  });

  it('stamp_login gives the stamping user a session for a new key', async () => {
    const sk = p256.utils.randomSecretKey();
    const publicKey = bytesToHex(p256.getPublicKey(sk, false));
    const r: any = await ts.sdk.stampLogin({ publicKey } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await verifySessionJwtSignature(r.session, ts.server.bootstrap.sessionSignerPublicKey!)).toBe(true);
    const claims = JSON.parse(atob(r.session.split('.')[1]));
    expect(claims).toMatchObject({ user_id: ts.rootUserId, organization_id: ts.orgId, public_key: bytesToHex(p256.getPublicKey(sk, true)) });
    expect((await whoamiAs({ publicKey: claims.public_key, privateKey: bytesToHex(sk) }, ts.orgId)).userId).toBe(ts.rootUserId);
    // Logging in with the same key again renews its registration instead of adding a second one.
    const again: any = await ts.sdk.stampLogin({ publicKey, expirationSeconds: '1200' } as any);
    expect(again.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const keys: any = await ts.sdk.getApiKeys({ userId: ts.rootUserId } as any);
    const mine = keys.apiKeys.filter((k: any) => k.credential.publicKey === claims.public_key);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ expirationSeconds: '1200', credential: { type: 'CREDENTIAL_TYPE_LOGIN' } });
  });
});

describe('e-mail', () => {
  it('email_auth mails the credential bundle inside the magic link; the reply holds no secret', async () => {
    const sub = await subOrg();
    const target = generateP256KeyPair();
    const r: any = await ts.sdk.emailAuth({
      organizationId: sub.id, email: sub.email.toUpperCase(), targetPublicKey: target.publicKeyUncompressed,
      emailCustomization: { appName: 'Example Wallet', magicLinkTemplate: 'https://wallet.example/auth?bundle=%s' },
    } as any);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.userId).toBe(sub.userId);
    expect(Object.keys(r).sort()).toEqual(['activity', 'apiKeyId', 'userId']);
    const mail = await nextMail(sub.email);
    expect(mail.subject).toBe('Log in to Example Wallet');
    expect(mail.from?.value[0]).toMatchObject({ name: 'Example Wallet', address: 'login@wallet.example' });
    const link = /https:\/\/wallet\.example\/auth\?bundle=([1-9A-HJ-NP-Za-km-z]+)/.exec(mail.text ?? '');
    expect(link, mail.text).not.toBeNull();
    const key = openBundle(link![1]!, target.privateKey);
    expect((await whoamiAs(key, sub.id)).userId).toBe(sub.userId);
    // The bundle is nowhere in the activity.
    const act: any = await ts.sdk.getActivity({ organizationId: sub.id, activityId: r.activity.id } as any);
    expect(JSON.stringify(act)).not.toContain(link![1]);
  });

  it('init_otp_auth mails a code; otp_auth with it gives a key; wrong codes are counted and use the code up', async () => {
    const sub = await subOrg();
    const init: any = await ts.sdk.initOtpAuth({ organizationId: sub.id, otpType: 'OTP_TYPE_EMAIL', contact: sub.email, appName: 'Example Wallet' } as any);
    expect(init.activity.status, JSON.stringify(init.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const mail = await nextMail(sub.email);
    const code = /code is ([0-9A-Z]{9})\b/.exec(mail.text ?? '')![1]!;
    expect(code).toMatch(/^[0-9ABCDEFGHJKMNPQRSTVWXYZ]{9}$/);
    const target = generateP256KeyPair();
    const wrong: any = await ts.sdk.otpAuth({ organizationId: sub.id, otpId: init.otpId, otpCode: code === '000000000' ? '111111111' : '000000000', targetPublicKey: target.publicKeyUncompressed } as any);
    expect(wrong.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(wrong.activity.failure.message).toBe('wrong one-time code');
    const ok: any = await ts.sdk.otpAuth({ organizationId: sub.id, otpId: init.otpId, otpCode: code.toLowerCase(), targetPublicKey: target.publicKeyUncompressed } as any);
    expect(ok.activity.status, JSON.stringify(ok.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const key = openBundle(ok.credentialBundle, target.privateKey);
    expect((await whoamiAs(key, sub.id)).userId).toBe(sub.userId);
    // Used once: the same code again finds nothing.
    const reuse: any = await ts.sdk.otpAuth({ organizationId: sub.id, otpId: init.otpId, otpCode: code, targetPublicKey: target.publicKeyUncompressed } as any).catch((e: unknown) => e);
    expect(reuse.message).toMatch(/^Turnkey error 5: no such one-time code/);

    // Three wrong codes: used up, even the right one then fails.
    const second: any = await ts.sdk.initOtpAuth({ organizationId: sub.id, otpType: 'OTP_TYPE_EMAIL', contact: sub.email, appName: 'W', otpLength: 6, alphanumeric: false } as any);
    const code2 = /code is (\d{6})\b/.exec((await nextMail(sub.email)).text ?? '')![1]!;
    const bad = code2 === '999999' ? '888888' : '999999';
    for (let i = 0; i < 3; i++) {
      const r: any = await ts.sdk.otpAuth({ organizationId: sub.id, otpId: second.otpId, otpCode: bad, targetPublicKey: target.publicKeyUncompressed } as any);
      expect(r.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    }
    const late: any = await ts.sdk.otpAuth({ organizationId: sub.id, otpId: second.otpId, otpCode: code2, targetPublicKey: target.publicKeyUncompressed } as any).catch((e: unknown) => e);
    expect(late.message).toMatch(/^Turnkey error 5: no such one-time code/);
  });

  it('init_user_email_recovery mails a recovery key that can only run recover_user, which adds a passkey and retires the key', async () => {
    const sub = await subOrg();
    const target = generateP256KeyPair();
    const init: any = await ts.sdk.initUserEmailRecovery({ organizationId: sub.id, email: sub.email, targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'Example Wallet' } } as any);
    expect(init.activity.status, JSON.stringify(init.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const mail = await nextMail(sub.email);
    expect(mail.subject).toBe('Recover your Example Wallet account');
    const bundle = /\n([1-9A-HJ-NP-Za-km-z]{100,})\n/.exec(mail.text ?? '')![1]!;
    const key = openBundle(bundle, target.privateKey);
    const asRecovery = sdkClient(ts.url, key, sub.id);
    const refused = await asRecovery.createWallet({ walletName: 'x', accounts: [] } as any).then(() => undefined, (e: Error) => e);
    expect(String(refused)).toMatch(/recovery credential/);
    const passkey = new SoftPasskey();
    const r: any = await asRecovery.recoverUser({ userId: sub.userId, authenticator: passkey.params() } as any);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.authenticatorId).toHaveLength(1);
    const who: any = await passkey.client(ts.url).getWhoami({ organizationId: sub.id });
    expect(who.userId).toBe(sub.userId);
    const stale = await ts.raw('/public/v1/query/whoami', JSON.stringify({ organizationId: sub.id }), { key });
    expect(stale.status).toBe(401);
  });

  it('honours the disable* flags a sub-organization was created with', async () => {
    const sub = await subOrg({ flags: { disableEmailAuth: true, disableOtpEmailAuth: true } });
    const target = generateP256KeyPair().publicKeyUncompressed;
    const ea: any = await ts.sdk.emailAuth({ organizationId: sub.id, email: sub.email, targetPublicKey: target, emailCustomization: { appName: 'W' } } as any);
    expect(ea.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(ea.activity.failure.message).toMatch(/e-mail authentication is switched off for this organization \(disableEmailAuth/);
    const otp: any = await ts.sdk.initOtpAuth({ organizationId: sub.id, otpType: 'OTP_TYPE_EMAIL', contact: sub.email, appName: 'W' } as any);
    expect(otp.activity.failure.message).toMatch(/disableOtpEmailAuth/);
    // Recovery was not switched off.
    const rec: any = await ts.sdk.initUserEmailRecovery({ organizationId: sub.id, email: sub.email, targetPublicKey: target, emailCustomization: { appName: 'W' } } as any);
    expect(rec.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await nextMail(sub.email);
    const off = await subOrg({ flags: { disableEmailRecovery: true } });
    const rec2: any = await ts.sdk.initUserEmailRecovery({ organizationId: off.id, email: off.email, targetPublicKey: target, emailCustomization: { appName: 'W' } } as any);
    expect(rec2.activity.failure.message).toMatch(/disableEmailRecovery/);
  });

  it('refuses an unknown address, SMS codes, and a caller that is not a root user', async () => {
    const sub = await subOrg();
    const target = generateP256KeyPair();
    const nobody: any = await ts.sdk.emailAuth({ organizationId: sub.id, email: 'nobody@example.com', targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'W' } } as any).catch((e: unknown) => e);
    expect(nobody.message).toMatch(/^Turnkey error 5: /);
    const sms = await ts.raw('/public/v1/submit/init_otp_auth', JSON.stringify({
      type: 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3', timestampMs: String(Date.now()), organizationId: sub.id,
      parameters: { otpType: 'OTP_TYPE_SMS', contact: '+15555550100', appName: 'W' },
    }));
    expect(sms.status).toBe(400);
    expect(sms.json.message).toMatch(/no text messages/);
    const v3 = await ts.raw('/public/v1/submit/email_auth', JSON.stringify({
      type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3', timestampMs: String(Date.now()), organizationId: sub.id,
      parameters: { email: sub.email, targetPublicKey: target.publicKeyUncompressed },
    }));
    expect(v3.status).toBe(400);
    expect(v3.json.details.flatMap((d: any) => d.fieldViolations ?? []).map((f: any) => f.field)).toContain('emailCustomization.appName');
    // What goes into the mail: a one-line app name, an http(s) magic link.
    const unsafe = await ts.raw('/public/v1/submit/email_auth', JSON.stringify({
      type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3', timestampMs: String(Date.now()), organizationId: sub.id,
      parameters: { email: sub.email, targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'W\r\nBcc: x@evil.example', magicLinkTemplate: 'javascript:alert(%s)' } },
    }));
    expect(unsafe.status).toBe(400);
    expect(unsafe.json.details.flatMap((d: any) => d.fieldViolations ?? []).map((f: any) => f.field).sort()).toEqual(['emailCustomization.appName', 'emailCustomization.magicLinkTemplate']);
    // A user of the parent organization that is not root may not run the flows for its sub-organizations.
    const member = p256.utils.randomSecretKey();
    const memberKey = { publicKey: bytesToHex(p256.getPublicKey(member, true)), privateKey: bytesToHex(member) };
    const created: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('m'), userEmail: 'm@example.com', userTags: [], authenticators: [], oauthProviders: [], apiKeys: [{ apiKeyName: 'm', publicKey: memberKey.publicKey, curveType: 'API_KEY_CURVE_P256' }] }] } as any);
    expect(created.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const denied = await sdkClient(ts.url, memberKey, ts.orgId).emailAuth({ organizationId: sub.id, email: sub.email, targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'W' } } as any)
      .then((r: any) => JSON.stringify(r.activity), (e: Error) => e);
    expect(String(denied)).toMatch(/only a root user/);
  });
});

describe('one-time codes with a verification token: init_otp, verify_otp, otp_login, sign-up, list_verified_suborgs', () => {
  const signer = () => ts.server.bootstrap.signerPublicKey!;
  /** A client key pair (the one @turnkey/core binds to the token) and its r||s hex signatures. */
  function clientKey() {
    const sk = p256.utils.randomSecretKey();
    const publicKey = bytesToHex(p256.getPublicKey(sk, true));
    return { sk, publicKey, sign: (message: string) => bytesToHex(p256.sign(sha256(new TextEncoder().encode(message)), sk, { prehash: false })) };
  }
  /** init_otp in the parent organization, the code from the mail, verify_otp with the encrypted code. */
  async function verifiedToken(email: string, key: ReturnType<typeof clientKey>) {
    const init: any = await ts.sdk.initOtp({ otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Example Wallet' } as any);
    expect(init.activity.status, JSON.stringify(init.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const code = /code is ([0-9A-Z]{9})\b/.exec((await nextMail(email)).text ?? '')![1]!;
    const encryptedOtpBundle = await encryptOtpCodeToBundle(code, init.otpEncryptionTargetBundle, key.publicKey, signer());
    const v: any = await ts.sdk.verifyOtp({ otpId: init.otpId, encryptedOtpBundle } as any);
    expect(v.activity.status, JSON.stringify(v.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    return v.verificationToken as string;
  }

  it('signs a user up with a verified address and logs it in with a second code', async () => {
    const email = `${uniqueName('signup')}@example.com`.toLowerCase();
    const key = clientKey();
    const token = await verifiedToken(email, key);
    const claims: any = await verifyOtpVerificationToken(token, signer());
    expect(claims).toMatchObject({ contact: email, organization_id: ts.orgId, public_key: key.publicKey, verification_type: 'OTP_TYPE_EMAIL' });
    expect(Number(claims.exp)).toBeGreaterThan(Date.now());

    const signup = (tok: string, name: string) => {
      const message = JSON.stringify({ signupV2: { email }, tokenId: claims.id, type: 'USAGE_TYPE_SIGNUP' });
      return ts.sdk.createSubOrganization({
        subOrganizationName: name, rootQuorumThreshold: 1,
        rootUsers: [{ userName: 'new user', userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
        verificationToken: tok, clientSignature: { publicKey: key.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature: key.sign(message) },
      } as any) as Promise<any>;
    };
    const sub = await signup(token, uniqueName('signed-up'));
    expect(sub.activity.status, JSON.stringify(sub.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const verified: any = await ts.sdk.getVerifiedSubOrgIds({ filterType: 'EMAIL', filterValue: email.toUpperCase() } as any);
    expect(verified.organizationIds).toEqual([sub.subOrganizationId]);
    const again = await signup(token, uniqueName('again'));
    expect(again.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(again.activity.failure.message).toMatch(/already used/);

    // Log in: a new code, and the session key signed for by the token's key.
    const token2 = await verifiedToken(email, key);
    const id2 = (await verifyOtpVerificationToken(token2, signer()) as any).id;
    const session = clientKey();
    const login = (message: string, signature = key.sign(message)) => ts.sdk.otpLogin({
      organizationId: sub.subOrganizationId, verificationToken: token2, publicKey: session.publicKey,
      clientSignature: { publicKey: key.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature },
    } as any) as Promise<any>;
    const good = JSON.stringify({ login: { publicKey: session.publicKey }, tokenId: id2, type: 'USAGE_TYPE_LOGIN' });
    // A signature that does not check out is refused (400) and spends nothing.
    const forged = await login(good, clientKey().sign(good)).then(() => undefined, (e: Error) => e);
    expect(String(forged)).toMatch(/Turnkey error 3: invalid client signature: the signature does not verify/);
    const otherKey = await login(JSON.stringify({ login: { publicKey: clientKey().publicKey }, tokenId: id2, type: 'USAGE_TYPE_LOGIN' })).then(() => undefined, (e: Error) => e);
    expect(String(otherKey)).toMatch(/login.publicKey/);
    const r: any = await login(good);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await verifySessionJwtSignature(r.session, ts.server.bootstrap.sessionSignerPublicKey!)).toBe(true);
    const who = await whoamiAs({ publicKey: session.publicKey, privateKey: bytesToHex(session.sk) }, sub.subOrganizationId);
    expect(who.userId).toBe(sub.rootUserIds[0]);
    const replay: any = await login(good);
    expect(replay.activity.failure.message).toMatch(/already used/);
  });

  it('refuses a wrong code and a bundle for another key; lists a sub-organization as verified once otp_auth proved the address', async () => {
    const sub = await subOrg();
    const none: any = await ts.sdk.getVerifiedSubOrgIds({ filterType: 'EMAIL', filterValue: sub.email } as any);
    expect(none.organizationIds).toEqual([]);
    const init: any = await ts.sdk.initOtp({ otpType: 'OTP_TYPE_EMAIL', contact: 'someone@example.com', appName: 'W' } as any);
    await nextMail('someone@example.com');
    const wrong = await encryptOtpCodeToBundle('WRONGCODE', init.otpEncryptionTargetBundle, clientKey().publicKey, signer());
    const v: any = await ts.sdk.verifyOtp({ otpId: init.otpId, encryptedOtpBundle: wrong } as any);
    expect(v.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(v.activity.failure.message).toBe('wrong one-time code');
    // A code of init_otp_auth is not one of init_otp (and the reverse).
    const authInit: any = await ts.sdk.initOtpAuth({ organizationId: sub.id, otpType: 'OTP_TYPE_EMAIL', contact: sub.email, appName: 'W' } as any);
    const code = /code is ([0-9A-Z]{9})\b/.exec((await nextMail(sub.email)).text ?? '')![1]!;
    const cross: any = await ts.sdk.verifyOtp({ organizationId: sub.id, otpId: authInit.otpId, encryptedOtpBundle: wrong } as any).catch((e: unknown) => e);
    expect(cross.message).toMatch(/^Turnkey error 5: no such one-time code/);
    const target = generateP256KeyPair();
    const ok: any = await ts.sdk.otpAuth({ organizationId: sub.id, otpId: authInit.otpId, otpCode: code, targetPublicKey: target.publicKeyUncompressed } as any);
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const listed: any = await ts.sdk.getVerifiedSubOrgIds({ filterType: 'EMAIL', filterValue: sub.email } as any);
    expect(listed.organizationIds).toEqual([sub.id]);
  });
});

describe('mail delivery: retries, refusals and restarts', () => {
  /** An SMTP server on `port` (0: any) that answers RCPT for temp-* with 451 once, for perm-* with 550. */
  async function flakySmtp(port = 0) {
    const got: ParsedMail[] = [];
    const attempts = new Map<string, number>();
    const server = new SMTPServer({
      authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false,
      onRcptTo(address, _s, cb) {
        const n = (attempts.get(address.address) ?? 0) + 1;
        attempts.set(address.address, n);
        const code = address.address.startsWith('perm-') ? 550 : address.address.startsWith('temp-') && n === 1 ? 451 : 0;
        if (code === 0) return cb();
        cb(Object.assign(new Error(code === 550 ? 'no such mailbox' : 'try again later'), { responseCode: code }));
      },
      onData(stream, _s, cb) { simpleParser(stream).then((m) => { got.push(m); cb(); }, cb); },
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    return { got, attempts, port: (server.server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
  }
  const waitFor = async (cond: () => boolean, ms = 5000) => { for (const until = Date.now() + ms; !cond() && Date.now() < until;) await sleep(20); return cond(); };
  async function userWithEmail(t: TestServer, email: string) {
    const r: any = await t.sdk.createUsers({ users: [{ userName: uniqueName('m'), userEmail: email, userTags: [], apiKeys: [], authenticators: [], oauthProviders: [] }] } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  }
  const mailAuth = (t: TestServer, email: string) => t.sdk.emailAuth({ email, targetPublicKey: generateP256KeyPair().publicKeyUncompressed, emailCustomization: { appName: 'W' } } as any) as Promise<any>;

  it('retries after a 4xx reply and gives up after a 5xx one', async () => {
    const smtp2 = await flakySmtp();
    const t = await startTestServer({ smtpUrl: `smtp://127.0.0.1:${smtp2.port}`, webhookRetryMs: 50 } as never);
    try {
      await userWithEmail(t, 'temp-a@example.com');
      await userWithEmail(t, 'perm-b@example.com');
      expect((await mailAuth(t, 'temp-a@example.com')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      expect((await mailAuth(t, 'perm-b@example.com')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      expect(await waitFor(() => smtp2.got.length === 1)).toBe(true);
      expect(smtp2.got[0]!.to).toMatchObject({ text: 'temp-a@example.com' });
      expect(smtp2.attempts.get('temp-a@example.com')).toBe(2);
      await sleep(400);
      expect(smtp2.attempts.get('perm-b@example.com')).toBe(1);
      expect(smtp2.got).toHaveLength(1);
    } finally {
      await t.stop();
      await smtp2.close();
    }
  });

  it('an SMTP server that drips its replies is cut off after WEBHOOK_TIMEOUT_MS: the attempt ends within its lease, so no other process sends the mail alongside it', async () => {
    // It greets at once; then each reply arrives a character at a time, never idle as long as the timeout: only a bound on
    // the whole exchange ends it. The lease of the row (2 × WEBHOOK_TIMEOUT_MS + 1 s) is how long
    // the outbox keeps other processes off it (README, Configuration).
    const timeoutMs = 1000;
    const leaseMs = 2 * timeoutMs + 1000;
    const sessions: { opened: number; closed?: number; data: boolean }[] = [];
    const server = net.createServer((socket) => {
      const session: { opened: number; closed?: number; data: boolean } = { opened: Date.now(), data: false };
      sessions.push(session);
      let queue = '';
      const timer = setInterval(() => { if (queue !== '' && !socket.destroyed) { socket.write(queue[0]!); queue = queue.slice(1); } }, 150);
      const say = (line: string) => { queue += `${line}\r\n`; };
      socket.on('close', () => { clearInterval(timer); session.closed = Date.now(); });
      socket.on('error', () => undefined);
      let buffer = '';
      let inData = false;
      socket.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('latin1');
        for (let i = buffer.indexOf('\r\n'); i >= 0; i = buffer.indexOf('\r\n')) {
          const line = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          if (inData) { if (line === '.') { inData = false; session.data = true; say('250 queued'); } continue; }
          const verb = line.slice(0, 4).toUpperCase();
          if (verb === 'EHLO' || verb === 'HELO') say('250 drip');
          else if (verb === 'DATA') { inData = true; say('354 go on'); }
          else if (verb === 'QUIT') say('221 bye');
          else say('250 ok');
        }
      });
      socket.write('220 drip ESMTP\r\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const t = await startTestServer({ smtpUrl: `smtp://127.0.0.1:${port}`, webhookTimeoutMs: timeoutMs, webhookRetryMs: 60_000 } as never);
    try {
      await userWithEmail(t, 'drip@example.com');
      expect((await mailAuth(t, 'drip@example.com')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      expect(await waitFor(() => sessions.length > 0)).toBe(true);
      await sleep(leaseMs + 2000);
      const first = sessions[0]!;
      expect((first.closed ?? Date.now()) - first.opened, `the first attempt outlived its lease: ${JSON.stringify(sessions)}`).toBeLessThanOrEqual(leaseMs);
    } finally {
      await t.stop();
      await new Promise<void>((r) => { server.close(() => r()); });
    }
  });

  it('a login e-mail is not held up behind webhook deliveries to a receiver that never answers', async () => {
    // Any root user names webhook addresses (with sub-organizations, an application's end users);
    // deliveries to one that never answers take WEBHOOK_TIMEOUT_MS each. The e-mails of the login
    // flows (one-time codes live 30 s to 10 minutes) must not queue behind them.
    const smtp4 = await flakySmtp();
    const hanging = http.createServer(() => undefined);
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
    const t = await startTestServer({ smtpUrl: `smtp://127.0.0.1:${smtp4.port}`, webhookTimeoutMs: 5000, webhookRetryMs: 60_000 } as never);
    try {
      await userWithEmail(t, 'prompt@example.com');
      await t.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hook` } as any);
      // more announced activities than the dispatcher has delivery slots
      await Promise.all(Array.from({ length: 16 }, () => t.sdk.createUserTag({ userTagName: uniqueName('busy'), userIds: [] })));
      await sleep(200);
      expect((await mailAuth(t, 'prompt@example.com')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      expect(await waitFor(() => smtp4.got.length === 1, 3000), 'the e-mail within 3 s').toBe(true);
    } finally {
      hanging.closeAllConnections();
      await t.stop();
      await new Promise<void>((r) => { hanging.close(() => r()); });
      await smtp4.close();
    }
  });

  it('a message queued while the SMTP server is down is sent after a restart', async () => {
    const probe = await flakySmtp();
    const port = probe.port;
    await probe.close();
    const dataDir = freshDataDir();
    const config = { dataDir, smtpUrl: `smtp://127.0.0.1:${port}`, webhookRetryMs: 300 };
    let t = await startTestServer(config as never);
    await userWithEmail(t, 'later@example.com');
    expect((await mailAuth(t, 'later@example.com')).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await sleep(150); // the first attempt finds nobody listening
    await t.stop(true);
    const smtp3 = await flakySmtp(port);
    t = await startTestServer(config as never);
    try {
      expect(await waitFor(() => smtp3.got.length === 1)).toBe(true);
      expect(smtp3.got[0]!.subject).toBe('Log in to W');
    } finally {
      await t.stop();
      await smtp3.close();
    }
  });
});

describe('MAIL_DIR (local development without an SMTP server)', () => {
  it('writes each e-mail as an .eml file only the server user can read', async () => {
    const dir = join(tmpdir(), `kmas-mail-${process.pid}-${Date.now()}`);
    const dev = await startTestServer({ mailDir: dir } as never);
    try {
      const target = generateP256KeyPair();
      const r: any = await dev.sdk.emailAuth({ email: 'root@example.com', targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'Dev' } } as any).catch((e: unknown) => e);
      // The bootstrap root user has no e-mail address: give it one first.
      expect(r.message).toMatch(/^Turnkey error 5: /);
      await dev.sdk.updateUser({ userId: dev.rootUserId, userEmail: 'root@example.com', userTagIds: [] } as any);
      const ok: any = await dev.sdk.emailAuth({ email: 'root@example.com', targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'Dev' } } as any);
      expect(ok.activity.status, JSON.stringify(ok.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
      let files: string[] = [];
      for (let i = 0; i < 100 && files.length === 0; i++) { await sleep(20); files = existsSync(dir) ? readdirSync(dir) : []; }
      expect(files).toHaveLength(1);
      expect(statSync(join(dir, files[0]!)).mode & 0o777).toBe(0o600);
      const mail = await simpleParser(readFileSync(join(dir, files[0]!)));
      expect(mail.subject).toBe('Log in to Dev');
      const bundle = /\n([1-9A-HJ-NP-Za-km-z]{100,})\n/.exec(mail.text ?? '')![1]!;
      expect((await sdkClient(dev.url, openBundle(bundle, target.privateKey), dev.orgId).getWhoami() as any).userId).toBe(dev.rootUserId);
    } finally {
      await dev.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('without SMTP_URL or MAIL_DIR', () => {
  it('the e-mail flows are refused and nothing is stored', async () => {
    const plain = await startTestServer();
    try {
      const target = generateP256KeyPair();
      const res = await plain.raw('/public/v1/submit/email_auth', JSON.stringify({
        type: 'ACTIVITY_TYPE_EMAIL_AUTH_V3', timestampMs: String(Date.now()), organizationId: plain.orgId,
        parameters: { email: 'a@example.com', targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'W' } },
      }));
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/SMTP_URL/);
      expect((await plain.sdk.getActivities({} as any) as any).activities).toHaveLength(0);
    } finally {
      await plain.stop();
    }
  });
});
