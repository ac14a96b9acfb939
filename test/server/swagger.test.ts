// Self-test of the swagger reply validator (test/server/swagger.ts): it must accept well-formed
// replies and reject wrong ones, otherwise every "validates against the swagger" check elsewhere
// would be vacuous. Needs no server.
import { describe, it, expect } from 'vitest';
import { validateDefinition, validateReply, responseDefinition, swagger } from './swagger.js';

const ts = { seconds: '1763765000', nanos: '123000000' };
const activity = {
  id: 'a', organizationId: 'o', status: 'ACTIVITY_STATUS_COMPLETED', type: 'ACTIVITY_TYPE_CREATE_USER_TAG',
  intent: { createUserTagIntent: { userTagName: 't', userIds: [] } },
  result: { createUserTagResult: { userTagId: 'x', userIds: [] }, activity: { type: 'ACTIVITY_TYPE_CREATE_USER_TAG' } },
  votes: [], fingerprint: 'sha256:00', canApprove: false, canReject: false, createdAt: ts, updatedAt: ts,
};

describe('swagger reply validator', () => {
  it('is the swagger 2.0 file of the fixtures with its paths and definitions', () => {
    expect(swagger.swagger).toBe('2.0');
    expect(Object.keys(swagger.definitions).length).toBe(742);
    expect(responseDefinition('/public/v1/query/whoami')).toBe('v1GetWhoamiResponse');
    expect(responseDefinition('/public/v1/submit/create_users')).toBe('v1ActivityResponse');
    expect(responseDefinition('/public/v1/submit/create_users', 401)).toBe('rpcStatus');
  });

  it('accepts a well-formed activity reply, with extra members', () => {
    expect(validateDefinition('v1ActivityResponse', { activity })).toEqual([]);
    expect(validateDefinition('v1ActivityResponse', { activity: { ...activity, timestampMs: '1' }, extra: 1 })).toEqual([]);
  });

  it('rejects missing required members, wrong types and values outside an enum', () => {
    const { fingerprint: _f, ...noFingerprint } = activity;
    expect(validateDefinition('v1ActivityResponse', { activity: noFingerprint }).join()).toMatch(/fingerprint/);
    expect(validateDefinition('v1ActivityResponse', { activity: { ...activity, status: 'DONE' } }).join()).toMatch(/allowed values/);
    expect(validateDefinition('v1ActivityResponse', { activity: { ...activity, canApprove: 'no' } }).join()).toMatch(/boolean/);
    expect(validateDefinition('v1ActivityResponse', { activity: { ...activity, createdAt: { seconds: 1, nanos: '0' } } }).join()).toMatch(/string/);
    expect(validateDefinition('v1ActivityResponse', { activity: { ...activity, result: { createUserTagResult: { userIds: [] } } } }).join()).toMatch(/userTagId/);
    expect(validateDefinition('v1ActivityResponse', {}).length).toBeGreaterThan(0);
  });

  it('checks uint64 strings and nested records', () => {
    const apiKey = { credential: { publicKey: '02ab', type: 'CREDENTIAL_TYPE_API_KEY_P256' }, apiKeyId: 'k', apiKeyName: 'n', createdAt: ts, updatedAt: ts };
    expect(validateDefinition('v1GetApiKeyResponse', { apiKey })).toEqual([]);
    expect(validateDefinition('v1GetApiKeyResponse', { apiKey: { ...apiKey, expirationSeconds: '900' } })).toEqual([]);
    expect(validateDefinition('v1GetApiKeyResponse', { apiKey: { ...apiKey, expirationSeconds: 900 } }).length).toBeGreaterThan(0);
    expect(validateDefinition('v1GetApiKeyResponse', { apiKey: { ...apiKey, expirationSeconds: 'soon' } }).length).toBeGreaterThan(0);
    expect(validateDefinition('v1GetApiKeyResponse', { apiKey: { ...apiKey, credential: { publicKey: '02', type: 'PASSWORD' } } }).length).toBeGreaterThan(0);
  });

  it('checks the error format {code, message, details}', () => {
    expect(validateReply('/public/v1/query/whoami', 401, { code: 16, message: 'bad stamp', details: [] })).toEqual([]);
    expect(validateReply('/public/v1/query/whoami', 401, { code: '16', message: 'bad stamp', details: [] }).length).toBeGreaterThan(0);
    expect(validateReply('/public/v1/query/whoami', 401, { code: 16, message: 'x' }).join()).toMatch(/details/);
    expect(validateReply('/public/v1/query/whoami', 401, 'nope').length).toBeGreaterThan(0);
  });
});
