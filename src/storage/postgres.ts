/**
 * The PostgreSQL adapter (DATABASE_URL=postgres://…): a pg (node-postgres) pool shared by the
 * units of work of this node; other nodes use the same database at the same time, so every
 * cross-node guarantee is a constraint, a row lock or an advisory lock of the database.
 *
 * - write(fn): one pooled connection, BEGIN … COMMIT at READ COMMITTED, ROLLBACK when fn throws.
 *   A serialization failure or deadlock (SQLSTATE 40001, 40P01) runs the whole callback again on
 *   a fresh transaction, a few times; any other error reaches the caller. afterCommit callbacks
 *   run once COMMIT has returned (a PostgreSQL commit is durable then).
 * - read(fn): BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY: one snapshot for the callback.
 * - tx.lock(name, key): pg_advisory_xact_lock(hashtext(name), hashtext(key)), held until the
 *   transaction ends.
 * - tx.savepoint(fn): SAVEPOINT / RELEASE, ROLLBACK TO when fn throws.
 * - A deferred write (Queries.deferred: the log append) goes with the unit's next statement, or,
 *   when it is the last, with the COMMIT in one message (EXECUTE of its prepared statement with
 *   the values written out, then COMMIT): the row lock it follows is held one round trip less.
 * - The repositories (postgresRepos.ts) are built per unit of work over its connection; once the
 *   unit has ended they refuse every call.
 * Migrations (pgMigrations.ts) are applied at open under an advisory lock.
 */
import { StorageUnavailableError } from './errors.js';
import { dbCommitDuration, secondsSince } from '../metrics.js';
import pg from 'pg';
import { createRequire } from 'node:module';
import type { Db, LockName, Tx } from './types.js';
import { pgRepositories, type Queries, type Row } from './postgresRepos.js';
import { migrateClient } from './pgMigrations.js';

export interface PostgresOptions {
  /** Connections in this node's pool (default 10). */
  poolSize?: number;
  /** Server-side limit on one statement (ms; default none). */
  statementTimeoutMs?: number;
  /** How long to wait for a new connection before giving up (ms; default 5000). */
  connectTimeoutMs?: number;
}

/** Tries of a unit that meets a serialization failure, a deadlock (writes) or a stale prepared statement. */
const MAX_TRIES = 5;
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

/** The statements PREPAREd by name on each connection (for a deferred write's EXECUTE). */
const preparedStatements = new WeakMap<pg.PoolClient, Set<string>>();
function preparedOn(client: pg.PoolClient): Set<string> {
  let set = preparedStatements.get(client);
  if (!set) preparedStatements.set(client, set = new Set());
  return set;
}

/** pg's own conversion of a parameter to the text the extended protocol sends (a Buffer stays a Buffer). */
const prepareValue = (createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => string | Buffer | null }).prepareValue;

/**
 * A parameter written out as an SQL literal, for EXECUTE: the text the extended protocol would
 * send for it (bytes as bytea's hex form), as an E'' string (the same whatever
 * standard_conforming_strings says), which PostgreSQL reads with the parameter type's input
 * function, as it reads a protocol parameter; null as NULL.
 */
