/**
 * Sub-organizations: create_sub_organization, delete_sub_organization; list_suborgs.
 * (list_verified_suborgs waits for the flows that verify an e-mail address or phone number.)
 *
 * Rules (README, "Sub-organizations"):
 * - a root user of an organization without a parent creates them, one level deep (a
 *   sub-organization has no sub-organizations of its own);
 * - the new organization's root users are the request's rootUsers, with their API keys; its root
 *   quorum threshold is between 1 and their number; an optional wallet is created in it;
 * - the parent's credentials may read it (queries), never change it: changes are made by its own
 *   users, with its own API keys (the same public key may be registered in several organizations);
 * - a root user of the sub-organization deletes it; like delete_wallets, every wallet and private
 *   key in it must have been exported first unless deleteWithoutExport is true.
 */
import { randomUUID } from 'node:crypto';
import { failedPrecondition, invalidArgument } from '../../errors.js';
import { requireRoot, type Principal } from '../../domain/principal.js';
import { addressKey } from '../../storage/keys.js';
import type { OrganizationRow, Tx, SubOrgFilter } from '../../storage/types.js';
import type { Vault } from '../../crypto/index.js';
import { keysFor, type ExecContext, type QueryOperation, type SubmitOperation } from '../types.js';
import { decodeJwt, type JWTPayload } from 'jose';
import { checkClientSignature, readVerificationToken, spendVerificationToken, type ClientSignature, type VerificationClaims } from '../../auth/tokens.js';
import { readClientSignature } from './otp.js';
import { findUserByEmail, markEmailVerified } from './emailAuth.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readPagination, type Pagination } from './activities.js';
import { readAccounts } from './keyParams.js';
import { insertUser, readUserParams, refuseSharedKeys, verifyUsersProviders, type UserParams } from './users.js';
import { createWalletIn, planWallet, readMnemonicLength, refuseDuplicates, type CreateWallet, type WalletPlan } from './wallets.js';

/** What create_sub_organization makes before its transaction: the new organization's id and its wallet. */
interface SubOrganizationPlan { subOrganizationId: string; wallet?: WalletPlan }

const DISABLE_FLAGS = ['disableEmailRecovery', 'disableEmailAuth', 'disableSmsAuth', 'disableOtpEmailAuth'] as const;
type DisableFlag = typeof DISABLE_FLAGS[number];

export type CreateSubOrganization = {
  subOrganizationName: string;
  rootUsers: UserParams[];
  rootQuorumThreshold: number;
  wallet?: CreateWallet;
  /** verify_otp's token for a root user's e-mail address (sign-up), and its key's client signature */
  verificationToken?: string;
  clientSignature?: ClientSignature;
} & Partial<Record<DisableFlag, boolean>>;

export interface CreateSubOrganizationResult {
  subOrganizationId: string;
  wallet?: { walletId: string; addresses: string[] };
  rootUserIds: string[];
}

function readRootUsers(v: Validator, params: Obj): UserParams[] {
  const list = v.array(params, 'rootUsers', 'rootUsers', { required: true, nonEmpty: true }) ?? [];
  const users: UserParams[] = [];
  list.forEach((item, i) => {
    const o = v.object(item, `rootUsers[${i}]`);
    const u = o && readUserParams(v, o, `rootUsers[${i}]`);
    if (u) users.push(u);
  });
  refuseSharedKeys(v, users, 'rootUsers', 'root users');
  return users;
}

const subOrgTypes = {
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8: keysFor('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8'),
  ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7: keysFor('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7'),
};

