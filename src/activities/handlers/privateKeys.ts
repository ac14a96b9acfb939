/** create_private_keys, delete_private_keys, get_private_key, list_private_keys. */
import { randomUUID } from 'node:crypto';
import { failedPrecondition } from '../../errors.js';
import { privateKeyAddresses, type SealedKey, type Vault } from '../../crypto/index.js';
import type { AddressEntry } from '../../storage/keys.js';
import type { Tx } from '../../storage/types.js';
import {
  API_CURVES, cryptoCall, ctxPrivateKey, curveId, privateKeyRecord, privateKeyRecords, requirePrivateKey,
} from '../../domain/keys.js';
import { requireTags } from './users.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';
import { readAddressFormats, requireKeyAdmin } from './keyParams.js';

interface NewPrivateKey { privateKeyName: string; curve: string; privateKeyTags: string[]; addressFormats: string[] }
interface CreatePrivateKeysResult { privateKeys: { privateKeyId: string; addresses: { format: string; address: string }[] }[] }

export const createPrivateKeys: SubmitOperation<{ privateKeys: NewPrivateKey[] }, CreatePrivateKeysResult> = {
  kind: 'submit',
  path: 'create_private_keys',
  types: { ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2: keysFor('ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2') },
  validate(params: Obj) {
    const v = new Validator();
    const list = v.array(params, 'privateKeys', 'privateKeys', { required: true, nonEmpty: true }) ?? [];
    const out: NewPrivateKey[] = [];
    list.forEach((item, i) => {
      const f = `privateKeys[${i}]`;
      const o = v.object(item, f);
      if (!o) return;
      const privateKeyName = v.string(o, 'privateKeyName', `${f}.privateKeyName`, { required: true, max: MAX_NAME });
      const curve = v.enumOf(o, 'curve', `${f}.curve`, API_CURVES);
      const privateKeyTags = v.stringArray(o, 'privateKeyTags', `${f}.privateKeyTags`) ?? [];
      const addressFormats = readAddressFormats(v, o, 'addressFormats', `${f}.addressFormats`, curve);
      if (privateKeyName === undefined || curve === undefined) return;
      out.push({ privateKeyName, curve, privateKeyTags, addressFormats });
    });
    v.done();
    return { privateKeys: out };
  },
  async authorize(p, intent, store) {
    for (const k of intent.privateKeys) await requireTags(store, p.organization.id, k.privateKeyTags, 'TAG_TYPE_PRIVATE_KEY');
    requireKeyAdmin(p, 'create private keys');
  },
  // The keys are made before the transaction (no lock is held while they are).
  derive: (ctx, intent): KeysPlan => ({ organizationId: ctx.organization.id, keys: makeKeys(ctx.services.vault, ctx.organization.id, intent.privateKeys) }),
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    const plan = ctx.derived as KeysPlan | undefined;
    const keys = plan?.organizationId === organization.id ? plan.keys : makeKeys(ctx.services.vault, organization.id, intent.privateKeys);
    const privateKeys: CreatePrivateKeysResult['privateKeys'] = [];
    for (const [i, k] of intent.privateKeys.entries()) {
      const { id, made, addresses } = keys[i]!;
      await tx.keys.privateKeys.insert({
        id, organizationId: organization.id, name: k.privateKeyName, curve: k.curve, publicKey: Buffer.from(made.publicKey).toString('hex'),
        addresses, sealed: made.sealed, imported: false, exported: false, createdMs: nowMs, updatedMs: nowMs,
      });
      await requireTags(tx, organization.id, k.privateKeyTags, 'TAG_TYPE_PRIVATE_KEY');
      for (const t of k.privateKeyTags) await tx.tags.attach(t, id);
      privateKeys.push({ privateKeyId: id, addresses });
    }
    return { privateKeys };
  },
};

/** New private keys made before the transaction (derive), in request order. */
interface KeysPlan { organizationId: string; keys: { id: string; made: SealedKey; addresses: AddressEntry[] }[] }

function makeKeys(vault: Vault, organizationId: string, list: { curve: string; addressFormats: string[] }[]): KeysPlan['keys'] {
  return list.map((k) => {
    const id = randomUUID();
    const curve = curveId(k.curve);
    const made = cryptoCall(() => vault.newPrivateKey(curve, ctxPrivateKey(organizationId, id)));
    return { id, made, addresses: cryptoCall(() => privateKeyAddresses(curve, made.publicKey, k.addressFormats)) };
  });
}

export const deletePrivateKeys: SubmitOperation<{ privateKeyIds: string[]; deleteWithoutExport?: boolean }, { privateKeyIds: string[] }> = {
  kind: 'submit',
  path: 'delete_private_keys',
  types: { ACTIVITY_TYPE_DELETE_PRIVATE_KEYS: keysFor('ACTIVITY_TYPE_DELETE_PRIVATE_KEYS') },
  validate(params: Obj) {
    const v = new Validator();
    const privateKeyIds = v.stringArray(params, 'privateKeyIds', 'privateKeyIds', { required: true, nonEmpty: true });
    const deleteWithoutExport = v.boolean(params, 'deleteWithoutExport', 'deleteWithoutExport');
    v.done();
    return { privateKeyIds: privateKeyIds!, ...(deleteWithoutExport !== undefined ? { deleteWithoutExport } : {}) };
  },
  async authorize(p, intent, store) {
    await requireDeletablePrivateKeys(store, p.organization.id, intent.privateKeyIds, intent.deleteWithoutExport === true);
    requireKeyAdmin(p, 'delete private keys');
  },
  // every key is a target: `private_key` is bound to each in turn (a DENY on any one denies the deletion)
  policyTargets: (intent) => intent.privateKeyIds.map((privateKeyId) => ({ privateKeyId })),
  // The rules again here: a user whom a policy admits passes authorize at its permission rule, before them.
  async execute(ctx, intent) {
    const { tx, organization } = ctx;
    await requireDeletablePrivateKeys(tx, organization.id, intent.privateKeyIds, intent.deleteWithoutExport === true);
    for (const id of intent.privateKeyIds) {
      await tx.tags.detachAll(id);
      await tx.keys.privateKeys.delete(organization.id, id);
    }
    return { privateKeyIds: intent.privateKeyIds };
  },
};

/** Every id names a private key of the organization; one never exported needs deleteWithoutExport. */
async function requireDeletablePrivateKeys(tx: Tx, organizationId: string, ids: string[], withoutExport: boolean): Promise<void> {
  for (const [i, id] of ids.entries()) {
    const k = await requirePrivateKey(tx, organizationId, id, `privateKeyIds[${i}]`);
    if (!k.exported && !withoutExport) {
      throw failedPrecondition(`private key ${id} has never been exported; export it first or set deleteWithoutExport to true`);
    }
  }
}

export const getPrivateKey: QueryOperation<{ privateKeyId: string }> = {
  kind: 'query',
  path: 'get_private_key',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const privateKeyId = v.string(body, 'privateKeyId', 'privateKeyId', { required: true, max: 100 });
    v.done();
    return { privateKeyId: privateKeyId! };
  },
  async execute(ctx, q) {
    const k = await requirePrivateKey(ctx.tx, ctx.organization.id, q.privateKeyId);
    return { privateKey: await privateKeyRecord(ctx.tx, k) };
  },
};

export const listPrivateKeys: QueryOperation<Record<string, never>> = {
  kind: 'query',
  path: 'list_private_keys',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate() { return {}; },
  async execute(ctx) {
    return { privateKeys: await privateKeyRecords(ctx.tx, ctx.organization.id, await ctx.tx.keys.privateKeys.list(ctx.organization.id)) };
  },
};
