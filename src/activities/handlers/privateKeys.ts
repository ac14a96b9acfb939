/** create_private_keys, delete_private_keys, get_private_key, list_private_keys. */
import { failedPrecondition } from '../../errors.js';
import { privateKeyAddresses } from '../../crypto/index.js';
import {
  API_CURVES, cryptoCall, ctxPrivateKey, curveId, privateKeyRecord, requirePrivateKey, vaultOf,
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
  authorize(p, intent, store) {
    requireKeyAdmin(p, 'create private keys');
    for (const k of intent.privateKeys) requireTags(store, p.organization.id, k.privateKeyTags, 'TAG_TYPE_PRIVATE_KEY');
  },
  execute(ctx, intent) {
    const { store, organization, nowMs } = ctx;
    const vault = vaultOf(store);
    const privateKeys: CreatePrivateKeysResult['privateKeys'] = [];
    for (const k of intent.privateKeys) {
      const id = ctx.newId();
      const curve = curveId(k.curve);
      const made = cryptoCall(() => vault.newPrivateKey(curve, ctxPrivateKey(organization.id, id)));
      const addresses = cryptoCall(() => privateKeyAddresses(curve, made.publicKey, k.addressFormats));
      store.keys.privateKeys.insert({
        id, organizationId: organization.id, name: k.privateKeyName, curve: k.curve, publicKey: Buffer.from(made.publicKey).toString('hex'),
        addresses, sealed: made.sealed, imported: false, exported: false, createdMs: nowMs, updatedMs: nowMs,
      });
      requireTags(store, organization.id, k.privateKeyTags, 'TAG_TYPE_PRIVATE_KEY');
      for (const t of k.privateKeyTags) store.tags.attach(t, id);
      privateKeys.push({ privateKeyId: id, addresses });
    }
    return { privateKeys };
  },
};

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
  authorize(p, intent, store) {
    requireKeyAdmin(p, 'delete private keys');
    intent.privateKeyIds.forEach((id, i) => {
      const k = requirePrivateKey(store, p.organization.id, id, `privateKeyIds[${i}]`);
      if (!k.exported && intent.deleteWithoutExport !== true) {
        throw failedPrecondition(`private key ${id} has never been exported; export it first or set deleteWithoutExport to true`);
      }
    });
  },
  execute(ctx, intent) {
    const { store, organization } = ctx;
    intent.privateKeyIds.forEach((id, i) => requirePrivateKey(store, organization.id, id, `privateKeyIds[${i}]`));
    for (const id of intent.privateKeyIds) {
      store.tags.detachAll(id);
      store.keys.privateKeys.delete(organization.id, id);
    }
    return { privateKeyIds: intent.privateKeyIds };
  },
};

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
  execute(ctx, q) {
    const k = requirePrivateKey(ctx.store, ctx.organization.id, q.privateKeyId);
    return { privateKey: privateKeyRecord(ctx.store, k) };
  },
};

export const listPrivateKeys: QueryOperation<Record<string, never>> = {
  kind: 'query',
  path: 'list_private_keys',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate() { return {}; },
  execute(ctx) {
    return { privateKeys: ctx.store.keys.privateKeys.list(ctx.organization.id).map((k) => privateKeyRecord(ctx.store, k)) };
  },
};
