/**
 * Later log entries on SQLite: an activity's first entry (the one storing it makes) takes its
 * index in the activity's transaction and is sealed (built, hashed, its row and subtree nodes
 * stored: logSeal.ts) after that transaction commits, by a thread, in index order.
 *
 * Why this keeps the log's promise. The entry's index and every byte it will have are fixed by
 * that commit: the index in the activity's row (activities.log_indexes), the content in the same
 * row (the record's canonical text, its times). Sealing only computes and stores what those rows
 * determine. Until then the head the adapter keeps carries the entry (LogHeadRow.later), and:
 *   - nothing reads the tree past its sealed entries: the log's queries settle first
 *     (Db.settleLog), a checkpoint covers sealed entries only, and an append that changes an
 *     activity (a vote, a status) seals everything before it in the same transaction (seal()),
 *     so the row a later entry is read from never changes before it is sealed;
 *   - a crash loses only the in-memory copy: the head derived after it (sqlite.ts takenHeadOf)
 *     finds the activities whose first index is past the last stored entry and seals them from
 *     their rows, which hold the same text.
 * A checkpoint is the first thing that commits to an entry toward a client, so an entry sealed
 * after its activity commits, but before any checkpoint covers it, is as protected as one
 * sealed in the activity's transaction (until a checkpoint, whoever holds the database could
 * rewrite either).
 *
 * What the request thread does per activity: take the index and keep the text (appendLater).
 * The thread builds the entry (its canonical text, three SHA-256 digests), the leaf hash and the
 * frontier; the rows go into the next write group's transaction (applied at its BEGIN, in a
 * savepoint of their own), or into a write of their own when none comes within APPLY_IDLE_MS.
 */
import { WorkerPool } from '../workerpool.js';
import { logSealed } from '../metrics.js';
import { builtScript } from '../paths.js';
import { frontierRoot } from '../tlog/merkle.js';
import { encodeLater, sealEntries, unpackSealed, type SealedEntry } from './logSeal.js';
import type { LaterEntry } from './types.js';
import type { LogHeads } from './logHeads.js';
import type { SealJob, SealReply } from './logworker.js';
import type { LogHeadRow } from './types.js';

/** Entries an organization's head may hold unsealed: past this, an append seals them on the request thread first. */
export const MAX_LATER = 512;
/** With sealed rows waiting and no write group to carry them, a write of their own starts after this (ms). */
const APPLY_IDLE_MS = 20;
/**
 * Committed later entries wait this long (ms) to go to the thread together: a message to a thread
 * and back costs both threads a wake-up, more than sealing one entry.
 */
const SEAL_DELAY_MS = 10;

/** One organization's sealing: rows computed by the thread, from `size` on, not yet known committed. */
interface Track {
  /** the size of the tree after the last row computed, and its frontier */
  size: number;
  frontier: Uint8Array;
  rows: SealedEntry[];
  inFlight: boolean;
  /** the thread failed on this log: no more jobs until it is sealed on the request thread */
  broken: boolean;
}

/** A head holding later entries: `later` are the last later.length of its size, the frontier is that of the entries before them. */
export function headWithLater(organizationId: string, size: number, frontier: Uint8Array, updatedMs: number, later: readonly LaterEntry[]): LogHeadRow {
  let root: Uint8Array | undefined;
  return {
    organizationId, size, frontier, updatedMs, later,
    // the root of the sealed entries (nothing reads it: a log's readers settle it first)
    get root() { return root ??= frontierRoot(frontier); },
  };
}

const sealedSize = (h: LogHeadRow): number => h.size - (h.later?.length ?? 0);

export interface LaterLogDeps {
  heads: LogHeads;
  /** Appends may leave their entry to the thread (else only entries found unsealed are sealed, on the request thread). */
  threaded: boolean;
  /** SEAL_DELAY_MS unless given (tests: a long one leaves entries unsealed) */
  sealDelayMs?: number;
  /** Stores sealed rows (log_entries), in the current write transaction. */
  insert(rows: readonly SealedEntry[], organizationId: string): void;
  /** Runs fn in its own savepoint of the current write transaction: its changes stay if it returns, are undone if it throws. */
  savepoint(fn: () => void): boolean;
  /** Queues an empty write (its group's BEGIN applies the rows waiting). */
  write(): void;
}

