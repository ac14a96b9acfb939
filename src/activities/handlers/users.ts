/** create_users, delete_users, update_user, list_users, get_user. */
import { ApiError, Grpc, failedPrecondition, invalidArgument, notFound, permissionDenied } from '../../errors.js';
import { isRoot, requireRoot, requireSelfOrRoot, type Principal } from '../../domain/principal.js';
import { insertApiKeys, readApiKeyParams, requireUser, rootCredentialsLock, type ApiKeyParams } from '../../domain/apiKeys.js';
import type { ApiKeyCurve } from '../../storage/types.js';
import { readAuthenticatorParams, registerAuthenticators, type AuthenticatorParams } from '../../domain/authenticators.js';
import { userRecord, userRecords } from '../../domain/records.js';
import type { OrganizationRow, Tx } from '../../storage/types.js';
import { readVerificationToken, spendVerificationToken, type VerificationClaims } from '../../auth/tokens.js';
import type { OidcIdentity } from '../../auth/oidc.js';
import { insertProviders, readProviderParams, verifyProviderTokens, type ProviderParams } from './oauth.js';
import { keysFor, type ExecContext, type Services, type QueryOperation, type SubmitOperation } from '../types.js';
import { E164, EMAIL, MAX_NAME, Validator, type Obj } from '../../domain/validate.js';

/** A user as create_users and create_sub_organization (rootUsers) describe it. */
export interface UserParams {
  userName: string;
  userEmail?: string;
  userPhoneNumber?: string;
  apiKeys: ApiKeyParams[];
  authenticators: AuthenticatorParams[];
  oauthProviders: ProviderParams[];
}

interface NewUser extends UserParams { userTags: string[] }

/**
 * Reads one user object at field `f`. `phone` / `oauth`: whether the shape has userPhoneNumber /
 * oauthProviders; `defaultCurve` for API keys of the older shapes without curveType. Passkeys are
 * read here and checked at registration; OAuth providers' ID tokens are verified by external().
 */
export function readUserParams(v: Validator, o: Obj, f: string, opts: { phone?: boolean; oauth?: boolean; defaultCurve?: ApiKeyCurve } = {}): UserParams | undefined {
  const userName = v.string(o, 'userName', `${f}.userName`, { required: true, nonEmpty: true, max: MAX_NAME });
  const userEmail = v.string(o, 'userEmail', `${f}.userEmail`, { max: 320, pattern: EMAIL, patternDesc: 'must be an e-mail address' }) || undefined;
  const userPhoneNumber = opts.phone === false ? undefined
    : v.string(o, 'userPhoneNumber', `${f}.userPhoneNumber`, { max: 16, pattern: E164, patternDesc: 'must be an E.164 phone number such as +13214567890' }) || undefined;
  const apiKeys = readApiKeyParams(v, v.array(o, 'apiKeys', `${f}.apiKeys`), `${f}.apiKeys`, opts.defaultCurve);
  const authenticators = readAuthenticatorParams(v, v.array(o, 'authenticators', `${f}.authenticators`), `${f}.authenticators`);
  const oauthProviders = opts.oauth === false ? []
    : readProviderParams(v, v.array(o, 'oauthProviders', `${f}.oauthProviders`, { max: 10 }), `${f}.oauthProviders`, true);
  if (userName === undefined) return undefined;
  return {
    userName,
    ...(userEmail !== undefined ? { userEmail } : {}),
    ...(userPhoneNumber !== undefined ? { userPhoneNumber } : {}),
    apiKeys, authenticators, oauthProviders,
  };
}

/** Inserts a user with its API keys and passkeys (inside an activity's transaction). */
export async function insertUser(ctx: ExecContext, organizationId: string, u: UserParams, isRoot: boolean, field: string): Promise<string> {
  const { tx, nowMs } = ctx;
  const id = ctx.newId();
  await tx.users.insert({
    id, organizationId, name: u.userName, email: u.userEmail ?? null, phoneNumber: u.userPhoneNumber ?? null,
    isRoot, createdMs: nowMs, updatedMs: nowMs,
  });
  await insertApiKeys(tx, organizationId, id, u.apiKeys, nowMs, ctx.newId);
  await registerAuthenticators(tx, organizationId, id, u.authenticators, `${field}.authenticators`, nowMs, ctx.newId);
  await insertProviders(ctx, organizationId, id, u.oauthProviders, ctx.external as Map<string, OidcIdentity> | undefined);
  return id;
}

