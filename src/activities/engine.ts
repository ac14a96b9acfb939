/**
 * The activity engine: envelope checks, idempotency by body fingerprint, and what runs inside a
 * submit's transaction: the policy decision, the handler, and storing the activity (COMPLETED, or
 * FAILED with the reason when the operation fails after acceptance). Refusals before acceptance
 * store nothing. The pipeline (pipeline.ts) opens the transactions.
 */
import { randomUUID } from 'node:crypto';
import { sha256 } from '../crypto/curves.js';
import { bytesToHex } from '../encoding/bytes.js';
import { ApiError, Grpc, failedPrecondition, invalidArgument, notFound, permissionDenied, TurnkeyMessage } from '../errors.js';
import { timestamp } from '../domain/records.js';
import type { Principal } from '../domain/principal.js';
import type { ActivityRow, ApiKeyRow, Db, OrganizationRow, Tx, UserRow } from '../storage/types.js';
import type { ExecContext, PrepareContext, QueryOperation, Services, SubmitOperation, TypeVersion } from './types.js';
import { isExpired, organizationIdOf, type Resolution } from '../domain/credentials.js';
import { authorizeSubmit, castVoteRow, refusal, type Voucher } from './consensus.js';
import type { Decision } from '../policy/decide.js';
import type { StampCheck } from '../crypto/signpool.js';
import type { Obj } from '../domain/validate.js';
import { activityEventAddresses, enqueueActivityEvents } from '../webhooks.js';
import { CREDENTIAL } from '../auth/services.js';
import { appendActivity, canonicalRecord } from '../domain/activityLog.js';

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
  return { type: type as string, timestampMs: timestampMs as string, organizationId: organizationIdOf(organizationId as string), parameters: parameters as Obj };
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
/** What one submit's transaction works on. */
export interface SubmitInput {
  services: Services;
  /** approve_activity runs the activity it approves with that activity's operation */
  lookupSubmit: (path: string) => SubmitOperation | undefined;
  op: SubmitOperation;
  env: Envelope;
  principal: Principal;
  organization: OrganizationRow;
  fingerprint: string;
  nowMs: number;
  pre?: Prepared | undefined;
  voucher?: Voucher | undefined;
  /** requestLookup(tx, fingerprint, requestMs), started by the caller alongside its own reads */
  lookup?: Promise<ActivityRow | undefined>;
  /** startStore(…), for an operation whose execute changes nothing */
  early?: EarlyStore | undefined;
}

/** What storeActivity reads, asked for with the transaction's first message (startStore). */
export interface EarlyStore { organizationId: string; parentId: string | null; urls: Promise<Set<string>> }

/**
 * For an operation whose execute changes nothing in the store (op.readOnly): the reads storing
 * its activity makes — the webhook addresses of the organization and its parent, and the log
 * head (on PostgreSQL its row lock, which this transaction would take anyway) — started with the
 * caller's first reads, so they share its round trip. Nothing the operation does can change what
 * they read. Unused (a resubmitted body, a refusal) they cost that one statement each.
 */
export function startStore(tx: Tx, organizationId: string, parentId: string | null): EarlyStore {
  const head = tx.log.takeHead(organizationId);
  head.catch(() => undefined);
  const urls = activityEventAddresses(tx, { id: organizationId, parentId });
  urls.catch(() => undefined);
  return { organizationId, parentId, urls };
}

/**
 * Takes the request's lock, then looks for the activity an identical body created. Both are
 * asked for at once (a statement issued after tx.lock runs once the lock is held, even before
 * lock's promise settles), so a caller can start this with its own first read: one round trip
 * for all on PostgreSQL. Two writers with one body (on other nodes) are taken one after the
 * other: the second finds what the first stored.
 */
