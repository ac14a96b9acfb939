/**
 * The unit of work of the SQLite adapter (sqlite.ts opens the database and builds its synchronous
 * repositories; this file makes them the async Db of storage/types.ts).
 *
 * better-sqlite3 is synchronous and one connection serves the process, so:
 * - Turns: one unit of work at a time on the connection (a read cannot see a write group's
 *   uncommitted rows, nor a write start inside a read). The callbacks do no slow work of their
 *   own (types.ts Db), so a turn lasts as long as its SQL.
 * - Group commit (GroupCommit): writes queued during one turn of the event loop share one
 *   BEGIN IMMEDIATE … COMMIT (one fsync of the WAL), each inside a SAVEPOINT of its own, so a
 *   write that throws rolls back alone; each settles after the COMMIT is durable.
 * - Durability off the event loop (WalSync): after start-up SQLite runs at synchronous=NORMAL and
 *   the WAL is fdatasync'ed on libuv's thread pool; nothing settles before its commit is synced.
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import type { LockName, Repositories, Tx } from './types.js';
import type { Sync } from './sync.js';
import { dbCommitDuration, dbSyncDuration, secondsSince } from '../metrics.js';


/** Runs async units one after another (a promise chain). */
export class Turns {
  #tail: Promise<unknown> = Promise.resolve();
  #busy = 0;
  run<T>(fn: () => Promise<T>): Promise<T> {
    this.#busy++;
    // Nothing running or queued: start now rather than a microtask later.
    const p = this.#busy === 1 ? fn() : this.#tail.then(fn);
    this.#tail = p.then(this.#done, this.#done);
    return p;
  }
  readonly #done = (): void => { this.#busy--; };
  /** Settles once every unit queued so far has ended. */
  idle(): Promise<void> { return this.#tail.then(noop); }
}
const noop = (): void => {};

/**
 * The Tx of a connection: the synchronous repositories behind promises. Built once per
 * connection; `active()` says whether a unit of work holds the connection now (a repository
 * used outside one is a bug, refused loudly).
 */
export function asyncRepositories(sync: Sync<Repositories>, active: () => boolean): Repositories {
  const wrap = (o: Record<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      if (typeof v === 'function') {
        const fn = v as (...a: unknown[]) => unknown;
        out[k] = (...a: unknown[]) => {
          if (!active()) return Promise.reject(new Error('a repository was used outside db.read / db.write'));
          try { return Promise.resolve(fn(...a)); } catch (e) { return Promise.reject(e); }
        };
      } else out[k] = wrap(v as Record<string, unknown>);
    }
    return out;
  };
  return wrap(sync as unknown as Record<string, unknown>) as unknown as Repositories;
}

interface Job {
  fn: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}
type Settled = { ok: true; value: unknown; after: (() => void)[] } | { ok: false; error: unknown };

/** Work per group before the remaining writes go to the next one (ms). */
const GROUP_BUDGET_MS = 5;
const MAX_BUSY_RETRIES = 50;
const BUSY_TIMEOUT_MS = 5000;

export interface UnitOptions {
  /** Other processes write this database too (a WORKERS pool): try BEGIN IMMEDIATE without waiting first. */
  multiProcess: boolean;
  /** Work per group before the rest waits for the next one (ms; tests set it). */
  budgetMs?: number;
}

/** What the unit of work tells the adapter's caches about transactions. */
export interface TransactionEvents {
  /** An outermost transaction ended: committed, or rolled back. */
  ended(committed: boolean): void;
  /** A savepoint was rolled back (a write that threw, a nested savepoint): the transaction goes on without its changes. */
  rolledBackToSavepoint(): void;
  /** A write group's transaction began (before its first write): the adapter may add rows of its own (logLater.ts). */
  began?(): void;
}

/**
 * The SQLite unit of work: reads (one snapshot each) and grouped writes on one connection.
 * `events` tells the adapter's caches when transactions end and savepoints roll back.
 */
export class SqliteUnits {
  readonly tx: Tx;
  readonly #db: Database.Database;
  readonly #turns = new Turns();
  readonly #st: Record<'begin' | 'beginRead' | 'commit' | 'rollback' | 'sp' | 'spRelease' | 'spRollback', Database.Statement>;
  readonly #budgetMs: number;
  readonly #multiProcess: boolean;
  #active = false;
  #depth = 0;
  #after: (() => void)[] = [];
  #pending: Job[] = [];
  #scheduled = false;
  #busyRetries = 0;
  walSync: WalSync | undefined;

