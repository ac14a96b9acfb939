/**
 * create_wallet, create_wallet_accounts, update_wallet, delete_wallets; get_wallet, list_wallets,
 * get_wallet_account, list_wallet_accounts.
 */
import { randomUUID } from 'node:crypto';
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from '../../errors.js';
import { equalBytes, formatPath, parsePath, type SealedAccount, type Vault } from '../../crypto/index.js';
import {
  accountRecord, cryptoCall, ctxAccount, ctxWallet, requireWallet, walletRecord,
} from '../../domain/keys.js';
import type { Tx } from '../../storage/types.js';
import type { WalletRow } from '../../storage/keys.js';
import type { ExecContext, QueryOperation, SubmitOperation } from '../types.js';
import type { PolicyTargets } from '../../policy/scope.js';
import { keysFor } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readPagination, type Pagination } from './activities.js';
import { readAccounts, requireKeyAdmin, type AccountParams } from './keyParams.js';

export const MNEMONIC_LENGTHS = [12, 15, 18, 21, 24];

export function readMnemonicLength(v: Validator, o: Obj, field = 'mnemonicLength'): number {
  const raw = o.mnemonicLength;
  if (raw === undefined || raw === null || raw === '') return 12;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
  if (!MNEMONIC_LENGTHS.includes(n)) { v.fail(field, 'must be 12, 15, 18, 21 or 24'); return 12; }
  return n;
}

/** Accounts derived before the transaction (derive): their ids, and the wallet state they came from. */
export interface AccountsPlan { walletId: string; sealedMnemonic: Uint8Array; ids: string[]; derived: SealedAccount[] }

/** Derives accounts of a wallet (key material only, nothing stored): what addAccounts stores. */
export function planAccounts(vault: Vault, wallet: Pick<WalletRow, 'id' | 'organizationId' | 'sealedMnemonic'>, accounts: AccountParams[], fieldPrefix = 'accounts', newId: () => string = randomUUID): AccountsPlan {
  const org = wallet.organizationId;
  const ids = accounts.map(() => newId());
  const derived = cryptoCall(() => vault.deriveAccounts(
    wallet.sealedMnemonic, ctxWallet(org, wallet.id),
    accounts.map((a, i) => ({ curve: a.curve, pathFormat: a.pathFormat, path: a.path, addressFormat: a.addressFormat, ctx: ctxAccount(org, ids[i]!) })),
    fieldPrefix,
  ));
  return { walletId: wallet.id, sealedMnemonic: wallet.sealedMnemonic, ids, derived };
}

/**
 * Stores (when persist) accounts of a wallet and returns their addresses in request order: those
 * `plan` derived before the transaction when it was made from this very wallet, else derived now.
 */
export async function addAccounts(ctx: ExecContext, wallet: WalletRow, accounts: AccountParams[], persist = true, fieldPrefix = 'accounts', plan?: AccountsPlan): Promise<string[]> {
  const { tx, nowMs } = ctx;
  const org = wallet.organizationId;
  const usable = plan !== undefined && plan.walletId === wallet.id && plan.ids.length === accounts.length && equalBytes(plan.sealedMnemonic, wallet.sealedMnemonic);
  const { ids, derived } = usable ? plan : planAccounts(ctx.services.vault, wallet, accounts, fieldPrefix, ctx.newId);
  if (persist) {
    for (const [i, d] of derived.entries()) {
      const a = accounts[i]!;
      await tx.keys.accounts.insert({
        id: ids[i]!, organizationId: org, walletId: wallet.id, curve: a.curve, pathFormat: a.pathFormat, path: a.path,
        addressFormat: a.addressFormat, address: d.address, publicKey: d.publicKey, sealed: d.sealed, name: a.name ?? null,
        createdMs: nowMs, updatedMs: nowMs,
      });
    }
  }
  return derived.map((d) => d.address);
}

