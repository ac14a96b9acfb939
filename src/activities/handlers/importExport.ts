/**
 * init_import_wallet + import_wallet, init_import_private_key + import_private_key,
 * export_wallet, export_private_key, export_wallet_account (wire-compat §4.3/§4.4).
 * Import targets are stored sealed, expire after IMPORT_TARGET_TTL_MS and are used once.
 */
import { ApiError, Grpc, invalidArgument, notFound } from '../../errors.js';
import { CryptoError, equalBytes, privateKeyAddresses } from '../../crypto/index.js';
import {
  API_CURVES, IMPORT_TARGET_TTL_MS, cryptoCall, ctxAccount, ctxImportTarget, ctxPrivateKey, ctxWallet, curveId,
  requirePrivateKey, requireWallet, toApiError,
} from '../../domain/keys.js';
import { requireUser } from '../../domain/apiKeys.js';
import { requireOwnImport } from '../../domain/principal.js';
import type { Tx } from '../../storage/types.js';
import type { ImportTargetRow, WalletRow } from '../../storage/keys.js';
import { keysFor, type ExecContext, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readAccounts, readAddressFormats, readTargetPublicKey, requireKeyAdmin, type AccountParams } from './keyParams.js';
import { accountsLock, addAccounts, planAccounts, refuseDuplicates, type AccountsPlan } from './wallets.js';

// ---- init_import_* ---------------------------------------------------------------------------------

function initImport(kind: ImportTargetRow['kind'], type: string, path: string): SubmitOperation<{ userId: string }, { importBundle: string }> {
  return {
    kind: 'submit',
    path,
    types: { [type]: keysFor(type) },
    validate(params: Obj) {
      const v = new Validator();
      const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
      v.done();
      return { userId: userId! };
    },
    async authorize(p, intent, store) {
      await requireUser(store, p.organization.id, intent.userId);
      requireOwnImport(p, intent.userId, `start a ${kind === 'wallet' ? 'wallet' : 'private key'} import`);
      requireKeyAdmin(p, `start a ${kind === 'wallet' ? 'wallet' : 'private key'} import`);
    },
    async execute(ctx, intent) {
      const { tx, organization, nowMs } = ctx;
      await requireUser(tx, organization.id, intent.userId);
      await tx.keys.importTargets.purgeExpired(nowMs);
      const id = ctx.newId();
      const t = cryptoCall(() => ctx.services.vault.initImport(ctxImportTarget(organization.id, id), organization.id, intent.userId));
      await tx.keys.importTargets.insert({
        id, organizationId: organization.id, userId: intent.userId, kind, sealed: t.sealed, createdMs: nowMs, expiresMs: nowMs + IMPORT_TARGET_TTL_MS,
      });
      return { importBundle: t.importBundle };
    },
  };
}

export const initImportWallet = initImport('wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', 'init_import_wallet');
export const initImportPrivateKey = initImport('private_key', 'ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY', 'init_import_private_key');

/**
 * Finds the pending target (of this user and kind, newest first) that opens the bundle and runs
 * `use` with it. The bundle not opening under any target is the caller's error (400).
 */
async function withImportTarget<T>(tx: Tx, organizationId: string, userId: string, kind: ImportTargetRow['kind'], nowMs: number,
  use: (t: ImportTargetRow) => T): Promise<{ target: ImportTargetRow; value: T }> {
  return await openWithTarget(await tx.keys.importTargets.listValid(organizationId, userId, kind, nowMs), userId, kind, use);
}

/** withImportTarget over targets read before (derive: the crypto runs after the read, outside it). */
async function openWithTarget<T>(targets: ImportTargetRow[], userId: string, kind: ImportTargetRow['kind'],
  use: (t: ImportTargetRow) => T): Promise<{ target: ImportTargetRow; value: T }> {
  const initOp = kind === 'wallet' ? 'init_import_wallet' : 'init_import_private_key';
  if (targets.length === 0) {
    throw new ApiError(Grpc.FAILED_PRECONDITION, `no pending import for user ${userId}: call ${initOp} first (import bundles expire after ${IMPORT_TARGET_TTL_MS / 60000} minutes and are used once)`,
      { turnkeyErrorCode: 'IMPORT_NOT_INITIALIZED', fieldViolations: [{ field: 'encryptedBundle', description: `no pending ${initOp} for this user` }] });
  }
  for (const t of targets) {
    try {
      return { target: t, value: await use(t) };
    } catch (e) {
      // Wrong target (AEAD failure under this key): try the next pending one.
      if (e instanceof CryptoError && e.code === 'DECRYPTION_FAILED' && e.field === 'encryptedBundle') continue;
      throw toApiError(e, 'encryptedBundle');
    }
  }
  throw invalidArgument(`encryptedBundle: does not decrypt with the import bundle of any pending ${initOp} of user ${userId}`,
    [{ field: 'encryptedBundle', description: 'must be encrypted to the importBundle returned by the latest init_import call' }]);
}

