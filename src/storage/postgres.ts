/**
 * The PostgreSQL adapter (DATABASE_URL=postgres://…): a pg (node-postgres) pool shared by the
 * units of work of this node; other nodes use the same database at the same time, so every
 * cross-node guarantee is a constraint, a row lock or an advisory lock of the database.
 *
 * - write(fn): BEGIN … COMMIT at READ COMMITTED on a pooled connection, ROLLBACK when fn throws.
 *   Group commit: the writes asked for while the node's groups under way run share the next
 *   group's transaction (grouped(): their statements go in the same messages, one COMMIT, one
 *   take of each log head; with groupWaitMs, a group after one of several writes waits up to that
 *   long for more); a group that cannot commit whole runs each write again alone, so no
 *   write's outcome depends on the others. A serialization failure or deadlock (SQLSTATE 40001,
 *   40P01) runs a lone write's callback again on a fresh transaction, a few times; any other error
 *   reaches the caller. afterCommit callbacks run once COMMIT has returned (a PostgreSQL commit is
 *   durable then).
 * - read(fn): BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY: one snapshot for the callback
 *   (reads asked for together share it, and each fails alone); peeks asked for together share a
 *   connection.
 * - tx.lock(name, key): pg_advisory_xact_lock(hashtext(name), hashtext(key)), held until the
 *   transaction ends.
 * - tx.savepoint(fn): SAVEPOINT / RELEASE, ROLLBACK TO when fn throws.
 * - Statements nobody waits for go with the unit's next message, and statements asked for at
 *   once go together (Unit: fewer round trips). A lone write assumes the reads this node can
 *   predict and checks them with its COMMIT (Predictions): one message in all. In a group, the members' request locks, version
 *   checks and idempotency lookups sent together are one statement of each kind (readsMerged);
 *   nothing else is reordered.
 * - The repositories (postgresRepos.ts) are built per unit of work over its connection; once the
 *   unit has ended they refuse every call.
 * Migrations (pgMigrations.ts) are applied at open under an advisory lock.
 */
import { StorageUnavailableError } from './errors.js';
import { dbCommitDuration, dbGroupReruns, dbGroupWrites, dbPredictedWrites, secondsSince } from '../metrics.js';
import pg from 'pg';
import { createRequire } from 'node:module';
import type { Db, LockName, LogHeadRow, Tx } from './types.js';
import {
  BY_REQUEST, EXPECT_HEAD, EXPECT_NO_REQUEST, EXPECT_VERSIONS, logAppend, MERGED_READS, nodeCaches, TAKE_HEAD, pgRepositories, valueRows, VERSION_ROWS,
  type MergedRead, type NodeCaches, type Queries, type Row,
} from './postgresRepos.js';
import { DATA_VERSIONED, migrateClient } from './pgMigrations.js';

export interface PostgresOptions {
  /** Connections in this node's pool (default 10). */
  poolSize?: number;
  /** Server-side limit on one statement (ms; default none). */
  statementTimeoutMs?: number;
  /** How long to wait for a new connection before giving up (ms; default 5000). */
  connectTimeoutMs?: number;
  /** Group transactions of writes under way at once (default 1: each group follows the one before). */
  writeGroups?: number;
  /**
   * Under load, how long the next group of writes waits for more writes before it starts (ms;
   * default 0: at once). It waits only after a group of two or more, and starts early once a full
   * group (MAX_GROUP) is queued: fewer, larger transactions (less PostgreSQL CPU per write) for at
   * most this much latency. A lone writer never waits (a group of one is followed at once).
   */
  groupWaitMs?: number;
  /**
   * A lone write assumes the reads this node can predict (Predictions) and sends them as checks
   * with its COMMIT: one message instead of two (default true; false sends every read first).
   */
  predict?: boolean;
}

/** Tries of a unit that meets a serialization failure, a deadlock (writes) or a stale prepared statement. */
const MAX_TRIES = 5;
/** Writes in one group transaction at most (the rest form the next group). */
const MAX_GROUP = 32;
const RETRYABLE = new Set(['40001', '40P01']);
/** isReady gives up after this long (a server that does not answer is not ready). */
const READY_TIMEOUT_MS = 3000;

const INT8_OID = 20;

/**
 * Every repository statement is a named prepared statement (parsed and planned once per
 * connection, then only bound and run): its name stands for its text, the same in every pool of
 * the process. The texts are a bounded set (values are always parameters).
 */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) statementNames.set(sql, name = `kmas_${statementNames.size}`);
  return name;
}

/**
 * A prepared statement made before a migration changed its table's columns ("cached plan must
 * not change result type", another node migrated while this one ran): the connection that holds
 * it is dropped and the unit runs again on another.
 */
function stalePlan(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === '0A000' && /cached plan/.test((e as Error).message);
}

/** A unit met a stale prepared statement (even if its callback caught the error): it runs again. */
class StalePlanError extends Error {
  constructor(cause: unknown) {
    super('a prepared statement went stale (a table changed); the unit runs again on a new connection', { cause });
  }
}

/**
 * The pool's own type parsers: bigint columns (times, counters, seq) come back as numbers, as
 * SQLite gives them (every value kmas stores is below 2^53). Nothing global is changed.
 * (Also the parsers of `kmas migrate-store`'s connection, which reads through pgRepositories.)
 */
export function typeParsers(): pg.CustomTypesConfig {
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8_OID, 'text', (v: string) => Number(v));
  return types as unknown as pg.CustomTypesConfig;
}

const noop = (): void => {};

/** pg's own conversion of a parameter to its wire text, and its result rows (the submittable below needs both). */
const pgInternals = createRequire(import.meta.url);
const { prepareValue } = pgInternals('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };
const PgResult = pgInternals('pg/lib/result.js') as new (rowMode: string | undefined, types: unknown) => PgResultRow;
interface PgResultRow extends pg.QueryResult<Row> {
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): Row;
  addRow(row: Row): void;
  addCommandComplete(msg: unknown): void;
}
/** The connection as pg's submittables see it (pg/lib/connection.js). */
interface PgConnection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(q: { text: string; name: string; types: unknown[] }): void;
  bind(c: { portal: string; statement: string; values: unknown[]; valueMapper: (v: unknown) => unknown }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(c: { portal: string; rows: number }): void;
  sync(): void;
}

/** The pool's type parsers, also given to the pipelined results. */
const TYPES = typeParsers();

/**
 * Several statements in one message of the extended protocol (a pg "submittable", the interface
 * pg-cursor uses): Parse (for a named statement this connection has not parsed yet; unnamed for a
 * bare one such as BEGIN), Bind, Describe, Execute for each, then one Sync. PostgreSQL answers
 * them in order and, after an error, skips the rest up to the Sync. Values travel as they do for
 * a single query (pg's prepareValue): nothing is written out as SQL text.
 */