/** An account with the same curve, path and address format already in the wallet (or twice in the request) → 409. */
export async function refuseDuplicates(tx: Tx, organizationId: string, walletId: string | undefined, accounts: AccountParams[], field = 'accounts'): Promise<void> {
  const seen = new Set<string>();
  for (const [i, a] of accounts.entries()) {
    const k = `${a.curve}|${a.path}|${a.addressFormat}`;
    if (seen.has(k)) throw alreadyExists(`${field}[${i}] repeats an account of the same request (curve, path and address format)`);
    seen.add(k);
    if (walletId !== undefined && (await tx.keys.accounts.inWalletByPath(organizationId, walletId, a.path))
      .some((x) => x.curve === a.curve && x.addressFormat === a.addressFormat)) {
      throw alreadyExists(`${field}[${i}]: the wallet already has an account with this curve, path and address format`);
    }
  }
}

/**
 * The lock of every request that adds accounts to an organization's wallets (LockName
 * 'wallet-accounts'): their sequence values are drawn in the order they commit, which the
 * list_wallet_accounts cursors need (a value drawn before another's but committed after it would
 * be listed below rows a client already paged past).
 */
export const accountsLock = (_intent: unknown, organizationId: string) => [{ name: 'wallet-accounts' as const, key: organizationId }];

export interface CreateWallet { walletName: string; accounts: AccountParams[]; mnemonicLength: number }

export const createWallet: SubmitOperation<CreateWallet, { walletId: string; addresses: string[] }> = {
  kind: 'submit',
  path: 'create_wallet',
  types: { ACTIVITY_TYPE_CREATE_WALLET: keysFor('ACTIVITY_TYPE_CREATE_WALLET') },
  validate(params: Obj) {
    const v = new Validator();
    const walletName = v.string(params, 'walletName', 'walletName', { required: true, max: MAX_NAME });
    const accounts = readAccounts(v, params, 'accounts', 'accounts');
    const mnemonicLength = readMnemonicLength(v, params);
    v.done();
    return { walletName: walletName!, accounts, mnemonicLength };
  },
  locks: accountsLock,
  async authorize(p, intent, store) {
    await refuseDuplicates(store, p.organization.id, undefined, intent.accounts);
    requireKeyAdmin(p, 'create wallets');
  },
  derive: (ctx, intent) => planWallet(ctx.services.vault, ctx.organization.id, intent),
  async execute(ctx, intent) {
    // again here: a user whom a policy admits passes authorize at its permission rule, before this
    await refuseDuplicates(ctx.tx, ctx.organization.id, undefined, intent.accounts);
    return await createWalletIn(ctx, ctx.organization.id, intent, 'accounts', ctx.derived as WalletPlan | undefined);
  },
};

/** A new wallet made before the transaction (derive): its id, sealed mnemonic and derived accounts. */
export interface WalletPlan { organizationId: string; walletId: string; accounts: AccountsPlan }

/** Makes a wallet's mnemonic and derives its accounts (key material only, nothing stored). */
export function planWallet(vault: Vault, organizationId: string, w: CreateWallet, accountsField = 'accounts'): WalletPlan {
  const walletId = randomUUID();
  const made = cryptoCall(() => vault.newWallet(w.mnemonicLength, ctxWallet(organizationId, walletId)));
  return { organizationId, walletId, accounts: planAccounts(vault, { id: walletId, organizationId, sealedMnemonic: made.sealedMnemonic }, w.accounts, accountsField) };
}

/**
 * Creates a wallet (fresh mnemonic, sealed) with its accounts in `organizationId` — also for other
 * operations that create a wallet, e.g. create_sub_organization's `wallet` (validate its fields
 * with readAccounts / readMnemonicLength first).
 */
export async function createWalletIn(ctx: ExecContext, organizationId: string, w: CreateWallet, accountsField = 'accounts', plan?: WalletPlan): Promise<{ walletId: string; addresses: string[] }> {
  const { tx, nowMs } = ctx;
  const made = plan?.organizationId === organizationId ? plan : planWallet(ctx.services.vault, organizationId, w, accountsField);
  const wallet: WalletRow = {
    id: made.walletId, organizationId, name: w.walletName, sealedMnemonic: made.accounts.sealedMnemonic,
    imported: false, exported: false, createdMs: nowMs, updatedMs: nowMs,
  };
  await tx.keys.wallets.insert(wallet);
  return { walletId: wallet.id, addresses: await addAccounts(ctx, wallet, w.accounts, true, accountsField, made.accounts) };
}

