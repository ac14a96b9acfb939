/**
 * Policies: create_policy (V3), create_policies, update_policy (V2, V1), delete_policy,
 * delete_policies; queries get_policy, list_policies, get_policy_evaluations. And the votes on
 * activities awaiting consensus: approve_activity, reject_activity (engine.ts castVote).
 *
 * `condition`, `consensus` and `time` are checked when stored: they must parse
 * (policy/language.ts), use only the keywords of their field, and literal timestamps, cron
 * schedules, durations and zones must be valid, so a typo is a 400 now rather than a policy that
 * never applies. Who may change policies: root users by the fixed rules; anyone else as the
 * organization's policies allow (resource POLICY), or after approvals.
 */
import { failedPrecondition, invalidArgument, notFound } from '../../errors.js';
import { requireRoot } from '../../domain/principal.js';
import { timestamp } from '../../domain/records.js';
import type { PolicyRow, Tx } from '../../storage/types.js';
import { freeNames, literalProblems, parse, SyntaxError as PolicySyntaxError, MAX_SOURCE } from '../../policy/language.js';
import { literalFormProblems } from '../../policy/literalForms.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_ARRAY, MAX_NAME, Validator, type Obj } from '../../domain/validate.js';

const EFFECTS = ['EFFECT_ALLOW', 'EFFECT_DENY'] as const;
/** The keywords (and functions) each expression may use. */
const KEYWORDS = {
  condition: new Set(['activity', 'eth', 'solana', 'tron', 'bitcoin', 'wallet', 'wallets', 'private_key', 'wallet_account', 'secret']),
  consensus: new Set(['approvers', 'credentials']),
  time: new Set(['time', 'Timestamp', 'CronSpan']),
};
/** Policies per organization at most. */
export const MAX_POLICIES = 500;

/** Checks one expression; '' (none) is fine. */
function readExpression(v: Validator, o: Obj, key: string, field: string, kind: keyof typeof KEYWORDS): string | undefined {
  const src = v.string(o, key, field, { max: MAX_SOURCE });
  if (src === undefined || src.trim() === '') return src;
  try {
    const tree = parse(src);
    const unknown = [...freeNames(tree)].filter((n) => !KEYWORDS[kind].has(n));
    if (unknown.length > 0) {
      v.fail(field, `uses ${unknown.map((n) => `'${n}'`).join(', ')}: a ${kind} may use only ${[...KEYWORDS[kind]].join(', ')}`);
    }
    const problems = literalProblems(tree);
    if (problems.length > 0) v.fail(field, problems[0]!);
    // a comparison that letter case or a literal's type makes impossible would leave the policy silently dead
    const dead = kind === 'time' ? [] : literalFormProblems(tree);
    if (dead.length > 0) v.fail(field, dead[0]!);
  } catch (e) {
    if (!(e instanceof PolicySyntaxError)) throw e;
    v.fail(field, `does not parse: ${e.message}`);
  }
  return src;
}

/** Policy names are unique in an organization (400 naming `field`). */
function requireFreeName(taken: ReadonlySet<string>, name: string, field: string): void {
  if (taken.has(name)) {
    throw invalidArgument(`policy name ${name.slice(0, 100)} is taken: policy names are unique in an organization`, [{ field, description: 'must be unique in the organization' }]);
  }
}

interface PolicyParams { policyName: string; effect: PolicyRow['effect']; condition: string; consensus: string; time?: string; notes: string }

function readPolicy(v: Validator, o: Obj, prefix: string): PolicyParams {
  const f = (k: string) => (prefix ? `${prefix}.${k}` : k);
  const policyName = v.string(o, 'policyName', f('policyName'), { required: true, nonEmpty: true, max: MAX_NAME });
  const effect = v.enumOf(o, 'effect', f('effect'), EFFECTS);
  const condition = readExpression(v, o, 'condition', f('condition'), 'condition') ?? '';
  const consensus = readExpression(v, o, 'consensus', f('consensus'), 'consensus') ?? '';
  const time = readExpression(v, o, 'time', f('time'), 'time');
  const notes = v.string(o, 'notes', f('notes'), { max: 4096 }) ?? '';
  return { policyName: policyName!, effect: effect!, condition, consensus, ...(time ? { time } : {}), notes };
}