class Pipelined {
  /** read by pg when a ParseComplete arrives: the statement being parsed (undefined: unnamed) */
  name: string | undefined;
  text: string | undefined;
  readonly #statements: { sql: string; args?: unknown[] | undefined; name: string; parse: boolean }[];
  readonly #results: PgResultRow[] = [];
  #at = 0;
  #failed: unknown;
  constructor(statements: { sql: string; args?: unknown[] | undefined }[], private readonly done: (e: unknown, r?: PgResultRow[]) => void) {
    this.#statements = statements.map((st) => ({ ...st, name: st.args === undefined ? '' : statementName(st.sql), parse: false }));
  }

  submit(connection: PgConnection): Error | null {
    const parsing = new Set<string>();
    connection.stream.cork?.();
    try {
      for (const st of this.#statements) {
        st.parse = st.name === '' || (connection.parsedStatements[st.name] === undefined && !parsing.has(st.name));
        if (st.parse) {
          connection.parse({ text: st.sql, name: st.name, types: [] });
          if (st.name !== '') parsing.add(st.name);
        }
        connection.bind({ portal: '', statement: st.name, values: st.args ?? [], valueMapper: prepareValue });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
        this.#results.push(new PgResult(undefined, TYPES));
      }
      connection.sync();
    } catch (e) {
      // a value pg cannot send: nothing was flushed yet (corked), so nothing reaches the server
      return e instanceof Error ? e : new Error(String(e));
    } finally {
      connection.stream.uncork?.();
    }
    this.#expect();
    return null;
  }

