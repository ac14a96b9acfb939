/**
 * The activity engine: envelope checks, idempotency by body fingerprint, and one SQLite
 * transaction that runs the handler and stores the activity (COMPLETED, or FAILED with the
 * reason when the operation fails after acceptance). Refusals before acceptance store nothing.
 */
import { randomUUID } from 'node:crypto';
import { sha256 } from '../crypto/curves.js';
import { bytesToHex } from '../crypto/bytes.js';
import { ApiError, Grpc, failedPrecondition, invalidArgument, notFound, permissionDenied, TurnkeyMessage } from '../errors.js';
import { timestamp } from '../domain/records.js';
import type { Principal } from '../domain/principal.js';
import type { ActivityRow, OrganizationRow, Store, UserRow } from '../storage/types.js';
import type { ExecContext, QueryOperation, SubmitOperation, TypeVersion } from './types.js';
import { authorizeSubmit, castVoteRow, refusal, type Voucher } from './consensus.js';
import type { Decision } from '../policy/decide.js';
import type { StampCheck } from '../crypto/signpool.js';
import type { Obj } from '../domain/validate.js';
import { enqueueActivityEvents } from '../webhooks.js';
import { CREDENTIAL } from '../auth/services.js';

export const STATUS_COMPLETED = 'ACTIVITY_STATUS_COMPLETED';
export const STATUS_FAILED = 'ACTIVITY_STATUS_FAILED';
export const STATUS_CONSENSUS_NEEDED = 'ACTIVITY_STATUS_CONSENSUS_NEEDED';
export const STATUS_REJECTED = 'ACTIVITY_STATUS_REJECTED';
export const QUERY_ACTIVITY_TYPE = 'ACTIVITY_TYPE_UNKNOWN_V1';

/** `sha256:<hex>` of the exact body bytes (SHA-256 in the wasm core: no native object per request). */
export function fingerprintOf(body: Uint8Array): string {
  return `sha256:${bytesToHex(sha256(body))}`;
}

export interface Envelope {
  type: string;
  timestampMs: string;
  organizationId: string;
  parameters: Obj;
}

/** Checks the submit envelope shape and that `type` is a version of the path's operation. */
export function parseEnvelope(op: SubmitOperation, body: Obj): Envelope {
  const v: { field: string; description: string }[] = [];
  const { type, timestampMs, organizationId, parameters } = body;
  if (typeof type !== 'string' || type === '') v.push({ field: 'type', description: 'is required (a string)' });
  if (typeof timestampMs !== 'string' || !/^\d{1,16}$/.test(timestampMs)) {
    v.push({ field: 'timestampMs', description: 'is required: milliseconds since the epoch as a decimal string' });
  }
  if (typeof organizationId !== 'string' || organizationId === '') v.push({ field: 'organizationId', description: 'is required (a non-empty string)' });
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
    v.push({ field: 'parameters', description: 'is required (an object)' });
  }
  if (v.length > 0) throw invalidArgument(`invalid request: ${v[0]!.field} ${v[0]!.description}`, v);
  if (!Object.hasOwn(op.types, type as string)) {
    throw invalidArgument(
      `activity type ${String(type).slice(0, 100)} is not accepted at /public/v1/submit/${op.path}; expected one of ${Object.keys(op.types).join(', ')}`,
      [{ field: 'type', description: `must be one of ${Object.keys(op.types).join(', ')}` }],
    );
  }
  return { type: type as string, timestampMs: timestampMs as string, organizationId: organizationId as string, parameters: parameters as Obj };
}

export function checkTimestamp(timestampMs: string, nowMs: number, windowMs: number, futureMs: number): void {
  const ts = Number(timestampMs);
  if (Math.abs(ts * 1000 - nowMs) <= Math.max(windowMs, futureMs)) {
    throw invalidArgument(`timestampMs ${timestampMs} looks like seconds: it must be milliseconds since the Unix epoch (${nowMs} now)`,
      [{ field: 'timestampMs', description: 'must be milliseconds since the Unix epoch, not seconds' }]);
  }
  if (ts < nowMs - windowMs) {
    throw invalidArgument(`timestampMs is too old: the request must be sent within ${windowMs} ms of its timestampMs`,
      [{ field: 'timestampMs', description: `must be within ${windowMs} ms before the server time` }]);
  }
  if (ts > nowMs + futureMs) {
    throw invalidArgument(`timestampMs is in the future by more than ${futureMs} ms`,
      [{ field: 'timestampMs', description: `must be at most ${futureMs} ms after the server time` }]);
  }
}