export function requestLookup(tx: Tx, fingerprint: string, requestMs: number): Promise<ActivityRow | undefined> {
  const locked = tx.lock('request', fingerprint);
  const found = tx.activities.byFingerprint(fingerprint, requestMs);
  const both = Promise.all([locked, found]).then(([, row]) => row);
  // the caller may throw before it awaits this (a refused credential): not an unhandled rejection
  both.catch(() => undefined);
  return both;
}

export async function submitInTransaction(tx: Tx, input: SubmitInput): Promise<SubmitOutcome> {
  const { services, op, env, principal, organization, fingerprint, nowMs, pre, voucher } = input;
  if (principal.access !== 'member' && op.parentMaySubmit !== true) {
    throw permissionDenied('a parent organization may only read its sub-organizations', 'ORGANIZATION_MISMATCH');
  }
  if ('credentialType' in principal.credential && principal.credential.credentialType === CREDENTIAL.recoverUser && op.path !== 'recover_user') {
    throw permissionDenied('a recovery credential may only be used for recover_user');
  }
  const keys = op.types[env.type]!;
  const requestMs = Number(env.timestampMs);
  // Identical body → the activity it already created (checked before re-validating, so a
  // resubmission returns the same activity even if the state has moved on since). Writes of
  // other bodies do not wait for each other.
  const existing = await (input.lookup ?? requestLookup(tx, fingerprint, requestMs));
  if (existing) {
    const activity = reuse(existing, organization);
    return { activity, activityJson: existing.recordJson ?? JSON.stringify(activity), reused: true };
  }

  // validate is a pure function of the parameters: prepareSubmit's intent is the same one.
  const intent = pre?.intent ?? op.validate(env.parameters, env.type);
  if (op.vote) return await castVote(tx, input, intent as { fingerprint: string });
  const decision = await authorizeSubmit(tx, services, op, principal, intent, env.type, organization, nowMs, { external: pre?.external });
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
    const vote = await castVoteRow(tx, principal.user, id, organization.id, 'VOTE_SELECTION_APPROVED', fingerprint, voucher, nowMs);
    record.votes = [vote];
    await recordEvaluations(tx, decision, id, organization.id, vote.id as string, nowMs);
    record.canApprove = true;
    record.canReject = true;
    await tx.pending.insert({ activityId: id, organizationId: organization.id, fingerprint, path: op.path, userId: principal.user.id, credentialId: principal.credential.id, createdMs: nowMs });
    return await storeActivity(tx, services, organization, record, fingerprint, requestMs, nowMs);
  }
  await recordEvaluations(tx, decision, id, organization.id, '', nowMs);
  const ran = await runOperation(tx, services, op, intent, principal, organization, nowMs, id, pre);
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
  // the early reads are the organization's, and were made for it
  const early = input.early?.organizationId === organization.id && input.early.parentId === organization.parentId ? input.early : undefined;
  return await storeActivity(tx, services, organization, record, fingerprint, requestMs, nowMs, early?.urls);
}

/**
 * Keeps how the policies evaluated for a decision that consulted them (get_policy_evaluations):
 * an activity with several targets keeps one entry per target, in the order of its targets.
 */
async function recordEvaluations(tx: Tx, decision: Decision, activityId: string, organizationId: string, voteId: string, nowMs: number): Promise<void> {
  if (decision.evaluations.length === 0) return;
  for (const evaluations of decision.targetEvaluations ?? [decision.evaluations]) {
    await tx.policyEvaluations.insert({ id: randomUUID(), activityId, organizationId, voteId, evaluations, createdMs: nowMs });
  }
}