export const createSubOrganization: SubmitOperation<CreateSubOrganization, CreateSubOrganizationResult> = {
  kind: 'submit',
  path: 'create_sub_organization',
  types: subOrgTypes,
  validate(params: Obj) {
    const v = new Validator();
    const subOrganizationName = v.string(params, 'subOrganizationName', 'subOrganizationName', { required: true, nonEmpty: true, max: MAX_NAME });
    const rootUsers = readRootUsers(v, params);
    const rootQuorumThreshold = v.int(params, 'rootQuorumThreshold', 'rootQuorumThreshold', 1, Math.max(rootUsers.length, 1));
    let wallet: CreateWallet | undefined;
    if (params.wallet !== undefined && params.wallet !== null) {
      const w = v.object(params.wallet, 'wallet');
      if (w) {
        const walletName = v.string(w, 'walletName', 'wallet.walletName', { required: true, max: MAX_NAME });
        const accounts = readAccounts(v, w, 'accounts', 'wallet.accounts');
        const mnemonicLength = readMnemonicLength(v, w, 'wallet.mnemonicLength');
        if (walletName !== undefined) wallet = { walletName, accounts, mnemonicLength };
      }
    }
    const flags: Partial<Record<DisableFlag, boolean>> = {};
    for (const k of DISABLE_FLAGS) {
      const b = v.boolean(params, k, k);
      if (b !== undefined) flags[k] = b;
    }
    const verificationToken = v.string(params, 'verificationToken', 'verificationToken', { max: 8192 }) || undefined;
    const clientSignature = readClientSignature(v, params, 'clientSignature', false);
    if (clientSignature && !verificationToken) v.fail('clientSignature', 'goes with a verificationToken');
    v.done();
    return {
      subOrganizationName: subOrganizationName!, rootUsers, rootQuorumThreshold: rootQuorumThreshold!,
      ...(wallet ? { wallet } : {}), ...flags,
      ...(verificationToken ? { verificationToken } : {}), ...(clientSignature ? { clientSignature } : {}),
    };
  },
  external(intent, services) { return verifyUsersProviders(services, intent.rootUsers, 'rootUsers'); },
  // one at a time per parent (across nodes): each is newer than every sibling committed before it
  locks: (_intent, organizationId) => [{ name: 'sub-organizations', key: organizationId }],
  async authorize(p, intent, store, services) {
    await requireSubOrganizationRules(store, p.organization, intent);
    // A token that is not this server's, or not for this organization, stores nothing.
    if (intent.verificationToken !== undefined) signupClaims(services.vault, p.organization.id, intent, Date.now());
    requireRoot(p, 'create sub-organizations');
  },
  // The new organization's id and its wallet's key material, made before the transaction.
  derive: (ctx, intent): SubOrganizationPlan => {
    const subOrganizationId = randomUUID();
    return { subOrganizationId, ...(intent.wallet ? { wallet: planWallet(ctx.services.vault, subOrganizationId, intent.wallet, 'wallet.accounts') } : {}) };
  },
  async execute(ctx, intent) {
    const { tx, nowMs } = ctx;
    // again here: a user whom a policy admits passes authorize at its permission rule, before them
    await requireSubOrganizationRules(tx, ctx.organization, intent);
    const plan = ctx.derived as SubOrganizationPlan | undefined;
    const id = plan?.subOrganizationId ?? ctx.newId();
    const createdMs = await newestChildAfter(tx, ctx.organization.id, nowMs);
    await tx.organizations.insert({
      id, name: intent.subOrganizationName, parentId: ctx.organization.id,
      rootQuorumThreshold: intent.rootQuorumThreshold, createdMs, updatedMs: createdMs,
    });
    const rootUserIds: string[] = [];
    for (const [i, u] of intent.rootUsers.entries()) rootUserIds.push(await insertUser(ctx, id, u, true, `rootUsers[${i}]`));
    if (intent.verificationToken !== undefined) await verifySignup(ctx, intent, id);
    await tx.organizations.disableFlows(id, DISABLE_FLAGS.filter((f) => intent[f] === true));
    const wallet = intent.wallet ? await createWalletIn(ctx, id, intent.wallet, 'wallet.accounts', plan?.wallet) : undefined;
    return { subOrganizationId: id, ...(wallet ? { wallet } : {}), rootUserIds };
  },
};

/**
 * A new sub-organization's created_ms: the request's time, or 1 ms past the newest sibling's when
 * that is not earlier. list_suborgs lists newest first by it, and its cursors need that to be the
 * order sub-organizations commit in; the time a request arrived is not (one that waited may commit
 * after one that arrived later, or on a node whose clock is ahead). Read under the parent's lock
 * ('sub-organizations'), so the newest sibling is the last one committed.
 */
async function newestChildAfter(tx: Tx, parentId: string, nowMs: number): Promise<number> {
  const [newest] = await tx.organizations.subOrgIds(parentId, undefined, { limit: 1 }) ?? [];
  const sibling = newest === undefined ? undefined : await tx.organizations.get(newest);
  return sibling === undefined ? nowMs : Math.max(nowMs, sibling.createdMs + 1);
}