interface CreateAccounts { walletId: string; accounts: AccountParams[]; persist?: boolean }

export const createWalletAccounts: SubmitOperation<CreateAccounts, { addresses: string[] }> = {
  kind: 'submit',
  path: 'create_wallet_accounts',
  types: { ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS: keysFor('ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS') },
  validate(params: Obj) {
    const v = new Validator();
    const walletId = v.string(params, 'walletId', 'walletId', { required: true, max: 100 });
    const accounts = readAccounts(v, params, 'accounts', 'accounts', { nonEmpty: true });
    const persist = v.boolean(params, 'persist', 'persist');
    v.done();
    return { walletId: walletId!, accounts, ...(persist !== undefined ? { persist } : {}) };
  },
  // one request at a time (across nodes): no account stored twice, and cursors see accounts in commit order
  locks: accountsLock,
  async authorize(p, intent, store) {
    await requireWallet(store, p.organization.id, intent.walletId);
    if (intent.persist !== false) await refuseDuplicates(store, p.organization.id, intent.walletId, intent.accounts);
    requireKeyAdmin(p, 'create wallet accounts');
  },
  policyTargets: (intent) => ({ walletId: intent.walletId }),
  async derive(ctx, intent, read) {
    const wallet = await read((tx) => tx.keys.wallets.get(ctx.organization.id, intent.walletId));
    return wallet ? planAccounts(ctx.services.vault, wallet, intent.accounts) : undefined;
  },
  async execute(ctx, intent) {
    const wallet = await requireWallet(ctx.tx, ctx.organization.id, intent.walletId);
    // again here: a user whom a policy admits passes authorize at its permission rule, before this
    if (intent.persist !== false) await refuseDuplicates(ctx.tx, ctx.organization.id, intent.walletId, intent.accounts);
    return { addresses: await addAccounts(ctx, wallet, intent.accounts, intent.persist !== false, 'accounts', ctx.derived as AccountsPlan | undefined) };
  },
};

export const updateWallet: SubmitOperation<{ walletId: string; walletName?: string }, { walletId: string }> = {
  kind: 'submit',
  path: 'update_wallet',
  types: { ACTIVITY_TYPE_UPDATE_WALLET: keysFor('ACTIVITY_TYPE_UPDATE_WALLET') },
  validate(params: Obj) {
    const v = new Validator();
    const walletId = v.string(params, 'walletId', 'walletId', { required: true, max: 100 });
    const walletName = v.string(params, 'walletName', 'walletName', { nonEmpty: true, max: MAX_NAME });
    v.done();
    return { walletId: walletId!, ...(walletName !== undefined ? { walletName } : {}) };
  },
  async authorize(p, intent, store) {
    await requireWallet(store, p.organization.id, intent.walletId);
    requireKeyAdmin(p, 'update wallets');
  },
  policyTargets: (intent) => ({ walletId: intent.walletId }),
  async execute(ctx, intent) {
    await requireWallet(ctx.tx, ctx.organization.id, intent.walletId);
    if (intent.walletName !== undefined) await ctx.tx.keys.wallets.rename(ctx.organization.id, intent.walletId, intent.walletName, ctx.nowMs);
    return { walletId: intent.walletId };
  },
};

