/**
 * The one-time-code flow that ends in a verification token (wire-compat §4.5, §4.6, §5):
 * - init_otp (V3, V2, V1): e-mails a code to any address (the user may not exist yet: sign-up)
 *   and returns otpEncryptionTargetBundle, a signed envelope with a fresh P-256 key the client
 *   encrypts {"otp_code","public_key"} to (@turnkey/crypto encryptOtpCodeToBundle, with
 *   `signerPublicKey` as its override);
 * - verify_otp (V2: encryptedOtpBundle; V1: otpCode and publicKey): a right code gives a
 *   verification token (src/auth/tokens.ts) for the contact, bound to the client's public key;
 * - otp_login (V2, V1): the token, spent once with the client signature of its key, logs the
 *   user with that e-mail address in: the client's key is registered (LOGIN) and a session JWT
 *   returned. create_sub_organization accepts such a token (sign-up) the same way.
 * A code that reached an address marks it verified for its user (list_verified_suborgs).
 */
import { invalidArgument } from '../../errors.js';
import { normalizePublicKey } from '../../domain/apiKeys.js';
import { cryptoCall } from '../../domain/keys.js';
import type { AtRestContext } from '../../crypto/atrest.js';
import { issueSession } from '../../auth/services.js';
import { checkClientSignature, issueVerificationToken, readVerificationToken, spendVerificationToken, type ClientSignature, type VerificationClaims } from '../../auth/tokens.js';
import type { OrganizationRow, Tx } from '../../storage/types.js';
import type { Vault } from '../../crypto/index.js';
import { keysFor, type SubmitOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';
import { authorizeInitOtp, checkOtp, findUserByEmail, markEmailVerified, otpLock, readInitOtp, requireFlowEnabled, sendOtp, userByEmail, type InitOtp } from './emailAuth.js';
import { loginOptions, readLoginCommon, readP256Key, requireAuthFlowCaller, type LoginCommon } from './oauth.js';

const DEFAULT_TOKEN_SECONDS = 3600;
const otpTargetContext = (organizationId: string, id: string): AtRestContext => ({ kind: 'otp_target', organizationId, recordId: id });

/** A client signature object at `field` (v1ClientSignature). */
export function readClientSignature(v: Validator, params: Obj, field: string, required: boolean): ClientSignature | undefined {
  if (params[field] === undefined || params[field] === null) {
    if (required) v.fail(field, 'is required');
    return undefined;
  }
  const o = v.object(params[field], field);
  if (!o) return undefined;
  const publicKey = v.string(o, 'publicKey', `${field}.publicKey`, { required: true, nonEmpty: true, max: 200 });
  const scheme = v.string(o, 'scheme', `${field}.scheme`, { required: true, nonEmpty: true, max: 100 });
  const message = v.string(o, 'message', `${field}.message`, { required: true, nonEmpty: true, max: 65_536 });
  const signature = v.string(o, 'signature', `${field}.signature`, { required: true, nonEmpty: true, max: 300 });
  return publicKey && scheme && message && signature ? { publicKey, scheme, message, signature } : undefined;
}

export const initOtp: SubmitOperation<InitOtp, { otpId: string; otpEncryptionTargetBundle: string }> = {
  kind: 'submit',
  path: 'init_otp',
  types: {
    ACTIVITY_TYPE_INIT_OTP_V3: keysFor('ACTIVITY_TYPE_INIT_OTP_V3', { resultKey: 'initOtpResultV2', specResultKey: 'initOtpResultV2' }),
    ACTIVITY_TYPE_INIT_OTP_V2: keysFor('ACTIVITY_TYPE_INIT_OTP_V2'),
    ACTIVITY_TYPE_INIT_OTP: keysFor('ACTIVITY_TYPE_INIT_OTP'),
  },
  parentMaySubmit: true,
  validate(params: Obj, type: string) {
    return readInitOtp(params, { v3: type !== 'ACTIVITY_TYPE_INIT_OTP', v1: type === 'ACTIVITY_TYPE_INIT_OTP' });
  },
  authorize: authorizeInitOtp,
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    const user = await findUserByEmail(tx, organization.id, intent.contact);
    let bundle = '';
    const otpId = await sendOtp(ctx, intent, intent.contact, user?.id ?? null, (id) => {
      const t = cryptoCall(() => ctx.services.vault.initImport(otpTargetContext(organization.id, id), organization.id));
      bundle = t.importBundle;
      return t.sealed;
    });
    // V1's result lists only otpId; the bundle is there too (its verify_otp takes the code itself).
    return { otpId, otpEncryptionTargetBundle: bundle };
  },
};

