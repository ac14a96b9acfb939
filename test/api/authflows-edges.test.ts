// Edges of the e-mail code flows (verify_otp, otp_login, sign-up): a verification token bound to a
// client key is spent only with that key's signature, a sub-organization's disable* flags hold for
// every way in, and malformed tokens, bundles and signatures are 400s naming the field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { encryptOtpCodeToBundle, formatHpkeBuf, hpkeEncrypt, verifyOtpVerificationToken } from '@turnkey/crypto';
import { startTestServer, uniqueName, type ApiKeyPair, type TestServer } from '../server/harness.js';
import { startMailSink, type MailSink } from '../server/mailsink.js';

let sink: MailSink;
let ts: TestServer;
const nextMail = (to: string): ReturnType<MailSink['nextMail']> => sink.nextMail(to);

beforeAll(async () => {
  sink = await startMailSink();
  ts = await startTestServer({ smtpUrl: sink.url, mailFrom: 'Example Wallet <login@wallet.example>' } as never);
});
afterAll(async () => {
  await ts?.stop();
  await sink?.close();
});

function clientKey() {
  const sk = p256.utils.randomSecretKey();
  const publicKey = bytesToHex(p256.getPublicKey(sk, true));
  return { sk, publicKey, pair: { publicKey, privateKey: bytesToHex(sk) } as ApiKeyPair, sign: (message: string) => bytesToHex(p256.sign(sha256(new TextEncoder().encode(message)), sk, { prehash: false })) };
}
const signer = () => ts.server.bootstrap.signerPublicKey!;

