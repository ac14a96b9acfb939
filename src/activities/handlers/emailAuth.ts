/**
 * The e-mail flows (wire-compat §5; SMTP_URL must be set, src/mail.ts):
 * - email_auth (V3, V2, V1): a new EMAIL_AUTH API key for the user with that e-mail address; its
 *   credential bundle (for targetPublicKey) is e-mailed, inside the magic link when
 *   emailCustomization.magicLinkTemplate is given (%s → bundle). The reply carries no secret.
 * - init_otp_auth (V3, V2, V1) → otp_auth: a one-time code is e-mailed (9 Crockford base32
 *   characters by default, 5 minutes, at most 10), kept sealed; otp_auth with the right code gives
 *   a new OTP_AUTH API key in a credential bundle. Three wrong codes use the code up.
 * - init_user_email_recovery (V2, V1) → recover_user: a RECOVER_USER key is e-mailed the same
 *   way; stamped with it, recover_user registers a new passkey for the user, and the recovery key
 *   is removed. A recovery key may do nothing else.
 * The user is found by e-mail address (without regard to case) in the addressed organization; an
 * application's backend runs these for its sub-organizations' users with its own key.
 */
import { randomInt, timingSafeEqual } from 'node:crypto';
import { failedPrecondition, notFound, permissionDenied } from '../../errors.js';
import { isRoot, type Principal } from '../../domain/principal.js';
import { requireUser } from '../../domain/apiKeys.js';
import { readAuthenticatorParams, registerAuthenticators, type AuthenticatorParams } from '../../domain/authenticators.js';
import { utf8, wipe } from '../../encoding/bytes.js';
import { CREDENTIAL, MAX_ISSUED_KEY_SECONDS, issueBundledKey, requireMail } from '../../auth/services.js';
import { composeMail, enqueueMail } from '../../mail.js';
import type { AtRestContext } from '../../crypto/atrest.js';
import type { OtpRow, Tx, UserRow } from '../../storage/types.js';
import { keysFor, type ExecContext, type Services, type SubmitOperation } from '../types.js';
import { EMAIL, MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readTargetPublicKey } from './keyParams.js';
import { readLoginCommon, requireAuthFlowCaller, type LoginCommon } from './oauth.js';

const DEFAULT_OTP_SECONDS = 300;
const MAX_OTP_SECONDS = 600;
const MAX_OTP_ATTEMPTS = 3;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Text that goes into a subject line: one line. */
const ONE_LINE = { pattern: /^[^\r\n]*$/, patternDesc: 'must be one line' };

interface Customization { appName?: string; logoUrl?: string; magicLinkTemplate?: string }
interface Sender { sendFromEmailSenderName?: string; replyToEmailAddress?: string }