interface VerifyOtp { otpId: string; encryptedOtpBundle?: string; otpCode?: string; publicKey?: string; expirationSeconds?: string }

/**
 * The code and the client's public key verify_otp checks: V1's own parameters, or what V2's
 * encrypted bundle holds (opened with the target key of the code it names, if that is one of
 * init_otp's; else the code is not found later).
 */
async function codeAndKey(tx: Tx, vault: Vault, organizationId: string, intent: VerifyOtp): Promise<{ code: string; publicKey: string }> {
  const pending = intent.encryptedOtpBundle === undefined ? undefined : await tx.otps.get(organizationId, intent.otpId);
  if (!pending?.sealedTarget) return { code: intent.otpCode ?? '', publicKey: intent.publicKey ?? '' };
  const sealed = pending.sealedTarget;
  const text = cryptoCall(() => vault.openOtpBundle(sealed, otpTargetContext(organizationId, pending.id), intent.encryptedOtpBundle!), 'encryptedOtpBundle');
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { parsed = undefined; }
  // JSON null, an array or a scalar is not the object asked for
  const inner: { otp_code?: unknown; public_key?: unknown } = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : {};
  if (typeof inner.otp_code !== 'string' || typeof inner.public_key !== 'string' || !normalizePublicKey('API_KEY_CURVE_P256', inner.public_key)) {
    throw invalidArgument('the encrypted OTP bundle must hold {"otp_code","public_key"} with a P-256 public key', [{ field: 'encryptedOtpBundle', description: 'unexpected content' }]);
  }
  return { code: inner.otp_code, publicKey: inner.public_key };
}

export const verifyOtp: SubmitOperation<VerifyOtp, { verificationToken: string }> = {
  kind: 'submit',
  path: 'verify_otp',
  types: {
    ACTIVITY_TYPE_VERIFY_OTP_V2: keysFor('ACTIVITY_TYPE_VERIFY_OTP_V2', { resultKey: 'verifyOtpResult', specResultKey: 'verifyOtpResult' }),
    ACTIVITY_TYPE_VERIFY_OTP: keysFor('ACTIVITY_TYPE_VERIFY_OTP'),
  },
  parentMaySubmit: true,
  validate(params: Obj, type: string) {
    const v = new Validator();
    const otpId = v.string(params, 'otpId', 'otpId', { required: true, nonEmpty: true, max: 100 });
    const v2 = type === 'ACTIVITY_TYPE_VERIFY_OTP_V2';
    const encryptedOtpBundle = v2 ? v.string(params, 'encryptedOtpBundle', 'encryptedOtpBundle', { required: true, nonEmpty: true, max: 4096 }) : undefined;
    const otpCode = v2 ? undefined : v.string(params, 'otpCode', 'otpCode', { required: true, nonEmpty: true, max: 32 });
    const publicKey = v2 ? undefined : readP256Key(v, params, 'publicKey', false);
    const expirationSeconds = v.uintString(params, 'expirationSeconds', 'expirationSeconds', { min: 1, max: 86_400 });
    v.done();
    return {
      otpId: otpId!,
      ...(encryptedOtpBundle !== undefined ? { encryptedOtpBundle } : {}),
      ...(otpCode !== undefined ? { otpCode } : {}),
      ...(publicKey !== undefined ? { publicKey } : {}),
      ...(expirationSeconds !== undefined ? { expirationSeconds } : {}),
    };
  },
  // A bundle that cannot be read (not for the code's key, or not {"otp_code","public_key"}) is a
  // malformed request: refused (400), it stores nothing and uses up no attempt.
  async authorize(p, intent, tx, services, organization) {
    await codeAndKey(tx, services.vault, organization.id, intent);
    requireAuthFlowCaller(p, 'check one-time codes');
  },
  locks: (intent) => [otpLock(intent.otpId)],
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    const { code, publicKey } = await codeAndKey(tx, ctx.services.vault, organization.id, intent);
    const row = await checkOtp(ctx, intent.otpId, code, true);
    const user = await findUserByEmail(tx, organization.id, row.contact);
    if (user) await markEmailVerified(ctx, user, row.contact);
    const expiresMs = nowMs + Number(intent.expirationSeconds ?? DEFAULT_TOKEN_SECONDS) * 1000;
    const verificationToken = await issueVerificationToken(tx, ctx.services.vault, {
      id: ctx.newId(), verification_type: row.otpType, contact: row.contact, organization_id: organization.id,
      public_key: publicKey, exp: String(expiresMs),
    }, expiresMs);
    return { verificationToken };
  },
};

