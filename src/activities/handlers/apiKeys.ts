/** create_api_keys, delete_api_keys, get_api_key, get_api_keys. */
import { notFound } from '../../errors.js';
import { requireSelfOrRoot } from '../../domain/principal.js';
import { assertRootStillReachable, insertApiKeys, readApiKeyParams, requireUser, type ApiKeyParams } from '../../domain/apiKeys.js';
import { apiKeyRecord } from '../../domain/records.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { Validator } from '../../domain/validate.js';

export const createApiKeys: SubmitOperation<{ apiKeys: ApiKeyParams[]; userId: string }, { apiKeyIds: string[] }> = {
  kind: 'submit',
  path: 'create_api_keys',
  types: {
    ACTIVITY_TYPE_CREATE_API_KEYS_V2: keysFor('ACTIVITY_TYPE_CREATE_API_KEYS_V2', { resultKey: 'createApiKeysResult', specResultKey: 'createApiKeysResult' }),
    ACTIVITY_TYPE_CREATE_API_KEYS: keysFor('ACTIVITY_TYPE_CREATE_API_KEYS'),
  },
  validate(params, type) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
    const list = v.array(params, 'apiKeys', 'apiKeys', { required: true, nonEmpty: true });
    const apiKeys = readApiKeyParams(v, list, 'apiKeys', type === 'ACTIVITY_TYPE_CREATE_API_KEYS' ? 'API_KEY_CURVE_P256' : undefined);
    v.done();
    return { apiKeys, userId: userId! };
  },
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'create API keys'); },
  execute(ctx, intent) {
    requireUser(ctx.store, ctx.organization.id, intent.userId);
    return { apiKeyIds: insertApiKeys(ctx.store, ctx.organization.id, intent.userId, intent.apiKeys, ctx.nowMs, ctx.newId) };
  },
};

export const deleteApiKeys: SubmitOperation<{ userId: string; apiKeyIds: string[] }, { apiKeyIds: string[] }> = {
  kind: 'submit',
  path: 'delete_api_keys',
  types: { ACTIVITY_TYPE_DELETE_API_KEYS: keysFor('ACTIVITY_TYPE_DELETE_API_KEYS') },
  validate(params) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
    const apiKeyIds = v.stringArray(params, 'apiKeyIds', 'apiKeyIds', { required: true, nonEmpty: true });
    v.done();
    return { userId: userId!, apiKeyIds: apiKeyIds! };
  },
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'delete API keys'); },
  execute(ctx, intent) {
    const { store, organization } = ctx;
    requireUser(store, organization.id, intent.userId);
    for (const id of intent.apiKeyIds) {
      const k = store.apiKeys.get(organization.id, id);
      if (!k || k.userId !== intent.userId) throw notFound(`API key ${id} not found for user ${intent.userId}`, 'API_KEY_NOT_FOUND');
    }
    for (const id of intent.apiKeyIds) store.apiKeys.delete(organization.id, id);
    assertRootStillReachable(store, organization.id);
    return { apiKeyIds: intent.apiKeyIds };
  },
};

export const getApiKey: QueryOperation<{ apiKeyId: string }> = {
  kind: 'query',
  path: 'get_api_key',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const apiKeyId = v.string(body, 'apiKeyId', 'apiKeyId', { required: true, max: 100 });
    v.done();
    return { apiKeyId: apiKeyId! };
  },
  execute(ctx, q) {
    const k = ctx.store.apiKeys.get(ctx.organization.id, q.apiKeyId);
    if (!k) throw notFound(`API key ${q.apiKeyId} not found`, 'API_KEY_NOT_FOUND');
    return { apiKey: apiKeyRecord(k) };
  },
};

export const getApiKeys: QueryOperation<{ userId?: string }> = {
  kind: 'query',
  path: 'get_api_keys',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const userId = v.string(body, 'userId', 'userId', { max: 100 }) || undefined;
    v.done();
    return userId !== undefined ? { userId } : {};
  },
  execute(ctx, q) {
    const { store, organization } = ctx;
    if (q.userId !== undefined) {
      if (!store.users.get(organization.id, q.userId)) throw notFound(`user ${q.userId} not found`, 'USER_NOT_FOUND');
      return { apiKeys: store.apiKeys.listByUser(organization.id, q.userId).map(apiKeyRecord) };
    }
    return { apiKeys: store.apiKeys.listByOrganization(organization.id).map(apiKeyRecord) };
  },
};
