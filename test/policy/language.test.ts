// The policy language (src/policy/language.ts) against the grammar table of Turnkey's policy
// language documentation: every documented operation, with the value it must give.
import { describe, it, expect } from 'vitest';
import { evaluate, evaluateBool, parse, freeNames, EvalError, SyntaxError as PolicySyntaxError, type Value } from '../../src/policy/language.js';

const run = (src: string, scope: Record<string, Value> = {}) => evaluate(parse(src), new Map(Object.entries(scope)));

describe('policy language: the documented operations', () => {
  const cases: [string, Value][] = [
    ['true && false', false],
    ['true || false', true],
    ['1 < 2', true],
    ['2 <= 1', false],
    ['3 >= 3', true],
    ['4 > 5', false],
    ['1 == 1', true],
    ["'a' != 'b'", true],
    ["'a' == 'a'", true],
    ['1 in [1, 2, 3]', true],
    ["'z' in ['x', 'y']", false],
    ['[1,2,3][0]', 1n],
    ["'abc'[0]", 'a'],
    ['[1,2,3][0..2]', [1n, 2n]],
    ["'abc'[0..2]", 'ab'],
    ['[1,1,1].all(x, x == 1)', true],
    ['[1,2,3].all(x, x == 1)', false],
    ['[1,2,3].any(x, x == 1)', true],
    ['[1,2,3].contains(1)', true],
    ['[1,2,3].count()', 3n],
    ['[1,2,3].filter(x, x == 1)', [1n]],
    ['[1,2,3].filter(x, x > 1).count() >= 2', true],
    // a list's count without parentheses, as Turnkey's Solana examples write it
    ['[1,2,3].count == 3', true],
    // ints are 256 bits wide: no loss above 2^53
    ['115792089237316195423570985008687907853269984665640564039457584007913129639935 > 9007199254740993', true],
    ['!(1 == 2)', true],
    ['(true || false) && false', false],
    ['true || false && false', true],
  ];
  for (const [src, want] of cases) {
    it(src, () => { expect(run(src)).toEqual(want); });
  }

  it('reads struct fields and binds the item of all/any/filter', () => {
    const approvers: Value = [
      { id: 'u1', tags: ['t1'] },
      { id: 'u2', tags: ['t1', 't2'] },
    ];
    expect(run("approvers.any(user, user.id == 'u2')", { approvers })).toBe(true);
    expect(run("approvers.filter(user, user.tags.contains('t1')).count() >= 2", { approvers })).toBe(true);
    expect(run("approvers.all(user, user.tags.contains('t2'))", { approvers })).toBe(false);
    expect(run("eth.tx.to == '0xabc' && eth.tx.value <= 100", { eth: { tx: { to: '0xabc', value: 100n } } })).toBe(true);
    expect(run("eth.tx.data[0..10] == '0xa9059cbb'", { eth: { tx: { data: '0xa9059cbb0000' } } })).toBe(true);
  });

  it('lists the free names, not the bound item', () => {
    expect([...freeNames(parse("approvers.any(user, user.id == 'x') && activity.type == 'T'"))].sort()).toEqual(['activity', 'approvers']);
  });
});