export const deleteWallets: SubmitOperation<{ walletIds: string[]; deleteWithoutExport?: boolean }, { walletIds: string[] }> = {
  kind: 'submit',
  path: 'delete_wallets',
  types: { ACTIVITY_TYPE_DELETE_WALLETS: keysFor('ACTIVITY_TYPE_DELETE_WALLETS') },
  validate(params: Obj) {
    const v = new Validator();
    const walletIds = v.stringArray(params, 'walletIds', 'walletIds', { required: true, nonEmpty: true });
    const deleteWithoutExport = v.boolean(params, 'deleteWithoutExport', 'deleteWithoutExport');
    v.done();
    return { walletIds: walletIds!, ...(deleteWithoutExport !== undefined ? { deleteWithoutExport } : {}) };
  },
  async authorize(p, intent, store) {
    await requireDeletableWallets(store, p.organization.id, intent.walletIds, intent.deleteWithoutExport === true);
    requireKeyAdmin(p, 'delete wallets');
  },
  policyTargets: (intent) => ({ walletIds: intent.walletIds, ...(intent.walletIds.length === 1 ? { walletId: intent.walletIds[0] } : {}) }),
  // The rules again here: a user whom a policy admits passes authorize at its permission rule, before them.
  async execute(ctx, intent) {
    await requireDeletableWallets(ctx.tx, ctx.organization.id, intent.walletIds, intent.deleteWithoutExport === true);
    for (const id of intent.walletIds) await ctx.tx.keys.wallets.delete(ctx.organization.id, id);
    return { walletIds: intent.walletIds };
  },
};

export const deleteWalletAccounts: SubmitOperation<{ walletAccountIds: string[]; deleteWithoutExport?: boolean }, { walletAccountIds: string[] }> = {
  kind: 'submit',
  path: 'delete_wallet_accounts',
  types: { ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS: keysFor('ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS') },
  validate(params: Obj) {
    const v = new Validator();
    const walletAccountIds = v.stringArray(params, 'walletAccountIds', 'walletAccountIds', { required: true, nonEmpty: true });
    const deleteWithoutExport = v.boolean(params, 'deleteWithoutExport', 'deleteWithoutExport');
    v.done();
    return { walletAccountIds: walletAccountIds!, ...(deleteWithoutExport !== undefined ? { deleteWithoutExport } : {}) };
  },
  async authorize(p, intent, store) {
    await requireDeletableAccounts(store, p.organization.id, intent.walletAccountIds, intent.deleteWithoutExport === true);
    requireKeyAdmin(p, 'delete wallet accounts');
  },
  // every account is a target: `wallet_account` and its `wallet` are bound to each in turn (a DENY on any one denies the deletion)
  policyTargets(intent) {
    return intent.walletAccountIds.map((walletAccountId): PolicyTargets => ({ walletAccountId }));
  },
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    await requireDeletableAccounts(tx, organization.id, intent.walletAccountIds, intent.deleteWithoutExport === true);
    for (const id of intent.walletAccountIds) await tx.keys.accounts.delete(organization.id, id);
    return { walletAccountIds: intent.walletAccountIds };
  },
};

/** Every id names a wallet of the organization; one never exported needs deleteWithoutExport. */
async function requireDeletableWallets(tx: Tx, organizationId: string, ids: string[], withoutExport: boolean): Promise<void> {
  for (const [i, id] of ids.entries()) {
    const w = await requireWallet(tx, organizationId, id, `walletIds[${i}]`);
    if (!w.exported && !withoutExport) {
      throw failedPrecondition(`wallet ${id} has never been exported; export it first or set deleteWithoutExport to true`);
    }
  }
}

/** Every id names an account of the organization; one never exported (nor its wallet) needs deleteWithoutExport. */
async function requireDeletableAccounts(tx: Tx, organizationId: string, ids: string[], withoutExport: boolean): Promise<void> {
  for (const [i, id] of ids.entries()) {
    const a = await tx.keys.accounts.get(organizationId, id);
    if (!a) throw notFound(`walletAccountIds[${i}]: wallet account ${id} not found`, 'WALLET_ACCOUNT_NOT_FOUND');
    if (!withoutExport && !a.exported && !(await tx.keys.wallets.get(organizationId, a.walletId))?.exported) {
      throw failedPrecondition(`wallet account ${id} has never been exported (nor its wallet); export it first or set deleteWithoutExport to true`);
    }
  }
}