  /** What pg records when the ParseComplete of the current statement arrives. */
  #expect(): void {
    const st = this.#statements[this.#at];
    this.name = st?.parse && st.name !== '' ? st.name : undefined;
    this.text = st?.sql;
  }

  handleRowDescription(msg: { fields: unknown[] }): void { this.#results[this.#at]?.addFields(msg.fields); }
  handleDataRow(msg: { fields: unknown[] }): void {
    if (this.#failed) return;
    const r = this.#results[this.#at]!;
    try { r.addRow(r.parseRow(msg.fields)); } catch (e) { this.#failed = e; }
  }
  handleCommandComplete(msg: unknown): void {
    this.#results[this.#at]?.addCommandComplete(msg);
    this.#at++;
    this.#expect();
  }
  handleEmptyQuery(): void { this.#at++; this.#expect(); }
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}
  handleError(err: unknown): void { this.done(err); }
  handleReadyForQuery(): void {
    if (this.#failed) this.done(this.#failed);
    else this.done(undefined, this.#results);
  }
}

/** Runs a committed write's afterCommit callbacks; one that throws neither stops the others nor fails the write. */
function runAfterCommit(after: (() => void)[]): void {
  for (const f of after) {
    try { f(); } catch (e) { process.emitWarning(`an afterCommit callback threw: ${e instanceof Error ? e.stack ?? e.message : String(e)}`); }
  }
}

/** What `pick` answers for the first of e and its causes (at most 5 deep) it answers for. */
function inCauses<T>(e: unknown, pick: (x: object) => T | undefined): T | undefined {
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const found = pick(e);
    if (found !== undefined) return found;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

const codeOf = (x: object): string => (x as { code?: unknown }).code as string;

/** A failure the whole callback may be run again for (also when the callback wrapped it as its cause). */
const retryable = (e: unknown): boolean => inCauses(e, (x) => (x instanceof StalePlanError || RETRYABLE.has(codeOf(x)) ? true : undefined)) ?? false;

/**
 * A statement waiting to go out: plain SQL, or a prepared statement's text and values; `settle`
 * when someone waits for its result.
 */
interface Pending {
  sql: string;
  args?: unknown[];
  settle?: { resolve: (r: pg.QueryResult<Row>) => void; reject: (e: unknown) => void };
}

/**
 * Locks whose holder's next step is a statement of the same unit (a lookup, a savepoint): they
 * are sent with it, in one message. A lock that guards work outside the database (sender-nonce:
 * a network node is asked for the nonce) is taken at once.
 */
const LOCKS_SENT_WITH_NEXT: ReadonlySet<LockName> = new Set<LockName>(['request', 'approval', 'one-time-code', 'public-key', 'credential']);

/** A statement that only reads unless it locks (LOCKING). */
const SELECT = /^\s*SELECT\b/i;
/** What makes a SELECT change something a rollback would have to undo: a row lock or a named lock. */
const LOCKING = /\bFOR\s+(UPDATE|NO\s+KEY\s+UPDATE|SHARE|KEY\s+SHARE)\b|\bpg_advisory/i;

/**
 * The most rows one merged statement takes (rowsMerged, Unit.appendLog): each count is a prepared
 * statement of its own on every connection, so their number stays bounded.
 */
const MAX_ROWS = 32;

/** A single-row INSERT whose values are the parameters $1…$n in order, and nothing after them. */
const ONE_ROW = /^INSERT INTO \w+ \([^)]*\) VALUES \((\$\d+(?:, \$\d+)*)\)$/;

const oneRow = (p: Pending): boolean => {
  if (p.settle !== undefined || p.args === undefined) return false;
  const values = ONE_ROW.exec(p.sql)?.[1];
  return values !== undefined && `(${values})` === valueRows(1, p.args.length);
};

/**
 * A message's statements with each run of single-row INSERTs nobody waits for (a group's activity
 * rows: Queries.deferred) made one multi-row INSERT per statement text, at the place of its first:
 * PostgreSQL starts one statement where it started one per row. Inserts of a run go to tables
 * with no constraint or trigger between them, so their order within the run does not matter; a
 * statement of any other kind ends the run.
 */
function rowsMerged(batch: Pending[]): Pending[] {
  const out: Pending[] = [];
  let run = new Map<string, Pending[]>();
  const close = () => {
    for (const [sql, all] of run) {
      for (let at = 0; at < all.length; at += MAX_ROWS) {
        const ps = all.slice(at, at + MAX_ROWS);
        if (ps.length === 1) { out.push(ps[0]!); continue; }
        out.push({ sql: `${sql.slice(0, sql.lastIndexOf(' VALUES ('))} VALUES ${valueRows(ps.length, ps[0]!.args!.length)}`, args: ps.flatMap((p) => p.args!) });
      }
    }
    run = new Map();
  };
  for (const p of batch) {
    if (oneRow(p)) {
      const same = run.get(p.sql);
      if (same) same.push(p);
      else run.set(p.sql, [p]);
      continue;
    }
    close();
    out.push(p);
  }
  close();
  return out;
}

/** A named lock (tx.lock): held until the transaction ends. */
const LOCK = 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))';
/** Several named locks in one statement, taken in the order of the arrays (a function scan of unnest keeps it). */
const LOCKS = 'SELECT pg_advisory_xact_lock(hashtext(k.name), hashtext(k.key)) FROM unnest($1::text[], $2::text[]) AS k(name, key)';

/**
 * How statements of one kind from several members merge (readsMerged): where the merged statement
 * goes in the run (a lock at its first member's place: held earlier; a read at its last member's:
 * read later, after every lock of the run) and what it is.
 */
interface Merge { at: 'first' | 'last'; merged(ps: Pending[]): Pending }

const locksMerge: Merge = {
  at: 'first',
  merged: (ps) => ({ sql: LOCKS, args: [ps.map((p) => p.args![0]), ps.map((p) => p.args![1])] }),
};

const readMerge = (read: MergedRead): Merge => ({
  at: 'last',
  merged: (ps): Pending => ({
    sql: read.sql,
    args: read.values(ps.map((p) => p.args!)),
    settle: {
      resolve: (r) => { for (const p of ps) { const rows = read.mine(r.rows, p.args!); p.settle!.resolve({ ...r, rows, rowCount: rows.length }); } },
      reject: (e) => { for (const p of ps) p.settle!.reject(e); },
    },
  }),
});

/** MERGED_READS's merges, by the text of the statement they merge. */
const readMerges = new Map([...MERGED_READS].map(([sql, read]) => [sql, readMerge(read)]));

/** A statement that may merge with others of its kind: a lock nobody waits for, or one of MERGED_READS waited for. */
function mergeOf(p: Pending): Merge | undefined {
  if (p.args === undefined) return undefined;
  if (p.settle === undefined) return p.sql === LOCK ? locksMerge : undefined;
  return readMerges.get(p.sql);
}

/** A statement a merged one may be moved across: a log head's row lock (no data changed, no merged read reads that row). */
const crossable = (p: Pending): boolean => p.sql === TAKE_HEAD;

/**
 * A message's statements with the per-member statements of a group made one per kind: in each run
 * of statements that may merge (the named locks nobody waits for, the version checks and the
 * idempotency lookups: one of each per stamped submit) and log heads' row locks, the locks become
 * one statement at the place of the first and each kind of read one statement at the place of its
 * last, which gets every member its own rows. Nothing in a run writes, so a read moved later sees
 * what it would have seen, and every member's reads still follow its locks (a group's first member
 * takes its log head before the others' statements come: they merge across it). PostgreSQL starts
 * one statement per kind where it started one per member.
 */
function readsMerged(batch: Pending[]): Pending[] {
  if (batch.length < 2) return batch;
  const merges = batch.map(mergeOf);
  const out: Pending[] = [];
  for (let i = 0; i < batch.length;) {
    if (merges[i] === undefined) { out.push(batch[i++]!); continue; }
    let j = i;
    while (j < batch.length && (merges[j] !== undefined || crossable(batch[j]!))) j++;
    const kinds = new Map<Merge, number[]>();
    const placed: { at: number; p: Pending }[] = [];
    for (let k = i; k < j; k++) {
      const m = merges[k];
      if (m === undefined) { placed.push({ at: k, p: batch[k]! }); continue; }
      const at = kinds.get(m);
      if (at) at.push(k);
      else kinds.set(m, [k]);
    }
    for (const [m, ats] of kinds) {
      if (ats.length === 1) placed.push({ at: ats[0]!, p: batch[ats[0]!]! });
      else placed.push({ at: m.at === 'first' ? ats[0]! : ats[ats.length - 1]!, p: m.merged(ats.map((k) => batch[k]!)) });
    }
    placed.sort((a, b) => a.at - b.at);
    for (const x of placed) out.push(x.p);
    i = j;
  }
  return out;
}

/**
 * A change that may touch what an organization's data version covers (PostgreSQL migration 6: private
 * keys and their addresses, wallet accounts, features, webhook endpoints; wallets and organizations,
 * whose deletion reaches them) or any TRUNCATE. Cached data is not served in a unit after one
 * (postgresRepos.ts OrgDataCache): the unit must see its own writes.
 */
const DATA_TABLES = new RegExp(`\\b(?:${[...DATA_VERSIONED, 'wallets', 'organizations'].join('|')})\\b|^\\s*TRUNCATE\\b`, 'i');

/** Statements that write a table an auth or data version covers (the triggers of migrations 5 and 6 bump the version). */
const VERSIONED_TABLES = new RegExp(`\\b(?:${[...DATA_VERSIONED, 'api_keys', 'users', 'organizations', 'ip_allowlists'].join('|')})\\b|^\\s*TRUNCATE\\b`, 'i');

/** kmas_expect's SQLSTATEs (postgresRepos.ts EXPECT_*): which assumption of a predicted write did not hold. */
const MISPREDICTED: Readonly<Record<string, 'versions' | 'request' | 'head'>> = { KM001: 'versions', KM002: 'request', KM003: 'head' };

/** Which assumption a failed predicted write got wrong (its error or a cause of it), if that is why it failed. */
const mispredicted = (e: unknown): 'versions' | 'request' | 'head' | undefined => inCauses(e, (x) => MISPREDICTED[codeOf(x)]);

/** How long this node reads an organization's log head first after another node moved it under a prediction (ms). */
const HEAD_PAUSE_MS = 5000;
/** The most scopes and heads Predictions keeps (the oldest goes first). */
const PREDICTIONS_KEPT = 10_000;

/**
 * What a lone write on this node may assume instead of reading it first (a write's first message
 * is then its last: the reads' checks go with its writes and COMMIT, EXPECT_* in postgresRepos.ts):
 * - the auth and data versions (VERSION_ROWS) of scopes this node read last;
 * - that no activity has the request yet (BY_REQUEST: a body sent again is the rare case);
 * - an organization's log head as this node's last commit left it (TAKE_HEAD), unless another node
 *   moved it under a prediction in the last HEAD_PAUSE_MS (several nodes appending to one log:
 *   they read it first, as before).
 * A check that fails rolls the transaction back and the write runs again with its reads sent
 * first, which refreshes what is kept here. Nothing here is trusted: each assumption is checked
 * in the transaction that relies on it, under the same locks as the read it stands for.
 */
class Predictions {
  readonly #versions = new Map<string, unknown>();
  readonly #heads = new Map<string, LogHeadRow>();
  readonly #paused = new Map<string, number>();

  static #keep<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > PREDICTIONS_KEPT) map.delete(map.keys().next().value!);
  }

  /** A VERSION_ROWS result (rows of the scopes that have one). */
  sawVersions(scopes: readonly string[], rows: readonly Row[]): void {
    for (const scope of scopes) Predictions.#keep(this.#versions, scope, rows.find((r) => r.scope === scope)?.n ?? null);
  }

  /** VERSION_ROWS's rows for these scopes, and EXPECT_VERSIONS's values; undefined unless every scope was seen. */
  versions(scopes: readonly string[]): { rows: Row[]; expected: string[] } | undefined {
    const rows: Row[] = [];
    const expected: string[] = [];
    for (const scope of scopes) {
      const n = this.#versions.get(scope);
      if (n === undefined) return undefined;
      if (n !== null) rows.push({ scope, n });
      expected.push(String(n ?? 0));
    }
    return { rows, expected };
  }

  /** A commit of this node may have moved these versions: they are not assumed until read again. */
  forgetVersions(scopes: Iterable<string>): void {
    for (const scope of scopes) this.#versions.delete(scope);
  }

  /** The organization's head as this node last committed or read it under its lock, unless paused. */
  head(organizationId: string, nowMs: number): LogHeadRow | undefined {
    const until = this.#paused.get(organizationId);
    if (until !== undefined) {
      if (nowMs < until) return undefined;
      this.#paused.delete(organizationId);
    }
    return this.#heads.get(organizationId);
  }

  /** The heads a committed transaction held (as its last append left them). */
  committed(heads: ReadonlyMap<string, LogHeadRow>): void {
    for (const [org, h] of heads) {
      Predictions.#keep(this.#heads, org, Object.freeze({ organizationId: h.organizationId, size: h.size, frontier: h.frontier, root: h.root, updatedMs: h.updatedMs }));
    }
  }

  /** Another node moved these heads under a prediction: read them first for a while. */
  pause(organizationIds: Iterable<string>, nowMs: number): void {
    for (const org of organizationIds) {
      this.#heads.delete(org);
      Predictions.#keep(this.#paused, org, nowMs + HEAD_PAUSE_MS);
    }
  }
}

/** The statements that check a predicted read. */
const EXPECTS: ReadonlySet<string> = new Set([EXPECT_VERSIONS, EXPECT_NO_REQUEST, EXPECT_HEAD]);

/** A read's result, as pg gives it, of rows this node predicted. */
const predicted = (rows: Row[]): pg.QueryResult<Row> => ({ rows, rowCount: rows.length, command: 'SELECT', oid: 0, fields: [] });

/**
 * Two writes of one group met where they must not both go on in one transaction (the same named
 * lock, or an order the group cannot keep without one waiting for the other): the group rolls
 * back and each of its writes runs again in a transaction of its own, where the database's locks
 * order them.
 */
class GroupConflict extends Error {
  constructor(what: string) {
    super(`two writes of one group transaction need ${what}; each runs again alone`);
  }
}

/**
 * One transaction on one connection, shared by the writes of a group (db.write) or used by one
 * read or peek. Each caller gets a Member: its own Tx, refused once that caller has returned.
 *
 * Round trips: a statement nobody reads the result of (BEGIN, the locks above, SAVEPOINT and
 * RELEASE SAVEPOINT, the log append and the activity insert: Queries.deferred) is not sent on its
 * own; it waits in `pending` and goes with the next statement, or with the COMMIT. Statements
 * asked for in the same turn of the event loop, by one member or by several (their callbacks
 * start together and wait for the same answers), go together too. Such a message is one pipeline
 * of the extended protocol (Pipelined: each statement parsed once per connection, bound with its
 * values as a lone query would be, one Sync at the end). PostgreSQL runs a message's statements
 * in order and skips the rest after an error: the unit then fails as it would have one statement
 * later.
 *
 * What keeps the members of a group apart (each rule fails the group, never waits in a cycle):
 * - A named lock one member took is another member's GroupConflict (across groups and nodes the
 *   advisory lock orders them).
 * - No savepoint in a group: PostgreSQL's savepoints are one stack per transaction, so one member's
 *   would hold the others' statements back. A member's tx.savepoint runs its callback as is; one
 *   that throws after it asked for a change (which only a savepoint could undo) is a
 *   GroupConflict, and the write runs again alone, in a real savepoint (Unit.savepoint).
 * - The log: the group keeps each organization's head once taken (the row lock is the
 *   transaction's), and one member at a time holds it from takeHead to its append, so the group's
 *   appends follow each other.
 * - Lock order: a lone write takes its named locks before its log head, so two transactions
 *   never wait for each other's. In a group, a named lock other than `request` (which every
 *   member takes first) after a head is a GroupConflict.
 */
class Unit {
  /** a statement met a stale plan: the connection must not be reused */
  stale = false;
  /** a message came back with an error: the transaction is aborted (a read group's members cannot be told apart) */
  failed = false;
  /** a GroupConflict was raised: the group cannot commit, even if its member caught it */
  conflict: GroupConflict | undefined;
  /** a peek: no transaction */
  readonly bare: boolean;
  /** statements not sent yet, in order */
  pending: Pending[] = [];
  /** messages sent and not answered yet */
  readonly #inFlight = new Set<Promise<unknown>>();
  #savepoints = 0;
  /** named locks taken in this transaction, by member */
  readonly #locks = new Map<string, Member>();
  /** log heads taken in this transaction, as the last append left them; who appends now; who waits */
  readonly heads = new Map<string, LogHeadRow>();
  readonly #appending = new Map<string, Member>();
  readonly #headWaiters = new Map<string, (() => void)[]>();

  /**
   * `begin`: the statement that opens the transaction (sent with the first statement).
   * Without it (peek): no transaction around the statements, so only SELECTs, and no locks (they would not be held).
   * `predictions`: what this node read before. With `predict` (a lone write), reads it can
   * predict are answered from it and checked with the COMMIT (Predictions).
   */
  constructor(
    private readonly client: pg.PoolClient, begin?: string, readonly caches?: NodeCaches,
    private readonly predictions?: Predictions, private predict = false,
  ) {
    this.bare = begin === undefined;
    if (begin) this.pending.push({ sql: begin });
  }

  /** statements so far that write (not a SELECT): a version read after one may see this unit's own change */
  #writes = 0;
  /** organizations whose log head this unit predicted */
  readonly predictedHeads = new Set<string>();
  /** a read was answered from Predictions */
  predictedAny = false;
  /**
   * A check of a prediction failed (a KM00x error): whatever the callbacks did after it (a
   * statement refused because the transaction is aborted, an error of their own) is not the
   * unit's outcome; this is.
   */
  misprediction: unknown;
  /** the first statement error of this unit (one sent after it is refused with 25P02: aborted transaction) */
  firstError: unknown;
  /** ended by checked(): nothing to roll back */
  #ended = false;

  /** members of this unit (a group of writes has several) */
  #members = 0;
  /** a log head's row lock was asked for */
  headTaken = false;

  member(): Member {
    this.#members++;
    return new Member(this);
  }

  /** statements so far that write a table an organization's data version covers (Queries.dataWrites) */
  dataWrites = 0;
  /** statements so far that write a table an auth or data version covers */
  versionedWrites = 0;
  /** the version scopes this unit read or assumed (the stamp's, the organization's data) */
  readonly versionScopes = new Set<string>();

  /** Counts a statement that changes something a rollback would have to undo: anything but a plain SELECT (a write, a named lock, a row lock). */
  #changed(m: Member, sql: string): void {
    const select = SELECT.test(sql);
    if (select && !LOCKING.test(sql)) return;
    m.changes++;
    if (!select) this.#writes++;
    if (DATA_TABLES.test(sql)) this.dataWrites++;
    if (!select && VERSIONED_TABLES.test(sql)) this.versionedWrites++;
  }

  /** A statement whose result someone waits for. */
  query(m: Member, sql: string, args: unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.bare && !SELECT.test(sql)) return Promise.reject(new Error('db.peek only reads: use db.write'));
    if (this.predict) {
      const rows = this.#predicted(m, sql, args);
      if (rows) return Promise.resolve(predicted(rows));
    }
    this.#changed(m, sql);
    const sent = new Promise<pg.QueryResult<Row>>((resolve, reject) => {
      this.#push({ sql, args, settle: { resolve, reject } });
    });
    if (sql === VERSION_ROWS) for (const scope of args[0] as string[]) this.versionScopes.add(scope);
    if (sql === VERSION_ROWS && this.predictions) {
      const predictions = this.predictions;
      sent.then((r) => { predictions.sawVersions(args[0] as string[], r.rows); }, noop);
    }
    return sent;
  }

  /** A read this unit may assume (Predictions): its rows, its check deferred in its place; else undefined. */
  #predicted(m: Member, sql: string, args: unknown[]): Row[] | undefined {
    if (sql === BY_REQUEST) {
      this.defer(m, EXPECT_NO_REQUEST, args);
      this.predictedAny = true;
      return [];
    }
    // after a write of this unit, versions may be its own
    if (sql !== VERSION_ROWS || this.#writes > 0) return undefined;
    const scopes = args[0] as string[];
    for (const scope of scopes) this.versionScopes.add(scope);
    const known = this.predictions?.versions(scopes);
    if (!known) return undefined;
    this.defer(m, EXPECT_VERSIONS, [scopes, known.expected]);
    this.predictedAny = true;
    return known.rows;
  }

  /** Tx.readFirst: no read of this unit is predicted from now on. */
  readFirst(): void {
    this.predict = false;
  }

  /** The organization's log head, predicted (its check and row lock deferred in its place), or undefined. */
  predictedHead(m: Member, organizationId: string): LogHeadRow | undefined {
    if (!this.predict) return undefined;
    const head = this.predictions?.head(organizationId, Date.now());
    if (!head) return undefined;
    this.defer(m, EXPECT_HEAD, [organizationId, head.size]);
    this.predictedHeads.add(organizationId);
    this.predictedAny = true;
    return head;
  }

  /**
   * A predicted write that throws (a refusal) may have decided on what it assumed: its checks not
   * sent yet go out first, with the locks before them, then ROLLBACK, in one message. If one fails
   * (a KM00x error, thrown from here) the write runs again with its reads sent first; if not, what
   * it assumed was true and its error stands.
   */
  async checked(): Promise<void> {
    // A check sent already, with a read the write did not wait for, decides as much as one not
    // sent yet: its answer comes first (a failed one is the misprediction the caller runs again on).
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    if (this.failed) return;
    const checks = this.pending.filter((p) => EXPECTS.has(p.sql) || p.sql === LOCK || (p.args === undefined && /^BEGIN\b/.test(p.sql)));
    if (!checks.some((p) => EXPECTS.has(p.sql))) return;
    this.pending = [];
    this.#log.clear();
    await this.#message([...checks, { sql: 'ROLLBACK' }]);
    this.#ended = true;
  }

  /** A statement nobody waits for (it goes with the next message). */
  defer(m: Member, sql: string, args?: unknown[]): void {
    this.#changed(m, sql);
    this.pending.push(args === undefined ? { sql } : { sql, args });
  }

  /**
   * A log append (Queries.appendLog): kept with the organization's other appends since the last
   * statement someone waited for, and sent as one statement (logAppend) before the next such
   * statement, a savepoint or the COMMIT. The head's row lock is the transaction's (takeHead).
   */
  appendLog(m: Member, organizationId: string, entry: unknown[], head: LogHeadRow): void {
    m.changes++;
    let waiting = this.#log.get(organizationId);
    if (waiting === undefined) this.#log.set(organizationId, waiting = { entries: [], head });
    waiting.entries.push(entry);
    waiting.head = head;
    // a full statement goes as it is (each with the head after its last entry)
    if (waiting.entries.length >= MAX_ROWS) {
      this.pending.push(logAppend(waiting.entries, waiting.head));
      this.#log.delete(organizationId);
    }
  }

  readonly #log = new Map<string, { entries: unknown[][]; head: LogHeadRow }>();

  /** The waiting log appends, one statement per organization, into pending. */
  #flushLog(): void {
    for (const { entries, head } of this.#log.values()) this.pending.push(logAppend(entries, head));
    this.#log.clear();
  }

  #push(p: Pending): void {
    const first = !this.pending.some((q) => q.settle);
    // what reads after an append sees it
    this.#flushLog();
    this.pending.push(p);
    // what else this turn asks for goes in the same message
    if (p.settle && first) queueMicrotask(() => { void this.#dispatch(); });
  }

  /** Takes a named lock for m (GroupConflict when another member holds it). */
  lock(m: Member, name: LockName, key: string): Promise<void> {
    if (this.bare) throw new Error('db.peek takes no locks: use db.write');
    const k = `${name}\u0000${key}`;
    const holder = this.#locks.get(k);
    if (holder !== undefined && holder !== m) throw this.#conflict(`the ${name} lock on one key`);
    // Alone, a write takes its log head last (after every named lock): two transactions cannot
    // wait for each other's. A group that took a head already must not take another lock after it.
    if (name !== 'request' && this.headTaken && this.#members > 1) throw this.#conflict(`the ${name} lock after a log head`);
    this.#locks.set(k, m);
    if (LOCKS_SENT_WITH_NEXT.has(name)) { this.defer(m, LOCK, [name, key]); return Promise.resolve(); }
    return this.query(m, LOCK, [name, key]).then(noop);
  }

  #conflict(what: string): GroupConflict {
    this.conflict ??= new GroupConflict(what);
    return this.conflict;
  }

  /**
   * m's turn to append to the organization's log: at once (undefined) when no other member holds
   * it, else once the holder has appended or ended.
   */
  takeHeadTurn(m: Member, organizationId: string): Promise<void> | undefined {
    const holder = this.#appending.get(organizationId);
    if (holder !== undefined && holder !== m) return this.#waitHeadTurn(m, organizationId);
    this.#appending.set(organizationId, m);
    return undefined;
  }

  async #waitHeadTurn(m: Member, organizationId: string): Promise<void> {
    for (;;) {
      const holder = this.#appending.get(organizationId);
      if (holder === undefined || holder === m) break;
      await new Promise<void>((resolve) => {
        const waiters = this.#headWaiters.get(organizationId) ?? [];
        waiters.push(resolve);
        this.#headWaiters.set(organizationId, waiters);
      });
    }
    this.#appending.set(organizationId, m);
  }

  /** m appended (or ended): the next member may take the head. */
  headDone(m: Member, organizationId: string): void {
    if (this.#appending.get(organizationId) !== m) return;
    this.#appending.delete(organizationId);
    const waiters = this.#headWaiters.get(organizationId);
    this.#headWaiters.delete(organizationId);
    for (const w of waiters ?? []) w();
  }

  /** A member returned or threw: it holds nothing any more. */
  ended(m: Member): void {
    for (const [org, holder] of [...this.#appending]) if (holder === m) this.headDone(m, org);
  }

  /** Sends what is pending (if anyone waits): alone as a plain prepared query when it is one statement, else one message. */
  async #dispatch(): Promise<void> {
    if (!this.pending.some((p) => p.settle)) return; // sent already, with a COMMIT or a SAVEPOINT
    if (this.pending.length > 1) {
      await this.#send().catch(noop); // each waiting statement has its result or the error
      return;
    }
    const only = this.pending.pop()!;
    try {
      only.settle!.resolve(await this.client.query<Row>({ name: statementName(only.sql), text: only.sql, values: only.args }));
    } catch (e) {
      this.failed = true;
      this.firstError ??= e;
      if (stalePlan(e)) this.stale = true;
      only.settle!.reject(e);
    }
  }

  /** The statements in one message (Pipelined); a result per statement. */
  #message(statements: Pending[]): Promise<pg.QueryResult<Row>[]> {
    const sent = new Promise<PgResultRow[]>((resolve, reject) => {
      const batch = new Pipelined(statements, (e, r) => (e ? reject(e) : resolve(r!)));
      void this.client.query(batch as unknown as pg.QueryConfig);
    }).catch((e: unknown) => {
      this.failed = true;
      this.firstError ??= e;
      if (stalePlan(e)) this.stale = true;
      if (mispredicted(e)) this.misprediction ??= e;
      throw e;
    });
    this.#inFlight.add(sent);
    sent.then(() => this.#inFlight.delete(sent), () => this.#inFlight.delete(sent));
    return sent;
  }

  /** What is pending, then `last`, in one message; every waiting statement gets its result (or the error); the last result. */
  async #send(last?: Pending): Promise<pg.QueryResult<Row>> {
    const batch = rowsMerged(readsMerged(last ? [...this.pending, last] : this.pending));
    this.pending = [];
    try {
      const results = await this.#message(batch);
      batch.forEach((p, i) => p.settle?.resolve(results[i]!));
      return results[results.length - 1]!;
    } catch (e) {
      for (const p of batch) p.settle?.reject(e);
      throw e;
    }
  }

  /** Nothing was sent yet: the transaction's BEGIN still waits (first) in `pending`. */
  #unopened(): boolean {
    const first = this.pending[0];
    return first !== undefined && first.args === undefined && /^BEGIN\b/.test(first.sql);
  }

  /** COMMIT (with whatever is pending); its command tag (see once()). A unit that sent nothing sends nothing. */
  async commit(): Promise<string> {
    this.#flushLog();
    if (this.#unopened() && this.pending.length === 1) {
      this.pending = [];
      return 'COMMIT';
    }
    return (await this.#send({ sql: 'COMMIT' })).command;
  }

  /** ROLLBACK, unless the transaction was never opened. */
  async rollback(): Promise<void> {
    if (this.#ended) return;
    const opened = !this.#unopened();
    this.pending = [];
    this.#log.clear();
    if (opened) await this.client.query('ROLLBACK');
  }

  /**
   * fn's changes, undone if it throws. Alone: a savepoint. In a group, none is opened: PostgreSQL
   * keeps one savepoint stack per transaction, so a member's savepoint would hold every other
   * member's statements back until it ended (one round trip per member at least). What a member's
   * fn changed cannot be undone alone, so if fn throws after it asked for a change (a write, a
   * lock, a row lock: `changes`), the group cannot commit (GroupConflict) and each write runs again
   * alone, where the savepoint undoes it. If it throws having only read, there is nothing to undo.
   */
  async savepoint<T>(m: Member, fn: () => Promise<T>): Promise<T> {
    const after = m.after.length;
    if (this.#members > 1) {
      const before = m.changes;
      try {
        return await fn();
      } catch (e) {
        m.after.length = after;
        if (m.changes !== before) this.#conflict('a savepoint undone after it changed something');
        throw e;
      }
    }
    const name = `kmas_sp_${++this.#savepoints}`;
    // SAVEPOINT goes with the next statement, like RELEASE after it; appends made before it are
    // not undone with it
    this.#flushLog();
    const opened: Pending = { sql: `SAVEPOINT ${name}` };
    this.pending.push(opened);
    let value: T;
    try {
      value = await fn();
    } catch (e) {
      m.after.length = after;
      // a head appended to inside the savepoint is read again (the row keeps its lock); appends
      // made inside it and not sent yet are dropped
      this.heads.clear();
      this.#log.clear();
      const at = this.pending.indexOf(opened);
      // What waits to be sent was asked for inside the savepoint: it is undone with it.
      const dropped = at >= 0 ? this.pending.splice(at) : this.pending.splice(0);
      for (const p of dropped) p.settle?.reject(e);
      // Sent: rolled back. If this fails too, the transaction is aborted and its COMMIT is refused (see once()).
      if (at < 0) await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`).then(() => this.client.query(`RELEASE SAVEPOINT ${name}`)).catch(noop);
      throw e;
    }
    this.pending.push({ sql: `RELEASE SAVEPOINT ${name}` });
    return value;
  }
}

/** One caller of a unit: its Tx, refused once the caller has returned. */
class Member {
  active = true;
  after: (() => void)[] = [];
  /** statements asked for that change something (Unit.savepoint) */
  changes = 0;
  readonly tx: Tx;

  constructor(unit: Unit) {
    const refuse = () => Promise.reject(new Error('a repository was used outside db.read / db.write'));
    const queries: Queries = {
      all: (sql, args) => (this.active ? unit.query(this, sql, args).then((r) => r.rows) : refuse()),
      get: (sql, args) => (this.active ? unit.query(this, sql, args).then((r) => r.rows[0]) : refuse()),
      run: (sql, args) => (this.active ? unit.query(this, sql, args).then((r) => r.rowCount ?? 0) : refuse()),
      deferred: unit.bare ? undefined : (sql, args) => {
        if (!this.active) throw new Error('a repository was used outside db.read / db.write');
        unit.defer(this, sql, args);
      },
      appendLog: unit.bare ? undefined : (org, entry, head) => {
        if (!this.active) throw new Error('a repository was used outside db.read / db.write');
        unit.appendLog(this, org, entry, head);
      },
      dataWrites: () => unit.dataWrites,
    };
    const repos = pgRepositories(queries, unit.caches);
    const { takeHead, append } = repos.log;
    // One head per organization and transaction, appended to by one member at a time (Unit).
    repos.log.takeHead = (org) => {
      if (!this.active) return refuse();
      const take = (): Promise<LogHeadRow | undefined> => {
        const kept = unit.heads.get(org);
        if (kept) return Promise.resolve(kept);
        unit.headTaken = true;
        const guess = unit.predictedHead(this, org);
        if (guess) {
          unit.heads.set(org, guess);
          return Promise.resolve(guess);
        }
        return takeHead(org).then((head) => { if (head) unit.heads.set(org, head); return head; });
      };
      // in the same turn when it is free, so the read goes with what else this turn asks for
      const turn = unit.takeHeadTurn(this, org);
      return turn ? turn.then(take) : take();
    };
    repos.log.append = (e, nodes, head) => {
      if (!this.active) return refuse();
      const sent = append(e, nodes, head);
      unit.heads.set(head.organizationId, head);
      unit.headDone(this, head.organizationId);
      return sent;
    };
    const self = this;
    this.tx = Object.assign(repos, {
      lock(name: LockName, key: string): Promise<void> {
        if (!self.active) return refuse();
        try {
          return unit.lock(self, name, key);
        } catch (e) {
          return Promise.reject(e);
        }
      },
      savepoint<T>(fn: () => Promise<T>): Promise<T> {
        if (!self.active) throw new Error('a savepoint was taken outside db.read / db.write');
        return unit.savepoint(self, fn);
      },
      afterCommit(fn: () => void): void {
        if (!self.active) throw new Error('afterCommit was called outside db.write');
        self.after.push(fn);
      },
      readFirst(): void {
        unit.readFirst();
      },
    });
  }
}

/** Opens the pool, applies pending migrations (under an advisory lock), and returns the Db. */
export async function openPostgresDb(url: string, opts: PostgresOptions = {}): Promise<Db> {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: 'kmas',
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
    ...(opts.statementTimeoutMs !== undefined ? { statement_timeout: opts.statementTimeoutMs } : {}),
    types: TYPES,
  });
  // An idle connection that breaks (the server restarted) is dropped by the pool; without a
  // listener its error would end the process.
  pool.on('error', noop);

  try {
    const client = await pool.connect();
    try {
      await migrateClient(client);
    } finally {
      client.release();
    }
  } catch (e) {
    await pool.end().catch(noop);
    throw e;
  }

  let closed = false;
  // the stamp contexts, signing keys and webhook targets this node read, served again while their
  // version holds (postgresRepos.ts VersionedCache)
  const caches = nodeCaches();
  // what a lone write may assume instead of reading first (Predictions)
  const predictions = new Predictions();
  const predictWrites = opts.predict ?? true;
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    inFlight.add(p);
    const done = () => { inFlight.delete(p); };
    p.then(done, done);
    return p;
  };
  const closedError = () => new Error('the PostgreSQL store is closed');

  type Outcome<T> = { ok: true; value: T; after: (() => void)[] } | { ok: false; error: unknown };

  /**
   * One transaction on one connection: begin, the callbacks (together: a group shares the
   * transaction, Unit), commit (or rollback). Without `begin` (peek) no transaction: each
   * statement is its own, and two round trips are spared.
   * `independent` (reads, peeks): a callback that throws does not fail the others, unless a
   * statement failed (which aborts a transaction for all). Otherwise (writes) any callback that
   * throws fails the unit, which rolls back whole; so does a GroupConflict.
   */
  async function once<T>(begin: string | undefined, fns: ((tx: Tx) => Promise<T>)[], independent: boolean, predict?: { used: boolean }): Promise<Outcome<T>[]> {
    const client = await pool.connect();
    let unit: Unit | undefined;
    let broken: Error | undefined;
    // The pool listens for errors of idle connections only: one that breaks while this unit holds
    // it (the server went away between two statements) must not end the process. Its next query
    // fails, and so does this unit.
    const onError = (e: Error) => { broken = e; };
    client.on('error', onError);
    const start = performance.now();
    try {
      // BEGIN goes with the unit's first statement (Unit)
      const u = unit = new Unit(client, begin, caches, predictions, predict !== undefined);
      const members = fns.map(() => u.member());
      const settled = await Promise.allSettled(fns.map(async (fn, i) => {
        const m = members[i]!;
        try {
          return await fn(m.tx);
        } finally {
          m.active = false;
          u.ended(m);
        }
      }));
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (u.conflict) throw u.conflict;
      if (predict) predict.used = u.predictedAny;
      if (u.misprediction !== undefined) throw u.misprediction;
      if (failed && (!independent || u.failed || u.stale)) {
        if (u.predictedAny && !u.failed && !u.stale) await u.checked();
        throw failed.reason;
      }
      if (begin !== undefined) {
        const command = await u.commit();
        // COMMIT of a transaction that an error aborted (one the callback caught) rolls it back
        // and says so only by its command tag: nothing may be reported as stored then.
        if (command !== 'COMMIT') throw new Error('the transaction was rolled back: one of its statements failed (a caught error inside db.write needs tx.savepoint)');
        if (begin === 'BEGIN') {
          dbCommitDuration.observe(secondsSince(start));
          predictions.committed(u.heads);
          // this commit may have moved the versions it read: the next write reads them first (it
          // would otherwise assume the old ones, fail its check and run again). A version it did not
          // read (another organization's rows changed) is caught by that check, as another node's change is.
          if (u.versionedWrites > 0) predictions.forgetVersions(u.versionScopes);
        }
      }
      return settled.map((s, i): Outcome<T> => (s.status === 'fulfilled' ? { ok: true, value: s.value, after: members[i]!.after } : { ok: false, error: s.reason }));
    } catch (thrown) {
      // A failed check of a prediction is the unit's outcome (the write runs again), even if the
      // callbacks went on and a later statement or the COMMIT was refused for the aborted
      // transaction (25P02); such a refusal is otherwise the first error's consequence, and that
      // error is the unit's (a deadlock is then retried).
      const e = unit?.misprediction ?? (unit?.firstError !== undefined && (thrown as { code?: unknown }).code === '25P02' ? unit.firstError : thrown);
      // Predictions keeps what it held before this transaction (which appended nothing), unless
      // another node moved a head it predicted.
      if (begin === 'BEGIN' && unit && mispredicted(e) === 'head') predictions.pause(unit.predictedHeads, Date.now());
      if (begin !== undefined && unit) await unit.rollback().catch((re: unknown) => { broken = re instanceof Error ? re : new Error(String(re)); });
      if (unit?.stale) {
        broken ??= new StalePlanError(e);
        throw new StalePlanError(e);
      }
      throw e;
    } finally {
      client.removeListener('error', onError);
      // A connection that broke or could not roll back is not given to the next unit.
      client.release(broken);
    }
  }

  /**
   * A unit of its own, run again after a serialization failure, a deadlock or a stale plan. A
   * write first assumes what it can predict (Predictions); when an assumption fails it runs again
   * at once with its reads sent first.
   */
  const alone = <T>(begin: string | undefined, fn: (tx: Tx) => Promise<T>): Promise<T> => retrying(async () => {
    for (let predicting = predictWrites && begin === 'BEGIN'; ; predicting = false) {
      const predict = predicting ? { used: false } : undefined;
      try {
        const [o] = await once(begin, [fn], false, predict);
        if (!o!.ok) throw o!.error; // (once has thrown it already)
        if (predict?.used) dbPredictedWrites.inc({ outcome: 'committed' });
        runAfterCommit(o!.after);
        return o!.value;
      } catch (e) {
        const what = predict?.used ? mispredicted(e) : undefined;
        if (what === undefined) throw e;
        dbPredictedWrites.inc({ outcome: what });
      }
    }
  });

  /**
   * Units asked for while the groups of their kind under way run (at most `parallel` at once)
   * form the next group: one connection and one transaction for all (up to MAX_GROUP). Their
   * callbacks run together, so their statements share messages. Writes: the group has one COMMIT
   * and takes each organization's log head once; if any of them throws, or two of them collide
   * (GroupConflict), the group rolls back and each write runs again alone, as it would have
   * without a group: a write's outcome never depends on the others. Reads share one snapshot
   * (each could have been taken at that moment) and fail alone; peeks share only the connection.
   */
  function grouped(begin: string | undefined, independent: boolean, parallel: number, waitMs = 0): <T>(fn: (tx: Tx) => Promise<T>) => Promise<T> {
    type Job = { fn: (tx: Tx) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void };
    const queued: Job[] = [];
    let running = 0;
    let scheduled = false;
    // groupWaitMs: the size of the last group, and the timer of a next group waiting for company
    let last = 0;
    let waiting: NodeJS.Timeout | undefined;
    const schedule = (): void => {
      if (waiting !== undefined && queued.length >= MAX_GROUP) {
        clearTimeout(waiting);
        waiting = undefined;
        scheduled = false;
      }
      if (scheduled || queued.length === 0 || running >= parallel) return;
      scheduled = true;
      if (waitMs > 0 && last > 1 && queued.length < MAX_GROUP) waiting = setTimeout(start, waitMs);
      else setImmediate(start);
    };
    const start = (): void => {
      scheduled = false;
      waiting = undefined;
      if (queued.length === 0 || running >= parallel) return;
      const jobs = queued.splice(0, MAX_GROUP);
      last = jobs.length;
      running++;
      void run(jobs).finally(() => { running--; schedule(); });
      schedule();
    };
    async function run(jobs: Job[]): Promise<void> {
      const writes = begin === 'BEGIN';
      if (writes) dbGroupWrites.observe(jobs.length);
      if (jobs.length > 1) {
        let outcomes: Outcome<unknown>[] | undefined;
        try {
          outcomes = await once(begin, jobs.map((j) => j.fn), independent);
        } catch (e) {
          // The server went away (perhaps after a COMMIT was sent): each is refused as a lone
          // one would be, never run a second time. Otherwise each runs alone.
          if (unreachable(e)) {
            for (const j of jobs) j.reject(new StorageUnavailableError(e));
            return;
          }
          if (writes) dbGroupReruns.inc({ reason: e instanceof GroupConflict ? 'conflict' : 'error' });
        }
        if (outcomes) {
          outcomes.forEach((o, i) => {
            if (o.ok) { runAfterCommit(o.after); jobs[i]!.resolve(o.value); } else jobs[i]!.reject(o.error);
          });
          return;
        }
      }
      await Promise.all(jobs.map((j) => alone(begin, j.fn).then(j.resolve, j.reject)));
    }
    return <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => new Promise<T>((resolve, reject) => {
      queued.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      schedule();
    });
  }
  const writeGroup = grouped('BEGIN', false, Math.max(1, opts.writeGroups ?? 1), Math.max(0, opts.groupWaitMs ?? 0));
  const readGroup = grouped('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', true, 4);
  const peekGroup = grouped(undefined, true, 4);

  /** Runs a unit again, a few times, after a serialization failure, a deadlock or a stale plan. */
  async function retrying<T>(unit: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await unit();
      } catch (e) {
        if (unreachable(e)) throw new StorageUnavailableError(e);
        if (!retryable(e) || attempt >= MAX_TRIES) throw e;
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }

  const db: Db = {
    engine: 'postgres',
    write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(closedError());
      return track(writeGroup(fn));
    },
    read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(closedError());
      return track(readGroup(fn));
    },
    peek<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(closedError());
      return track(peekGroup(fn));
    },
    async isReady(): Promise<boolean> {
      if (closed) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS); });
      const ping = pool.query('SELECT 1 AS ok').then((r) => r.rows.length === 1, () => false);
      try {
        return await Promise.race([ping, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    // A COMMIT that has returned is durable: nothing committed waits for a sync here.
    durable: () => Promise.resolve(),
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      // the units under way end first
      await Promise.allSettled([...inFlight]);
      await pool.end();
    },
  };
  return db;
}

const NODE_CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Whether an error says the server could not be reached or went away (not what a statement did). */
function unreachable(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | undefined;
  const code = typeof err?.code === 'string' ? err.code : '';
  if (NODE_CONNECTION_CODES.has(code)) return true;
  // SQLSTATE class 08 (connection exception); 57P01-57P03 (shut down, crashed, starting); 53300 (too many connections)
  if (/^08/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300') return true;
  const message = typeof err?.message === 'string' ? err.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}