export interface SubmitOutcome {
  activity: Record<string, unknown>;
  /** JSON.stringify(activity), as stored: the reply reuses it. */
  activityJson: string;
  reused: boolean;
}

/**
 * Validates, authorizes, executes and stores one submit. The caller runs it inside a transaction
 * of its own that rolls back when this throws (the group commit gives every submit a savepoint):
 * an identical body returns its stored activity; a refusal (validate / authorize, or a NOT_FOUND
 * from the handler: an id the organization does not have) stores nothing; any other ApiError from
 * the handler leaves a FAILED activity; any other error propagates (and the
 * caller's rollback undoes this submit). `pre` is what prepareSubmit did before the transaction.
 */
export function submitInTransaction(
  store: Store,
  op: SubmitOperation,
  env: Envelope,
  principal: Principal,
  organization: OrganizationRow,
  fingerprint: string,
  nowMs: number,
  pre?: Prepared,
  voucher?: Voucher,
): SubmitOutcome {
  if (principal.access !== 'member' && op.parentMaySubmit !== true) {
    throw permissionDenied('a parent organization may only read its sub-organizations', 'ORGANIZATION_MISMATCH');
  }
  if ('credentialType' in principal.credential && principal.credential.credentialType === CREDENTIAL.recoverUser && op.path !== 'recover_user') {
    throw permissionDenied('a recovery credential may only be used for recover_user');
  }
  const keys = op.types[env.type]!;
  const requestMs = Number(env.timestampMs);
  // Identical body → the activity it already created (checked before re-validating, so a
  // resubmission returns the same activity even if the state has moved on since).
  const existing = store.activities.byFingerprint(fingerprint, requestMs);
  if (existing) {
    const activity = reuse(existing, organization);
    return { activity, activityJson: existing.recordJson ?? JSON.stringify(activity), reused: true };
  }

  // validate is a pure function of the parameters: prepareSubmit's intent is the same one.
  const intent = pre?.intent ?? op.validate(env.parameters, env.type);
  if (op.vote) return castVote(store, op, intent as { fingerprint: string }, principal, organization, nowMs, voucher);
  const decision = authorizeSubmit(store, op, principal, intent, env.type, organization, nowMs);
  if (decision.outcome === 'OUTCOME_DENY_EXPLICIT') throw refusal(decision, op.path);
  const id = uuidV7(nowMs);
  if (decision.outcome !== 'OUTCOME_ALLOW') {
    // Waits for approvals: stored with the requester's vote; approve_activity runs it later.
    if (op.external || principal.access !== 'member') {
      throw refusal(decision, op.path);
    }
    const record = activityRecord({
      id, organizationId: organization.id, status: STATUS_CONSENSUS_NEEDED, type: env.type, timestampMs: env.timestampMs,
      intent: { [keys.intentKey]: intent }, result: {},
    }, fingerprint, nowMs);
    const vote = castVoteRow(store, principal.user, id, organization.id, 'VOTE_SELECTION_APPROVED', fingerprint, voucher, nowMs);
    record.votes = [vote];
    recordEvaluations(store, decision, id, organization.id, vote.id as string, nowMs);
    record.canApprove = true;
    record.canReject = true;
    store.pending.insert({ activityId: id, organizationId: organization.id, fingerprint, path: op.path, userId: principal.user.id, credentialId: principal.credential.id, createdMs: nowMs });
    return storeActivity(store, organization, record, fingerprint, requestMs, nowMs);
  }
  recordEvaluations(store, decision, id, organization.id, '', nowMs);
  const ran = runOperation(store, op, intent, principal, organization, nowMs, id, pre);
  // One rule for every operation: a request naming an id the organization does not have is a 404
  // that stores nothing (the caller's savepoint rolls back the evaluations above).
  if (ran.failure?.code === Grpc.NOT_FOUND) throw ran.failure;
  const record = activityRecord({
    id,
    organizationId: organization.id,
    status: ran.failure ? STATUS_FAILED : STATUS_COMPLETED,
    type: env.type,
    timestampMs: env.timestampMs,
    intent: { [keys.intentKey]: intent },
    result: ran.failure ? {} : resultOf(op, keys, env.type, intent, ran.result),
  }, fingerprint, nowMs);
  if (ran.failure) record.failure = ran.failure.toStatus();
  return storeActivity(store, organization, record, fingerprint, requestMs, nowMs);
}

