// Self-test of the reply checks (checks.ts) and of the recording proxy's validator (harness.ts):
// they must reject wrong replies, or the component tests built on them would prove nothing.
import { describe, it, expect } from 'vitest';
import { checkQueryReply, checkSubmitReply, checkError, expectFieldViolation, fingerprintOf } from './checks.js';
import { validateProxiedReply, stampFor, type RawReply } from './harness.js';

const ts = { seconds: String(Math.floor(Date.now() / 1000)), nanos: '0' };
const shape = { type: 'ACTIVITY_TYPE_CREATE_USER_TAG', intentKey: 'createUserTagIntent', resultKey: 'createUserTagResult' };
const result = { userTagId: 't', userIds: [] };
const good = () => ({
  activity: {
    id: 'a', organizationId: 'o', status: 'ACTIVITY_STATUS_COMPLETED', type: shape.type, timestampMs: '1',
    intent: { createUserTagIntent: { userTagName: 'n', userIds: [] } },
    result: { createUserTagResult: result, activity: { type: shape.type, intent: { createUserTagIntent: { userTagName: 'n', userIds: [] } }, result: { createUserTagResult: result } } },
    votes: [], fingerprint: fingerprintOf('{}'), canApprove: false, canReject: false, createdAt: ts, updatedAt: ts,
  },
});
const reply = (status: number, json: unknown, ct = 'application/json'): RawReply =>
  ({ status, json, text: JSON.stringify(json), headers: new Headers({ 'content-type': ct }) });

describe('checks.ts', () => {
  it('checkSubmitReply accepts a correct reply and rejects each kind of defect', () => {
    expect(() => checkSubmitReply('create_user_tag', good(), shape, 'o', '{}')).not.toThrow();
    const bad: [string, (r: any) => void][] = [
      ['wrong fingerprint', () => {}],
      ['missing specification nesting', (r) => { delete r.activity.result.activity; }],
      ['wrong spec intent key', (r) => { r.activity.result.activity.intent = { createUserTagIntentV2: {} }; }],
      ['spec result differs', (r) => { r.activity.result.activity.result.createUserTagResult = { userTagId: 'other', userIds: [] }; }],
      ['status FAILED', (r) => { r.activity.status = 'ACTIVITY_STATUS_FAILED'; }],
      ['timestampMs missing', (r) => { delete r.activity.timestampMs; }],
      ['createdAt numbers', (r) => { r.activity.createdAt = { seconds: 1, nanos: 0 }; }],
      ['nanos out of range', (r) => { r.activity.updatedAt = { ...ts, nanos: '1000000000' }; }],
      ['createdAt in 1970', (r) => { r.activity.createdAt = { seconds: '5', nanos: '0' }; }],
      ['client result key missing', (r) => { delete r.activity.result.createUserTagResult; }],
      ['other organization', (r) => { r.activity.organizationId = 'p'; }],
    ];
    for (const [what, mutate] of bad) {
      const r = good();
      mutate(r);
      expect(() => checkSubmitReply('create_user_tag', r, shape, 'o', what === 'wrong fingerprint' ? '{"x":1}' : '{}'), what).toThrow();
    }
  });

  it('checkQueryReply requires the specification wrapper with the same data', () => {
    const who = { organizationId: 'o', organizationName: 'n', userId: 'u', username: 'x' };
    const wrap = { id: 'q', organizationId: 'o', status: 'ACTIVITY_STATUS_COMPLETED', type: 'ACTIVITY_TYPE_UNKNOWN_V1', timestampMs: '5', result: { ...who } };
    const keys = ['organizationId', 'organizationName', 'userId', 'username'];
    expect(() => checkQueryReply('whoami', { ...who, activity: wrap }, keys, 'o')).not.toThrow();
    expect(() => checkQueryReply('whoami', { ...who }, keys, 'o')).toThrow();
    expect(() => checkQueryReply('whoami', { ...who, activity: { ...wrap, type: 'ACTIVITY_TYPE_CREATE_USERS' } }, keys, 'o')).toThrow();
    expect(() => checkQueryReply('whoami', { ...who, activity: { ...wrap, result: { ...who, userId: 'v' } } }, keys, 'o')).toThrow();
    expect(() => checkQueryReply('whoami', { organizationId: 'o', activity: wrap }, keys, 'o')).toThrow();
  });

  it('checkError enforces status, gRPC code pairing and the body format', () => {
    expect(() => checkError(reply(401, { code: 16, message: 'm', details: [] }), 401)).not.toThrow();
    expect(() => checkError(reply(401, { code: 3, message: 'm', details: [] }), 401)).toThrow();
    expect(() => checkError(reply(400, { code: 3, message: 'm', details: [] }), 401)).toThrow();
    expect(() => checkError(reply(400, { code: 3, message: 'm' }), 400)).toThrow();
    expect(() => checkError(reply(400, { code: 3, message: 'm', details: [] }, 'text/html'), 400)).toThrow();
    expect(() => checkError(reply(400, { code: 3, message: 'Error\n    at foo (/x/y.js:1:2)', details: [] }), 400)).toThrow();
  });

  it('expectFieldViolation needs a google.rpc.BadRequest naming the field', () => {
    const br = (field: string) => reply(400, { code: 3, message: 'm', details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description: 'd' }] }] });
    expect(() => expectFieldViolation(br('parameters.userEmail'), 'userEmail')).not.toThrow();
    expect(() => expectFieldViolation(br('parameters.userName'), 'userEmail')).toThrow();
    expect(() => expectFieldViolation(reply(400, { code: 3, message: 'm', details: [] }), 'userEmail')).toThrow();
  });
});