export function policyRecord(p: PolicyRow): Record<string, unknown> {
  return {
    policyId: p.id, policyName: p.name, effect: p.effect, createdAt: timestamp(p.createdMs), updatedAt: timestamp(p.updatedMs),
    notes: p.notes, consensus: p.consensus, condition: p.condition, time: p.time,
  };
}

async function requirePolicy(tx: Tx, organizationId: string, id: string, field = 'policyId'): Promise<PolicyRow> {
  const p = await tx.policies.get(organizationId, id);
  if (!p) throw notFound(`${field}: policy ${id.slice(0, 100)} not found in this organization`, 'POLICY_NOT_FOUND');
  return p;
}

async function insertPolicies(tx: Tx, organizationId: string, list: PolicyParams[], newId: () => string, nowMs: number): Promise<string[]> {
  const existing = await tx.policies.list(organizationId);
  if (existing.length + list.length > MAX_POLICIES) {
    throw failedPrecondition(`an organization holds at most ${MAX_POLICIES} policies`);
  }
  const names = new Set(existing.map((p) => p.name));
  list.forEach((p, i) => {
    requireFreeName(names, p.policyName, list.length > 1 ? `policies[${i}].policyName` : 'policyName');
    names.add(p.policyName);
  });
  const ids: string[] = [];
  for (const p of list) {
    const id = newId();
    await tx.policies.insert({ id, organizationId, name: p.policyName, effect: p.effect, condition: p.condition, consensus: p.consensus, time: p.time ?? '', notes: p.notes, createdMs: nowMs, updatedMs: nowMs });
    ids.push(id);
  }
  return ids;
}

/** Policy writes of one organization one at a time (across nodes): its count and unique names are checked, then written. */
const policiesLock = (_intent: unknown, organizationId: string) => [{ name: 'policies' as const, key: organizationId }];

const rootRule = (what: string) => (p: Parameters<typeof requireRoot>[0]) => requireRoot(p, what);

export const createPolicy: SubmitOperation<PolicyParams, { policyId: string }> = {
  kind: 'submit',
  path: 'create_policy',
  types: { ACTIVITY_TYPE_CREATE_POLICY_V3: keysFor('ACTIVITY_TYPE_CREATE_POLICY_V3', { resultKey: 'createPolicyResult', specResultKey: 'createPolicyResult' }) },
  validate(params: Obj) {
    const v = new Validator();
    const p = readPolicy(v, params, '');
    v.done();
    return p;
  },
  authorize: rootRule('create policies'),
  locks: policiesLock,
  async execute(ctx, intent) {
    return { policyId: (await insertPolicies(ctx.tx, ctx.organization.id, [intent], ctx.newId, ctx.nowMs))[0]! };
  },
};

export const createPolicies: SubmitOperation<{ policies: PolicyParams[] }, { policyIds: string[] }> = {
  kind: 'submit',
  path: 'create_policies',
  types: { ACTIVITY_TYPE_CREATE_POLICIES: keysFor('ACTIVITY_TYPE_CREATE_POLICIES') },
  validate(params: Obj) {
    const v = new Validator();
    const list = v.array(params, 'policies', 'policies', { required: true, nonEmpty: true, max: MAX_ARRAY }) ?? [];
    const policies: PolicyParams[] = [];
    list.forEach((item, i) => {
      const o = v.object(item, `policies[${i}]`);
      if (o) policies.push(readPolicy(v, o, `policies[${i}]`));
    });
    v.done();
    return { policies };
  },
  authorize: rootRule('create policies'),
  locks: policiesLock,
  async execute(ctx, intent) {
    return { policyIds: await insertPolicies(ctx.tx, ctx.organization.id, intent.policies, ctx.newId, ctx.nowMs) };
  },
};