/** Keeps how the policies evaluated for a decision that consulted them (get_policy_evaluations). */
function recordEvaluations(store: Store, decision: Decision, activityId: string, organizationId: string, voteId: string, nowMs: number): void {
  if (decision.evaluations.length === 0) return;
  store.policyEvaluations.insert({ id: randomUUID(), activityId, organizationId, voteId, evaluations: decision.evaluations, createdMs: nowMs });
}

/** Inserts a new activity and announces it to the webhook addresses of the organization and its parent (outbox, same transaction). */
function storeActivity(
  store: Store, organization: OrganizationRow, record: Record<string, unknown>, fingerprint: string, requestMs: number, nowMs: number,
): SubmitOutcome {
  const recordJson = JSON.stringify(record);
  const id = record.id as string;
  const row: ActivityRow = {
    id, organizationId: organization.id, type: record.type as string, status: record.status as string, fingerprint, requestMs,
    createdMs: nowMs, updatedMs: nowMs, record, recordJson,
  };
  store.activities.insert(row);
  enqueueActivityEvents(store, organization, id, recordJson, nowMs);
  return { activity: record, activityJson: recordJson, reused: false };
}

/** The activity's `result`: the clients' member and the specification's nested form (replies.md). */
function resultOf(op: SubmitOperation, keys: TypeVersion, type: string, intent: unknown, result: unknown): Record<string, unknown> {
  return {
    [keys.resultKey]: result,
    activity: {
      type,
      intent: { [keys.specIntentKey]: op.specIntent ? op.specIntent(intent) : intent },
      result: { [keys.specResultKey]: result },
    },
  };
}

/** Runs the handler in a savepoint of its own; an ApiError it throws is the activity's failure. */
function runOperation(
  store: Store, op: SubmitOperation, intent: unknown, principal: Principal, organization: OrganizationRow, nowMs: number, activityId: string, pre?: Prepared,
): { result?: unknown; failure?: ApiError } {
  const kept: (() => void)[] = [];
  const ctx: ExecContext = { store, principal, organization, nowMs, newId: randomUUID, activityId, keepOnFailure: (fn) => { kept.push(fn); } };
  if (pre?.prepared !== undefined) ctx.prepared = pre.prepared;
  if (pre?.external !== undefined) ctx.external = pre.external;
  try {
    // Nested transaction = savepoint: a failing handler leaves no partial change behind.
    return { result: op.readOnly ? op.execute(ctx, intent) : store.transaction(() => op.execute(ctx, intent)) };
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    for (const fn of kept) fn();
    return { failure: e };
  }
}

/** The operations approve_activity may have to run (set by the registry: engine.ts does not import handlers). */
let lookupSubmit: (path: string) => SubmitOperation | undefined = () => undefined;
export function setSubmitLookup(fn: (path: string) => SubmitOperation | undefined): void { lookupSubmit = fn; }

/**
 * approve_activity / reject_activity: records the caller's vote on the activity awaiting consensus
 * that the fingerprint names, then decides again with every approver. Allowed → the activity runs
 * now, as its requester (COMPLETED or FAILED); an explicit deny → FAILED; a rejection by a root
 * user or by the requester → REJECTED. The reply is that activity as it now stands.
 */
