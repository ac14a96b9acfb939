/**
 * OAuth (wire-compat §5): OIDC identities linked to users, and the flows that log a user in with
 * an ID token from a trusted issuer (src/auth/oidc.ts).
 * - create_oauth_providers (V2, V1), delete_oauth_providers, query get_oauth_providers; users
 *   created with oauthProviders (create_users, create_sub_organization) get them too. A provider
 *   is the token's (iss, aud, sub); V2 may give those claims directly instead of a token.
 * - oauth: a token bound to targetPublicKey (nonce) → a new OAUTH API key for the identity's user,
 *   its private key in a credential bundle.
 * - oauth_login: a token bound to the client's own publicKey → that key registered as a LOGIN
 *   credential, and a session JWT. stamp_login: the same for a user already stamping.
 * An application's backend usually runs oauth / oauth_login with its own (parent organization's)
 * key for a sub-organization's user: a root user of the organization or of its parent may.
 */
import { alreadyExists, invalidArgument, notFound, permissionDenied } from '../../errors.js';
import { isRoot, requireSelfOrRoot, type Principal } from '../../domain/principal.js';
import { assertRootStillReachable, normalizePublicKey, requireUser, rootCredentialsLock } from '../../domain/apiKeys.js';
import { oauthProviderRecord } from '../../domain/records.js';
import { CREDENTIAL, MAX_ISSUED_KEY_SECONDS, issueBundledKey, issueSession, stampingApiKey } from '../../auth/services.js';
import type { OidcIdentity } from '../../auth/oidc.js';
import type { Tx } from '../../storage/types.js';
import { keysFor, type ExecContext, type Services, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readTargetPublicKey } from './keyParams.js';

const MAX_TOKEN = 16_384;

/** One provider of a user: a name and an ID token, or (V2) the token's claims. */
export interface ProviderParams { providerName: string; oidcToken?: string; oidcClaims?: { iss: string; sub: string; aud: string } }

export function readProviderParams(v: Validator, list: unknown[] | undefined, field: string, claimsAllowed: boolean): ProviderParams[] {
  const out: ProviderParams[] = [];
  (list ?? []).forEach((x, i) => {
    const f = `${field}[${i}]`;
    const o = v.object(x, f);
    if (!o) return;
    const providerName = v.string(o, 'providerName', `${f}.providerName`, { required: true, nonEmpty: true, max: MAX_NAME });
    const oidcToken = v.string(o, 'oidcToken', `${f}.oidcToken`, { max: MAX_TOKEN }) || undefined;
    let oidcClaims: ProviderParams['oidcClaims'];
    if (claimsAllowed && o.oidcClaims !== undefined && o.oidcClaims !== null) {
      const c = v.object(o.oidcClaims, `${f}.oidcClaims`);
      if (c) {
        const issuer = v.string(c, 'iss', `${f}.oidcClaims.iss`, { required: true, nonEmpty: true, max: 512 });
        const subject = v.string(c, 'sub', `${f}.oidcClaims.sub`, { required: true, nonEmpty: true, max: 512 });
        const audience = v.string(c, 'aud', `${f}.oidcClaims.aud`, { required: true, nonEmpty: true, max: 512 });
        if (issuer && subject && audience) oidcClaims = { iss: issuer, sub: subject, aud: audience };
      }
    }
    if (oidcToken === undefined && oidcClaims === undefined) {
      v.fail(`${f}.oidcToken`, claimsAllowed ? 'an oidcToken or oidcClaims is required' : 'is required');
    } else if (oidcToken !== undefined && oidcClaims !== undefined) {
      v.fail(`${f}.oidcClaims`, 'give either oidcToken or oidcClaims, not both');
    }
    if (providerName !== undefined) {
      out.push({ providerName, ...(oidcToken !== undefined ? { oidcToken } : {}), ...(oidcClaims !== undefined ? { oidcClaims } : {}) });
    }
  });
  return out;
}