/** external() of the operations that create users: verifies their OAuth providers' ID tokens. */
export function verifyUsersProviders(services: Services, users: UserParams[], field: string): Promise<Map<string, OidcIdentity>> {
  return verifyProviderTokens(services, users.flatMap((u, i) => u.oauthProviders.map((p, j) => ({ p, field: `${field}[${i}].oauthProviders[${j}]` }))));
}

/** Fails `field` when one public key appears for two of the users. */
export function refuseSharedKeys(v: Validator, users: UserParams[], field: string, what: string): void {
  const allKeys = users.flatMap((u) => u.apiKeys.map((k) => k.publicKey));
  if (new Set(allKeys).size !== allKeys.length) v.fail(field, `the same public key appears for two ${what}`);
}

export async function requireTags(tx: Tx, organizationId: string, tagIds: string[], type: 'TAG_TYPE_USER' | 'TAG_TYPE_PRIVATE_KEY'): Promise<void> {
  for (const id of tagIds) {
    const t = await tx.tags.get(organizationId, id);
    if (!t || t.type !== type) throw notFound(`${type === 'TAG_TYPE_USER' ? 'user' : 'private key'} tag ${id} not found`, 'TAG_NOT_FOUND');
  }
}

export const createUsers: SubmitOperation<{ users: NewUser[] }, { userIds: string[] }> = {
  kind: 'submit',
  path: 'create_users',
  types: {
    ACTIVITY_TYPE_CREATE_USERS_V4: keysFor('ACTIVITY_TYPE_CREATE_USERS_V4', { resultKey: 'createUsersResult', specResultKey: 'createUsersResult' }),
    ACTIVITY_TYPE_CREATE_USERS_V3: keysFor('ACTIVITY_TYPE_CREATE_USERS_V3', { resultKey: 'createUsersResult', specResultKey: 'createUsersResult' }),
    ACTIVITY_TYPE_CREATE_USERS_V2: keysFor('ACTIVITY_TYPE_CREATE_USERS_V2', { resultKey: 'createUsersResult', specResultKey: 'createUsersResult' }),
  },
  validate(params: Obj, type: string) {
    const v = new Validator();
    const list = v.array(params, 'users', 'users', { required: true, nonEmpty: true }) ?? [];
    const users: NewUser[] = [];
    list.forEach((item, i) => {
      const f = `users[${i}]`;
      const o = v.object(item, f);
      if (!o) return;
      const u = readUserParams(v, o, f, {
        phone: type !== 'ACTIVITY_TYPE_CREATE_USERS_V2',
        oauth: type !== 'ACTIVITY_TYPE_CREATE_USERS_V2',
        ...(type === 'ACTIVITY_TYPE_CREATE_USERS_V4' ? {} : { defaultCurve: 'API_KEY_CURVE_P256' as const }),
      });
      const userTags = v.stringArray(o, 'userTags', `${f}.userTags`) ?? [];
      if (u) users.push({ ...u, userTags });
    });
    refuseSharedKeys(v, users, 'users', 'users');
    v.done();
    return { users };
  },
  authorize(p) { requireRoot(p, 'create users'); },
  external(intent, services) { return verifyUsersProviders(services, intent.users, 'users'); },
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    const userIds: string[] = [];
    for (const [i, u] of intent.users.entries()) {
      await requireTags(tx, organization.id, u.userTags, 'TAG_TYPE_USER');
      const id = await insertUser(ctx, organization.id, u, false, `users[${i}]`);
      for (const t of u.userTags) await tx.tags.attach(t, id);
      userIds.push(id);
    }
    return { userIds };
  },
};

/**
 * create_api_only_users (the older form of create_users for users without passkeys): API keys
 * in the older parameters (P-256 unless a curveType is given), tags, an optional e-mail.
 */
