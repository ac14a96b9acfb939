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
 * - The repositories (postgresRepos.ts) are built per unit of work over its connection; once the
 *   unit has ended they refuse every call.
 * Migrations (pgMigrations.ts) are applied at open under an advisory lock.
 */
import { StorageUnavailableError } from './errors.js';
import { dbCommitDuration, secondsSince } from '../metrics.js';
import pg from 'pg';
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

/** One unit of work on one connection: its Tx, refused once it has ended. */
class Unit {
  active = true;
  /** a statement of this unit met a stale plan: its connection must not be reused */
  stale = false;
  after: (() => void)[] = [];
  readonly tx: Tx;
  #savepoints = 0;

  /** peek: no transaction around the statements, so only SELECTs, and no locks (they would not be held) */
  constructor(private readonly client: pg.PoolClient, private readonly bare = false) {
    const refuse = () => Promise.reject(new Error('a repository was used outside db.read / db.write'));
    const queries: Queries = {
      all: (sql, args) => (this.active ? this.#query(sql, args).then((r) => r.rows) : refuse()),
      get: (sql, args) => (this.active ? this.#query(sql, args).then((r) => r.rows[0]) : refuse()),
      run: (sql, args) => (this.active ? this.#query(sql, args).then((r) => r.rowCount ?? 0) : refuse()),
    };
    const self = this;
    this.tx = Object.assign(pgRepositories(queries), {
      async lock(name: LockName, key: string): Promise<void> {
        if (!self.active) return refuse();
        if (self.bare) throw new Error('db.peek takes no locks: use db.write');
        await self.#query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [name, key]);
      },
      savepoint<T>(fn: () => Promise<T>): Promise<T> { return self.#savepoint(fn); },
      afterCommit(fn: () => void): void {
        if (!self.active) throw new Error('afterCommit was called outside db.write');
        self.after.push(fn);
      },
    });
  }

  #query(sql: string, args: unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.bare && !/^\s*SELECT\b/i.test(sql)) return Promise.reject(new Error('db.peek only reads: use db.write'));
    return this.client.query<Row>({ name: statementName(sql), text: sql, values: args }).catch((e: unknown) => {
      if (stalePlan(e)) this.stale = true;
      throw e;
    });
  }

  async #savepoint<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.active) throw new Error('a savepoint was taken outside db.read / db.write');
    const name = `kmas_sp_${++this.#savepoints}`;
    await this.client.query(`SAVEPOINT ${name}`);
    const after = this.after.length;
    let value: T;
    try {
      value = await fn();
    } catch (e) {
      this.after.length = after;
      // If this fails too, the transaction is aborted and its COMMIT is refused (see once()).
      await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`).then(() => this.client.query(`RELEASE SAVEPOINT ${name}`)).catch(noop);
      throw e;
    }
    await this.client.query(`RELEASE SAVEPOINT ${name}`);
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
        unit = new Unit(client, true);
        const value = await fn(unit.tx);
        unit.active = false;
        return { value, after: [] };
      }
      await client.query(begin);
      unit = new Unit(client);
      const value = await fn(unit.tx);
      const result = await client.query('COMMIT');
      // COMMIT of a transaction that an error aborted (one the callback caught) rolls it back
      // and says so only by its command tag: nothing may be reported as stored then.
      if (result.command !== 'COMMIT') throw new Error('the transaction was rolled back: one of its statements failed (a caught error inside db.write needs tx.savepoint)');
      if (begin === 'BEGIN') dbCommitDuration.observe(secondsSince(start));
      unit.active = false;
      return { value, after: unit.after };
    } catch (e) {
      if (unit) unit.active = false;
      if (begin !== undefined) await client.query('ROLLBACK').catch((re: unknown) => { broken = re instanceof Error ? re : new Error(String(re)); });
      if (unit?.stale) {
        broken ??= new StalePlanError(e);
        throw new StalePlanError(e);
      }
      throw e;
    } finally {
      if (unit) unit.active = false;
      client.removeListener('error', onError);
      // A connection that broke or could not roll back is not given to the next unit.
      client.release(broken);
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