/** Verifies the ID tokens of providers (signature, issuer, expiry; no nonce): token → identity. */
export async function verifyProviderTokens(services: Services, providers: { p: ProviderParams; field: string }[]): Promise<Map<string, OidcIdentity>> {
  const out = new Map<string, OidcIdentity>();
  for (const { p, field } of providers) {
    if (p.oidcToken !== undefined && !out.has(p.oidcToken)) {
      out.set(p.oidcToken, await services.auth.oidc.verify(p.oidcToken, `${field}.oidcToken`));
    }
  }
  return out;
}

/** Links providers to a user; an identity already linked in the organization is refused. */
export async function insertProviders(ctx: ExecContext, organizationId: string, userId: string, providers: ProviderParams[], verified: Map<string, OidcIdentity> | undefined): Promise<string[]> {
  const ids: string[] = [];
  for (const p of providers) {
    const c = p.oidcClaims;
    const id = c ? { issuer: c.iss, audience: c.aud, subject: c.sub } : verified?.get(p.oidcToken!);
    if (!id) throw invalidArgument('an OAuth provider\'s token was not verified');
    // one link of the identity racing on another node commits first, and is found below (not the unique constraint: a 500)
    await ctx.tx.lock('credential', `${organizationId}/oauth/${JSON.stringify([id.issuer, id.audience, id.subject])}`);
    const taken = await ctx.tx.oauthProviders.byIdentity(organizationId, id.issuer, id.audience, id.subject);
    if (taken) throw alreadyExists(`this OAuth identity is already linked to user ${taken.userId}`);
    const providerId = ctx.newId();
    await ctx.tx.oauthProviders.insert({
      id: providerId, organizationId, userId, name: p.providerName, issuer: id.issuer, audience: id.audience, subject: id.subject,
      createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
    });
    ids.push(providerId);
  }
  return ids;
}

/** Who may run a login flow for a user of the organization: its root users, or its parent's. */
export function requireAuthFlowCaller(p: Principal, what: string): void {
  if (isRoot(p) || (p.access === 'parent' && p.user.isRoot)) return;
  throw permissionDenied(`only a root user of the organization or of its parent organization may ${what}`);
}

/** The user an identity is linked to in the organization (FAILED activity when none). */
async function userOfIdentity(ctx: ExecContext, id: OidcIdentity) {
  const p = await ctx.tx.oauthProviders.byIdentity(ctx.organization.id, id.issuer, id.audience, id.subject);
  if (!p) throw notFound('no user of this organization has this OAuth identity (create_oauth_providers links one)', 'OAUTH_PROVIDER_NOT_FOUND');
  return await requireUser(ctx.tx, ctx.organization.id, p.userId);
}

/** What every flow that issues a key reads: apiKeyName (when the type has it), expirationSeconds, invalidateExisting. */
export interface LoginCommon { apiKeyName?: string; expirationSeconds?: string; invalidateExisting?: boolean }

export function readLoginCommon(v: Validator, params: Obj, withName: boolean): LoginCommon {
  const apiKeyName = withName ? v.string(params, 'apiKeyName', 'apiKeyName', { max: MAX_NAME }) || undefined : undefined;
  const expirationSeconds = v.uintString(params, 'expirationSeconds', 'expirationSeconds', { min: 1, max: MAX_ISSUED_KEY_SECONDS });
  const invalidateExisting = v.boolean(params, 'invalidateExisting', 'invalidateExisting');
  return {
    ...(apiKeyName !== undefined ? { apiKeyName } : {}),
    ...(expirationSeconds !== undefined ? { expirationSeconds } : {}),
    ...(invalidateExisting !== undefined ? { invalidateExisting } : {}),
  };
}

/** A P-256 public key in hex (compressed or not), kept as sent: a nonce, a token or a signature may name it so. */
export function readP256Key(v: Validator, params: Obj, field: string, required: boolean): string | undefined {
  const raw = v.string(params, field, field, { required, max: 200 }) || undefined;
  if (raw !== undefined && !normalizePublicKey('API_KEY_CURVE_P256', raw)) v.fail(field, 'must be a P-256 public key in hex (66 or 130 characters)');
  return raw;
}

