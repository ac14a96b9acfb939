/**
 * The request pipeline of the API, from a received body to the reply object, over the storage's
 * unit of work (storage/types.ts Db). src/http/ does routing, body limits, headers and error
 * mapping; everything between lives here:
 *
 *   query:  stamp → principal → validate → external (outside any transaction) → db.read(execute)
 *   submit: stamp → envelope → [prepare: authorize against a read, then work outside the
 *           transaction, e.g. signing on a thread] → external → db.write(principal again,
 *           rate limit, idempotency, policy decision, execute, store) → durable → reply
 *
 * Nothing here knows which engine serves the Db.
 */
import { invalidArgument, TurnkeyMessage, unauthenticated } from '../errors.js';
import type { ApiKeyCurve, ApiKeyRow, AuthenticatorRow, Db, StampContext, Tx } from '../storage/types.js';
import { allowedOrigins, verifyWebauthnStamp, type WebauthnStamp } from '../domain/authenticators.js';
import { verifyStamp, type Stamp } from '../crypto/stamp.js';
import type { StampCheck } from '../crypto/signpool.js';
import type { StampVerifier } from '../crypto/verifypool.js';
import { organizationIdOf, resolvePrincipal, type Resolution } from '../domain/credentials.js';
import type { Obj } from '../domain/validate.js';
import type { StampFailure } from '../metrics.js';
import type { Principal } from '../domain/principal.js';
import { admitOutsideWork, type Voucher } from './consensus.js';
import { checkTimestamp, fingerprintOf, parseEnvelope, prepareSubmit, requestLookup, runQuery, startStore, submitInTransaction, type Envelope, type Prepared, type SubmitOutcome } from './engine.js';
import type { QueryOperation, Services, SubmitOperation } from './types.js';

/** What the pipeline tells the caller about a request as it goes (the log line, the metrics). */
export interface Trace {
  organizationId?: string;
  activityId?: string;
  /** why a stamp was refused */
  stampFailure?: StampFailure;
}

/** The stamp headers as http/ parsed them (their format), before anything is looked up. */
export type StampHeader =
  | { kind: 'key'; stamp: Stamp; curve: ApiKeyCurve }
  | { kind: 'passkey'; webauthn: WebauthnStamp }
  | { kind: 'none' };

export interface Request {
  raw: Buffer;
  /** the body as JSON (an object) */
  body: () => Obj;
  header: StampHeader;
  clientAddress: string | undefined;
  /** other API requests are in progress: work worth a thread hop goes to a thread */
  concurrent: boolean;
  trace: Trace;
}

export interface PipelineDeps {
  db: Db;
  services: Services;
  /** approve_activity runs the activity it approves with that activity's operation */
  lookupSubmit: (path: string) => SubmitOperation | undefined;
  timestampWindowMs: number;
  timestampFutureMs: number;
  /** Stamp checks on threads (P-256); default: every check on the calling thread. */
  verifier?: StampVerifier;
  /** Takes the request's tokens (per credential, per organization) or throws a 429 (http's rate limiter). */
  admit?: (credentialId: string, organizationId: string, nowMs: number) => void;
}

/** `context`: the stamp's rows for the organization the body names, read with the keys (one statement) */
interface KeyCredential { kind: 'key'; stamp: Stamp; keys: ApiKeyRow[]; curve: ApiKeyCurve; context: StampContext }
interface PasskeyCredential { kind: 'passkey'; webauthn: WebauthnStamp; keys: AuthenticatorRow[] }
type Credential = KeyCredential | PasskeyCredential;

/**
 * What a submit's stamp resolved to, kept for a few seconds per (public key, organization): the
 * submit's transaction reads it again and decides on that (a key deleted or expired since is
 * refused there, with the same 401), so a stale entry costs at most the work done before the
 * transaction. Queries never use it: their read decides on the context they were given.
 */
