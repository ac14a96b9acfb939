/** create_api_keys, delete_api_keys, get_api_key, get_api_keys. */
import { notFound } from '../../errors.js';
import { requireSelfOrRoot } from '../../domain/principal.js';
import { assertRootStillReachable, insertApiKeys, rootCredentialsLock, readApiKeyParams, requireUser, type ApiKeyParams } from '../../domain/apiKeys.js';
import { apiKeyRecord } from '../../domain/records.js';
import { passOnOwnAllowlist } from '../../domain/ipAllowlist.js';
import { stampingApiKey } from '../../auth/services.js';
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
  async execute(ctx, intent) {
    await requireUser(ctx.tx, ctx.organization.id, intent.userId);
    const apiKeyIds = await insertApiKeys(ctx.tx, ctx.organization.id, intent.userId, intent.apiKeys, ctx.nowMs, ctx.newId);
    await passOnOwnAllowlist(ctx.tx, ctx.organization.id, stampingApiKey(ctx.principal.credential), intent.apiKeys.map((k) => k.publicKey), ctx.nowMs);
    return { apiKeyIds };
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
  locks: rootCredentialsLock,
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'delete API keys'); },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    await requireUser(tx, organization.id, intent.userId);
    for (const id of intent.apiKeyIds) {
      const k = await tx.apiKeys.get(organization.id, id);
      if (!k || k.userId !== intent.userId) throw notFound(`API key ${id} not found for user ${intent.userId}`, 'API_KEY_NOT_FOUND');
    }
    for (const id of intent.apiKeyIds) await tx.apiKeys.delete(organization.id, id);
    await assertRootStillReachable(tx, organization.id, nowMs);
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
  async execute(ctx, q) {
    const k = await ctx.tx.apiKeys.get(ctx.organization.id, q.apiKeyId);
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
  async execute(ctx, q) {
    const { tx, organization } = ctx;
    if (q.userId !== undefined) {
      if (!await tx.users.get(organization.id, q.userId)) throw notFound(`user ${q.userId} not found`, 'USER_NOT_FOUND');
      return { apiKeys: (await tx.apiKeys.listByUser(organization.id, q.userId)).map(apiKeyRecord) };
    }
    return { apiKeys: (await tx.apiKeys.listByOrganization(organization.id)).map(apiKeyRecord) };
  },
};