/**
 * The token's claims once it and the client signature check out (required when the token is bound
 * to a public key); with `organization` (the one addressed), also that the token was issued there
 * or in its parent.
 */
function loginClaims(vault: Vault, organization: OrganizationRow | undefined, intent: OtpLogin, nowMs: number): VerificationClaims {
  const claims = readVerificationToken(vault, intent.verificationToken, nowMs);
  if (organization && claims.organization_id !== organization.id && claims.organization_id !== organization.parentId) {
    throw invalidArgument('the verification token was issued for another organization', [{ field: 'verificationToken', description: 'issued for another organization' }]);
  }
  checkClientSignature(intent.clientSignature, claims, 'USAGE_TYPE_LOGIN', (m) =>
    (m.login as { publicKey?: unknown } | undefined)?.publicKey === intent.publicKey ? undefined : 'message.login.publicKey must be the publicKey logging in');
  return claims;
}

interface OtpLogin extends LoginCommon { verificationToken: string; publicKey: string; clientSignature?: ClientSignature }

export const otpLogin: SubmitOperation<OtpLogin, { session: string }> = {
  kind: 'submit',
  path: 'otp_login',
  types: {
    ACTIVITY_TYPE_OTP_LOGIN_V2: keysFor('ACTIVITY_TYPE_OTP_LOGIN_V2', { resultKey: 'otpLoginResult', specResultKey: 'otpLoginResult' }),
    ACTIVITY_TYPE_OTP_LOGIN: keysFor('ACTIVITY_TYPE_OTP_LOGIN'),
  },
  parentMaySubmit: true,
  validate(params: Obj, type: string) {
    const v = new Validator();
    const verificationToken = v.string(params, 'verificationToken', 'verificationToken', { required: true, nonEmpty: true, max: 8192 });
    const publicKey = readP256Key(v, params, 'publicKey', true);
    const clientSignature = readClientSignature(v, params, 'clientSignature', type === 'ACTIVITY_TYPE_OTP_LOGIN_V2');
    const common = readLoginCommon(v, params, false);
    v.string(params, 'sessionProfileId', 'sessionProfileId', { max: 100 });
    v.done();
    return { verificationToken: verificationToken!, publicKey: publicKey!, ...(clientSignature ? { clientSignature } : {}), ...common };
  },
  // A token or client signature that does not check out stores nothing.
  authorize(p, intent, _tx, services) {
    loginClaims(services.vault, undefined, intent, Date.now());
    requireAuthFlowCaller(p, 'log users in with a verification token');
  },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    // A code sent by the parent organization does not log a user into a sub-organization that
    // switched one-time codes off (init_otp there is refused the same way).
    await requireFlowEnabled(ctx, 'disableOtpEmailAuth', 'one-time codes by e-mail');
    const claims = loginClaims(ctx.services.vault, organization, intent, nowMs);
    const user = await userByEmail(ctx, claims.contact);
    await spendVerificationToken(tx, claims, nowMs);
    await markEmailVerified(ctx, user, claims.contact);
    const publicKey = normalizePublicKey('API_KEY_CURVE_P256', intent.publicKey)!;
    return { session: (await issueSession(ctx, user, publicKey, loginOptions(ctx, intent))).session };
  },
};