export const createApiOnlyUsers: SubmitOperation<{ apiOnlyUsers: NewUser[] }, { userIds: string[] }> = {
  kind: 'submit',
  path: 'create_api_only_users',
  types: { ACTIVITY_TYPE_CREATE_API_ONLY_USERS: keysFor('ACTIVITY_TYPE_CREATE_API_ONLY_USERS') },
  validate(params: Obj) {
    const v = new Validator();
    const list = v.array(params, 'apiOnlyUsers', 'apiOnlyUsers', { required: true, nonEmpty: true }) ?? [];
    const users: NewUser[] = [];
    list.forEach((item, i) => {
      const f = `apiOnlyUsers[${i}]`;
      const o = v.object(item, f);
      if (!o) return;
      if (o.authenticators !== undefined || o.oauthProviders !== undefined) v.fail(f, 'API-only users have API keys only; use create_users for passkeys and OAuth providers');
      const u = readUserParams(v, o, f, { phone: false, oauth: false, defaultCurve: 'API_KEY_CURVE_P256' });
      const userTags = v.stringArray(o, 'userTags', `${f}.userTags`) ?? [];
      if (u) users.push({ ...u, userTags });
    });
    refuseSharedKeys(v, users, 'apiOnlyUsers', 'apiOnlyUsers');
    v.done();
    return { apiOnlyUsers: users };
  },
  authorize(p) { requireRoot(p, 'create users'); },
  execute: (ctx, intent) => createUsers.execute(ctx, { users: intent.apiOnlyUsers }),
};

export const deleteUsers: SubmitOperation<{ userIds: string[] }, { userIds: string[] }> = {
  kind: 'submit',
  path: 'delete_users',
  types: { ACTIVITY_TYPE_DELETE_USERS: keysFor('ACTIVITY_TYPE_DELETE_USERS') },
  validate(params) {
    const v = new Validator();
    const userIds = v.stringArray(params, 'userIds', 'userIds', { required: true, nonEmpty: true });
    v.done();
    return { userIds: userIds! };
  },
  // a user made a root user meanwhile (update_root_quorum on another node) is seen as one here
  locks: rootCredentialsLock,
  authorize(p) { requireRoot(p, 'delete users'); },
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    for (const id of intent.userIds) {
      const u = await requireUser(tx, organization.id, id);
      if (u.isRoot) throw failedPrecondition(`user ${id} is a member of the root quorum and cannot be deleted`);
    }
    for (const id of intent.userIds) {
      for (const k of await tx.apiKeys.listByUser(organization.id, id)) await tx.apiKeys.delete(organization.id, k.id);
      for (const a of await tx.authenticators.listByUser(organization.id, id)) await tx.authenticators.delete(organization.id, a.id);
      for (const o of await tx.oauthProviders.listByUser(organization.id, id)) await tx.oauthProviders.delete(organization.id, o.id);
      await tx.otps.deleteByUser(organization.id, id);
      await tx.verifiedContacts.deleteByUser(organization.id, id);
      await tx.tags.detachAll(id);
      await tx.users.delete(organization.id, id);
    }
    return { userIds: intent.userIds };
  },
};

interface UpdateUser { userId: string; userName?: string; userEmail?: string; userPhoneNumber?: string; userTagIds?: string[]; verificationToken?: string }

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a);
  return b.every((x) => s.has(x));
}

/** Shared by update_user and its single-field variants. */
async function applyUserUpdate(tx: Tx, organizationId: string, u: UpdateUser, nowMs: number): Promise<{ userId: string }> {
  const row = await requireUser(tx, organizationId, u.userId);
  if (u.userTagIds !== undefined) {
    await requireTags(tx, organizationId, u.userTagIds, 'TAG_TYPE_USER');
    const current = await tx.tags.tagsOf(u.userId, 'TAG_TYPE_USER');
    for (const t of current) if (!u.userTagIds.includes(t)) await tx.tags.detach(t, u.userId);
    for (const t of u.userTagIds) await tx.tags.attach(t, u.userId);
  }
  await tx.users.update({
    ...row,
    name: u.userName ?? row.name,
    email: u.userEmail === undefined ? row.email : (u.userEmail === '' ? null : u.userEmail),
    phoneNumber: u.userPhoneNumber === undefined ? row.phoneNumber : (u.userPhoneNumber === '' ? null : u.userPhoneNumber),
    updatedMs: nowMs,
  });
  return { userId: u.userId };
}