function castVote(
  store: Store, op: SubmitOperation, intent: { fingerprint: string }, principal: Principal, organization: OrganizationRow,
  nowMs: number, voucher?: Voucher,
): SubmitOutcome {
  if (principal.access !== 'member') throw permissionDenied('only users of the organization may vote on its activities');
  const pending = store.pending.byFingerprint(organization.id, intent.fingerprint);
  const row = pending ? store.activities.get(organization.id, pending.activityId) : undefined;
  if (!pending || !row) {
    throw new ApiError(Grpc.NOT_FOUND, TurnkeyMessage.FINGERPRINT_NOT_FOUND, {
      turnkeyErrorCode: 'ACTIVITY_NOT_FOUND', reason: `no activity of this organization is awaiting consensus with fingerprint ${intent.fingerprint.slice(0, 80)}`,
    });
  }
  const votes = store.votes.list(row.id);
  if (votes.some((v) => v.userId === principal.user.id)) {
    throw new ApiError(Grpc.ALREADY_EXISTS, `user ${principal.user.id} has already voted on activity ${row.id}`, { turnkeyErrorCode: 'ALREADY_VOTED' });
  }
  const selection = op.vote!;
  const vote = castVoteRow(store, principal.user, row.id, organization.id, selection, intent.fingerprint, voucher, nowMs);
  const record: Record<string, unknown> = { ...row.record, votes: [...votes.map((v) => v.record), vote], updatedAt: timestamp(nowMs) };
  const settle = (status: string, fields: Record<string, unknown>): void => {
    Object.assign(record, fields, { status, canApprove: false, canReject: false });
    store.pending.delete(row.id);
  };
  const requester = store.users.get(organization.id, pending.userId);
  const target = lookupSubmit(pending.path);
  const type = row.type;
  const keys = target?.types[type];
  const intentOf = (row.record.intent as Record<string, unknown>)[keys?.intentKey ?? ''];
  let credential: Principal['credential'] | undefined;
  if (selection === 'VOTE_SELECTION_REJECTED') {
    if (principal.user.isRoot || principal.user.id === pending.userId) settle(STATUS_REJECTED, {});
  } else if (!requester || !target || !keys || intentOf === undefined) {
    settle(STATUS_FAILED, { failure: failedPrecondition('the user who requested this activity no longer exists').toStatus() });
  } else if (!(credential = store.apiKeys.get(organization.id, pending.credentialId) ?? store.authenticators.get(organization.id, pending.credentialId))
    || credential.userId !== requester.id) {
    // A revoked key does not get its request run later.
    settle(STATUS_FAILED, { failure: failedPrecondition('the API key or passkey that requested this activity has been deleted since').toStatus() });
  } else {
    const asRequester: Principal = { organization, user: requester, credential, access: 'member' };
    // Everyone who approved so far (this vote is an approval), besides the requester.
    const approverIds = [...votes.filter((v) => v.selection === 'VOTE_SELECTION_APPROVED').map((v) => v.userId), principal.user.id];
    const approvers = approverIds.filter((id) => id !== requester.id)
      .map((id) => store.users.get(organization.id, id)).filter((u): u is UserRow => u !== undefined);
    // The credentials of the approvals: this vote's, and earlier API-key votes' (found by the stamp's public key)
    const earlier = votes.filter((v) => v.selection === 'VOTE_SELECTION_APPROVED' && v.userId !== requester.id).flatMap((v) => {
      const pk = v.record.publicKey;
      const k = typeof pk === 'string' && pk !== '' ? store.apiKeys.listByUser(organization.id, v.userId).find((x) => x.publicKey === pk) : undefined;
      return k ? [k] : [];
    });
    let decision;
    try {
      decision = authorizeSubmit(store, target, asRequester, intentOf, type, organization, nowMs, approvers, [...earlier, principal.credential]);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      decision = undefined;
      settle(STATUS_FAILED, { failure: e.toStatus() });
    }
    if (decision) recordEvaluations(store, decision, row.id, organization.id, vote.id as string, nowMs);
    if (decision?.outcome === 'OUTCOME_DENY_EXPLICIT') {
      settle(STATUS_FAILED, { failure: refusal(decision, type).toStatus() });
    } else if (decision?.outcome === 'OUTCOME_ALLOW') {
      const ran = runOperation(store, target, intentOf, asRequester, organization, nowMs, row.id);
      if (ran.failure) settle(STATUS_FAILED, { failure: ran.failure.toStatus() });
      else settle(STATUS_COMPLETED, { result: resultOf(target, keys!, type, intentOf, ran.result) });
    }
  }
  const recordJson = JSON.stringify(record);
  store.activities.update({ ...row, status: record.status as string, updatedMs: nowMs, record, recordJson });
  if (record.status !== STATUS_CONSENSUS_NEEDED) enqueueActivityEvents(store, organization, row.id, recordJson, nowMs);
  return { activity: record, activityJson: recordJson, reused: false };
}

/** What prepareSubmit hands to the transaction: the validated intent, prepare()'s and external()'s results. */
export interface Prepared { intent: unknown; prepared?: unknown; external?: unknown }

/**
 * The part of a submit that can run before its transaction (SubmitOperation.prepare): validate,
 * authorize against the state as it is now, then the operation's prepare (e.g. signing on a
 * worker thread, which may also check the request's stamp: stampCheck). Never throws: on any
 * refusal or failure it returns what it has (or nothing), and the transaction repeats every
 * check against the state it sees and answers as it would without this.
 */