class StampContexts {
  static readonly TTL_MS = 10_000;
  static readonly MAX = 10_000;
  readonly #entries = new Map<string, { context: StampContext; atMs: number }>();
  get(publicKey: string, organizationId: string, nowMs: number): StampContext | undefined {
    const k = `${publicKey}\u0000${organizationId}`;
    const e = this.#entries.get(k);
    if (e === undefined) return undefined;
    if (nowMs - e.atMs < StampContexts.TTL_MS) return e.context;
    this.#entries.delete(k);
    return undefined;
  }
  set(context: StampContext, nowMs: number): void {
    const k = `${context.publicKey}\u0000${context.organizationId}`;
    this.#entries.delete(k);
    // the oldest entry goes first (a Map iterates in insertion order)
    if (this.#entries.size >= StampContexts.MAX) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(k, { context, atMs: nowMs });
  }
  forget(publicKey: string, organizationId: string): void { this.#entries.delete(`${publicKey}\u0000${organizationId}`); }
}

export class Pipeline {
  readonly #contexts = new StampContexts();
  constructor(private readonly deps: PipelineDeps) {}

  /** Whether the store answers (GET /readyz): http asks the pipeline, never the store. */
  ready(): Promise<boolean> { return this.deps.db.isReady(); }

  /** A query: its reply object (with the specification's wrapper, replies.md). */
  async query(op: QueryOperation, r: Request, nowMs: number): Promise<Record<string, unknown>> {
    const { db, services } = this.deps;
    const cred = await this.#credential(r);
    await this.#verify(r, cred);
    const body = r.body();
    const orgId = requireOrganizationId(body);
    r.trace.organizationId = orgId;
    const scope = { parentMayRead: op.parentMayRead, resolvesFromParent: op.resolvesFromParent === true, clientAddress: r.clientAddress };
    const fingerprint = fingerprintOf(r.raw);
    let reply: Record<string, unknown>;
    if (!op.external) {
      // One read: the caller, then the reply.
      const admit = this.#admitter(orgId, nowMs);
      reply = await db.read(async (tx) => {
        const { principal, organization } = await resolvePrincipal(tx, cred.keys, orgId, scope, nowMs, contextOf(cred));
        admit(principal);
        return runQuery(tx, services, op, op.validate(body), principal, organization, fingerprint, nowMs);
      });
    } else {
      const { principal, organization } = await db.read((tx) => resolvePrincipal(tx, cred.keys, orgId, scope, nowMs, contextOf(cred)));
      this.#admitter(orgId, nowMs)(principal);
      const query = op.validate(body);
      // A query that asks outside the store (a network's node) does so once the caller is known.
      const external = await op.external(query, services, organization.id, (fn) => db.read(fn));
      reply = await db.read((tx) => runQuery(tx, services, op, query, principal, organization, fingerprint, nowMs, external));
    }
    // What it read may include commits whose fsync is still under way: shown once they are on disk.
    await db.durable();
    return reply;
  }

  /** A submit: the activity it created (or the one an identical body created before). */
  async submit(op: SubmitOperation, r: Request, nowMs: number): Promise<SubmitOutcome> {
    const { db, services } = this.deps;
    const cred = await this.#credential(r, nowMs);
    const scope = { parentMayRead: op.parentMaySubmit === true, resolvesFromParent: false, clientAddress: r.clientAddress };
    // The caller as the request names it, or undefined (the transaction gives the answer).
    const resolveIn = (e: Envelope) => (tx: Tx) => resolvePrincipal(tx, cred.keys, e.organizationId, scope, nowMs, contextOf(cred)).catch((): Resolution | undefined => undefined);
    let pre: Prepared | undefined;
    /** the body's activity was found stored before the transaction (op.derive's check) */
    let storedBefore = false;
    let env: Envelope;
    // A lone request (nothing else in progress) is served on this thread: a thread hop would add
    // its latency and save no one any time.
    if (!op.prepare || !r.concurrent || cred.kind === 'passkey') {
      await this.#verify(r, cred);
      env = this.#envelope(op, r, nowMs);
    } else {
      // Work the operation can do before its transaction (signing on a signing thread, which also
      // checks the stamp: one thread hop for both) runs now, against the state as it is; the
      // transaction checks everything again. Until the stamp has verified, any refusal is answered
      // only after verifying it the usual way, so a bad stamp still gets its 401.
      try {
        env = this.#envelope(op, r, nowMs);
      } catch (e) {
        await this.#verify(r, cred);
        throw e;
      }
      const check: StampCheck = { stamp: cred.stamp, body: r.raw, verified: false };
      const done = await prepareSubmit(db, services, op, env, nowMs, resolveIn(env), (ctx, intent) => op.prepare!({ ...ctx, stampCheck: check }, intent));
      if (done) pre = { intent: done.intent, prepared: done.value };
      if (!check.verified) await this.#verify(r, cred);
    }
    const fingerprint = fingerprintOf(r.raw);
    if (op.derive) {
      // Key material before the transaction (the stamp has verified by now); none for a body
      // already stored (its activity is the answer).
      const envelope = env;
      const fresh = async (tx: Tx) => {
        if (!await tx.activities.byFingerprint(fingerprint, Number(envelope.timestampMs))) return resolveIn(envelope)(tx);
        storedBefore = true;
        return undefined;
      };
      const done = await prepareSubmit(db, services, op, env, nowMs, fresh, (ctx, intent) => op.derive!(ctx, intent, (fn) => db.read(fn)));
      if (done) pre = { ...pre, intent: done.intent, derived: done.value };
    }
    if (op.external) {
      // Work outside the store (an OIDC issuer's keys) before the transaction; a refusal stores
      // nothing. Only for a caller the operation admits: no outside request on behalf of anyone else.
      const envelope = env;
      const intent = pre?.intent ?? op.validate(envelope.parameters, envelope.type);
      const needed = await db.read(async (tx) => {
        if (await tx.activities.byFingerprint(fingerprint, Number(envelope.timestampMs))) return false;
        const { principal, organization } = await resolvePrincipal(tx, cred.keys, envelope.organizationId, scope, nowMs, contextOf(cred));
        await admitOutsideWork(tx, services, op, principal, intent, envelope.type, organization, nowMs);
        return true;
      });
      if (needed) pre = { ...pre, intent, external: await op.external(intent, services) };
    }
    // One transaction (grouped with others on SQLite); it settles once durable. The credential is
    // resolved again in there: an earlier write may have deleted the key or its user.
    const envelope = env;
    const admit = this.#admitter(envelope.organizationId, nowMs);
    const out = await db.write(async (tx) => {
      // a body seen stored: its lookup is read, not assumed absent (which would derive its keys again)
      if (storedBefore) tx.readFirst();
      // The key, its organization, user and allowlists as this transaction sees them (one read),
      // and the request's lock and idempotency lookup, asked for together: one round trip.
      const reading = cred.kind === 'key' ? tx.apiKeys.stampContext(cred.stamp.publicKey, envelope.organizationId) : undefined;
      const lookup = requestLookup(tx, fingerprint, Number(envelope.timestampMs));
      // the reads the operation will make go in the same message (used only once authorized)
      const prepared = withIntent(op, envelope, pre);
      if (prepared !== undefined) op.prefetch?.(tx, prepared.intent, envelope.organizationId);
      // and, when its execute changes nothing, what storing its activity reads (the parent as the
      // stamp's first read found it: an organization's parent never changes)
      const parent = cred.kind === 'key' ? cred.context.organization?.parentId : undefined;
      const early = op.readOnly === true && op.vote === undefined && prepared !== undefined && parent !== undefined
        ? startStore(tx, envelope.organizationId, parent) : undefined;
      const context = await reading;
      const keys = cred.kind === 'key' ? registeredKeys(context!, cred.curve) : await stillRegistered(tx, cred);
      const { principal, organization } = await resolvePrincipal(tx, keys, envelope.organizationId, scope, nowMs, context);
      // A refusal (this 429 too) rolls the write back: nothing is left behind.
      admit(principal);
      return submitInTransaction(tx, {
        services, lookupSubmit: this.deps.lookupSubmit, op, env: envelope, principal, organization, fingerprint, nowMs, pre: prepared, voucher: voucherOf(cred), lookup, early,
      });
    }).catch((e: unknown) => {
      // whatever refused it, the next request reads the stamp's rows afresh
      if (cred.kind === 'key') this.#contexts.forget(cred.stamp.publicKey, envelope.organizationId);
      throw e;
    });
    r.trace.activityId = out.activity.id as string;
    return out;
  }

  /**
   * The request's rate-limit admission (deps.admit: 429 when its bucket is empty), taken once per
   * credential however often the callback that calls it runs for the request (a read run again, a
   * failed prediction on PostgreSQL, a group run again write by write).
   */
  #admitter(organizationId: string, nowMs: number): (principal: Principal) => void {
    let admitted: string | undefined;
    return (principal) => {
      if (admitted === principal.credential.id) return;
      this.deps.admit?.(principal.credential.id, organizationId, nowMs);
      admitted = principal.credential.id;
    };
  }

  /** The submit body as an envelope of `op` whose timestamp is within the window. */
  #envelope(op: SubmitOperation, r: Request, nowMs: number): Envelope {
    const env = parseEnvelope(op, r.body());
    r.trace.organizationId = env.organizationId;
    try {
      checkTimestamp(env.timestampMs, nowMs, this.deps.timestampWindowMs, this.deps.timestampFutureMs);
    } catch (e) {
      r.trace.stampFailure = 'stale_timestamp';
      throw e;
    }
    return env;
  }