// ---- queries ------------------------------------------------------------------------------------

export const getWallet: QueryOperation<{ walletId: string }> = {
  kind: 'query',
  path: 'get_wallet',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const walletId = v.string(body, 'walletId', 'walletId', { required: true, max: 100 });
    v.done();
    return { walletId: walletId! };
  },
  async execute(ctx, q) {
    return { wallet: walletRecord(await requireWallet(ctx.tx, ctx.organization.id, q.walletId)) };
  },
};

export const listWallets: QueryOperation<Record<string, never>> = {
  kind: 'query',
  path: 'list_wallets',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate() { return {}; },
  async execute(ctx) {
    return { wallets: (await ctx.tx.keys.wallets.list(ctx.organization.id)).map(walletRecord) };
  },
};

export const getWalletAccount: QueryOperation<{ walletId: string; address?: string; path?: string }> = {
  kind: 'query',
  path: 'get_wallet_account',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const walletId = v.string(body, 'walletId', 'walletId', { required: true, max: 100 });
    const address = v.string(body, 'address', 'address', { max: 200 }) || undefined;
    const path = canonicalPathOrAsIs(v.string(body, 'path', 'path', { max: 1024 }) || undefined);
    if (address === undefined && path === undefined) v.fail('address', 'give the account\'s address or its path');
    v.done();
    return { walletId: walletId!, ...(address !== undefined ? { address } : {}), ...(path !== undefined ? { path } : {}) };
  },
  async execute(ctx, q) {
    const { tx, organization } = ctx;
    await requireWallet(tx, organization.id, q.walletId);
    let acct = q.address !== undefined ? await tx.keys.accounts.inWalletByAddress(organization.id, q.walletId, q.address) : undefined;
    if (q.address === undefined && q.path !== undefined) acct = (await tx.keys.accounts.inWalletByPath(organization.id, q.walletId, q.path))[0];
    if (acct && q.path !== undefined && acct.path !== q.path) acct = undefined;
    if (!acct) throw notFound('no account of this wallet has that address / path', 'WALLET_ACCOUNT_NOT_FOUND');
    return { account: accountRecord(acct) };
  },
};

/** A path as accounts store it (canonical, hardened `'`); one that does not parse names no account and is kept as given. */
function canonicalPathOrAsIs(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return formatPath(parsePath(path));
  } catch {
    return path;
  }
}

export const listWalletAccounts: QueryOperation<{ walletId?: string; includeWalletDetails: boolean; page: Pagination }> = {
  kind: 'query',
  path: 'list_wallet_accounts',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const walletId = v.string(body, 'walletId', 'walletId', { max: 100 }) || undefined;
    const includeWalletDetails = v.boolean(body, 'includeWalletDetails', 'includeWalletDetails') ?? false;
    const page = readPagination(v, body);
    v.done();
    return { ...(walletId !== undefined ? { walletId } : {}), includeWalletDetails, page };
  },
  async execute(ctx, q) {
    const { tx, organization } = ctx;
    if (q.walletId !== undefined) await requireWallet(tx, organization.id, q.walletId);
    const rows = await tx.keys.accounts.list(organization.id, q.walletId, { limit: q.page.limit, beforeId: q.page.before, afterId: q.page.after });
    if (!rows) {
      const field = q.page.before !== undefined ? 'paginationOptions.before' : 'paginationOptions.after';
      throw invalidArgument(`${field} names no wallet account of this organization`, [{ field, description: 'unknown cursor' }]);
    }
    const wallets = new Map<string, WalletRow | undefined>();
    const walletOf = async (id: string) => {
      if (!wallets.has(id)) wallets.set(id, await tx.keys.wallets.get(organization.id, id));
      return wallets.get(id);
    };
    const accounts: Record<string, unknown>[] = [];
    for (const a of rows) accounts.push(accountRecord(a, q.includeWalletDetails ? await walletOf(a.walletId) : undefined));
    return { accounts };
  },
};
