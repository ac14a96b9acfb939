// The decision on an activity with several targets (policy/decide.ts combineTargets).
import { describe, expect, it } from 'vitest';
import { combineTargets, type Decision } from '../../src/policy/decide.js';

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