function readCustomization(v: Validator, params: Obj, appNameRequired: boolean): Customization {
  const c = params.emailCustomization === undefined || params.emailCustomization === null ? {} : v.object(params.emailCustomization, 'emailCustomization');
  if (!c) return {};
  const appName = v.string(c, 'appName', 'emailCustomization.appName', { required: appNameRequired, nonEmpty: appNameRequired, max: MAX_NAME, ...ONE_LINE }) || undefined;
  const logoUrl = v.string(c, 'logoUrl', 'emailCustomization.logoUrl', { max: 2048, pattern: /^https:\/\//, patternDesc: 'must be an https URL' }) || undefined;
  const magicLinkTemplate = v.string(c, 'magicLinkTemplate', 'emailCustomization.magicLinkTemplate', { max: 2048, pattern: /^https?:\/\/[^\s]*$/, patternDesc: 'must be an http(s) URL' }) || undefined;
  if (magicLinkTemplate !== undefined && !magicLinkTemplate.includes('%s')) v.fail('emailCustomization.magicLinkTemplate', 'must contain %s, where the bundle goes');
  // templateVariables / templateId name templates of Turnkey's mail service: accepted, not used.
  v.string(c, 'templateVariables', 'emailCustomization.templateVariables', { max: 8192 });
  v.string(c, 'templateId', 'emailCustomization.templateId', { max: 200 });
  return { ...(appName ? { appName } : {}), ...(logoUrl ? { logoUrl } : {}), ...(magicLinkTemplate ? { magicLinkTemplate } : {}) };
}

function readSender(v: Validator, params: Obj): Sender {
  // sendFromEmailAddress is accepted and not used: mail always leaves from MAIL_FROM.
  v.string(params, 'sendFromEmailAddress', 'sendFromEmailAddress', { max: 320, pattern: EMAIL, patternDesc: 'must be an e-mail address' });
  const sendFromEmailSenderName = v.string(params, 'sendFromEmailSenderName', 'sendFromEmailSenderName', { max: MAX_NAME, pattern: /^[^\r\n<>"]*$/, patternDesc: 'must be a plain name' }) || undefined;
  const replyToEmailAddress = v.string(params, 'replyToEmailAddress', 'replyToEmailAddress', { max: 320, pattern: EMAIL, patternDesc: 'must be an e-mail address' }) || undefined;
  return { ...(sendFromEmailSenderName ? { sendFromEmailSenderName } : {}), ...(replyToEmailAddress ? { replyToEmailAddress } : {}) };
}

function readEmail(v: Validator, params: Obj, key = 'email'): string | undefined {
  return v.string(params, key, key, { required: true, nonEmpty: true, max: 320, pattern: EMAIL, patternDesc: 'must be an e-mail address' });
}

/** Refuses a flow the sub-organization was created without (create_sub_organization's disable* flags). */
export async function requireFlowEnabled(ctx: ExecContext, flag: 'disableEmailAuth' | 'disableEmailRecovery' | 'disableOtpEmailAuth', what: string): Promise<void> {
  if ((await ctx.tx.organizations.disabledFlows(ctx.organization.id)).includes(flag)) {
    throw failedPrecondition(`${what} is switched off for this organization (${flag} at its creation)`);
  }
}

/** The organization's user with this e-mail address (FAILED activity when none). */
export async function userByEmail(ctx: ExecContext, email: string): Promise<UserRow> {
  const u = await findUserByEmail(ctx.tx, ctx.organization.id, email);
  if (!u) throw notFound('no user of this organization has this e-mail address', 'USER_NOT_FOUND');
  return u;
}

/** The organization's user with this e-mail address (compared without regard to case), if any. */
export async function findUserByEmail(tx: Tx, organizationId: string, email: string): Promise<UserRow | undefined> {
  const want = email.toLowerCase();
  return (await tx.users.list(organizationId)).find((x) => x.email !== null && x.email.toLowerCase() === want);
}

/**
 * Queues a mail of the flows: the paragraphs, then when what it carries expires; the sender's
 * display name and Reply-To and the logo as the request asked.
 */
async function mailTo(ctx: ExecContext, to: string, subject: string, paragraphs: string[], seconds: string, c: Customization, s: Sender, link?: string): Promise<void> {
  await enqueueMail(ctx, ctx.organization.id, composeMail({
    to, subject,
    paragraphs: [...paragraphs, `It expires in ${Math.round(Number(seconds) / 60)} minutes. If you did not ask for it, ignore this e-mail.`],
    ...(link ? { link } : {}),
    ...(c.logoUrl ? { logoUrl: c.logoUrl } : {}),
    ...(s.sendFromEmailSenderName ? { fromName: s.sendFromEmailSenderName } : {}),
    ...(s.replyToEmailAddress ? { replyTo: s.replyToEmailAddress } : {}),
  }), ctx.nowMs);
}

async function sendBundle(ctx: ExecContext, to: string, bundle: string, c: Customization, s: Sender, purpose: 'log in' | 'recover your account', seconds: string): Promise<void> {
  const app = c.appName ?? ctx.organization.name;
  const link = c.magicLinkTemplate?.replace('%s', bundle);
  await mailTo(ctx, to, purpose === 'log in' ? `Log in to ${app}` : `Recover your ${app} account`, [
    link ? `Open the link below to ${purpose} to ${app}.` : `Use this code to ${purpose} to ${app}:`,
    ...(link ? [] : [bundle]),
  ], seconds, c, s, link);
}

// ---- email_auth ----------------------------------------------------------------------------

interface EmailAuth extends LoginCommon {
  email: string; targetPublicKey: string;
  emailCustomization: Customization; sender: Sender;
}

export const emailAuth: SubmitOperation<EmailAuth, { userId: string; apiKeyId: string }> = {
  kind: 'submit',
  path: 'email_auth',
  types: {
    ACTIVITY_TYPE_EMAIL_AUTH_V3: keysFor('ACTIVITY_TYPE_EMAIL_AUTH_V3', { resultKey: 'emailAuthResult', specResultKey: 'emailAuthResult' }),
    ACTIVITY_TYPE_EMAIL_AUTH_V2: keysFor('ACTIVITY_TYPE_EMAIL_AUTH_V2', { resultKey: 'emailAuthResult', specResultKey: 'emailAuthResult', specIntentKey: 'emailAuthIntent' }),
    ACTIVITY_TYPE_EMAIL_AUTH: keysFor('ACTIVITY_TYPE_EMAIL_AUTH'),
  },
  parentMaySubmit: true,
  validate(params: Obj, type: string) {
    const v = new Validator();
    const email = readEmail(v, params);
    const targetPublicKey = readTargetPublicKey(v, params);
    const common = readLoginCommon(v, params, true);
    const emailCustomization = readCustomization(v, params, type === 'ACTIVITY_TYPE_EMAIL_AUTH_V3');
    const sender = readSender(v, params);
    v.done();
    return { email: email!, targetPublicKey: targetPublicKey!, emailCustomization, sender, ...common };
  },
  authorize(p, _intent, _tx, services) { requireMail(services.auth); requireAuthFlowCaller(p, 'send e-mail authentication'); },
  async execute(ctx, intent) {
    await requireFlowEnabled(ctx, 'disableEmailAuth', 'e-mail authentication');
    const user = await userByEmail(ctx, intent.email);
    const { key, credentialBundle } = await issueBundledKey(ctx, user, intent.targetPublicKey, {
      credentialType: CREDENTIAL.emailAuth, name: intent.apiKeyName ?? `Email Auth - ${ctx.nowMs}`,
      expirationSeconds: intent.expirationSeconds, invalidateExisting: intent.invalidateExisting === true,
    });
    await sendBundle(ctx, user.email!, credentialBundle, intent.emailCustomization, intent.sender, 'log in', key.expirationSeconds!);
    return { userId: user.id, apiKeyId: key.id };
  },
};

// ---- one-time codes ------------------------------------------------------------------------

export interface InitOtp {
  otpType: string; contact: string; appName?: string; otpLength: number; alphanumeric: boolean; expirationSeconds: string;
  emailCustomization: Customization; sender: Sender;
}

const otpContext = (organizationId: string, id: string): AtRestContext => ({ kind: 'otp_code', organizationId, recordId: id });

function newCode(length: number, alphanumeric: boolean): string {
  const alphabet = alphanumeric ? CROCKFORD : '0123456789';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** The parameters of init_otp_auth and init_otp (`v3`: appName required, expirationSeconds; `v1`: no length or alphabet). */
export function readInitOtp(params: Obj, opts: { v3: boolean; v1: boolean }): InitOtp {
  const v = new Validator();
  const otpType = v.string(params, 'otpType', 'otpType', { required: true, nonEmpty: true, max: 40 });
  if (otpType !== undefined && otpType !== 'OTP_TYPE_EMAIL' && otpType !== 'OTP_TYPE_SMS') v.fail('otpType', 'must be OTP_TYPE_EMAIL or OTP_TYPE_SMS');
  const contact = v.string(params, 'contact', 'contact', { required: true, nonEmpty: true, max: 320 });
  if (otpType === 'OTP_TYPE_EMAIL' && contact !== undefined && !EMAIL.test(contact)) v.fail('contact', 'must be an e-mail address');
  const appName = opts.v3 ? v.string(params, 'appName', 'appName', { required: true, nonEmpty: true, max: MAX_NAME, ...ONE_LINE }) : undefined;
  const otpLength = opts.v1 || params.otpLength === undefined || params.otpLength === null ? undefined : v.int(params, 'otpLength', 'otpLength', 6, 9);
  const alphanumeric = opts.v1 ? undefined : v.boolean(params, 'alphanumeric', 'alphanumeric');
  const expiration = opts.v3 ? v.uintString(params, 'expirationSeconds', 'expirationSeconds', { min: 30, max: MAX_OTP_SECONDS }) : undefined;
  const emailCustomization = readCustomization(v, params, false);
  const sender = readSender(v, params);
  v.string(params, 'userIdentifier', 'userIdentifier', { max: 512 });
  v.done();
  return {
    otpType: otpType!, contact: contact!, ...(appName ? { appName } : {}),
    otpLength: otpLength ?? 9, alphanumeric: alphanumeric ?? true,
    expirationSeconds: expiration ?? String(DEFAULT_OTP_SECONDS),
    emailCustomization, sender,
  };
}

/** Who may send codes, and only by e-mail. */
export function authorizeInitOtp(p: Principal, intent: InitOtp, _tx: Tx, services: Services): void {
  if (intent.otpType === 'OTP_TYPE_SMS') throw failedPrecondition('this server sends no text messages: use OTP_TYPE_EMAIL');
  requireMail(services.auth);
  requireAuthFlowCaller(p, 'send one-time codes');
}

/**
 * Makes, stores (sealed) and e-mails a code to `to`; `userId`: the user it is for (init_otp_auth),
 * or null (init_otp); `sealedTarget`: init_otp's encryption target. Returns the code's id.
 */
export async function sendOtp(ctx: ExecContext, intent: InitOtp, to: string, userId: string | null, sealTarget?: (id: string) => Uint8Array): Promise<string> {
  const { tx, organization, nowMs } = ctx;
  await requireFlowEnabled(ctx, 'disableOtpEmailAuth', 'one-time codes by e-mail');
  await tx.otps.deleteExpired(nowMs);
  const id = ctx.newId();
  const code = newCode(intent.otpLength, intent.alphanumeric);
  await tx.otps.insert({
    id, organizationId: organization.id, userId, otpType: intent.otpType, contact: to,
    sealedCode: ctx.services.vault.seal(utf8(code), otpContext(organization.id, id)), sealedTarget: sealTarget ? sealTarget(id) : null,
    attempts: 0, expiresMs: nowMs + Number(intent.expirationSeconds) * 1000, createdMs: nowMs,
  });
  const app = intent.appName ?? intent.emailCustomization.appName ?? organization.name;
  await mailTo(ctx, to, `Your ${app} code`, [`Your ${app} code is ${code}`], intent.expirationSeconds, intent.emailCustomization, intent.sender);
  return id;
}

/**
 * The lock the operations that check a code take (SubmitOperation.locks): checks of one code, right
 * or wrong, run one at a time, each after the last one's count is committed. (On PostgreSQL, wrong
 * guesses racing on several nodes all read the same count: none used the code up.)
 */
export const otpLock = (otpId: string) => ({ name: 'one-time-code' as const, key: otpId });

/**
 * Checks a code against the stored one (`withTarget`: the code came from init_otp, not
 * init_otp_auth). A right code is used up and its row returned; a wrong one is counted (kept
 * although the activity fails) and the third uses the code up.
 */
export async function checkOtp(ctx: ExecContext, otpId: string, code: string, withTarget: boolean): Promise<OtpRow> {
  const { tx, organization, nowMs } = ctx;
  const row = await tx.otps.get(organization.id, otpId);
  if (!row || (row.sealedTarget !== null) !== withTarget) throw notFound('no such one-time code (used, expired or never sent)', 'OTP_NOT_FOUND');
  if (row.expiresMs <= nowMs) {
    ctx.keepOnFailure?.(async () => { await tx.otps.delete(row.id); });
    throw failedPrecondition('the one-time code has expired; request a new one');
  }
  const want = utf8(ctx.services.vault.openText(row.sealedCode, otpContext(organization.id, row.id)).toUpperCase());
  const got = utf8(code.trim().toUpperCase());
  const match = want.length === got.length && timingSafeEqual(want, got);
  wipe(want, got);
  if (!match) {
    const attempts = row.attempts + 1;
    ctx.keepOnFailure?.(async () => { if (attempts >= MAX_OTP_ATTEMPTS) await tx.otps.delete(row.id); else await tx.otps.setAttempts(row.id, attempts); });
    throw permissionDenied(attempts >= MAX_OTP_ATTEMPTS ? 'wrong one-time code; it is used up, request a new one' : 'wrong one-time code', 'OTP_INVALID');
  }
  // Used up here, unless a concurrent transaction (another node) used it first: then it is gone.
  if (!await tx.otps.delete(row.id)) throw notFound('no such one-time code (used, expired or never sent)', 'OTP_NOT_FOUND');
  return row;
}

/** A user proved to own `email` (a code reached it): list_verified_suborgs finds its organization. */
export async function markEmailVerified(ctx: ExecContext, user: UserRow, email: string): Promise<void> {
  if (user.email !== null && user.email.toLowerCase() === email.toLowerCase()) {
    await ctx.tx.verifiedContacts.mark(user.organizationId, user.id, 'EMAIL', user.email, ctx.nowMs);
  }
}

export const initOtpAuth: SubmitOperation<InitOtp, { otpId: string }> = {
  kind: 'submit',
  path: 'init_otp_auth',
  types: {
    ACTIVITY_TYPE_INIT_OTP_AUTH_V3: keysFor('ACTIVITY_TYPE_INIT_OTP_AUTH_V3', { resultKey: 'initOtpAuthResultV2', specResultKey: 'initOtpAuthResultV2' }),
    ACTIVITY_TYPE_INIT_OTP_AUTH_V2: keysFor('ACTIVITY_TYPE_INIT_OTP_AUTH_V2'),
    ACTIVITY_TYPE_INIT_OTP_AUTH: keysFor('ACTIVITY_TYPE_INIT_OTP_AUTH'),
  },
  parentMaySubmit: true,
  validate(params: Obj, type: string) {
    return readInitOtp(params, { v3: type === 'ACTIVITY_TYPE_INIT_OTP_AUTH_V3', v1: type === 'ACTIVITY_TYPE_INIT_OTP_AUTH' });
  },
  authorize: authorizeInitOtp,
  async execute(ctx, intent) {
    const user = await userByEmail(ctx, intent.contact);
    return { otpId: await sendOtp(ctx, intent, user.email!, user.id) };
  },
};

interface OtpAuth extends LoginCommon { otpId: string; otpCode: string; targetPublicKey: string }

export const otpAuth: SubmitOperation<OtpAuth, { userId: string; apiKeyId: string; credentialBundle: string }> = {
  kind: 'submit',
  path: 'otp_auth',
  types: { ACTIVITY_TYPE_OTP_AUTH: keysFor('ACTIVITY_TYPE_OTP_AUTH') },
  parentMaySubmit: true,
  validate(params: Obj) {
    const v = new Validator();
    const otpId = v.string(params, 'otpId', 'otpId', { required: true, nonEmpty: true, max: 100 });
    const otpCode = v.string(params, 'otpCode', 'otpCode', { required: true, nonEmpty: true, max: 32 });
    const targetPublicKey = readTargetPublicKey(v, params);
    const common = readLoginCommon(v, params, true);
    v.done();
    return { otpId: otpId!, otpCode: otpCode!, targetPublicKey: targetPublicKey!, ...common };
  },
  authorize(p) { requireAuthFlowCaller(p, 'check one-time codes'); },
  locks: (intent) => [otpLock(intent.otpId)],
  async execute(ctx, intent) {
    const row = await checkOtp(ctx, intent.otpId, intent.otpCode, false);
    const user = await requireUser(ctx.tx, ctx.organization.id, row.userId!);
    await markEmailVerified(ctx, user, row.contact);
    const { key, credentialBundle } = await issueBundledKey(ctx, user, intent.targetPublicKey, {
      credentialType: CREDENTIAL.otpAuth, name: intent.apiKeyName ?? `OTP Auth - ${ctx.nowMs}`,
      expirationSeconds: intent.expirationSeconds, invalidateExisting: intent.invalidateExisting === true,
    });
    return { userId: user.id, apiKeyId: key.id, credentialBundle };
  },
};

// ---- recovery ------------------------------------------------------------------------------

interface InitRecovery { email: string; targetPublicKey: string; expirationSeconds?: string; emailCustomization: Customization; sender: Sender }

export const initUserEmailRecovery: SubmitOperation<InitRecovery, { userId: string }> = {
  kind: 'submit',
  path: 'init_user_email_recovery',
  types: {
    ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2: keysFor('ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2', { resultKey: 'initUserEmailRecoveryResult', specResultKey: 'initUserEmailRecoveryResult' }),
    ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY: keysFor('ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY'),
  },
  parentMaySubmit: true,
  validate(params: Obj, type: string) {
    const v = new Validator();
    const email = readEmail(v, params);
    const targetPublicKey = readTargetPublicKey(v, params);
    const expirationSeconds = v.uintString(params, 'expirationSeconds', 'expirationSeconds', { min: 1, max: MAX_ISSUED_KEY_SECONDS });
    const emailCustomization = readCustomization(v, params, type === 'ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2');
    const sender = readSender(v, params);
    v.done();
    return { email: email!, targetPublicKey: targetPublicKey!, emailCustomization, sender, ...(expirationSeconds !== undefined ? { expirationSeconds } : {}) };
  },
  authorize(p, _intent, _tx, services) { requireMail(services.auth); requireAuthFlowCaller(p, 'start e-mail recovery'); },
  async execute(ctx, intent) {
    await requireFlowEnabled(ctx, 'disableEmailRecovery', 'e-mail recovery');
    const user = await userByEmail(ctx, intent.email);
    const { key, credentialBundle } = await issueBundledKey(ctx, user, intent.targetPublicKey, {
      credentialType: CREDENTIAL.recoverUser, name: `Recovery - ${ctx.nowMs}`, expirationSeconds: intent.expirationSeconds, invalidateExisting: true,
    });
    await sendBundle(ctx, user.email!, credentialBundle, intent.emailCustomization, intent.sender, 'recover your account', key.expirationSeconds!);
    return { userId: user.id };
  },
};

interface RecoverUser { userId: string; authenticator: AuthenticatorParams }

export const recoverUser: SubmitOperation<RecoverUser, { authenticatorId: string[] }> = {
  kind: 'submit',
  path: 'recover_user',
  types: { ACTIVITY_TYPE_RECOVER_USER: keysFor('ACTIVITY_TYPE_RECOVER_USER') },
  validate(params: Obj) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, nonEmpty: true, max: 100 });
    if (params.authenticator === undefined || params.authenticator === null) v.fail('authenticator', 'is required');
    const [authenticator] = params.authenticator === undefined || params.authenticator === null ? []
      : readAuthenticatorParams(v, [params.authenticator], 'authenticator');
    v.done();
    return { userId: userId!, authenticator: authenticator! };
  },
  authorize(p, intent) {
    const recovering = 'credentialType' in p.credential && p.credential.credentialType === CREDENTIAL.recoverUser && p.user.id === intent.userId;
    if (!recovering && !isRoot(p)) throw permissionDenied('recover_user must be stamped with the recovery key e-mailed to that user');
  },
  async execute(ctx, intent) {
    const { tx, organization, nowMs, principal } = ctx;
    await requireUser(tx, organization.id, intent.userId);
    const ids = await registerAuthenticators(tx, organization.id, intent.userId, [intent.authenticator], 'authenticator', nowMs, ctx.newId);
    // The recovery key has served its purpose. Used once: a recover_user racing with this one (on
    // another node) that removed it first wins, and this one is undone.
    if ('credentialType' in principal.credential && principal.credential.credentialType === CREDENTIAL.recoverUser) {
      if (!await tx.apiKeys.delete(organization.id, principal.credential.id)) {
        throw notFound('the recovery key was used already: request a new one with init_user_email_recovery', 'API_KEY_NOT_FOUND');
      }
    }
    return { authenticatorId: ids };
  },
};