describe('policy language: errors', () => {
  const syntax = ['', '1 +', "'open", '1 == 2 == 3', '(true', 'a.', '[1,2', '"double"', 'x.any(1, true)', 'true &&'];
  for (const src of syntax) {
    it(`does not parse: ${JSON.stringify(src)}`, () => { expect(() => parse(src)).toThrow(PolicySyntaxError); });
  }
  const evalErrors: [string, Record<string, Value>][] = [
    ["1 == 'a'", {}],
    ["'a' < 'b'", {}],
    ['1 && true', {}],
    ['[1][1]', {}],
    ['[1,2][1..0]', {}],
    ['nope == 1', {}],
    ['x.missing == 1', { x: { present: 1n } }],
    ['[1].all(i, i)', {}],
    ['1.count()', {}],
    ["'abc'.count == 3", {}],
    ["m['missing'] == 1", { m: { present: 1n } }],
    ['m[0] == 1', { m: { present: 1n } }],
  ];
  for (const [src, scope] of evalErrors) {
    it(`cannot be evaluated: ${src}`, () => { expect(() => run(src, scope)).toThrow(EvalError); });
  }
  it('reads a map\'s entry by key, as eth.tx.contract_call_args is read', () => {
    const scope = { args: { wad: 5n, dst: '0xAb', calls: [['0x1', 0n]] } };
    expect(run("args['wad'] == 5 && args['dst'] == '0xAb'", scope)).toBe(true);
    expect(run("args['calls'].all(c, c[1] == 0)", scope)).toBe(true);
  });
  it('says how to compare when given a single =', () => {
    expect(() => parse("user.id = 'x'")).toThrow(/compare with '=='/);
  });
  it('does not short-circuit: an error on either side of || or && is an error (the documented wallet/private_key example)', () => {
    const signingWithKey = { private_key: { id: 'k' } };
    expect(() => run("wallet.id == 'w' || private_key.id == 'k'", signingWithKey)).toThrow(EvalError);
    expect(() => run("false && wallet.id == 'w'", signingWithKey)).toThrow(EvalError);
    expect(run("private_key.id == 'k' || private_key.id == 'x'", signingWithKey)).toBe(true);
  });
  it('a policy expression must give a bool', () => {
    expect(() => evaluateBool(parse('1'), new Map())).toThrow(EvalError);
  });
  it('refuses deep nesting and long sources instead of overflowing the stack', () => {
    expect(() => parse('('.repeat(200) + 'true' + ')'.repeat(200))).toThrow(PolicySyntaxError);
    expect(() => parse('!'.repeat(200) + 'true')).toThrow(PolicySyntaxError);
    expect(() => parse(`'${'a'.repeat(5000)}' == 'a'`)).toThrow(PolicySyntaxError);
  });
});

describe('activity.resource and activity.action of every accepted activity type', () => {
  it('name a known resource and action', async () => {
    const { defaultRegistry } = await import('../../src/activities/registry.js');
    const { resourceAction } = await import('../../src/policy/scope.js');
    const registry = defaultRegistry();
    const RESOURCES = new Set(['ORGANIZATION', 'USER', 'CREDENTIAL', 'PRIVATE_KEY', 'WALLET', 'POLICY', 'AUTH', 'OTP', 'RECOVERY', 'ACTIVITY', 'WEBHOOK_ENDPOINT', 'SMART_CONTRACT_INTERFACE', 'SECRET', 'INVITATION']);
    const ACTIONS = new Set(['CREATE', 'UPDATE', 'DELETE', 'SIGN', 'EXPORT', 'IMPORT', 'APPROVE', 'REJECT', 'VERIFY']);
    const seen: string[] = [];
    for (const path of registry.submitPaths()) {
      for (const type of Object.keys(registry.submit(path)!.types)) {
        const { resource, action } = resourceAction(type);
        seen.push(`${type} → ${resource}/${action}`);
        expect(RESOURCES.has(resource) && ACTIONS.has(action), `${type} → ${resource}/${action}`).toBe(true);
      }
    }
    expect(resourceAction('ACTIVITY_TYPE_SIGN_TRANSACTION_V2')).toEqual({ resource: 'PRIVATE_KEY', action: 'SIGN' });
    expect(resourceAction('ACTIVITY_TYPE_CREATE_WALLET')).toEqual({ resource: 'WALLET', action: 'CREATE' });
    expect(resourceAction('ACTIVITY_TYPE_DELETE_USERS')).toEqual({ resource: 'USER', action: 'DELETE' });
    // rows of the documented table that a name alone would get wrong
    expect(resourceAction('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG')).toEqual({ resource: 'PRIVATE_KEY', action: 'CREATE' });
    expect(resourceAction('ACTIVITY_TYPE_DELETE_USER_TAGS')).toEqual({ resource: 'USER', action: 'DELETE' });
    expect(resourceAction('ACTIVITY_TYPE_CREATE_API_KEYS_V2')).toEqual({ resource: 'CREDENTIAL', action: 'CREATE' });
    expect(resourceAction('ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2')).toEqual({ resource: 'AUTH', action: 'CREATE' });
    expect(resourceAction('ACTIVITY_TYPE_VERIFY_OTP')).toEqual({ resource: 'OTP', action: 'VERIFY' });
    expect(resourceAction('ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE')).toEqual({ resource: 'SMART_CONTRACT_INTERFACE', action: 'DELETE' });
    expect(seen.length).toBeGreaterThan(50);
  });
});
