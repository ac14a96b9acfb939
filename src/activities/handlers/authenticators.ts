/** create_authenticators, delete_authenticators; get_authenticator, get_authenticators (passkeys: src/domain/authenticators.ts). */
import { notFound } from '../../errors.js';
import { requireSelfOrRoot } from '../../domain/principal.js';
import { assertRootStillReachable, requireUser, rootCredentialsLock } from '../../domain/apiKeys.js';
import { readAuthenticatorParams, registerAuthenticators, type AuthenticatorParams } from '../../domain/authenticators.js';
import { authenticatorRecord } from '../../domain/records.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';

export const createAuthenticators: SubmitOperation<{ userId: string; authenticators: AuthenticatorParams[] }, { authenticatorIds: string[] }> = {
  kind: 'submit',
  path: 'create_authenticators',
  types: {
    ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2: keysFor('ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', { intentKey: 'createAuthenticatorsIntentV2', resultKey: 'createAuthenticatorsResult', specIntentKey: 'createAuthenticatorsIntent', specResultKey: 'createAuthenticatorsResult' }),
  },
  validate(params: Obj) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
    const authenticators = readAuthenticatorParams(v, v.array(params, 'authenticators', 'authenticators', { required: true, nonEmpty: true }), 'authenticators');
    v.done();
    return { userId: userId!, authenticators };
  },
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'register passkeys'); },
  async execute(ctx, intent) {
    await requireUser(ctx.tx, ctx.organization.id, intent.userId);
    return { authenticatorIds: await registerAuthenticators(ctx.tx, ctx.organization.id, intent.userId, intent.authenticators, 'authenticators', ctx.nowMs, ctx.newId) };
  },
};

export const deleteAuthenticators: SubmitOperation<{ userId: string; authenticatorIds: string[] }, { authenticatorIds: string[] }> = {
  kind: 'submit',
  path: 'delete_authenticators',
  types: { ACTIVITY_TYPE_DELETE_AUTHENTICATORS: keysFor('ACTIVITY_TYPE_DELETE_AUTHENTICATORS') },
  validate(params: Obj) {
    const v = new Validator();
    const userId = v.string(params, 'userId', 'userId', { required: true, max: 100 });
    const authenticatorIds = v.stringArray(params, 'authenticatorIds', 'authenticatorIds', { required: true, nonEmpty: true });
    v.done();
    return { userId: userId!, authenticatorIds: authenticatorIds! };
  },
  locks: rootCredentialsLock,
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId, 'delete passkeys'); },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    await requireUser(tx, organization.id, intent.userId);
    for (const id of intent.authenticatorIds) {
      const a = await tx.authenticators.get(organization.id, id);
      if (!a || a.userId !== intent.userId) throw notFound(`authenticator ${id} not found for user ${intent.userId}`, 'AUTHENTICATOR_NOT_FOUND');
    }
    for (const id of intent.authenticatorIds) await tx.authenticators.delete(organization.id, id);
    await assertRootStillReachable(tx, organization.id, nowMs);
    return { authenticatorIds: intent.authenticatorIds };
  },
};

export const getAuthenticator: QueryOperation<{ authenticatorId: string }> = {
  kind: 'query',
  path: 'get_authenticator',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const authenticatorId = v.string(body, 'authenticatorId', 'authenticatorId', { required: true, max: 100 });
    v.done();
    return { authenticatorId: authenticatorId! };
  },
  async execute(ctx, q) {
    const a = await ctx.tx.authenticators.get(ctx.organization.id, q.authenticatorId);
    if (!a) throw notFound(`authenticator ${q.authenticatorId} not found`, 'AUTHENTICATOR_NOT_FOUND');
    return { authenticator: authenticatorRecord(a) };
  },
};

export const getAuthenticators: QueryOperation<{ userId: string }> = {
  kind: 'query',
  path: 'get_authenticators',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const userId = v.string(body, 'userId', 'userId', { required: true, max: 100 });
    v.done();
    return { userId: userId! };
  },
  async execute(ctx, q) {
    await requireUser(ctx.tx, ctx.organization.id, q.userId);
    return { authenticators: (await ctx.tx.authenticators.listByUser(ctx.organization.id, q.userId)).map(authenticatorRecord) };
  },
};