/** Inserts a new activity and announces it to the webhook addresses of the organization and its parent (outbox, same transaction). */
async function storeActivity(
  tx: Tx, services: Services, organization: OrganizationRow, record: Record<string, unknown>, fingerprint: string, requestMs: number, nowMs: number,
  earlyUrls?: Promise<Set<string>>,
): Promise<SubmitOutcome> {
  // the record's canonical text is its JSON everywhere: row, reply, webhooks, and the log's digest of it
  const canonical = canonicalRecord(record);
  const recordJson = canonical.text;
  const id = record.id as string;
  const row: ActivityRow = {
    id, organizationId: organization.id, type: record.type as string, status: record.status as string, fingerprint, requestMs,
    createdMs: nowMs, updatedMs: nowMs, record, recordJson,
  };
  // In this transaction: if the log cannot take the entry, the activity is not stored either. Who
  // hears of it is read at the same time (one round trip on PostgreSQL). The entry comes first: the
  // activity's row keeps its index (log.indexesOf).
  const [urls, logIndex] = await Promise.all([earlyUrls ?? activityEventAddresses(tx, organization), appendActivity(tx, record, nowMs, nowMs, canonical, true)]);
  await tx.activities.insert({ ...row, logIndexes: [logIndex] });
  await enqueueActivityEvents(tx, services.kick.deliveries, urls, organization, id, recordJson, nowMs, logIndex);
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
async function runOperation(
  tx: Tx, services: Services, op: SubmitOperation, intent: unknown, principal: Principal, organization: OrganizationRow, nowMs: number, activityId: string, pre?: Prepared,
): Promise<{ result?: unknown; failure?: ApiError }> {
  const kept: (() => Promise<void>)[] = [];
  const ctx: ExecContext = { tx, services, principal, organization, nowMs, newId: randomUUID, activityId, keepOnFailure: (fn) => { kept.push(fn); } };
  if (pre?.prepared !== undefined) ctx.prepared = pre.prepared;
  if (pre?.derived !== undefined) ctx.derived = pre.derived;
  if (pre?.external !== undefined) ctx.external = pre.external;
  for (const { name, key } of op.locks?.(intent, organization.id) ?? []) await tx.lock(name, key);
  try {
    // A savepoint: a failing handler leaves no partial change behind.
    return { result: op.readOnly ? await op.execute(ctx, intent) : await tx.savepoint(async () => await op.execute(ctx, intent)) };
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    for (const fn of kept) await fn();
    return { failure: e };
  }
}

/**
 * approve_activity / reject_activity: records the caller's vote on the activity awaiting consensus
 * that the fingerprint names, then decides again with every approver. Allowed → the activity runs
 * now, as its requester (COMPLETED or FAILED); an explicit deny → FAILED; a rejection by a root
 * user or by the requester → REJECTED. The reply is that activity as it now stands. The vote's own
 * body sent again (its fingerprint, input.fingerprint, kept in vote_requests) gets the same: the
 * activity as it now stands, with no second vote.
 */
async function castVote(tx: Tx, input: SubmitInput, intent: { fingerprint: string }): Promise<SubmitOutcome> {
  const { services, op, principal, organization, nowMs, voucher } = input;
  if (principal.access !== 'member') throw permissionDenied('only users of the organization may vote on its activities');
  // Looked for under the request's lock (requestLookup), as an activity's body is.
  const sent = await tx.votes.request(input.fingerprint);
  const voted = sent ? await tx.activities.get(sent.organizationId, sent.activityId) : undefined;
  if (voted) {
    const activity = reuse(voted, organization);
    return { activity, activityJson: voted.recordJson ?? JSON.stringify(activity), reused: true };
  }
  // Votes on one activity are counted one at a time (two approvals on two nodes run it once).
  await tx.lock('approval', intent.fingerprint);
  const pending = await tx.pending.byFingerprint(organization.id, intent.fingerprint);
  const row = pending ? await tx.activities.get(organization.id, pending.activityId) : undefined;
  if (!pending || !row) {
    throw new ApiError(Grpc.NOT_FOUND, TurnkeyMessage.FINGERPRINT_NOT_FOUND, {
      turnkeyErrorCode: 'ACTIVITY_NOT_FOUND', reason: `no activity of this organization is awaiting consensus with fingerprint ${intent.fingerprint.slice(0, 80)}`,
    });
  }
  const votes = await tx.votes.list(row.id);
  const selection = op.vote!;
  // The requester's approval was cast with its request: its rejection withdraws it (settles the
  // activity REJECTED below), recorded in the activity's votes; the votes table keeps one row per user.
  const withdrawal = selection === 'VOTE_SELECTION_REJECTED' && principal.user.id === pending.userId;
  if (!withdrawal && votes.some((v) => v.userId === principal.user.id)) {
    throw new ApiError(Grpc.ALREADY_EXISTS, `user ${principal.user.id} has already voted on activity ${row.id}`, { turnkeyErrorCode: 'ALREADY_VOTED' });
  }
  const vote = await castVoteRow(tx, principal.user, row.id, organization.id, selection, intent.fingerprint, voucher, nowMs, !withdrawal);
  const record: Record<string, unknown> = { ...row.record, votes: [...votes.map((v) => v.record), vote], updatedAt: timestamp(nowMs) };
  const settle = async (status: string, fields: Record<string, unknown>): Promise<void> => {
    Object.assign(record, fields, { status, canApprove: false, canReject: false });
    await tx.pending.delete(row.id);
  };
  const requester = await tx.users.get(organization.id, pending.userId);
  const target = input.lookupSubmit(pending.path);
  const type = row.type;
  const keys = target?.types[type];
  const intentOf = (row.record.intent as Record<string, unknown>)[keys?.intentKey ?? ''];
  let credential: Principal['credential'] | undefined;
  if (selection === 'VOTE_SELECTION_REJECTED') {
    if (principal.user.isRoot || principal.user.id === pending.userId) await settle(STATUS_REJECTED, {});
  } else if (!requester || !target || !keys || intentOf === undefined) {
    await settle(STATUS_FAILED, { failure: failedPrecondition('the user who requested this activity no longer exists').toStatus() });
  } else if (!(credential = await tx.apiKeys.get(organization.id, pending.credentialId) ?? await tx.authenticators.get(organization.id, pending.credentialId))
    || credential.userId !== requester.id) {
    // A revoked key does not get its request run later.
    await settle(STATUS_FAILED, { failure: failedPrecondition('the API key or passkey that requested this activity has been deleted since').toStatus() });
  } else if (isExpired(credential, nowMs)) {
    // Nor does one that has expired meanwhile (a session key): it could not make the request now.
    await settle(STATUS_FAILED, { failure: failedPrecondition('the API key that requested this activity has expired since').toStatus() });
  } else {
    const asRequester: Principal = { organization, user: requester, credential, access: 'member' };
    // Everyone who approved so far (this vote is an approval), besides the requester.
    const approverIds = [...votes.filter((v) => v.selection === 'VOTE_SELECTION_APPROVED').map((v) => v.userId), principal.user.id];
    const approvers: UserRow[] = [];
    for (const id of approverIds) {
      const u = id === requester.id ? undefined : await tx.users.get(organization.id, id);
      if (u) approvers.push(u);
    }
    // The credentials of the approvals: this vote's, and earlier API-key votes' (found by the stamp's public key)
    const earlier: ApiKeyRow[] = [];
    for (const v of votes) {
      const pk = v.record.publicKey;
      if (v.selection !== 'VOTE_SELECTION_APPROVED' || v.userId === requester.id || typeof pk !== 'string' || pk === '') continue;
      const k = (await tx.apiKeys.listByUser(organization.id, v.userId)).find((x) => x.publicKey === pk);
      if (k) earlier.push(k);
    }
    let decision;
    try {
      decision = await authorizeSubmit(tx, services, target, asRequester, intentOf, type, organization, nowMs, { voters: approvers, voterCredentials: [...earlier, principal.credential] });
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      decision = undefined;
      await settle(STATUS_FAILED, { failure: e.toStatus() });
    }
    if (decision) await recordEvaluations(tx, decision, row.id, organization.id, vote.id as string, nowMs);
    if (decision?.outcome === 'OUTCOME_DENY_EXPLICIT') {
      await settle(STATUS_FAILED, { failure: refusal(decision, type).toStatus() });
    } else if (decision?.outcome === 'OUTCOME_ALLOW') {
      const ran = await runOperation(tx, services, target, intentOf, asRequester, organization, nowMs, row.id);
      if (ran.failure) await settle(STATUS_FAILED, { failure: ran.failure.toStatus() });
      else await settle(STATUS_COMPLETED, { result: resultOf(target, keys!, type, intentOf, ran.result) });
    }
  }
  const canonical = canonicalRecord(record);
  const recordJson = canonical.text;
  // every vote and status change is an entry of the log, in this transaction (its index kept in the activity's row)
  const [urls, logIndex] = await Promise.all([
    record.status !== STATUS_CONSENSUS_NEEDED ? activityEventAddresses(tx, organization) : new Set<string>(),
    appendActivity(tx, record, row.createdMs, nowMs, canonical),
  ]);
  await tx.activities.update({ ...row, status: record.status as string, updatedMs: nowMs, record, recordJson }, logIndex);
  await tx.votes.insertRequest({ fingerprint: input.fingerprint, organizationId: organization.id, activityId: row.id, createdMs: nowMs });
  await enqueueActivityEvents(tx, services.kick.deliveries, urls, organization, row.id, recordJson, nowMs, logIndex);
  return { activity: record, activityJson: recordJson, reused: false };
}

/** What runs before the transaction hands to it: the validated intent, prepare()'s, derive()'s and external()'s results. */
export interface Prepared { intent: unknown; prepared?: unknown; derived?: unknown; external?: unknown }

/**
 * Work a submit can do before its transaction (SubmitOperation.prepare, .derive): validate and
 * authorize against a read of the state as it is now, then `work` outside any transaction.
 * Never throws: on any refusal or failure it returns what it has (undefined when the caller
 * could not be resolved or the request does not validate), and the transaction repeats every
 * check against the state it sees and answers as it would without this.
 */
export async function prepareSubmit(
  db: Db,
  services: Services,
  op: SubmitOperation,
  env: Envelope,
  nowMs: number,
  resolve: (tx: Tx) => Promise<Resolution | undefined>,
  work: (ctx: PrepareContext, intent: unknown) => unknown,
): Promise<{ intent: unknown; value?: unknown } | undefined> {
  let intent: unknown;
  try {
    // a check the write repeats: no common snapshot needed
    const allowed = await db.peek(async (tx) => {
      const who = await resolve(tx);
      if (!who) return undefined;
      intent = op.validate(env.parameters, env.type);
      if (who.principal.access !== 'member') return undefined;
      const decision = await authorizeSubmit(tx, services, op, who.principal, intent, env.type, who.organization, nowMs);
      return decision.outcome === 'OUTCOME_ALLOW' ? who : undefined;
    });
    if (intent === undefined) return undefined;
    if (!allowed) return { intent };
    const value = await work({ services, principal: allowed.principal, organization: allowed.organization, nowMs, newId: randomUUID }, intent);
    return value === undefined ? { intent } : { intent, value };
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

function reuse(existing: ActivityRow, organization: OrganizationRow): Record<string, unknown> {
  if (existing.organizationId !== organization.id) {
    // Same bytes can only name one organization; a mismatch means the body named another.
    throw permissionDenied('this request was already submitted to another organization', 'ORGANIZATION_MISMATCH');
  }
  return existing.record;
}

/** Runs a validated query and adds the specification's `activity` wrapper (replies.md). */
export async function runQuery(
  tx: Tx,
  services: Services,
  op: QueryOperation,
  query: unknown,
  principal: Principal,
  organization: OrganizationRow,
  fingerprint: string,
  nowMs: number,
  external?: unknown,
): Promise<Record<string, unknown>> {
  const ctx: ExecContext = { tx, services, principal, organization, nowMs, newId: randomUUID, external };
  const reply = await op.execute(ctx, query);
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