/** One level deep (a sub-organization has none of its own); the wallet names no account twice. */
async function requireSubOrganizationRules(tx: Tx, organization: OrganizationRow, intent: CreateSubOrganization): Promise<void> {
  if (organization.parentId !== null) {
    throw failedPrecondition('a sub-organization cannot create sub-organizations; submit this in its parent organization');
  }
  if (intent.wallet) await refuseDuplicates(tx, organization.id, undefined, intent.wallet.accounts, 'wallet.accounts');
}

/**
 * A sign-up with verify_otp's token: issued by this (parent) organization, for the e-mail address
 * of a root user, spent once (with the client signature of the key it is bound to, if any); that address counts as
 * verified.
 */
async function verifySignup(ctx: ExecContext, intent: CreateSubOrganization, subOrganizationId: string): Promise<void> {
  const { tx, nowMs } = ctx;
  const claims = signupClaims(ctx.services.vault, ctx.organization.id, intent, nowMs);
  const user = await findUserByEmail(tx, subOrganizationId, claims.contact);
  if (!user) throw failedPrecondition('the verification token is for an e-mail address no root user has');
  await spendVerificationToken(tx, claims, nowMs);
  await markEmailVerified(ctx, user, claims.contact);
}

/** The sign-up token's claims once it, its organization and its client signature (required when the token is bound to a public key) check out. */
function signupClaims(vault: Vault, organizationId: string, intent: CreateSubOrganization, nowMs: number): VerificationClaims {
  const claims = readVerificationToken(vault, intent.verificationToken!, nowMs);
  if (claims.organization_id !== organizationId) {
    throw invalidArgument('the verification token was issued for another organization', [{ field: 'verificationToken', description: 'issued for another organization' }]);
  }
  checkClientSignature(intent.clientSignature, claims, 'USAGE_TYPE_SIGNUP', (m) => {
    const usage = (m.signupV2 ?? m.signup) as { email?: unknown } | undefined;
    return usage?.email === undefined || String(usage.email).toLowerCase() === claims.contact.toLowerCase() ? undefined : 'message.signupV2.email must be the verified address';
  });
  return claims;
}

/** Wallets and private keys of the organization that were never exported. */
async function unexported(tx: Tx, organizationId: string): Promise<{ wallets: number; privateKeys: number }> {
  return {
    wallets: (await tx.keys.wallets.list(organizationId)).filter((w) => !w.exported).length,
    privateKeys: (await tx.keys.privateKeys.list(organizationId)).filter((k) => !k.exported).length,
  };
}

async function checkDeletable(p: Principal, tx: Tx, deleteWithoutExport: boolean | undefined): Promise<void> {
  if (p.organization.parentId === null) {
    throw failedPrecondition(`organization ${p.organization.id} has no parent organization: only a sub-organization can be deleted`);
  }
  if (deleteWithoutExport !== true) {
    const n = await unexported(tx, p.organization.id);
    if (n.wallets > 0 || n.privateKeys > 0) {
      throw failedPrecondition(`the sub-organization holds ${n.wallets} wallet(s) and ${n.privateKeys} private key(s) that were never exported; export them first or set deleteWithoutExport to true`);
    }
  }
  requireRoot(p, 'delete the sub-organization');
}

export const deleteSubOrganization: SubmitOperation<{ deleteWithoutExport?: boolean }, { subOrganizationUuid: string }> = {
  kind: 'submit',
  path: 'delete_sub_organization',
  types: { ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION: keysFor('ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION') },
  validate(params: Obj) {
    const v = new Validator();
    const deleteWithoutExport = v.boolean(params, 'deleteWithoutExport', 'deleteWithoutExport');
    v.done();
    return deleteWithoutExport !== undefined ? { deleteWithoutExport } : {};
  },
  async authorize(p, intent, store) { await checkDeletable(p, store, intent.deleteWithoutExport); },
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    await checkDeletable(ctx.principal, tx, intent.deleteWithoutExport);
    await tx.organizations.delete(organization.id);
    return { subOrganizationUuid: organization.id };
  },
};

// ---- queries ------------------------------------------------------------------------------------