interface UpdatePolicy {
  policyId: string; policyName?: string; policyEffect?: PolicyRow['effect'];
  policyCondition?: string; policyConsensus?: string; policyNotes?: string; time?: string;
}

export const updatePolicy: SubmitOperation<UpdatePolicy, { policyId: string }> = {
  kind: 'submit',
  path: 'update_policy',
  types: {
    ACTIVITY_TYPE_UPDATE_POLICY_V2: keysFor('ACTIVITY_TYPE_UPDATE_POLICY_V2'),
    ACTIVITY_TYPE_UPDATE_POLICY: keysFor('ACTIVITY_TYPE_UPDATE_POLICY'),
  },
  validate(params: Obj) {
    const v = new Validator();
    const policyId = v.string(params, 'policyId', 'policyId', { required: true, nonEmpty: true, max: 100 });
    const out: UpdatePolicy = { policyId: policyId! };
    const name = v.string(params, 'policyName', 'policyName', { nonEmpty: true, max: MAX_NAME });
    if (name !== undefined) out.policyName = name;
    const effect = v.enumOf(params, 'policyEffect', 'policyEffect', EFFECTS, false);
    if (effect !== undefined) out.policyEffect = effect;
    const condition = readExpression(v, params, 'policyCondition', 'policyCondition', 'condition');
    if (condition !== undefined) out.policyCondition = condition;
    const consensus = readExpression(v, params, 'policyConsensus', 'policyConsensus', 'consensus');
    if (consensus !== undefined) out.policyConsensus = consensus;
    const notes = v.string(params, 'policyNotes', 'policyNotes', { max: 4096 });
    if (notes !== undefined) out.policyNotes = notes;
    const time = readExpression(v, params, 'time', 'time', 'time');
    if (time !== undefined) out.time = time;
    v.done();
    return out;
  },
  authorize: rootRule('update policies'),
  locks: policiesLock,
  async execute(ctx, intent) {
    const p = await requirePolicy(ctx.tx, ctx.organization.id, intent.policyId);
    if (intent.policyName !== undefined && intent.policyName !== p.name) {
      requireFreeName(new Set((await ctx.tx.policies.list(ctx.organization.id)).map((x) => x.name)), intent.policyName, 'policyName');
    }
    await ctx.tx.policies.update({
      ...p,
      name: intent.policyName ?? p.name,
      effect: intent.policyEffect ?? p.effect,
      condition: intent.policyCondition ?? p.condition,
      consensus: intent.policyConsensus ?? p.consensus,
      time: intent.time ?? p.time,
      notes: intent.policyNotes ?? p.notes,
      updatedMs: ctx.nowMs,
    });
    return { policyId: p.id };
  },
};

export const deletePolicy: SubmitOperation<{ policyId: string }, { policyId: string }> = {
  kind: 'submit',
  path: 'delete_policy',
  types: { ACTIVITY_TYPE_DELETE_POLICY: keysFor('ACTIVITY_TYPE_DELETE_POLICY') },
  validate(params: Obj) {
    const v = new Validator();
    const policyId = v.string(params, 'policyId', 'policyId', { required: true, nonEmpty: true, max: 100 });
    v.done();
    return { policyId: policyId! };
  },
  authorize: rootRule('delete policies'),
  async execute(ctx, intent) {
    await requirePolicy(ctx.tx, ctx.organization.id, intent.policyId);
    await ctx.tx.policies.delete(ctx.organization.id, intent.policyId);
    return { policyId: intent.policyId };
  },
};