// ---- providers -----------------------------------------------------------------------------

interface CreateProviders { userId: string; oauthProviders: ProviderParams[] }

export const createOauthProviders: SubmitOperation<CreateProviders, { providerIds: string[] }> = {
  kind: 'submit',
  path: 'create_oauth_providers',
  types: {
    ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2: keysFor('ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2'),
    ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS: keysFor('ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS'),
  },
  validate(params: Obj, type: string) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, nonEmpty: true, max: 100 });
    const list = v.array(params, 'oauthProviders', 'oauthProviders', { required: true, nonEmpty: true, max: 10 });
    const oauthProviders = readProviderParams(v, list, 'oauthProviders', type === 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2');
    v.done();
    return { userId: userId!, oauthProviders };
  },
  // Not from the parent: linking an identity it controls would let it log in as the user.
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'link OAuth providers'); },
  external(intent, services) {
    return verifyProviderTokens(services, intent.oauthProviders.map((p, i) => ({ p, field: `oauthProviders[${i}]` })));
  },
  async execute(ctx, intent) {
    await requireUser(ctx.tx, ctx.organization.id, intent.userId);
    return { providerIds: await insertProviders(ctx, ctx.organization.id, intent.userId, intent.oauthProviders, ctx.external as Map<string, OidcIdentity>) };
  },
};

interface DeleteProviders { userId: string; providerIds: string[] }

export const deleteOauthProviders: SubmitOperation<DeleteProviders, { providerIds: string[] }> = {
  kind: 'submit',
  path: 'delete_oauth_providers',
  types: { ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS: keysFor('ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS') },
  validate(params: Obj) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, nonEmpty: true, max: 100 });
    const providerIds = v.stringArray(params, 'providerIds', 'providerIds', { required: true, nonEmpty: true, max: 100 });
    v.done();
    return { userId: userId!, providerIds: [...new Set(providerIds)] };
  },
  locks: rootCredentialsLock,
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'remove OAuth providers'); },
  async execute(ctx, intent) {
    await requireUser(ctx.tx, ctx.organization.id, intent.userId);
    for (const id of intent.providerIds) {
      const row = await ctx.tx.oauthProviders.get(ctx.organization.id, id);
      if (!row || row.userId !== intent.userId) throw notFound(`OAuth provider ${id} of user ${intent.userId} not found`);
      await ctx.tx.oauthProviders.delete(ctx.organization.id, id);
    }
    // as delete_api_keys and delete_authenticators: no lock-out (the savepoint undoes the deletes)
    await assertRootStillReachable(ctx.tx, ctx.organization.id, ctx.nowMs);
    return { providerIds: intent.providerIds };
  },
};

export const getOauthProviders: QueryOperation<{ userId?: string }> = {
  kind: 'query',
  path: 'get_oauth_providers',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const userId = v.string(body, 'userId', 'userId', { max: 100 }) || undefined;
    v.done();
    return userId !== undefined ? { userId } : {};
  },
  async execute(ctx, q) {
    // Without userId: the caller's own providers (a parent organization's caller has none here).
    const userId = q.userId ?? (ctx.principal.access === 'member' ? ctx.principal.user.id : undefined);
    if (userId === undefined) return { oauthProviders: [] };
    await requireUser(ctx.tx, ctx.organization.id, userId);
    return { oauthProviders: (await ctx.tx.oauthProviders.listByUser(ctx.organization.id, userId)).map(oauthProviderRecord) };
  },
};

// ---- logins --------------------------------------------------------------------------------

interface OauthIntent extends LoginCommon { oidcToken: string; targetPublicKey: string }