export async function prepareSubmit(
  store: Store,
  op: SubmitOperation,
  env: Envelope,
  principal: Principal,
  organization: OrganizationRow,
  nowMs: number,
  stampCheck?: StampCheck,
): Promise<Prepared | undefined> {
  let intent: unknown;
  try {
    intent = op.validate(env.parameters, env.type);
    if (principal.access !== 'member' || !op.prepare) return { intent };
    if (authorizeSubmit(store, op, principal, intent, env.type, organization, nowMs).outcome !== 'OUTCOME_ALLOW') return { intent };
    const ctx: ExecContext = { store, principal, organization, nowMs, newId: randomUUID };
    if (stampCheck) ctx.stampCheck = stampCheck;
    const work = op.prepare(ctx, intent);
    return work ? { intent, prepared: await work } : { intent };
  } catch {
    return intent === undefined ? undefined : { intent };
  }
}

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Activity ids are
 * time-ordered so that storing one touches the right edge of the id index instead of a random page.
 */
export function uuidV7(ms: number): string {
  // randomUUID draws from Node's buffered entropy (randomBytes(16) per call cost a syscall):
  // keep its random part and its variant bits, put the time and version 7 in front.
  const t = (Math.max(0, Math.floor(ms)) % 2 ** 48).toString(16).padStart(12, '0');
  return `${t.slice(0, 8)}-${t.slice(8)}-7${randomUUID().slice(15)}`;
}

// ---- group commit ---------------------------------------------------------------------------

interface Job {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit. better-sqlite3 is synchronous, so every submit used to pay its own COMMIT (and,
 * with synchronous=FULL, its own fsync of the WAL). Submits queued during one turn of the event
 * loop are flushed together on setImmediate: one BEGIN IMMEDIATE … COMMIT, each submit's work
 * inside its own SAVEPOINT (a submit that throws rolls back only its savepoint), then the
 * promises settle, so no reply leaves before the COMMIT that made its activity durable has
 * returned. Under no load a batch holds one submit and nothing waits longer than before; under
 * load the batch grows with the number of requests that arrived while the previous commit ran.
 *
 * If anything other than an ApiError escapes a submit (a storage failure may have rolled back
 * the whole transaction) or COMMIT itself fails, the batch is undone and every submit of it is
 * run again in a transaction of its own, so one bad submit cannot take the others with it.
 */
export class CommitQueue {
  #pending: Job[] = [];
  #scheduled = false;
  #busyRetries = 0;
  readonly #flush = () => this.flush();

  /** `budgetMs`: how long one group may run jobs before the rest wait for the next (GROUP_BUDGET_MS). */
  constructor(private readonly store: Store, private readonly budgetMs = GROUP_BUDGET_MS) {}