export const deletePolicies: SubmitOperation<{ policyIds: string[] }, { policyIds: string[] }> = {
  kind: 'submit',
  path: 'delete_policies',
  types: { ACTIVITY_TYPE_DELETE_POLICIES: keysFor('ACTIVITY_TYPE_DELETE_POLICIES') },
  validate(params: Obj) {
    const v = new Validator();
    const policyIds = v.stringArray(params, 'policyIds', 'policyIds', { required: true, nonEmpty: true, max: MAX_ARRAY }) ?? [];
    if (new Set(policyIds).size !== policyIds.length) v.fail('policyIds', 'lists a policy twice');
    v.done();
    return { policyIds };
  },
  authorize: rootRule('delete policies'),
  async execute(ctx, intent) {
    for (const [i, id] of intent.policyIds.entries()) await requirePolicy(ctx.tx, ctx.organization.id, id, `policyIds[${i}]`);
    for (const id of intent.policyIds) await ctx.tx.policies.delete(ctx.organization.id, id);
    return { policyIds: intent.policyIds };
  },
};

export const getPolicy: QueryOperation<{ policyId: string }> = {
  kind: 'query',
  path: 'get_policy',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const policyId = v.string(body, 'policyId', 'policyId', { required: true, nonEmpty: true, max: 100 });
    v.done();
    return { policyId: policyId! };
  },
  async execute(ctx, q) {
    return { policy: policyRecord(await requirePolicy(ctx.tx, ctx.organization.id, q.policyId)) };
  },
};

export const listPolicies: QueryOperation<object> = {
  kind: 'query',
  path: 'list_policies',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: () => ({}),
  async execute(ctx) {
    return { policies: (await ctx.tx.policies.list(ctx.organization.id)).map(policyRecord) };
  },
};

/** get_policy_evaluations: how the policies evaluated each time the activity was decided (at submit, at each vote). */
export const getPolicyEvaluations: QueryOperation<{ activityId: string }> = {
  kind: 'query',
  path: 'get_policy_evaluations',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const activityId = v.string(body, 'activityId', 'activityId', { required: true, nonEmpty: true, max: 100 });
    v.done();
    return { activityId: activityId! };
  },
  async execute(ctx, q) {
    if (!await ctx.tx.activities.get(ctx.organization.id, q.activityId)) throw notFound(`activity ${q.activityId.slice(0, 100)} not found`, 'ACTIVITY_NOT_FOUND');
    return {
      policyEvaluations: (await ctx.tx.policyEvaluations.list(q.activityId)).map((e) => ({
        id: e.id, activityId: e.activityId, organizationId: e.organizationId, voteId: e.voteId,
        policyEvaluations: e.evaluations, createdAt: timestamp(e.createdMs),
      })),
    };
  },
};

function readFingerprint(params: Obj): { fingerprint: string } {
  const v = new Validator();
  const fingerprint = v.string(params, 'fingerprint', 'fingerprint', { required: true, nonEmpty: true, max: 100, pattern: /^sha256:[0-9a-f]{64}$/, patternDesc: 'sha256:<64 lowercase hex digits> (the activity\'s fingerprint)' });
  v.done();
  return { fingerprint: fingerprint! };
}

/** approve_activity / reject_activity: every user of the organization may vote; whether a vote counts is decided in engine.ts castVote. */
function voteOperation(path: string, type: string, vote: NonNullable<SubmitOperation['vote']>): SubmitOperation<{ fingerprint: string }, never> {
  return {
    kind: 'submit',
    path,
    types: { [type]: keysFor(type) },
    validate: readFingerprint,
    authorize() { /* any user of the organization */ },
    execute() { throw new Error('votes are cast by the engine'); },
    vote,
  };
}

export const approveActivity = voteOperation('approve_activity', 'ACTIVITY_TYPE_APPROVE_ACTIVITY', 'VOTE_SELECTION_APPROVED');
export const rejectActivity = voteOperation('reject_activity', 'ACTIVITY_TYPE_REJECT_ACTIVITY', 'VOTE_SELECTION_REJECTED');