export class LaterLog {
  readonly #deps: LaterLogDeps;
  readonly #pool: WorkerPool<SealJob, SealReply, string> | undefined;
  readonly #tracks = new Map<string, Track>();
  /** organizations whose track holds rows to store at the next group's BEGIN */
  readonly #ready = new Set<string>();
  /** organizations whose head this process dropped while it held later entries: sealed at the next group's BEGIN */
  #orphans = new Set<string>();
  /** organizations given later entries in the current transaction */
  #touched = new Set<string>();
  /** organizations whose sealed rows the current transaction stored: sealed again if it rolls back */
  #stored = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  /** organizations with committed later entries to send to the thread, and the timer that sends them */
  #due = new Set<string>();
  #pumpTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: LaterLogDeps) {
    this.#deps = deps;
    this.#pool = !deps.threaded ? undefined : new WorkerPool<SealJob, SealReply, string>({
      name: 'log',
      script: builtScript('storage/logworker.js'),
      threads: 1,
      transfer: () => [],
      settle: (org, reply) => this.#settled(org, reply),
      orphan: (org) => this.#failed(org),
    });
  }

  /** Whether a thread seals (without one, appends stay synchronous). */
  get available(): boolean { return (this.#pool?.size ?? 0) > 0; }

  /** An activity's first entry: its index, taken now; sealed after this transaction commits. */
  append(e: Omit<LaterEntry, 'index'> & { organizationId: string }): number {
    const org = e.organizationId;
    let h = this.#deps.heads.take(org);
    if (h?.later && h.later.length >= MAX_LATER) h = this.seal(org);
    const size = h?.size ?? 0;
    const item: LaterEntry = { index: size, activityId: e.activityId, text: e.text, createdMs: e.createdMs, updatedMs: e.updatedMs, ...(e.parts ? { parts: e.parts } : {}) };
    const later = h?.later ? [...h.later, item] : [item];
    this.#deps.heads.wrote(headWithLater(org, size + 1, h?.frontier ?? EMPTY, e.updatedMs, later));
    this.#touched.add(org);
    return size;
  }

  /**
   * The organization's head with every entry sealed, in the current write transaction: the rows
   * the thread made are stored, the rest are sealed here. What an append that is not an
   * activity's first (and a log's reader, Db.settleLog) takes.
   */
  seal(org: string): LogHeadRow | undefined {
    let h = this.#apply(org);
    if (!h?.later?.length) return h;
    const base = sealedSize(h);
    const { rows, frontier } = sealEntries(base, h.frontier, h.later);
    this.#deps.insert(rows, org);
    this.#stored.add(org);
    logSealed.inc({ where: 'request' }, rows.length);
    h = headWithLater(org, h.size, frontier, h.updatedMs, []);
    this.#deps.heads.wrote(h);
    const t = this.#tracks.get(org);
    if (t) { t.broken = false; this.#reset(t, h); }
    return h;
  }

  /**
   * A write group began: the rows made since are stored in it (in a savepoint: a failure there
   * leaves the group alone). Where that fails, and for organizations whose head was dropped or
   * whose thread failed, the request thread seals from the rows, here; what fails again is tried
   * at the next group's BEGIN, so no entry waits for a reader to be sealed.
   */
  began(): void {
    if (this.#timer) { clearTimeout(this.#timer); this.#timer = undefined; }
    const orphans = this.#orphans;
    this.#orphans = new Set();
    for (const org of this.#ready) {
      const t = this.#tracks.get(org);
      if (t && t.rows.length > 0 && !this.#deps.savepoint(() => { this.#apply(org); })) {
        t.rows = [];
        t.broken = true;
        this.#orphans.add(org);
      }
    }
    this.#ready.clear();
    for (const org of orphans) if (!this.#deps.savepoint(() => { this.seal(org); })) this.#orphans.add(org);
    if (this.#orphans.size > 0) this.#armApply();
  }

  /**
   * The transaction ended: committed later entries go to the thread, in runs (SEAL_DELAY_MS). Rows
   * it stored and did not commit are made again from the committed head (#pump starts over from
   * its sealed size).
   */
  ended(committed: boolean): void {
    const stored = this.#stored;
    if (stored.size > 0) this.#stored = new Set();
    if (!committed) for (const org of stored) this.#schedule(org);
    if (this.#touched.size === 0) return;
    const touched = this.#touched;
    this.#touched = new Set();
    if (!committed) return;
    for (const org of touched) this.#schedule(org);
  }

  readonly #pumpDue = (): void => {
    this.#pumpTimer = undefined;
    const due = this.#due;
    this.#due = new Set();
    for (const org of due) this.#pump(org);
  };

  /** Organizations that may hold later entries this process took (seal() them: it does nothing where there are none). */
  unsealed(): string[] {
    return [...new Set([...this.#tracks.keys(), ...this.#due, ...this.#orphans])];
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#pumpTimer) clearTimeout(this.#pumpTimer);
    this.#timer = this.#pumpTimer = undefined;
    await this.#pool?.close();
  }

  /** Stores the rows made for org's later entries, as far as they go; returns the head after. */
  #apply(org: string): LogHeadRow | undefined {
    const h = this.#deps.heads.take(org);
    const t = this.#tracks.get(org);
    if (!h?.later?.length || !t) return h;
    const base = sealedSize(h);
    const rows = t.rows.filter((r) => r.index >= base);
    t.rows = rows;
    const n = rows.length;
    if (n === 0) return h;
    // the rows must be exactly the head's first later entries, and all of what the thread made
    if (rows[0]!.index !== base || n > h.later.length || rows[n - 1]!.index !== t.size - 1 || rows.some((r, i) => r.activityId !== h.later![i]!.activityId)) {
      this.#reset(t, h);
      return h;
    }
    this.#deps.insert(rows, org);
    // stored in this transaction: should it roll back, the committed head still holds these entries and they are made again (ended)
    this.#stored.add(org);
    t.rows = [];
    logSealed.inc({ where: 'thread' }, n);
    const next = headWithLater(org, h.size, t.frontier, h.updatedMs, h.later.slice(n));
    this.#deps.heads.wrote(next);
    return next;
  }

  #reset(t: Track, h: LogHeadRow): void {
    t.size = sealedSize(h);
    t.frontier = h.frontier;
    t.rows = [];
  }

  /** Sends the committed later entries of org that no job covers yet to the thread. */
  #pump(org: string): void {
    const h = this.#deps.heads.committed(org);
    let t = this.#tracks.get(org);
    if (h === undefined) {
      // the head was dropped (another connection committed, or too many heads): its entries are
      // in the activities' rows only now; the next write group seals them from there
      this.#orphan(org);
      return;
    }
    if (!h.later?.length) {
      // nothing to seal: the organization's track goes (the next later entry makes a new one)
      if (t && !t.inFlight && t.rows.length === 0) this.#tracks.delete(org);
      return;
    }
    if (!t) {
      t = { size: sealedSize(h), frontier: h.frontier, rows: [], inFlight: false, broken: false };
      this.#tracks.set(org, t);
    }
    if (t.inFlight || t.broken) return;
    const base = sealedSize(h);
    t.rows = t.rows.filter((r) => r.index >= base);
    // what the thread made must start at the sealed size (else start again from it)
    if ((t.rows[0]?.index ?? t.size) !== base || t.size > h.size) this.#reset(t, h);
    const items = h.later.filter((i) => i.index >= t.size);
    if (items.length === 0) return;
    const job = { size: t.size, frontier: t.frontier, items: encodeLater(items) };
    if (!this.#pool?.post(org, (id) => ({ id, ...job }))) { t.broken = true; return; }
    t.inFlight = true;
  }

  #settled(org: string, reply: SealReply): void {
    const t = this.#tracks.get(org);
    if (!t) return;
    t.inFlight = false;
    if (!reply.ok) { this.#failed(org); return; }
    // a reset since the job left (a seal on the request thread) makes these rows stale
    const rows = unpackSealed(reply.rows);
    if (rows[0]?.index === t.size) {
      t.rows.push(...rows);
      t.size += rows.length;
      t.frontier = reply.frontier;
      this.#ready.add(org);
      this.#armApply();
    }
    // what was committed meanwhile goes in the next run, not at once: one message per SEAL_DELAY_MS
    this.#schedule(org);
  }

  /** Rows wait for the next write group; a write of their own starts if none comes within APPLY_IDLE_MS. */
  #armApply(): void {
    if (this.#closed) return;
    this.#timer ??= setTimeout(() => { this.#timer = undefined; this.#deps.write(); }, APPLY_IDLE_MS).unref();
  }

  #schedule(org: string): void {
    this.#due.add(org);
    this.#pumpTimer ??= setTimeout(this.#pumpDue, this.#deps.sealDelayMs ?? SEAL_DELAY_MS).unref();
  }

  /** The thread was lost with org's job: its entries are sealed on the request thread, at the next group's BEGIN. */
  #failed(org: string): void {
    const t = this.#tracks.get(org);
    if (t) { t.inFlight = false; t.broken = true; }
    this.#orphan(org);
  }

  /** org's later entries are sealed on the request thread at the next write group's BEGIN (one of its own if none comes). */
  #orphan(org: string): void {
    this.#orphans.add(org);
    this.#armApply();
  }
}

const EMPTY = new Uint8Array(0);