  /** Runs `work` inside the next group transaction; settles after that transaction's COMMIT. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  /** Commits everything queued so far (normally called by the queue itself). */
  flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    const { store } = this;
    // Jobs run until the budget (GROUP_BUDGET_MS) has passed (at least one); the rest wait for the next group,
    // so a few heavy submits (e.g. 100-payload signing) do not hold back every reply behind them.
    const group = (): Settled[] => {
      const t0 = performance.now();
      const out: Settled[] = [];
      for (const job of batch) {
        if (out.length > 0 && performance.now() - t0 >= this.budgetMs) break;
        try {
          out.push({ ok: true, value: store.transaction(job.work) });
        } catch (error) {
          if (error instanceof ApiError) out.push({ ok: false, error });
          else throw new BatchAborted(error);
        }
      }
      return out;
    };
    let settled: Settled[];
    try {
      const begun = this.#begin(group);
      if (begun === BUSY) {
        // Another process holds SQLite's write lock: keep the group (and whatever joins it) and
        // try again shortly instead of sleeping in SQLite's busy handler with the event loop stopped.
        this.#pending = batch.concat(this.#pending);
        this.#scheduled = true;
        setTimeout(this.#flush, 1);
        return;
      }
      settled = begun;
      if (settled.length < batch.length) {
        this.#pending = batch.splice(settled.length).concat(this.#pending);
        if (!this.#scheduled) { this.#scheduled = true; setImmediate(this.#flush); }
      }
    } catch (e) {
      if (batch.length === 1) {
        settled = [{ ok: false, error: e instanceof BatchAborted ? e.inner : e }];
      } else {
        settled = batch.map((job): Settled => {
          try { return { ok: true, value: store.transaction(job.work) }; } catch (error) { return { ok: false, error }; }
        });
      }
    }
    // Replies wait until the commit is on disk (stores that sync after commit, see Store.durable).
    const durable = store.durable?.();
    if (durable) durable.then(() => settle(batch, settled), (e: unknown) => settle(batch, settled.map((s) => (s.ok ? { ok: false, error: e } : s))));
    else settle(batch, settled);
  }

  /**
   * BEGIN IMMEDIATE … COMMIT around `group`. When the store can start a transaction without
   * waiting (SQLite: the write lock is free now) that is tried first, up to MAX_BUSY_RETRIES
   * times in a row; then the store's ordinary transaction (which waits on the busy timeout)
   * guarantees progress.
   */
  #begin(group: () => Settled[]): Settled[] | typeof BUSY {
    const store = this.store as Store & Partial<NoWaitTransactions>;
    if (store.transactionNoWait && this.#busyRetries < MAX_BUSY_RETRIES) {
      const r = (store as Store & NoWaitTransactions).transactionNoWait(group);
      if (r.busy) { this.#busyRetries++; return BUSY; }
      this.#busyRetries = 0;
      return r.value;
    }
    this.#busyRetries = 0;
    return this.store.transaction(group);
  }
}

/** Optional capability of a Store (SQLite): a transaction that starts only if it need not wait. */
export interface NoWaitTransactions {
  transactionNoWait<T>(fn: () => T): { busy: true } | { busy: false; value: T };
}

const BUSY = Symbol('busy');
/** Work per group before the remaining submits go to the next one (ms). */
const GROUP_BUDGET_MS = 5;
const MAX_BUSY_RETRIES = 50;

function settle(batch: Job[], settled: Settled[]): void {
  for (let i = 0; i < settled.length; i++) {
    const s = settled[i]!;
    if (s.ok) batch[i]!.resolve(s.value);
    else batch[i]!.reject(s.error);
  }
}

class BatchAborted extends Error {
  constructor(readonly inner: unknown) { super('group commit aborted'); }
}

const QUEUES = new WeakMap<Store, CommitQueue>();

/** The group-commit queue of a store (one per store). */
export function commitQueue(store: Store): CommitQueue {
  let q = QUEUES.get(store);
  if (!q) { q = new CommitQueue(store); QUEUES.set(store, q); }
  return q;
}

function reuse(existing: ActivityRow, organization: OrganizationRow): Record<string, unknown> {
  if (existing.organizationId !== organization.id) {
    // Same bytes can only name one organization; a mismatch means the body named another.
    throw permissionDenied('this request was already submitted to another organization', 'ORGANIZATION_MISMATCH');
  }
  return existing.record;
}

/** Runs a validated query and adds the specification's `activity` wrapper (replies.md). */
export function runQuery(
  store: Store,
  op: QueryOperation,
  query: unknown,
  principal: Principal,
  organization: OrganizationRow,
  fingerprint: string,
  nowMs: number,
  external?: unknown,
): Record<string, unknown> {
  const ctx: ExecContext = { store, principal, organization, nowMs, newId: randomUUID, external };
  const reply = op.execute(ctx, query);
  if (op.specWrapper === 'none') return reply;
  return {
    ...reply,
    activity: activityRecord({
      id: randomUUID(),
      organizationId: organization.id,
      status: STATUS_COMPLETED,
      type: QUERY_ACTIVITY_TYPE,
      timestampMs: String(nowMs),
      intent: {},
      result: reply,
    }, fingerprint, nowMs),
  };
}

interface ActivityHead {
  id: string;
  organizationId: string;
  status: string;
  type: string;
  timestampMs: string;
  intent: unknown;
  result: unknown;
}

/** The stored/replied activity object; fields listed one by one so the key order is fixed. */
function activityRecord(h: ActivityHead, fingerprint: string, nowMs: number): Record<string, unknown> {
  return {
    id: h.id,
    organizationId: h.organizationId,
    status: h.status,
    type: h.type,
    timestampMs: h.timestampMs,
    intent: h.intent,
    result: h.result,
    votes: [],
    fingerprint,
    canApprove: false,
    canReject: false,
    createdAt: timestamp(nowMs),
    updatedAt: timestamp(nowMs),
  };
}