  constructor(db: Database.Database, repos: Sync<Repositories>, private readonly events: TransactionEvents, opts: UnitOptions) {
    this.#db = db;
    this.#budgetMs = opts.budgetMs ?? GROUP_BUDGET_MS;
    this.#multiProcess = opts.multiProcess;
    const p = (sql: string) => db.prepare(sql);
    this.#st = {
      begin: p('BEGIN IMMEDIATE'), beginRead: p('BEGIN'), commit: p('COMMIT'), rollback: p('ROLLBACK'),
      sp: p('SAVEPOINT unit'), spRelease: p('RELEASE unit'), spRollback: p('ROLLBACK TO unit'),
    };
    const self = this;
    this.tx = Object.assign(asyncRepositories(repos, () => this.#active), {
      // One writer at a time: SQLite's write transaction is exclusive, so every named lock is held already.
      lock(_name: LockName, _key: string): Promise<void> { return Promise.resolve(); },
      savepoint<T>(fn: () => Promise<T>): Promise<T> { return self.#savepoint(fn); },
      afterCommit(fn: () => void): void { self.#after.push(fn); },
      // every read is answered by the database already
      readFirst(): void {},
    });
  }

  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.#turns.run(async () => {
      // A turn holds the connection alone: only another process (a pool) could commit between two
      // statements, so only then does a read need a transaction to see one snapshot.
      if (this.#multiProcess) this.#st.beginRead.run();
      this.#active = true;
      try {
        return await fn(this.tx);
      } finally {
        if (this.#db.inTransaction) this.#st.commit.run();
        this.#active = false;
        this.#after = [];
        this.events.ended(true);
      }
    });
  }

  /** Runs fn inside the next group transaction; settles once that transaction's COMMIT is durable. */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  /** Settles once every commit made so far is on disk (commits whose fsync is under way included). */
  durable(): Promise<void> {
    return this.walSync?.durable() ?? Promise.resolve();
  }