async function initOtp(email: string): Promise<{ otpId: string; bundle: string; code: string }> {
  const init: any = await ts.sdk.initOtp({ otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'Example Wallet' } as any);
  expect(init.activity.status, JSON.stringify(init.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
  const code = /code is ([0-9A-Z]{9})\b/.exec((await nextMail(email)).text ?? '')![1]!;
  return { otpId: init.otpId, bundle: init.otpEncryptionTargetBundle, code };
}

/** A verification token bound (public_key claim) to `key`, as @turnkey/core gets one. */
async function boundToken(email: string, key: ReturnType<typeof clientKey>): Promise<string> {
  const { otpId, bundle, code } = await initOtp(email);
  const encryptedOtpBundle = await encryptOtpCodeToBundle(code, bundle, key.publicKey, signer());
  const v: any = await ts.sdk.verifyOtp({ otpId, encryptedOtpBundle } as any);
  expect(v.activity.status, JSON.stringify(v.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
  return v.verificationToken as string;
}

async function subOrgWithUser(email: string): Promise<{ id: string; userId: string }> {
  const r: any = await ts.sdk.createSubOrganization({
    subOrganizationName: uniqueName('app-user'), rootQuorumThreshold: 1,
    rootUsers: [{ userName: 'alice', userEmail: email, authenticators: [], apiKeys: [], oauthProviders: [] }],
  } as any);
  expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
  return { id: r.subOrganizationId, userId: r.rootUserIds[0] };
}

describe('verification tokens bound to a client key', () => {
  // Guards: a stolen bound token cannot log its thief in (otp_login V1 without clientSignature).
  it('otp_login (V1) refuses a token bound to a public key when no clientSignature proves that key', async () => {
    const email = `${uniqueName('v1login')}@example.com`.toLowerCase();
    const sub = await subOrgWithUser(email);
    const victim = clientKey();
    const token = await boundToken(email, victim);
    const claims: any = await verifyOtpVerificationToken(token, signer());
    expect(claims.public_key).toBe(victim.publicKey);
    // Whoever holds the token logs in with a key of its own, without the bound key's signature.
    const thief = clientKey();
    const res = await ts.raw('/public/v1/submit/otp_login', JSON.stringify({
      type: 'ACTIVITY_TYPE_OTP_LOGIN', timestampMs: String(Date.now()), organizationId: sub.id,
      parameters: { verificationToken: token, publicKey: thief.publicKey },
    }));
    const status = res.status === 200 ? res.json.activity.status : `HTTP ${res.status}`;
    // swagger v1OtpLoginIntent.clientSignature: "Only required if a public key was provided during the verification step."
    expect(status, 'a token bound to a key was spent without that key\'s signature').not.toBe('ACTIVITY_STATUS_COMPLETED');
    const who = await ts.raw('/public/v1/query/whoami', JSON.stringify({ organizationId: sub.id }), { key: thief.pair });
    expect(who.status, 'the thief\'s key must not be registered').toBe(401);
  });

  // Guards: a stolen bound token cannot sign its thief up (create_sub_organization without clientSignature).
  it('create_sub_organization (sign-up) refuses a token bound to a public key without a clientSignature', async () => {
    const email = `${uniqueName('v1signup')}@example.com`.toLowerCase();
    const token = await boundToken(email, clientKey());
    const r: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('signup'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'new user', userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
      verificationToken: token,
    } as any).catch((e: Error) => ({ activity: { status: String(e) } }));
    // swagger v1CreateSubOrganizationIntentV7/V8.clientSignature: "Only required if a public key was provided during the verification step."
    expect(r.activity.status, 'a token bound to a key was spent without that key\'s signature').not.toBe('ACTIVITY_STATUS_COMPLETED');
  });
});

describe('the disable* flags of a sub-organization', () => {
  // Guards: disableOtpEmailAuth also stops otp_login with a code the parent sent, not only init_otp.
  it('otp_login into a sub-organization created with disableOtpEmailAuth is refused', async () => {
    const email = `${uniqueName('noOtp')}@example.com`.toLowerCase();
    const r: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('no-otp'), rootQuorumThreshold: 1, disableOtpEmailAuth: true,
      rootUsers: [{ userName: 'alice', userEmail: email, authenticators: [], apiKeys: [], oauthProviders: [] }],
    } as any);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    // The code itself cannot be sent in the sub-organization...
    const inSub: any = await ts.sdk.initOtp({ organizationId: r.subOrganizationId, otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'W' } as any);
    expect(inSub.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(inSub.activity.failure.message).toMatch(/disableOtpEmailAuth/);
    // ...but one sent by the parent logs the user in all the same.
    const key = clientKey();
    const token = await boundToken(email, key);
    const id = (await verifyOtpVerificationToken(token, signer()) as any).id;
    const session = clientKey();
    const message = JSON.stringify({ login: { publicKey: session.publicKey }, tokenId: id, type: 'USAGE_TYPE_LOGIN' });
    const login: any = await ts.sdk.otpLogin({
      organizationId: r.subOrganizationId, verificationToken: token, publicKey: session.publicKey,
      clientSignature: { publicKey: key.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature: key.sign(message) },
    } as any).catch((e: Error) => ({ activity: { status: String(e) } }));
    expect(login.activity.status, 'logged in by e-mail code although the sub-organization switched that off').not.toBe('ACTIVITY_STATUS_COMPLETED');
  });
});

describe('bad inputs are 4xx {code, message, details}, not 500', () => {
  // Guards: a bundle decrypting to JSON null is a 400 naming encryptedOtpBundle, not a 500.
  it('verify_otp: an encrypted bundle whose plaintext is JSON null', async () => {
    const email = `${uniqueName('nullbundle')}@example.com`.toLowerCase();
    const { otpId, bundle } = await initOtp(email);
    const data = JSON.parse(Buffer.from(JSON.parse(bundle).data, 'hex').toString('utf8'));
    const enc = hpkeEncrypt({ plainTextBuf: new TextEncoder().encode('null'), targetKeyBuf: Buffer.from(data.targetPublic, 'hex') });
    const res = await ts.raw('/public/v1/submit/verify_otp', JSON.stringify({
      type: 'ACTIVITY_TYPE_VERIFY_OTP_V2', timestampMs: String(Date.now()), organizationId: ts.orgId,
      parameters: { otpId, encryptedOtpBundle: formatHpkeBuf(enc) },
    }));
    expect(res.status, res.text).toBe(400);
    expect(res.json.message).toMatch(/encrypted OTP bundle/);
  });

  // Guards: a token whose header is JSON null is a 400 naming verificationToken, not a 500.
  it('otp_login: a verification token whose header is JSON null', async () => {
    const sub = await subOrgWithUser(`${uniqueName('nullhdr')}@example.com`.toLowerCase());
    const b64 = (s: string) => Buffer.from(s).toString('base64url');
    const res = await ts.raw('/public/v1/submit/otp_login', JSON.stringify({
      type: 'ACTIVITY_TYPE_OTP_LOGIN', timestampMs: String(Date.now()), organizationId: sub.id,
      parameters: { verificationToken: `${b64('null')}.${b64('{}')}.${b64('x')}`, publicKey: clientKey().publicKey },
    }));
    expect(res.status, res.text).toBe(400);
    expect(res.json.details.flatMap((d: any) => d.fieldViolations ?? []).map((f: any) => f.field)).toContain('verificationToken');
  });

  // Guards: a client signature over the message "null" is a 400 naming clientSignature, not a 500.
  it('otp_login: a client signature whose message is JSON null', async () => {
    const email = `${uniqueName('nullmsg')}@example.com`.toLowerCase();
    const sub = await subOrgWithUser(email);
    const key = clientKey();
    const token = await boundToken(email, key);
    const res = await ts.raw('/public/v1/submit/otp_login', JSON.stringify({
      type: 'ACTIVITY_TYPE_OTP_LOGIN_V2', timestampMs: String(Date.now()), organizationId: sub.id,
      parameters: { verificationToken: token, publicKey: clientKey().publicKey, clientSignature: { publicKey: key.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message: 'null', signature: key.sign('null') } },
    }));
    expect(res.status, res.text).toBe(400);
    expect(res.json.details.flatMap((d: any) => d.fieldViolations ?? []).map((f: any) => f.field)).toContain('clientSignature');
  });
});

describe('update_user_email with a verification token', () => {
  // guards: update_user_email spends verify_otp's token and marks the new address verified (it was ignored)
  it('marks the new address verified (list_verified_suborgs finds it); a used token or one for another address is a 400 that changes nothing', async () => {
    const oldEmail = `${uniqueName('old')}@example.com`.toLowerCase();
    const newEmail = `${uniqueName('new')}@example.com`.toLowerCase();
    const key = clientKey();
    const r: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('app-user'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'alice', userEmail: oldEmail, authenticators: [], oauthProviders: [], apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }] }],
    } as any);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const subId = r.subOrganizationId as string;
    const userId = r.rootUserIds[0] as string;
    const update = (userEmail: string, verificationToken: string) => ts.raw('/public/v1/submit/update_user_email', JSON.stringify({
      type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', timestampMs: String(Date.now()), organizationId: subId, parameters: { userId, userEmail, verificationToken },
    }), { key: key.pair });
    const emailOf = async () => ((await ts.sdk.getUser({ organizationId: subId, userId } as any)) as any).user.userEmail;

    const token = await boundToken(newEmail, clientKey());
    // a token for another address than the one set
    const wrong = await update(`${uniqueName('other')}@example.com`.toLowerCase(), token);
    expect(wrong.status, wrong.text).toBe(400);
    expect(wrong.json.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field))).toContain('verificationToken');
    expect(await emailOf()).toBe(oldEmail);

    const ok = await update(newEmail, token);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.activity.status, ok.text).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await emailOf()).toBe(newEmail);
    const verified: any = await ts.sdk.getVerifiedSubOrgIds({ filterType: 'EMAIL', filterValue: newEmail } as any);
    expect(verified.organizationIds, 'the address the token proved is verified').toEqual([subId]);

    // the token is spent: used again it is refused (FAILED, as otp_login refuses a spent one)
    const again = await update(newEmail, token);
    expect(again.status, again.text).toBe(200);
    expect(again.json.activity.status, again.text).toBe('ACTIVITY_STATUS_FAILED');
    expect(again.json.activity.failure.message).toMatch(/already used/);
    expect(await emailOf()).toBe(newEmail);
    // a token that is no token at all
    const junk = await update(oldEmail, 'not.a.token');
    expect(junk.status, junk.text).toBe(400);
  });
});