  /**
   * The stamp's credential (registered keys or passkeys it may stand for), not yet verified.
   * `submitAtMs`: for a submit, which may use what an earlier submit read (StampContexts).
   */
  async #credential(r: Request, submitAtMs?: number): Promise<Credential> {
    const h = r.header;
    if (h.kind === 'none') {
      r.trace.stampFailure = 'missing_stamp';
      throw unauthenticated(TurnkeyMessage.STAMP_MISSING, 'SIGNATURE_MISSING');
    }
    refuseNul(r);
    r.trace.stampFailure = 'unknown_key';
    if (h.kind === 'passkey') {
      const keys = await this.deps.db.peek((tx) => tx.authenticators.byCredentialId(h.webauthn.credentialId));
      if (keys.length === 0) throw unauthenticated(TurnkeyMessage.CREDENTIAL_NOT_FOUND, 'CREDENTIAL_NOT_FOUND', 'no passkey is registered with the stamp\'s credential id');
      r.trace.stampFailure = undefined;
      return { kind: 'passkey', webauthn: h.webauthn, keys };
    }
    // With the keys, the rows resolving them against the organization the body names (if it names one).
    const named = namedOrganization(r);
    let context = submitAtMs !== undefined && named !== '' ? this.#contexts.get(h.stamp.publicKey, named, submitAtMs) : undefined;
    if (context === undefined) {
      context = await this.deps.db.peek((tx) => tx.apiKeys.stampContext(h.stamp.publicKey, named));
      if (submitAtMs !== undefined && named !== '' && context.keys.length > 0) this.#contexts.set(context, submitAtMs);
    }
    let keys: ApiKeyRow[];
    try {
      keys = registeredKeys(context, h.curve);
    } catch (e) {
      // No such key: a stamp that does not verify is told that first, so only whoever holds a
      // key's private half learns whether it is registered (the reply, and the work done, are
      // then those of a registered key's bad stamp).
      await this.#verify(r, { kind: 'key', stamp: h.stamp, keys: [], curve: h.curve, context });
      throw e;
    }
    r.trace.stampFailure = undefined;
    return { kind: 'key', stamp: h.stamp, keys, curve: h.curve, context };
  }

  /** Verifies the stamp over the raw bytes (401 when it does not). */
  async #verify(r: Request, cred: Credential): Promise<void> {
    const { verifier } = this.deps;
    const ok = cred.kind === 'passkey' ? await this.#verifyPasskey(cred, r.raw)
      : verifier ? await verifier.verify(cred.stamp, r.raw, r.concurrent) : verifyStamp(cred.stamp, r.raw);
    if (!ok) {
      r.trace.stampFailure = 'bad_signature';
      throw unauthenticated(cred.kind === 'passkey' ? TurnkeyMessage.WEBAUTHN_SIGNATURE : TurnkeyMessage.API_KEY_SIGNATURE, 'SIGNATURE_INVALID',
        'the stamp signature does not verify over the request body');
    }
  }

  /**
   * Checks a passkey stamp against each registration of its credential id (each organization has
   * its own allowed origins); keeps the registrations it verifies for and records their new
   * signature counters. The counter is compared with the stored one again where it is written: a
   * request that lost a race to a higher counter (its assertion older, or replayed) is refused.
   */
  async #verifyPasskey(cred: PasskeyCredential, raw: Buffer): Promise<boolean> {
    const { db } = this.deps;
    const origins = await db.read(async (tx) => {
      const m = new Map<string, string[]>();
      for (const row of cred.keys) if (!m.has(row.organizationId)) m.set(row.organizationId, await allowedOrigins(tx, row.organizationId));
      return m;
    });
    const verified: { row: AuthenticatorRow; signCount: number }[] = [];
    for (const row of cred.keys) {
      const v = verifyWebauthnStamp(cred.webauthn, row, raw, origins.get(row.organizationId)!);
      if (v.ok) verified.push({ row, signCount: v.signCount });
    }
    const moved = verified.filter((v) => v.signCount > v.row.signCount);
    const behind = new Set<string>();
    if (moved.length > 0) {
      await db.write(async (tx) => {
        for (const v of moved) if (!await tx.authenticators.advanceSignCount(v.row.id, v.signCount)) behind.add(v.row.id);
      });
    }
    const kept = verified.filter((v) => !behind.has(v.row.id));
    cred.keys = kept.map((v) => v.row);
    return kept.length > 0;
  }
}