/** Uses the target up; refused as if none were pending when a concurrent import (another node) used it first. */
async function useTarget(tx: Tx, target: ImportTargetRow, userId: string): Promise<void> {
  if (await tx.keys.importTargets.delete(target.id)) return;
  const initOp = target.kind === 'wallet' ? 'init_import_wallet' : 'init_import_private_key';
  throw new ApiError(Grpc.FAILED_PRECONDITION, `no pending import for user ${userId}: call ${initOp} first (import bundles expire after ${IMPORT_TARGET_TTL_MS / 60000} minutes and are used once)`,
    { turnkeyErrorCode: 'IMPORT_NOT_INITIALIZED', fieldViolations: [{ field: 'encryptedBundle', description: `no pending ${initOp} for this user` }] });
}

// ---- import_wallet ------------------------------------------------------------------------------

interface ImportWallet { userId: string; walletName: string; encryptedBundle: string; accounts: AccountParams[] }

/**
 * An imported wallet made before the transaction (derive): the target whose key opened the bundle
 * (its id and sealed key, to tell that it is still the same one), the new wallet's id, its sealed
 * mnemonic and derived accounts.
 */
interface ImportWalletPlan { organizationId: string; targetId: string; targetSealed: Uint8Array; accounts: AccountsPlan }

export const importWallet: SubmitOperation<ImportWallet, { walletId: string; addresses: string[] }> = {
  kind: 'submit',
  path: 'import_wallet',
  types: { ACTIVITY_TYPE_IMPORT_WALLET: keysFor('ACTIVITY_TYPE_IMPORT_WALLET') },
  validate(params: Obj) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
    const walletName = v.string(params, 'walletName', 'walletName', { required: true, max: MAX_NAME });
    const encryptedBundle = v.string(params, 'encryptedBundle', 'encryptedBundle', { required: true, max: 16384 });
    const accounts = readAccounts(v, params, 'accounts', 'accounts');
    v.done();
    return { userId: userId!, walletName: walletName!, encryptedBundle: encryptedBundle!, accounts };
  },
  locks: accountsLock,
  async authorize(p, intent, store, services) {
    const org = p.organization.id;
    await requireUser(store, org, intent.userId);
    requireOwnImport(p, intent.userId, 'import wallets');
    await refuseDuplicates(store, org, undefined, intent.accounts);
    const vault = services.vault;
    // Dry run: the bundle must open under a pending target and hold a valid mnemonic.
    await withImportTarget(store, org, intent.userId, 'wallet', Date.now(), (t) =>
      vault.importWallet(t.sealed, ctxImportTarget(org, t.id), intent.encryptedBundle, ctxWallet(org, 'dry-run')));
    requireKeyAdmin(p, 'import wallets');
  },
  // The mnemonic's PBKDF2 and the accounts' derivation run here, before the transaction (docs/server.md).
  async derive(ctx, intent, read): Promise<ImportWalletPlan> {
    const org = ctx.organization.id;
    const vault = ctx.services.vault;
    const walletId = ctx.newId();
    const targets = await read((tx) => tx.keys.importTargets.listValid(org, intent.userId, 'wallet', ctx.nowMs));
    const { target, value } = await openWithTarget(targets, intent.userId, 'wallet', (t) =>
      vault.importWallet(t.sealed, ctxImportTarget(org, t.id), intent.encryptedBundle, ctxWallet(org, walletId)));
    const accounts = planAccounts(vault, { id: walletId, organizationId: org, sealedMnemonic: value.sealedMnemonic }, intent.accounts, 'accounts', ctx.newId);
    return { organizationId: org, targetId: target.id, targetSealed: target.sealed, accounts };
  },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    const org = organization.id;
    const vault = ctx.services.vault;
    const plan = ctx.derived as ImportWalletPlan | undefined;
    // again here: a user whom a policy admits passes authorize at its permission rule, before this
    await refuseDuplicates(tx, org, undefined, intent.accounts);
    // The plan applies while the target that opened the bundle is still pending, unchanged: it is the
    // one withImportTarget would find (a bundle opens under one target key), its mnemonic the one sealed.
    const planned = plan?.organizationId === org
      ? (await tx.keys.importTargets.listValid(org, intent.userId, 'wallet', nowMs)).find((t) => t.id === plan.targetId && equalBytes(t.sealed, plan.targetSealed))
      : undefined;
    let id: string;
    let sealedMnemonic: Uint8Array;
    if (planned && plan) {
      await useTarget(tx, planned, intent.userId);
      id = plan.accounts.walletId;
      sealedMnemonic = plan.accounts.sealedMnemonic;
    } else {
      id = ctx.newId();
      const { target, value } = await withImportTarget(tx, org, intent.userId, 'wallet', nowMs, (t) =>
        vault.importWallet(t.sealed, ctxImportTarget(org, t.id), intent.encryptedBundle, ctxWallet(org, id)));
      await useTarget(tx, target, intent.userId);
      sealedMnemonic = value.sealedMnemonic;
    }
    const wallet: WalletRow = {
      id, organizationId: org, name: intent.walletName, sealedMnemonic, imported: true, exported: false,
      createdMs: nowMs, updatedMs: nowMs,
    };
    await tx.keys.wallets.insert(wallet);
    // addAccounts uses the plan's accounts only for this wallet id and sealed mnemonic; else derives them now.
    return { walletId: id, addresses: await addAccounts(ctx, wallet, intent.accounts, true, 'accounts', plan?.accounts) };
  },
};