  /** Settles once every unit queued so far has ended and its commit is durable. */
  async flush(): Promise<void> {
    for (;;) {
      await this.#turns.idle();
      if (!this.#scheduled && this.#pending.length === 0) break;
      await new Promise((r) => setImmediate(r));
    }
    await this.walSync?.durable();
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    // #group settles every write it takes; should it fail itself, its writes fail with it (none is left hanging).
    this.#turns.run(() => this.#group(batch)).catch((error: unknown) => settle(batch, batch.map((): Settled => ({ ok: false, error }))));
  };

  #reschedule(jobs: Job[], delayMs: number): void {
    this.#pending = jobs.concat(this.#pending);
    if (this.#scheduled) return;
    this.#scheduled = true;
    if (delayMs > 0) setTimeout(this.#flush, delayMs);
    else setImmediate(this.#flush);
  }

  /**
   * One group: BEGIN IMMEDIATE, each job in its savepoint until the budget is spent, COMMIT. When
   * the transaction itself failed (SQLite rolled it back, or COMMIT failed), every job of the
   * group runs again in a transaction of its own, so one bad write cannot take the others with it.
   */
  async #group(batch: Job[]): Promise<void> {
    let begun: 'busy' | 'begun';
    try {
      begun = this.#begin();
    } catch (error) {
      // The database cannot start a transaction at all (closed, I/O error): every write of the group fails with it.
      settle(batch, batch.map((): Settled => ({ ok: false, error })));
      return;
    }
    if (begun === 'busy') {
      // Another process holds SQLite's write lock: keep the group and try again shortly instead of
      // sleeping in SQLite's busy handler with the event loop stopped.
      this.#reschedule(batch, 1);
      return;
    }
    let settled: Settled[] = [];
    let failed: unknown;
    const start = performance.now();
    this.#active = true;
    try {
      this.events.began?.();
      // What began() stores may end the transaction (SQLite rolls it back whole on a full disk or
      // an I/O error): the jobs must not run then, since each one's SAVEPOINT would open a
      // transaction of its own and its RELEASE commit it, unseen by the group.
      if (!this.#db.inTransaction) throw new Error('the write transaction ended while its group began');
      for (const job of batch) {
        if (settled.length > 0 && performance.now() - start >= this.#budgetMs) break;
        const s = await this.#job(job);
        if (!this.#db.inTransaction) { failed = s.ok ? new Error('the transaction ended early') : s.error; break; }
        settled.push(s);
      }
      if (failed === undefined) this.#commit(start);
    } catch (e) {
      failed = e;
    } finally {
      this.#active = false;
    }
    if (failed !== undefined) {
      if (this.#db.inTransaction) this.#st.rollback.run();
      this.events.ended(false);
      settled = batch.length === 1 ? [{ ok: false, error: failed }] : [];
      if (batch.length > 1) for (const job of batch) settled.push(await this.#alone(job));
    }
    if (settled.length < batch.length) this.#reschedule(batch.splice(settled.length), 0);
    // Replies wait until the commit is on disk.
    const durable = this.walSync?.durable();
    if (durable) {
      durable.then(() => settle(batch, settled), (e: unknown) => settle(batch, settled.map((s) => (s.ok ? { ok: false, error: e } : s))));
    } else settle(batch, settled);
  }

  /** A job in the group's savepoint: its changes stay when it returns, are undone when it throws. */
  async #job(job: Job): Promise<Settled> {
    this.#after = [];
    this.#st.sp.run();
    try {
      const value = await job.fn(this.tx);
      this.#st.spRelease.run();
      return { ok: true, value, after: this.#after };
    } catch (error) {
      if (this.#db.inTransaction) { this.#st.spRollback.run(); this.#st.spRelease.run(); }
      this.events.rolledBackToSavepoint();
      return { ok: false, error };
    }
  }

  /** A job in a transaction of its own (after its group failed). */
  async #alone(job: Job): Promise<Settled> {
    try {
      this.#st.begin.run();
    } catch (error) {
      return { ok: false, error };
    }
    this.#active = true;
    let s: Settled;
    try {
      s = await this.#job(job);
      if (s.ok) this.#commit(performance.now());
    } catch (error) {
      s = { ok: false, error };
    } finally {
      this.#active = false;
    }
    if (this.#db.inTransaction) this.#st.rollback.run();
    this.events.ended(false);
    return s;
  }

  #commit(start: number): void {
    this.#st.commit.run();
    dbCommitDuration.observe(secondsSince(start));
    this.walSync?.committed();
    this.events.ended(true);
  }

  /**
   * BEGIN IMMEDIATE. In a pool of processes it is first tried without waiting (up to
   * MAX_BUSY_RETRIES times in a row); then SQLite's busy timeout waits, which guarantees progress.
   */
  #begin(): 'busy' | 'begun' {
    if (!this.#multiProcess || this.#busyRetries >= MAX_BUSY_RETRIES) {
      this.#busyRetries = 0;
      this.#st.begin.run();
      return 'begun';
    }
    // PRAGMA busy_timeout acts when a statement runs, so it is set around this one.
    this.#db.pragma('busy_timeout = 0');
    try {
      this.#st.begin.run();
      this.#busyRetries = 0;
      return 'begun';
    } catch (e) {
      if ((e as { code?: string }).code !== 'SQLITE_BUSY') throw e;
      this.#busyRetries++;
      return 'busy';
    } finally {
      this.#db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  async #savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const name = `nested${++this.#depth}`;
    this.#db.exec(`SAVEPOINT ${name}`);
    const after = this.#after.length;
    try {
      const v = await fn();
      this.#db.exec(`RELEASE ${name}`);
      return v;
    } catch (e) {
      if (this.#db.inTransaction) this.#db.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      this.events.rolledBackToSavepoint();
      this.#after.length = after;
      throw e;
    } finally {
      this.#depth--;
    }
  }

  /** Ends with every unit queued so far. */
  async close(): Promise<void> {
    await this.flush().catch(noop);
  }
}

function settle(batch: Job[], settled: Settled[]): void {
  for (let i = 0; i < settled.length; i++) {
    const s = settled[i]!;
    if (s.ok) {
      batch[i]!.resolve(s.value);
      for (const fn of s.after) fn();
    } else batch[i]!.reject(s.error);
  }
}

export { BUSY_TIMEOUT_MS };

/**
 * Durability off the event loop. With PRAGMA synchronous=FULL, better-sqlite3's COMMIT fsyncs the
 * WAL on the calling thread, stopping every other request for the length of the fsync. Here SQLite
 * runs at synchronous=NORMAL (the WAL stays consistent: frames carry checksums, and SQLite itself
 * syncs the WAL before a checkpoint and the database after it), and this class fdatasyncs the WAL
 * on libuv's thread pool after commits. A commit is durable once a sync that started after it has
 * finished: the WAL is append-only between checkpoints and a sync covers every write made to the
 * file before it started. Up to MAX_SYNCS_IN_FLIGHT syncs overlap, so a commit made just after a
 * sync started need not wait for that sync to end (and for the event loop to notice) before its
 * own begins; commits made meanwhile share the next one.
 *
 * A failed fsync cannot be retried safely (the kernel may have dropped the dirty pages), so the
 * store stops: every later durable() rejects and isReady() is false.
 */
interface Waiter { upTo: number; resolve: () => void; reject: (e: Error) => void }

const MAX_SYNCS_IN_FLIGHT = 2;

export class WalSync {
  #committed = 0;
  #synced = 0;
  /** the highest commit a sync under way will cover */
  #started = 0;
  #inFlight = 0;
  #waiters: Waiter[] = [];
  #fd: number | undefined;
  #closing = false;
  failed: Error | undefined;

  constructor(private readonly walFile: string) {
    // The WAL exists once the connection has read in WAL mode (the migrations did). Its directory
    // entry is made durable once, here.
    try {
      this.#fd = fs.openSync(walFile, 'r+');
      const dir = fs.openSync(path.dirname(walFile), 'r');
      try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
    } catch {
      if (this.#fd !== undefined) { fs.closeSync(this.#fd); this.#fd = undefined; }
    }
  }

  committed(): void { this.#committed++; }

  /** undefined when every commit so far is on disk; else a promise settled when it is. */
  durable(): Promise<void> | undefined {
    if (this.failed) return Promise.reject(this.failed);
    if (this.#synced === this.#committed) return undefined;
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ upTo: this.#committed, resolve, reject });
      this.#kick();
    });
  }

  /** Starts a sync when a waiter needs commits no sync under way covers, and one may start. */
  #kick(): void {
    if (this.#committed <= this.#started || this.#inFlight >= MAX_SYNCS_IN_FLIGHT || this.#closing) return;
    if (this.#fd === undefined && this.#inFlight > 0) return; // the first sync is opening the file
    this.#inFlight++;
    const upTo = this.#committed;
    this.#started = upTo;
    const start = performance.now();
    const done = (err: NodeJS.ErrnoException | null) => {
      this.#inFlight--;
      if (!err) dbSyncDuration.observe(secondsSince(start));
      if (this.#closing) { if (this.#inFlight === 0) this.close(); if (err) return; }
      if (this.failed) return;
      if (err) {
        this.failed = new Error(`fsync of the SQLite WAL failed (${err.code ?? err.message}); the store stops accepting writes`);
        for (const w of this.#waiters.splice(0)) w.reject(this.failed);
        return;
      }
      if (upTo > this.#synced) this.#synced = upTo;
      const still: Waiter[] = [];
      for (const w of this.#waiters) (w.upTo <= this.#synced ? w.resolve() : still.push(w));
      this.#waiters = still;
      if (still.length > 0) this.#kick();
    };
    if (this.#fd !== undefined) { fs.fdatasync(this.#fd, done); return; }
    fs.open(this.walFile, 'r+', (err, fd) => {
      if (err) { done(err); return; }
      this.#fd = fd;
      fs.open(path.dirname(this.walFile), 'r', (derr, dfd) => {
        if (derr) { done(derr); return; }
        fs.fsync(dfd, (serr) => { fs.close(dfd, () => {}); if (serr) done(serr); else fs.fdatasync(fd, done); });
      });
    });
  }

  /** Closes the WAL's descriptor now, or when the syncs under way end. */
  close(): void {
    this.#closing = true;
    if (this.#inFlight > 0 || this.#fd === undefined) return;
    fs.closeSync(this.#fd);
    this.#fd = undefined;
  }
}