function readUserUpdate(v: Validator, params: Obj, fields: { name?: boolean; email?: boolean; phone?: boolean; tags?: boolean; token?: boolean }, required: Partial<Record<'name' | 'email' | 'phone', boolean>> = {}): UpdateUser {
  const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
  const out: UpdateUser = { userId: userId ?? '' };
  if (fields.name) {
    const n = v.string(params, 'userName', 'userName', { required: required.name, nonEmpty: true, max: MAX_NAME });
    if (n !== undefined) out.userName = n;
  }
  if (fields.email) {
    const raw = params.userEmail;
    if (raw === '' && !required.email) out.userEmail = '';
    else {
      const e = v.string(params, 'userEmail', 'userEmail', { required: required.email, max: 320, pattern: EMAIL, patternDesc: 'must be an e-mail address' });
      if (e !== undefined) out.userEmail = e;
    }
  }
  if (fields.phone) {
    const raw = params.userPhoneNumber;
    if (raw === '' && !required.phone) out.userPhoneNumber = '';
    else {
      const p = v.string(params, 'userPhoneNumber', 'userPhoneNumber', { required: required.phone, max: 16, pattern: E164, patternDesc: 'must be an E.164 phone number such as +13214567890' });
      if (p !== undefined) out.userPhoneNumber = p;
    }
  }
  if (fields.tags) {
    const t = v.stringArray(params, 'userTagIds', 'userTagIds');
    if (t !== undefined) out.userTagIds = t;
  }
  if (fields.token) {
    const t = v.string(params, 'verificationToken', 'verificationToken', { max: 8192 }) || undefined;
    if (t !== undefined) out.verificationToken = t;
  }
  return out;
}

/**
 * The claims of update_user_email's / update_user_phone_number's verificationToken (verify_otp's,
 * issued in this organization or its parent) once they prove the address being set; 400 otherwise.
 */
function contactClaims(vault: Services['vault'], organization: OrganizationRow, u: UpdateUser, nowMs: number): VerificationClaims | undefined {
  if (u.verificationToken === undefined) return undefined;
  const claims = readVerificationToken(vault, u.verificationToken, nowMs);
  const bad = (description: string) => invalidArgument(`invalid verification token: ${description}`, [{ field: 'verificationToken', description }]);
  if (claims.organization_id !== organization.id && claims.organization_id !== organization.parentId) throw bad('issued for another organization');
  const proves = u.userEmail !== undefined
    ? claims.verification_type === 'OTP_TYPE_EMAIL' && u.userEmail !== '' && claims.contact.toLowerCase() === u.userEmail.toLowerCase()
    : claims.verification_type === 'OTP_TYPE_SMS' && u.userPhoneNumber !== '' && claims.contact === u.userPhoneNumber;
  if (!proves) throw bad(`it verifies another ${u.userEmail !== undefined ? 'e-mail address' : 'phone number'} than the one set`);
  return claims;
}

/** A token that does not check out is a 400 that stores nothing (a rule: before the permission rule). */
async function authorizeVerifiedUpdate(p: Principal, u: UpdateUser, tx: Tx, services: Services, organization: OrganizationRow): Promise<void> {
  contactClaims(services.vault, organization, u, Date.now());
  await authorizeUserUpdate(p, u, tx);
}

/** With a verification token (spent once), the address set counts as verified (list_verified_suborgs), as Turnkey marks it. */
async function applyVerifiedUpdate(ctx: ExecContext, u: UpdateUser): Promise<{ userId: string }> {
  const claims = contactClaims(ctx.services.vault, ctx.organization, u, ctx.nowMs);
  if (claims) await spendVerificationToken(ctx.tx, claims, ctx.nowMs);
  const out = await applyUserUpdate(ctx.tx, ctx.organization.id, u, ctx.nowMs);
  if (claims) {
    await ctx.tx.verifiedContacts.mark(ctx.organization.id, u.userId, u.userEmail !== undefined ? 'EMAIL' : 'PHONE_NUMBER', (u.userEmail ?? u.userPhoneNumber)!, ctx.nowMs);
  }
  return out;
}