export function literal(v: unknown): string {
  const text = prepareValue(v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v);
  if (text === null) return 'NULL';
  const t = Buffer.isBuffer(text) ? `\\x${text.toString('hex')}` : text;
  if (t.includes('\0')) throw new Error('a parameter with a NUL character');
  return `E'${t.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Runs a committed write's afterCommit callbacks; one that throws neither stops the others nor fails the write. */
function runAfterCommit(after: (() => void)[]): void {
  for (const f of after) {
    try { f(); } catch (e) { process.emitWarning(`an afterCommit callback threw: ${e instanceof Error ? e.stack ?? e.message : String(e)}`); }
  }
}

/** A failure the whole callback may be run again for (also when the callback wrapped it as its cause). */
function retryable(e: unknown): boolean {
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    if (e instanceof StalePlanError || RETRYABLE.has((e as { code?: unknown }).code as string)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

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
const LOCKS_SENT_WITH_NEXT: ReadonlySet<LockName> = new Set<LockName>(['request', 'approval', 'one-time-code']);

/**
 * One unit of work on one connection: its Tx, refused once it has ended.
 *
 * Round trips: a statement nobody reads the result of (BEGIN, the locks above, RELEASE SAVEPOINT,
 * the log append and the activity insert: Queries.deferred) is not sent on its own; it waits in
 * `pending` and goes with the unit's next statement, or with the COMMIT. Statements asked for in
 * the same turn of the event loop (Promise.all over two reads) go together too. Such a message is
 * one simple-protocol query: a repository statement in it is EXECUTEd (PREPAREd by name the first
 * time on the connection: parsed and planned once, like the protocol's named statements) with its
 * values written out as literals, the text forms the extended protocol would send (pg's
 * prepareValue), quoted. PostgreSQL runs a message's statements in order and stops at the first
 * error: the unit then fails as it would have one statement later. A lone statement goes as
 * before, over the extended protocol.
 */
class Unit {
  active = true;
  /** a statement of this unit met a stale plan: its connection must not be reused */
  stale = false;
  after: (() => void)[] = [];
  /** the connection must not serve another unit (a message with a PREPARE failed: see #send) */
  discard = false;
  /** statements not sent yet, in order */
  pending: Pending[] = [];
  readonly tx: Tx;
  #savepoints = 0;

  /**
   * `begin`: the statement that opens the transaction (sent with the first statement).
   * Without it (peek): no transaction around the statements, so only SELECTs, and no locks (they would not be held).
   */
  constructor(private readonly client: pg.PoolClient, begin?: string) {
    const bare = begin === undefined;
    if (begin) this.pending.push({ sql: begin });
    const refuse = () => Promise.reject(new Error('a repository was used outside db.read / db.write'));
    const queries: Queries = {
      all: (sql, args) => (this.active ? this.#query(sql, args).then((r) => r.rows) : refuse()),
      get: (sql, args) => (this.active ? this.#query(sql, args).then((r) => r.rows[0]) : refuse()),
      run: (sql, args) => (this.active ? this.#query(sql, args).then((r) => r.rowCount ?? 0) : refuse()),
      deferred: bare ? undefined : (sql, args) => {
        if (!this.active) throw new Error('a repository was used outside db.read / db.write');
        this.pending.push({ sql, args });
      },
    };
    const self = this;
    this.tx = Object.assign(pgRepositories(queries), {
      async lock(name: LockName, key: string): Promise<void> {
        if (!self.active) return refuse();
        if (bare) throw new Error('db.peek takes no locks: use db.write');
        const statement = { sql: 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', args: [name, key] };
        if (LOCKS_SENT_WITH_NEXT.has(name)) self.pending.push(statement);
        else await self.#query(statement.sql, statement.args);
      },
      savepoint<T>(fn: () => Promise<T>): Promise<T> { return self.#savepoint(fn); },
      afterCommit(fn: () => void): void {
        if (!self.active) throw new Error('afterCommit was called outside db.write');
        self.after.push(fn);
      },
    });
    this.bare = bare;
  }

  readonly bare: boolean;

  #query(sql: string, args: unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.bare && !/^\s*SELECT\b/i.test(sql)) return Promise.reject(new Error('db.peek only reads: use db.write'));
    return new Promise((resolve, reject) => {
      const first = !this.pending.some((p) => p.settle);
      this.pending.push({ sql, args, settle: { resolve, reject } });
      // what else this turn asks for goes in the same message
      if (first) queueMicrotask(() => { void this.#dispatch(); });
    });
  }

  /** Sends what is pending: alone over the extended protocol when it is one statement, else one message. */
  async #dispatch(): Promise<void> {
    if (!this.pending.some((p) => p.settle)) return;
    const batch = this.pending;
    this.pending = [];
    const only = batch.length === 1 ? batch[0]! : undefined;
    if (only?.args !== undefined && only.settle) {
      try {
        only.settle.resolve(await this.client.query<Row>({ name: statementName(only.sql), text: only.sql, values: only.args }));
      } catch (e) {
        if (stalePlan(e)) this.stale = true;
        only.settle.reject(e);
      }
      return;
    }
    try {
      const results = await this.#message(batch);
      batch.forEach((p, i) => p.settle?.resolve(results[i]!));
    } catch (e) {
      for (const p of batch) p.settle?.reject(e);
    }
  }

  /** The statements as one simple-protocol message; a result per statement. */
  async #message(statements: Pending[]): Promise<pg.QueryResult<Row>[]> {
    const known = preparedOn(this.client);
    const parts: string[] = [];
    const at: number[] = [];
    const made: string[] = [];
    for (const { sql, args } of statements) {
      if (args === undefined) {
        at.push(parts.push(sql) - 1);
        continue;
      }
      const name = `${statementName(sql)}_x`;
      if (!known.has(name) && !made.includes(name)) { parts.push(`PREPARE ${name} AS ${sql}`); made.push(name); }
      at.push(parts.push(args.length === 0 ? `EXECUTE ${name}` : `EXECUTE ${name}(${args.map(literal).join(', ')})`) - 1);
    }
    // A PREPARE outlives a failed transaction: after a failure, whether it was made is not known,
    // so the connection is not used again.
    if (made.length > 0) this.discard = true;
    let results: pg.QueryResult<Row>[] | pg.QueryResult<Row>;
    try {
      results = await this.client.query<Row>(parts.join(';\n')) as unknown as pg.QueryResult<Row>[] | pg.QueryResult<Row>;
    } catch (e) {
      if (stalePlan(e)) this.stale = true;
      throw e;
    }
    this.discard = false;
    for (const name of made) known.add(name);
    const all = Array.isArray(results) ? results : [results];
    return at.map((i) => all[i]!);
  }

  /** What is pending, then `last`, in one message; the result of `last`. */
  async #send(last: Pending): Promise<pg.QueryResult<Row>> {
    const batch = [...this.pending, last];
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

  /** COMMIT (with whatever is pending); its command tag (see once()). A unit that sent nothing sends nothing. */
  async commit(): Promise<string> {
    if (this.pending.length === 1 && this.pending[0]!.args === undefined && /^BEGIN\b/.test(this.pending[0]!.sql)) {
      this.pending = [];
      return 'COMMIT';
    }
    return (await this.#send({ sql: 'COMMIT' })).command;
  }

  /** ROLLBACK, unless the transaction was never opened. */
  async rollback(): Promise<void> {
    if (this.pending.length > 0 && this.pending[0]!.args === undefined && /^BEGIN\b/.test(this.pending[0]!.sql)) {
      this.pending = [];
      return;
    }
    this.pending = [];
    await this.client.query('ROLLBACK');
  }

  async #savepoint<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.active) throw new Error('a savepoint was taken outside db.read / db.write');
    const name = `kmas_sp_${++this.#savepoints}`;
    await this.#send({ sql: `SAVEPOINT ${name}` });
    const after = this.after.length;
    let value: T;
    try {
      value = await fn();
    } catch (e) {
      this.after.length = after;
      // what waits to be sent was asked for inside the savepoint: it is undone with it
      this.pending = [];
      // If this fails too, the transaction is aborted and its COMMIT is refused (see once()).
      await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`).then(() => this.client.query(`RELEASE SAVEPOINT ${name}`)).catch(noop);
      throw e;
    }
    this.pending.push({ sql: `RELEASE SAVEPOINT ${name}` });
    return value;
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
    types: typeParsers(),
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
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    inFlight.add(p);
    const done = () => { inFlight.delete(p); };
    p.then(done, done);
    return p;
  };
  const closedError = () => new Error('the PostgreSQL store is closed');

  /**
   * One transaction on one connection: begin, fn, commit (or rollback). Without `begin` (peek)
   * no transaction: each statement is its own, and two round trips are spared.
   */
  async function once<T>(begin: string | undefined, fn: (tx: Tx) => Promise<T>): Promise<{ value: T; after: (() => void)[] }> {
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
      if (begin === undefined) {
        unit = new Unit(client);
        const value = await fn(unit.tx);
        unit.active = false;
        return { value, after: [] };
      }
      // BEGIN goes with the unit's first statement (Unit)
      unit = new Unit(client, begin);
      const value = await fn(unit.tx);
      const command = await unit.commit();
      // COMMIT of a transaction that an error aborted (one the callback caught) rolls it back
      // and says so only by its command tag: nothing may be reported as stored then.
      if (command !== 'COMMIT') throw new Error('the transaction was rolled back: one of its statements failed (a caught error inside db.write needs tx.savepoint)');
      if (begin === 'BEGIN') dbCommitDuration.observe(secondsSince(start));
      unit.active = false;
      return { value, after: unit.after };
    } catch (e) {
      if (unit) unit.active = false;
      if (begin !== undefined && unit) await unit.rollback().catch((re: unknown) => { broken = re instanceof Error ? re : new Error(String(re)); });
      if (unit?.stale) {
        broken ??= new StalePlanError(e);
        throw new StalePlanError(e);
      }
      throw e;
    } finally {
      if (unit) unit.active = false;
      client.removeListener('error', onError);
      // A connection that broke or could not roll back is not given to the next unit.
      client.release(broken ?? (unit?.discard ? new Error('a deferred write failed with its PREPARE') : undefined));
    }
  }

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
      return track(retrying(async () => {
        const { value, after } = await once('BEGIN', fn);
        runAfterCommit(after);
        return value;
      }));
    },
    read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(closedError());
      return track(retrying(async () => (await once('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn)).value));
    },
    peek<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(closedError());
      return track(retrying(async () => (await once(undefined, fn)).value));
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