export const oauth: SubmitOperation<OauthIntent, { userId: string; apiKeyId: string; credentialBundle: string }> = {
  kind: 'submit',
  path: 'oauth',
  types: { ACTIVITY_TYPE_OAUTH: keysFor('ACTIVITY_TYPE_OAUTH') },
  parentMaySubmit: true,
  validate(params: Obj) {
    const v = new Validator();
    const oidcToken = v.string(params, 'oidcToken', 'oidcToken', { required: true, nonEmpty: true, max: MAX_TOKEN });
    const targetPublicKey = readTargetPublicKey(v, params);
    const common = readLoginCommon(v, params, true);
    v.done();
    return { oidcToken: oidcToken!, targetPublicKey: targetPublicKey!, ...common };
  },
  authorize(p) { requireAuthFlowCaller(p, 'log a user in with OAuth'); },
  external(intent, services) { return services.auth.oidc.verify(intent.oidcToken, 'oidcToken', intent.targetPublicKey); },
  async execute(ctx, intent) {
    const user = await userOfIdentity(ctx, ctx.external as OidcIdentity);
    const { key, credentialBundle } = await issueBundledKey(ctx, user, intent.targetPublicKey, {
      credentialType: CREDENTIAL.oauth,
      name: intent.apiKeyName ?? `OAuth - ${ctx.nowMs}`,
      expirationSeconds: intent.expirationSeconds,
      invalidateExisting: intent.invalidateExisting === true,
    });
    return { userId: user.id, apiKeyId: key.id, credentialBundle };
  },
};

interface OauthLoginIntent extends LoginCommon { oidcToken: string; publicKey: string }

export const oauthLogin: SubmitOperation<OauthLoginIntent, { session: string }> = {
  kind: 'submit',
  path: 'oauth_login',
  types: { ACTIVITY_TYPE_OAUTH_LOGIN: keysFor('ACTIVITY_TYPE_OAUTH_LOGIN') },
  parentMaySubmit: true,
  validate(params: Obj) {
    const v = new Validator();
    const oidcToken = v.string(params, 'oidcToken', 'oidcToken', { required: true, nonEmpty: true, max: MAX_TOKEN });
    // The nonce is computed over the key exactly as sent; the key is registered compressed.
    const sent = readP256Key(v, params, 'publicKey', true);
    const common = readLoginCommon(v, params, false);
    v.done();
    return { oidcToken: oidcToken!, publicKey: sent!, ...common };
  },
  authorize(p) { requireAuthFlowCaller(p, 'log a user in with OAuth'); },
  external(intent, services) { return services.auth.oidc.verify(intent.oidcToken, 'oidcToken', intent.publicKey); },
  async execute(ctx, intent) {
    const user = await userOfIdentity(ctx, ctx.external as OidcIdentity);
    return { session: (await issueSession(ctx, user, normalizePublicKey('API_KEY_CURVE_P256', intent.publicKey)!, loginOptions(ctx, intent))).session };
  },
};

/** The LOGIN key options of the flows that return a session JWT. */
export function loginOptions(ctx: ExecContext, intent: LoginCommon) {
  return {
    credentialType: CREDENTIAL.login,
    name: `Login - ${ctx.nowMs}`,
    expirationSeconds: intent.expirationSeconds,
    invalidateExisting: intent.invalidateExisting === true,
  };
}

interface StampLoginIntent extends LoginCommon { publicKey: string }

export const stampLogin: SubmitOperation<StampLoginIntent, { session: string }> = {
  kind: 'submit',
  path: 'stamp_login',
  types: { ACTIVITY_TYPE_STAMP_LOGIN: keysFor('ACTIVITY_TYPE_STAMP_LOGIN') },
  validate(params: Obj) {
    const v = new Validator();
    const sent = readP256Key(v, params, 'publicKey', true);
    const common = readLoginCommon(v, params, false);
    v.done();
    return { publicKey: sent!, ...common };
  },
  // The stamping user logs itself in (its passkey or key stands for it).
  authorize() { /* any member user, for itself */ },
  async execute(ctx, intent) {
    const user = await requireUser(ctx.tx, ctx.organization.id, ctx.principal.user.id);
    return { session: (await issueSession(ctx, user, normalizePublicKey('API_KEY_CURVE_P256', intent.publicKey)!, { ...loginOptions(ctx, intent), allowlistOf: stampingApiKey(ctx.principal.credential) })).session };
  },
};