// ---- import_private_key -----------------------------------------------------------------------

interface ImportPrivateKey { userId: string; privateKeyName: string; encryptedBundle: string; curve: string; addressFormats: string[] }

export const importPrivateKey: SubmitOperation<ImportPrivateKey, { privateKeyId: string; addresses: { format: string; address: string }[] }> = {
  kind: 'submit',
  path: 'import_private_key',
  types: { ACTIVITY_TYPE_IMPORT_PRIVATE_KEY: keysFor('ACTIVITY_TYPE_IMPORT_PRIVATE_KEY') },
  validate(params: Obj) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
    const privateKeyName = v.string(params, 'privateKeyName', 'privateKeyName', { required: true, max: MAX_NAME });
    const encryptedBundle = v.string(params, 'encryptedBundle', 'encryptedBundle', { required: true, max: 16384 });
    const curve = v.enumOf(params, 'curve', 'curve', API_CURVES);
    const addressFormats = readAddressFormats(v, params, 'addressFormats', 'addressFormats', curve);
    v.done();
    return { userId: userId!, privateKeyName: privateKeyName!, encryptedBundle: encryptedBundle!, curve: curve!, addressFormats };
  },
  async authorize(p, intent, store, services) {
    const org = p.organization.id;
    await requireUser(store, org, intent.userId);
    requireOwnImport(p, intent.userId, 'import private keys');
    const vault = services.vault;
    await withImportTarget(store, org, intent.userId, 'private_key', Date.now(), (t) =>
      vault.importPrivateKey(t.sealed, ctxImportTarget(org, t.id), intent.encryptedBundle, curveId(intent.curve), ctxPrivateKey(org, 'dry-run')));
    requireKeyAdmin(p, 'import private keys');
  },
  async execute(ctx: ExecContext, intent) {
    const { tx, organization, nowMs } = ctx;
    const org = organization.id;
    const vault = ctx.services.vault;
    const id = ctx.newId();
    const curve = curveId(intent.curve);
    const { target, value } = await withImportTarget(tx, org, intent.userId, 'private_key', nowMs, (t) =>
      vault.importPrivateKey(t.sealed, ctxImportTarget(org, t.id), intent.encryptedBundle, curve, ctxPrivateKey(org, id)));
    await useTarget(tx, target, intent.userId);
    const addresses = cryptoCall(() => privateKeyAddresses(curve, value.publicKey, intent.addressFormats));
    await tx.keys.privateKeys.insert({
      id, organizationId: org, name: intent.privateKeyName, curve: intent.curve, publicKey: Buffer.from(value.publicKey).toString('hex'),
      addresses, sealed: value.sealed, imported: true, exported: false, createdMs: nowMs, updatedMs: nowMs,
    });
    return { privateKeyId: id, addresses };
  },
};

// ---- export ---------------------------------------------------------------------------------

const LANGUAGES = ['MNEMONIC_LANGUAGE_ENGLISH'] as const;

