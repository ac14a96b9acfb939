/**
 * Policy evaluation: what the organization's policies and root quorum say about one activity.
 *
 * Order (Turnkey's documented rules):
 * 1. enough root users among the approvers (≥ the root quorum threshold) → allow;
 * 2. else an applicable EFFECT_DENY policy → explicit deny;
 * 3. else an applicable EFFECT_ALLOW policy → allow;
 * 4. else implicit deny.
 * A policy applies when its `condition` (about the activity), its `consensus` (about the
 * approvers) and its `time` (about the moment of the decision, `time.now`) all hold; an empty
 * expression holds. A policy whose `time` does not hold is skipped (OUTCOME_TIME_INACTIVE). A policy whose expression cannot be evaluated
 * for this activity (a keyword it does not have, a type mismatch) does not apply (OUTCOME_ERROR).
 * kmas adds the built-in self-service rules (`selfService`: what a user may do to itself, see
 * domain/principal.ts) as an allow that an explicit deny overrides.
 */
import type { ApiKeyRow, AuthenticatorRow, OrganizationRow, PolicyRow, UserRow } from '../storage/types.js';
import { EvalError, evaluateBool, Instant, parse, type Value } from './language.js';

export type Outcome =
  | 'OUTCOME_ALLOW' | 'OUTCOME_DENY_EXPLICIT' | 'OUTCOME_DENY_IMPLICIT' | 'OUTCOME_REQUIRES_CONSENSUS' | 'OUTCOME_ERROR'
  | 'OUTCOME_TIME_INACTIVE';

export interface PolicyEvaluation { policyId: string; outcome: Outcome }

export interface Decision {
  outcome: 'OUTCOME_ALLOW' | 'OUTCOME_DENY_EXPLICIT' | 'OUTCOME_DENY_IMPLICIT' | 'OUTCOME_REQUIRES_CONSENSUS';
  /** Why, in one sentence (for errors and logs; never key material). */
  reason: string;
  evaluations: PolicyEvaluation[];
  /**
   * An activity with several targets (combineTargets): each target's evaluations, in the order of
   * the targets; `evaluations` is then their concatenation.
   */
  targetEvaluations?: PolicyEvaluation[][];
}

/** The `Credential` struct of the consensus keyword `credentials`: the API key or passkey an approval was made with. */
export function credentialValue(c: ApiKeyRow | AuthenticatorRow): Value {
  if ('credentialId' in c) {
    return { id: c.id, user_id: c.userId, type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR', credential_id: c.credentialId, public_key: c.publicKey };
  }
  return { id: c.id, user_id: c.userId, type: c.credentialType, credential_id: '', public_key: c.publicKey };
}

/** The `User` struct of the consensus keyword `approvers` (Turnkey's fields id, tags, email, alias; kmas adds name and is_root). */
export function userValue(u: UserRow, tagIds: string[]): Value {
  return { id: u.id, alias: u.name, name: u.name, email: u.email ?? '', tags: tagIds, is_root: u.isRoot };
}

export interface DecideInput {
  organization: OrganizationRow;
  policies: PolicyRow[];
  /** Users who approved, the requester first; with their `approvers` struct values. */
  approvers: { user: UserRow; value: Value }[];
  /** The credentials the approvals were made with, the requester's first (`credentials`). */
  credentials: Value[];
  /** The condition keywords bound for this activity (activity, wallet, private_key, eth.tx …). */
  condition: ReadonlyMap<string, Value>;
  /** The built-in rules allow this activity to the requester. */
  selfService: boolean;
  /** The moment of the decision (`time.now`). */
  nowMs: number;
}

function holds(src: string, scope: ReadonlyMap<string, Value>): boolean {
  return src.trim() === '' ? true : evaluateBool(parse(src), scope);
}

export function decide(input: DecideInput): Decision {
  const { organization, policies, approvers } = input;
  const roots = approvers.filter((a) => a.user.isRoot).length;
  const threshold = Math.max(1, organization.rootQuorumThreshold);
  const evaluations: PolicyEvaluation[] = [];
  if (roots >= threshold) {
    return { outcome: 'OUTCOME_ALLOW', reason: `the root quorum approved (${roots} of ${threshold} needed)`, evaluations };
  }
  const consensusScope = new Map<string, Value>([['approvers', approvers.map((a) => a.value)], ['credentials', input.credentials]]);
  const timeScope = new Map<string, Value>([['time', { now: new Instant(input.nowMs) }]]);
  let deny: PolicyRow | undefined;
  let allow: PolicyRow | undefined;
  let waiting: PolicyRow | undefined;
  for (const p of policies) {
    let outcome: Outcome;
    try {
      if (!holds(p.time, timeScope)) {
        outcome = 'OUTCOME_TIME_INACTIVE';
      } else if (!holds(p.condition, input.condition)) {
        outcome = 'OUTCOME_DENY_IMPLICIT';
      } else if (!holds(p.consensus, consensusScope)) {
        // The condition matches; more approvers may still satisfy the consensus.
        outcome = p.effect === 'EFFECT_ALLOW' ? 'OUTCOME_REQUIRES_CONSENSUS' : 'OUTCOME_DENY_IMPLICIT';
        if (p.effect === 'EFFECT_ALLOW') waiting ??= p;
      } else if (p.effect === 'EFFECT_DENY') {
        outcome = 'OUTCOME_DENY_EXPLICIT';
        deny ??= p;
      } else {
        outcome = 'OUTCOME_ALLOW';
        allow ??= p;
      }
    } catch (e) {
      if (!(e instanceof EvalError)) throw e;
      outcome = 'OUTCOME_ERROR';
    }
    evaluations.push({ policyId: p.id, outcome });
  }
  if (deny) return { outcome: 'OUTCOME_DENY_EXPLICIT', reason: `denied by policy ${deny.id} (${deny.name})`, evaluations };
  if (allow) return { outcome: 'OUTCOME_ALLOW', reason: `allowed by policy ${allow.id} (${allow.name})`, evaluations };
  if (input.selfService) return { outcome: 'OUTCOME_ALLOW', reason: 'a user may do this to itself', evaluations };
  const byQuorum = `${threshold - roots} more root user approval${threshold - roots === 1 ? '' : 's'}`;
  return {
    outcome: 'OUTCOME_REQUIRES_CONSENSUS',
    reason: waiting ? `policy ${waiting.id} (${waiting.name}) needs more approvals, or ${byQuorum}` : `no policy allows it: it needs ${byQuorum}`,
    evaluations,
  };
}

/**
 * The decision on an activity that touches several targets (payloads, signing keys, secrets),
 * from the decision on each: an explicit deny of any target denies the activity; it is allowed
 * only when every target is; otherwise it needs consensus (the first target that does, its reason).
 */
export function combineTargets(decisions: Decision[]): Decision {
  const targetEvaluations = decisions.map((d) => d.evaluations);
  const evaluations = targetEvaluations.flat();
  const at = (d: Decision): string => (decisions.length > 1 ? ` (target ${decisions.indexOf(d) + 1} of ${decisions.length})` : '');
  const denied = decisions.find((d) => d.outcome === 'OUTCOME_DENY_EXPLICIT');
  const other = denied ?? decisions.find((d) => d.outcome !== 'OUTCOME_ALLOW');
  const chosen = other ?? decisions[0]!;
  return { outcome: chosen.outcome, reason: `${chosen.reason}${other ? at(other) : ''}`, evaluations, targetEvaluations };
}