/**
 * What the submit's transaction starts from: prepare's intent, or the parameters validated now
 * (validate is pure: the transaction would compute the same). Undefined when they do not validate:
 * the transaction finds that out after its idempotency lookup, as it always has.
 */
function withIntent(op: SubmitOperation, env: Envelope, pre: Prepared | undefined): Prepared | undefined {
  if (pre !== undefined) return pre;
  try {
    return { intent: op.validate(env.parameters, env.type) };
  } catch {
    return undefined;
  }
}

/** The API keys registered for a stamp's public key with its scheme's curve (401 when there is none). */
function registeredKeys(context: StampContext, curve: ApiKeyCurve): ApiKeyRow[] {
  const keys = context.keys.filter((k) => k.curve === curve);
  if (keys.length === 0) throw unauthenticated(TurnkeyMessage.PUBLIC_KEY_NOT_FOUND, 'PUBLIC_KEY_NOT_FOUND', 'no API key is registered for the stamp\'s public key');
  return keys;
}

const contextOf = (cred: Credential): StampContext | undefined => (cred.kind === 'key' ? cred.context : undefined);

const NUL_ESCAPE = Buffer.from('\\u0000');

/**
 * A string of the body holding U+0000 is refused (400, naming where): no id, name or value kmas
 * keeps has one, and PostgreSQL's text cannot hold it, so both engines answer alike. (JSON can
 * only carry it escaped, so bodies without the escape are not searched.)
 */
