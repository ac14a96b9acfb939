/**
 * Who may run a submit: the fixed rules for parent-organization callers, and for members the
 * root quorum, the organization's policies and the built-in self-service rules (policy/decide.ts).
 * An activity no rule allows yet waits for approvals (ACTIVITY_STATUS_CONSENSUS_NEEDED).
 */
import { randomUUID } from 'node:crypto';
import { ApiError, Grpc, permissionDenied, TurnkeyMessage } from '../errors.js';
import { FixedRefusal, isRoot, type Principal } from '../domain/principal.js';
import { userRecord, timestamp } from '../domain/records.js';
import type { ApiKeyRow, AuthenticatorRow, OrganizationRow, Tx, UserRow, VoteRow } from '../storage/types.js';
import { combineTargets, credentialValue, decide, userValue, type Decision } from '../policy/decide.js';
import { conditionScope, ROOT_QUORUM_ONLY, ScopeReads } from '../policy/scope.js';
import type { Services, SubmitOperation } from './types.js';

/** The stamp that cast a vote (the requester's, or an approver's). */
export interface Voucher { publicKey: string; signature: string; scheme: string }

/** What a decision knows beyond the request: approvals since, and what external() brought. */
export interface DecisionInputs {
  /** Users who approved since, for an activity awaiting consensus. */
  voters?: UserRow[];
  /** Their credentials (the approvals' stamps). */
  voterCredentials?: (ApiKeyRow | AuthenticatorRow)[];
  /**
   * The operation's external() result. Given, the policies read what will be signed (a node-filled
   * nonce, gas or fee); absent (the gate before the outside is asked), what the request says.
   */
  external?: unknown;
}

/**
 * The decision for a submit by `principal` at `nowMs` (policies' `time.now`). Throws what
 * op.authorize throws other than PermissionDenied (validation against the state: unknown key,
 * mismatched curve …).
 */
export async function authorizeSubmit(
  tx: Tx, services: Services, op: SubmitOperation, principal: Principal, intent: unknown, type: string,
  organization: OrganizationRow, nowMs: number, { voters = [], voterCredentials = [], external }: DecisionInputs = {},
): Promise<Decision> {
  if (principal.access !== 'member') {
    await op.authorize(principal, intent, tx, services, organization);
    return { outcome: 'OUTCOME_ALLOW', reason: 'allowed to the parent organization', evaluations: [] };
  }
  let fixedRules = true;
  try {
    await op.authorize(principal, intent, tx, services, organization);
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== Grpc.PERMISSION_DENIED || e instanceof FixedRefusal) throw e;
    fixedRules = false;
  }
  // The common case, without reading policies: a root user of a quorum of one.
  if (isRoot(principal) && organization.rootQuorumThreshold <= 1 && voters.length === 0) {
    return { outcome: 'OUTCOME_ALLOW', reason: 'a root user (root quorum of one)', evaluations: [] };
  }
  const approvers = [principal.user, ...voters.filter((u) => u.id !== principal.user.id)];
  const targets = await op.policyTargets?.(intent, tx, organization.id, external);
  const input = {
    organization,
    // A policy that allows a root-quorum-only type has no effect.
    policies: ROOT_QUORUM_ONLY.has(type) ? [] : await tx.policies.list(organization.id),
    approvers: await Promise.all(approvers.map(async (u) => ({ user: u, value: userValue(u, await tx.tags.tagsOf(u.id)) }))),
    credentials: [principal.credential, ...voterCredentials.filter((c) => c.userId !== principal.user.id)].map(credentialValue),
    selfService: fixedRules && !principal.user.isRoot,
    nowMs,
  };
  if (!Array.isArray(targets)) return decide({ ...input, condition: await conditionScope(tx, organization.id, type, targets, intent) });
  if (targets.length <= 1) return decide({ ...input, condition: await conditionScope(tx, organization.id, type, targets[0], intent) });
  // Several targets (payloads, signing keys, secrets): each is decided; any deny denies, all must allow.
  const decisions: Decision[] = [];
  const reads = new ScopeReads(tx, organization.id);
  for (const t of targets) decisions.push(decide({ ...input, condition: await conditionScope(tx, organization.id, type, t, intent, reads) }));
  return combineTargets(decisions);
}

/**
 * The gate before a submit's external() asks anyone outside (an Ethereum node, an OIDC issuer):
 * throws the refusal of a caller the operation would not admit. An operation whose policies read
 * what external() brings (`policyReadsExternal`: a nonce, gas or fee the node fills in) cannot be
 * decided here without guessing those values: for a user of the organization the gate then checks
 * only what the request names (op.authorize without its permission rule), and the decision that
 * counts, in the write, reads the transaction as it will be signed.
 */
export async function admitOutsideWork(
  tx: Tx, services: Services, op: SubmitOperation, principal: Principal, intent: unknown, type: string, organization: OrganizationRow, nowMs: number,
): Promise<void> {
  if (op.policyReadsExternal && principal.access === 'member') {
    try {
      await op.authorize(principal, intent, tx, services, organization);
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== Grpc.PERMISSION_DENIED || e instanceof FixedRefusal) throw e;
    }
    return;
  }
  const decision = await authorizeSubmit(tx, services, op, principal, intent, type, organization, nowMs);
  // Such an activity cannot wait for approvals: what it checked outside would be stale by then.
  if (decision.outcome !== 'OUTCOME_ALLOW') throw refusal(decision, op.path);
}

/**
 * The refusal of a submit that may not run now: an explicit deny, or (for an activity that cannot
 * wait for approvals) any outcome but ALLOW. 403 POLICY_DENIED with the decision's reason.
 */
export function refusal(decision: Decision, path: string): ApiError {
  // Turnkey's words and empty details; which policy denied stays with the operator (log, get_policy_evaluations).
  if (decision.outcome === 'OUTCOME_DENY_EXPLICIT') return new ApiError(Grpc.PERMISSION_DENIED, TurnkeyMessage.DENIED_EXPLICITLY, { reason: decision.reason });
  return permissionDenied(`${decision.reason}; ${path} cannot wait for approvals`, 'POLICY_DENIED');
}

/**
 * Stores a user's vote on an activity and returns its v1Vote record (`message` is the activity's
 * fingerprint). `store` false: the record only (the requester's rejection of its own activity,
 * which settles it: its approval already holds the user's row).
 */
export async function castVoteRow(
  tx: Tx, user: UserRow, activityId: string, organizationId: string, selection: VoteRow['selection'],
  fingerprint: string, voucher: Voucher | undefined, nowMs: number, store = true,
): Promise<Record<string, unknown>> {
  const id = randomUUID();
  const record = {
    id,
    userId: user.id,
    user: await userRecord(tx, user),
    activityId,
    selection,
    message: fingerprint,
    publicKey: voucher?.publicKey ?? '',
    signature: voucher?.signature ?? '',
    scheme: voucher?.scheme ?? '',
    createdAt: timestamp(nowMs),
  };
  if (store) await tx.votes.insert({ id, activityId, organizationId, userId: user.id, selection, record, createdMs: nowMs });
  return record;
}