const FILTER_TYPES = ['NAME', 'USERNAME', 'EMAIL', 'PHONE_NUMBER', 'PUBLIC_KEY', 'WALLET_ACCOUNT_ADDRESS', 'CREDENTIAL_ID', 'OIDC_TOKEN'] as const;
type FilterType = typeof FILTER_TYPES[number];

interface SubOrgQuery { filter?: { type: FilterType; value: string }; page: Pagination }

/** `types`: the filters the query offers; `required`: a filter must be given. */
function readSubOrgQuery(body: Obj, types: readonly FilterType[] = FILTER_TYPES, required = false): SubOrgQuery {
  const v = new Validator();
  if (required && (body.filterType === undefined || body.filterType === null || body.filterType === '')) v.fail('filterType', `is required: one of ${types.join(', ')}`);
  const type = body.filterType === undefined || body.filterType === null || body.filterType === ''
    ? undefined : v.enumOf(body, 'filterType', 'filterType', types);
  const value = v.string(body, 'filterValue', 'filterValue', { max: 4096 });
  if (type !== undefined && !value) v.fail('filterValue', `is required with filterType ${type}`);
  if (type === undefined && value) v.fail('filterType', 'is required with filterValue');
  const page = readPagination(v, body);
  v.done();
  return { ...(type !== undefined && value ? { filter: { type, value } } : {}), page };
}

/** `verified`: only users whose e-mail address / phone number was proven (list_verified_suborgs). */
async function subOrgIds(tx: Tx, parentId: string, q: SubOrgQuery, verified = false): Promise<string[]> {
  let filter: SubOrgFilter | undefined;
  if (q.filter) {
    const { type, value } = q.filter;
    filter = verified && (type === 'EMAIL' || type === 'PHONE_NUMBER') ? { type: `VERIFIED_${type}`, value }
      : type === 'OIDC_TOKEN' ? oidcTokenFilter(value)
      : type === 'WALLET_ACCOUNT_ADDRESS' ? { type, value, addressKey: addressKey(value) }
      // credential ids are stored as base64url without padding
      : type === 'CREDENTIAL_ID' ? { type, value: Buffer.from(value, 'base64url').toString('base64url') }
      : { type, value };
  }
  const ids = await tx.organizations.subOrgIds(parentId, filter, { limit: q.page.limit, beforeId: q.page.before, afterId: q.page.after });
  if (!ids) {
    const field = q.page.before !== undefined ? 'paginationOptions.before' : 'paginationOptions.after';
    throw invalidArgument(`${field} names no sub-organization of this organization`, [{ field, description: 'unknown cursor' }]);
  }
  return ids;
}

export const listSubOrgs: QueryOperation<SubOrgQuery> = {
  kind: 'query',
  path: 'list_suborgs',
  parentMayRead: false,
  specWrapper: 'wrap',
  validate: readSubOrgQuery,
  execute: async (ctx, q) => ({ organizationIds: await subOrgIds(ctx.tx, ctx.organization.id, q) }),
};

/**
 * The identity an ID token names (iss, aud, sub), read without checking its signature: the
 * parent may list its sub-organizations anyway, and this only finds the one holding the identity.
 */
function oidcTokenFilter(token: string): SubOrgFilter {
  let c: JWTPayload;
  try {
    c = decodeJwt(token);
  } catch {
    throw invalidArgument('filterValue must be an OIDC ID token (a compact JWT)', [{ field: 'filterValue', description: 'not a compact JWT' }]);
  }
  const aud = Array.isArray(c.aud) ? c.aud[0] : c.aud;
  return { type: 'OAUTH_IDENTITY', issuer: String(c.iss ?? ''), audience: String(aud ?? ''), subject: String(c.sub ?? '') };
}

/** list_verified_suborgs: sub-organizations with a user whose e-mail address (or phone number) is proven by a one-time code. */
export const listVerifiedSubOrgs: QueryOperation<SubOrgQuery> = {
  kind: 'query',
  path: 'list_verified_suborgs',
  parentMayRead: false,
  specWrapper: 'wrap',
  validate: (body) => readSubOrgQuery(body, ['EMAIL', 'PHONE_NUMBER'], true),
  execute: async (ctx, q) => ({ organizationIds: await subOrgIds(ctx.tx, ctx.organization.id, q, true) }),
};