function refuseNul(r: Request): void {
  if (!r.raw.includes(NUL_ESCAPE)) return;
  let body: unknown;
  try { body = r.body(); } catch { return; } // not JSON: refused later, as before
  const at = nulAt(body);
  if (at === undefined) return;
  const field = at === '' ? 'body' : at;
  throw invalidArgument(`${field} must not contain the character U+0000`, [{ field, description: 'must not contain the character U+0000' }]);
}

/**
 * Where the first string holding U+0000 is (a member name counts), or undefined. A walk with a
 * stack of its own: the body may nest deeper than the call stack goes (JSON.parse takes it).
 */
function nulAt(root: unknown): string | undefined {
  // [value, its path, the member name it is under (checked first), if any]
  const todo: [unknown, string, string?][] = [[root, '']];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    const [v, path, name] = next;
    if (name?.includes('\u0000')) return path;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path;
    } else if (Array.isArray(v)) {
      // pushed last to first: taken first to last
      for (let i = v.length - 1; i >= 0; i--) todo.push([v[i], `${path}[${i}]`]);
    } else if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, x] = entries[i]!;
        todo.push([x, path === '' ? k : `${path}.${k}`, k]);
      }
    }
  }
  return undefined;
}

/** The organizationId the body names ('' when it names none or is not JSON: the answer comes later). */
function namedOrganization(r: Request): string {
  try {
    const id = r.body().organizationId;
    return typeof id === 'string' ? organizationIdOf(id) : '';
  } catch {
    return '';
  }
}

/** The passkey registrations the stamp verified for that are still registered (for the transaction). */
async function stillRegistered(tx: Tx, cred: PasskeyCredential): Promise<AuthenticatorRow[]> {
  const verified = new Set(cred.keys.map((k) => k.id));
  const keys = (await tx.authenticators.byCredentialId(cred.webauthn.credentialId)).filter((k) => verified.has(k.id));
  if (keys.length === 0) throw unauthenticated(TurnkeyMessage.CREDENTIAL_NOT_FOUND, 'CREDENTIAL_NOT_FOUND', 'the passkey that stamped this request is no longer registered');
  return keys;
}

/** The stamp as a vote records it (an activity that waits for approvals, approve_activity). */
function voucherOf(cred: Credential): Voucher {
  if (cred.kind === 'key') return { publicKey: cred.stamp.publicKey, signature: cred.stamp.signature, scheme: cred.stamp.scheme };
  return { publicKey: '', signature: cred.webauthn.signature, scheme: 'SIGNATURE_SCHEME_WEBAUTHN' };
}

function requireOrganizationId(body: Obj): string {
  const id = body.organizationId;
  if (typeof id !== 'string' || id === '') {
    throw invalidArgument('organizationId is required', [{ field: 'organizationId', description: 'is required (a non-empty string)' }]);
  }
  return organizationIdOf(id);
}