describe('recording proxy validator', () => {
  const b = (x: unknown) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x));
  it('passes valid replies and flags invalid ones', () => {
    expect(validateProxiedReply('POST', '/public/v1/query/whoami', 200, 'application/json', b({ organizationId: 'o', organizationName: 'n', userId: 'u', username: 'x' }))).toEqual([]);
    expect(validateProxiedReply('POST', '/public/v1/query/whoami', 200, 'application/json', b({ organizationId: 'o' })).length).toBeGreaterThan(0);
    expect(validateProxiedReply('POST', '/public/v1/query/whoami', 401, 'application/json', b({ code: 16, message: 'x', details: [] }))).toEqual([]);
    expect(validateProxiedReply('POST', '/nope', 404, 'application/json', b({ code: 5, message: 'x' })).length).toBeGreaterThan(0);
    expect(validateProxiedReply('POST', '/nope', 404, 'text/html', b('<html>')).length).toBeGreaterThan(0);
    expect(validateProxiedReply('POST', '//public/v1/query/whoami', 500, 'application/json', b({ code: 13, message: 'x', details: [] })).length).toBeGreaterThan(0);
    expect(validateProxiedReply('GET', '/healthz', 200, 'application/json', b({ status: 'ok' }))).toEqual([]);
  });
});

describe('raw stamp builder (harness.stampFor)', () => {
  it('reproduces the worked X-Stamp example of wire-compat §1.1 byte for byte', () => {
    // Fixture key of tkhq/sdk packages/api-key-stamper/src/__fixtures__ (Apache-2.0), as quoted in
    // wire-compat §1.1; @noble/curves signs deterministically (RFC 6979) like the purejs runtime.
    const key = { publicKey: '02f739f8c77b32f4d5f13265861febd76e7a9c61a1140d296b8c16302508870316', privateKey: '487f361ddfd73440e707f4daa6775b376859e8a3c9f29b3bb694a12927c0213c' };
    const body = '{"organizationId":"89881fc7-6ff3-4b43-b962-916698f8ff58"}';
    expect(stampFor(body, key)).toBe('eyJwdWJsaWNLZXkiOiIwMmY3MzlmOGM3N2IzMmY0ZDVmMTMyNjU4NjFmZWJkNzZlN2E5YzYxYTExNDBkMjk2YjhjMTYzMDI1MDg4NzAzMTYiLCJzY2hlbWUiOiJTSUdOQVRVUkVfU0NIRU1FX1RLX0FQSV9QMjU2Iiwic2lnbmF0dXJlIjoiMzA0NDAyMjAxMWI3YzE5MDAzN2VmZTQ0ZmQ1MmI3ODQ5NTc0ODM5MmMwY2ExODc4MzUyOWVhNmQwNDExMTgyN2U0YWNmMDM1MDIyMDYxMDUwMGZmOThmZThhNDFiMTQ3ZDRkNDY2YzMzMjBjYWI1YmVmYmIxNGJhMjRhYmFiYWI5ZmNkOWVjZWVhNDIifQ');
  });
});