export const exportWallet: SubmitOperation<{ walletId: string; targetPublicKey: string; language?: string }, { walletId: string; exportBundle: string }> = {
  kind: 'submit',
  path: 'export_wallet',
  types: { ACTIVITY_TYPE_EXPORT_WALLET: keysFor('ACTIVITY_TYPE_EXPORT_WALLET') },
  validate(params: Obj) {
    const v = new Validator();
    const walletId = v.string(params, 'walletId', 'walletId', { required: true, max: 100 });
    const targetPublicKey = readTargetPublicKey(v, params);
    const language = v.enumOf(params, 'language', 'language', LANGUAGES, false);
    v.done();
    return { walletId: walletId!, targetPublicKey: targetPublicKey!, ...(language ? { language } : {}) };
  },
  async authorize(p, intent, store) {
    await requireWallet(store, p.organization.id, intent.walletId);
    requireKeyAdmin(p, 'export wallets');
  },
  policyTargets: (intent) => ({ walletId: intent.walletId }),
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    const w = await requireWallet(tx, organization.id, intent.walletId);
    const exportBundle = cryptoCall(() => ctx.services.vault.exportWallet(w.sealedMnemonic, ctxWallet(organization.id, w.id), intent.targetPublicKey, organization.id));
    await tx.keys.wallets.markExported(organization.id, w.id, nowMs);
    return { walletId: w.id, exportBundle };
  },
};

export const exportPrivateKey: SubmitOperation<{ privateKeyId: string; targetPublicKey: string }, { privateKeyId: string; exportBundle: string }> = {
  kind: 'submit',
  path: 'export_private_key',
  types: { ACTIVITY_TYPE_EXPORT_PRIVATE_KEY: keysFor('ACTIVITY_TYPE_EXPORT_PRIVATE_KEY') },
  validate(params: Obj) {
    const v = new Validator();
    const privateKeyId = v.string(params, 'privateKeyId', 'privateKeyId', { required: true, max: 100 });
    const targetPublicKey = readTargetPublicKey(v, params);
    v.done();
    return { privateKeyId: privateKeyId!, targetPublicKey: targetPublicKey! };
  },
  async authorize(p, intent, store) {
    await requirePrivateKey(store, p.organization.id, intent.privateKeyId);
    requireKeyAdmin(p, 'export private keys');
  },
  policyTargets: (intent) => ({ privateKeyId: intent.privateKeyId }),
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    const k = await requirePrivateKey(tx, organization.id, intent.privateKeyId);
    const exportBundle = cryptoCall(() => ctx.services.vault.exportKey(k.sealed, ctxPrivateKey(organization.id, k.id), intent.targetPublicKey, organization.id));
    await tx.keys.privateKeys.markExported(organization.id, k.id, nowMs);
    return { privateKeyId: k.id, exportBundle };
  },
};

export const exportWalletAccount: SubmitOperation<{ address: string; targetPublicKey: string }, { address: string; exportBundle: string }> = {
  kind: 'submit',
  path: 'export_wallet_account',
  types: { ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT: keysFor('ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT') },
  validate(params: Obj) {
    const v = new Validator();
    const address = v.string(params, 'address', 'address', { required: true, max: 200 });
    const targetPublicKey = readTargetPublicKey(v, params);
    v.done();
    return { address: address!, targetPublicKey: targetPublicKey! };
  },
  async authorize(p, intent, store) {
    if (!await store.keys.accounts.byAddress(p.organization.id, intent.address)) throw accountNotFound(intent.address);
    requireKeyAdmin(p, 'export wallet accounts');
  },
  policyTargets: (intent) => ({ walletAccountAddress: intent.address }),
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    const a = await tx.keys.accounts.byAddress(organization.id, intent.address);
    if (!a) throw accountNotFound(intent.address);
    const exportBundle = cryptoCall(() => ctx.services.vault.exportKey(a.sealed, ctxAccount(organization.id, a.id), intent.targetPublicKey, organization.id));
    await tx.keys.accounts.markExported(organization.id, a.id, ctx.nowMs);
    return { address: a.address, exportBundle };
  },
};

function accountNotFound(address: string): ApiError {
  const e = notFound(`address: no wallet account of this organization has the address ${address.slice(0, 128)}`, 'WALLET_ACCOUNT_NOT_FOUND');
  return new ApiError(Grpc.NOT_FOUND, e.message, { turnkeyErrorCode: 'WALLET_ACCOUNT_NOT_FOUND', fieldViolations: [{ field: 'address', description: 'names no wallet account of this organization' }] });
}