async function authorizeUserUpdate(p: Principal, u: UpdateUser, tx: Tx): Promise<void> {
  requireSelfOrRoot(p, u.userId, 'update a user');
  if (!isRoot(p) && u.userTagIds !== undefined) {
    const current = await tx.tags.tagsOf(u.userId, 'TAG_TYPE_USER');
    if (!sameSet(current, u.userTagIds)) throw permissionDenied('only a root user may change tag membership');
  }
}

export const updateUser: SubmitOperation<UpdateUser, { userId: string }> = {
  kind: 'submit',
  path: 'update_user',
  types: { ACTIVITY_TYPE_UPDATE_USER: keysFor('ACTIVITY_TYPE_UPDATE_USER') },
  validate(params) {
    const v = new Validator();
    const u = readUserUpdate(v, params, { name: true, email: true, phone: true, tags: true });
    v.done();
    return u;
  },
  authorize: authorizeUserUpdate,
  execute: (ctx, u) => applyUserUpdate(ctx.tx, ctx.organization.id, u, ctx.nowMs),
};

export const updateUserName: SubmitOperation<UpdateUser, { userId: string }> = {
  kind: 'submit',
  path: 'update_user_name',
  types: { ACTIVITY_TYPE_UPDATE_USER_NAME: keysFor('ACTIVITY_TYPE_UPDATE_USER_NAME') },
  validate(params) {
    const v = new Validator();
    const u = readUserUpdate(v, params, { name: true }, { name: true });
    v.done();
    return u;
  },
  authorize: authorizeUserUpdate,
  execute: (ctx, u) => applyUserUpdate(ctx.tx, ctx.organization.id, u, ctx.nowMs),
};

export const updateUserEmail: SubmitOperation<UpdateUser, { userId: string }> = {
  kind: 'submit',
  path: 'update_user_email',
  types: { ACTIVITY_TYPE_UPDATE_USER_EMAIL: keysFor('ACTIVITY_TYPE_UPDATE_USER_EMAIL') },
  validate(params) {
    const v = new Validator();
    const u = readUserUpdate(v, params, { email: true, token: true });
    if (u.userEmail === undefined) v.fail('userEmail', 'is required');
    v.done();
    return u;
  },
  authorize: authorizeVerifiedUpdate,
  execute: applyVerifiedUpdate,
};

export const updateUserPhoneNumber: SubmitOperation<UpdateUser, { userId: string }> = {
  kind: 'submit',
  path: 'update_user_phone_number',
  types: { ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER: keysFor('ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER') },
  validate(params) {
    const v = new Validator();
    const u = readUserUpdate(v, params, { phone: true, token: true });
    if (u.userPhoneNumber === undefined) v.fail('userPhoneNumber', 'is required');
    v.done();
    return u;
  },
  authorize: authorizeVerifiedUpdate,
  execute: applyVerifiedUpdate,
};

export const listUsers: QueryOperation<object> = {
  kind: 'query',
  path: 'list_users',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: () => ({}),
  async execute(ctx) {
    return { users: await userRecords(ctx.tx, await ctx.tx.users.list(ctx.organization.id)) };
  },
};

export const getUser: QueryOperation<{ userId: string }> = {
  kind: 'query',
  path: 'get_user',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const userId = v.string(body, 'userId', 'userId', { required: true, max: 100 });
    v.done();
    return { userId: userId! };
  },
  async execute(ctx, q) {
    const u = await ctx.tx.users.get(ctx.organization.id, q.userId);
    if (!u) throw new ApiError(Grpc.NOT_FOUND, `user ${q.userId} not found`, { turnkeyErrorCode: 'USER_NOT_FOUND' });
    return { user: await userRecord(ctx.tx, u) };
  },
};
