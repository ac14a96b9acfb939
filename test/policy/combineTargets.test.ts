// The decision on an activity with several targets (policy/decide.ts combineTargets).
import { describe, expect, it } from 'vitest';
import { combineTargets, type Decision } from '../../src/policy/decide.js';
import { conditionScope, ScopeReads } from '../../src/policy/scope.js';

const allow: Decision = { outcome: 'OUTCOME_ALLOW', reason: 'allowed by policy a', evaluations: [{ policyId: 'a', outcome: 'OUTCOME_ALLOW' }] };
const deny: Decision = { outcome: 'OUTCOME_DENY_EXPLICIT', reason: 'denied by policy d', evaluations: [{ policyId: 'd', outcome: 'OUTCOME_DENY_EXPLICIT' }] };
const wait: Decision = { outcome: 'OUTCOME_REQUIRES_CONSENSUS', reason: 'needs approvals', evaluations: [{ policyId: 'a', outcome: 'OUTCOME_DENY_IMPLICIT' }] };

describe('combineTargets', () => {
  // guards: an explicit deny of any target denies the activity, wherever that target stands
  it('any explicit deny denies', () => {
    expect(combineTargets([allow, wait, deny]).outcome).toBe('OUTCOME_DENY_EXPLICIT');
    expect(combineTargets([deny, allow]).reason).toContain('target 1 of 2');
  });
  // guards: the activity is allowed only when every target is
  it('allows only when every target is allowed', () => {
    expect(combineTargets([allow, allow]).outcome).toBe('OUTCOME_ALLOW');
    expect(combineTargets([allow, wait]).outcome).toBe('OUTCOME_REQUIRES_CONSENSUS');
    expect(combineTargets([allow, wait]).reason).toContain('target 2 of 2');
  });
  // guards: get_policy_evaluations keeps each target's evaluations
  it('keeps the evaluations of each target', () => {
    const d = combineTargets([allow, deny]);
    expect(d.targetEvaluations).toEqual([allow.evaluations, deny.evaluations]);
    expect(d.evaluations).toEqual([...allow.evaluations, ...deny.evaluations]);
  });
});

describe('the reads of a decision with several targets', () => {
  // guards: a sign_raw_payloads of many EIP-712 payloads under one key reads that key (and its tags) once, not once per payload
  it('targets sharing a ScopeReads read the key, its tags and its account once, and bind the same values as reads of their own', async () => {
    const calls: string[] = [];
    const tx = {
      keys: {
        privateKeys: { get: async (_o: string, id: string) => { calls.push('key'); return { id, name: 'hot', imported: false, exported: false, curve: 'CURVE_SECP256K1', addresses: [] }; } },
        accounts: { byAddress: async (_o: string, address: string) => { calls.push('account'); return { address, curve: 'CURVE_SECP256K1', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM', walletId: 'w' }; } },
        wallets: { get: async (_o: string, id: string) => { calls.push('wallet'); return { id, name: 'w', imported: false, exported: false }; } },
      },
      tags: { tagsOf: async () => { calls.push('tags'); return ['t']; } },
      contractInterfaces: { byAddress: async () => { calls.push('abi'); return undefined; } },
    } as never;
    const type = 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS';
    const targets = Array.from({ length: 10 }, (_, i) => ({ privateKeyId: 'k', walletAccountAddress: '0x' + '11'.repeat(20), authorization: JSON.stringify({ address: '0x' + '22'.repeat(20), chainId: 1, nonce: i }) }));
    const reads = new ScopeReads(tx, 'o');
    const shared = [];
    for (const t of targets) shared.push(await conditionScope(tx, 'o', type, t, undefined, reads));
    expect(calls.sort()).toEqual(['account', 'key', 'tags', 'wallet']);
    calls.length = 0;
    const own = [];
    for (const t of targets) own.push(await conditionScope(tx, 'o', type, t));
    expect(calls).toHaveLength(40);
    expect(shared).toEqual(own);
    expect(shared.map((s) => (s.get('eth') as any).eip_7702_authorization.nonce)).toEqual(targets.map((_, i) => BigInt(i)));
  });
});
