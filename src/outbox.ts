/**
 * The loop behind the work kmas does after a reply, from rows of the store that come due at a
 * time (webhook deliveries and e-mails in webhooks.ts, sent transactions in broadcaster.ts):
 * look only at what is on disk, take each due row under a lease (so the processes of a WORKERS
 * pool never work on one row at once, and a row whose process died comes due again), run at most
 * `maxInFlight` at once, and sleep until the next row is due — at most `pollMs`, since rows other
 * processes or nodes write do not wake this one.
 */
import type { Logger } from './log.js';
import type { Db } from './storage/types.js';

/** What one attempt at a delivery row came to (a webhook POST, an e-mail). */
export type Outcome = { kind: 'delivered' | 'retry' | 'refused'; reason: string };

export interface LeasedRows<R extends { id: string }> {
  /** Rows due at nowMs, earliest first. */
  due(nowMs: number, limit: number): Promise<R[]>;
  /** Takes a due row for this process until untilMs (a write of its own); false when another has it. */
  claim(row: R, untilMs: number): Promise<boolean>;
  /** When the earliest row is due (undefined: none waits). */
  nextDueMs(): Promise<number | undefined>;
  /** Gives a row claimed until untilMs back (due now, for any process), unless it moved since. */
  release(row: R, untilMs: number): Promise<void>;
}

export interface OutboxOptions {
  /** what the rows are, for the log */
  what: string;
  maxInFlight: number;
  /** how long a claimed row stays this process's */
  leaseMs: number;
  /**
   * The longest this process sleeps without looking at the store, also when no row is due: only
   * its own commits kick it, so rows another process enqueued (a WORKERS pool's, another node's on
   * PostgreSQL) or left under a lease when it died would otherwise wait for the next kick.
   */
  pollMs: number;
}

export class Outbox<R extends { id: string }> {
  readonly #inFlight = new Map<string, { row: R; until: number; done: Promise<void> }>();
  #scheduled = false;
  #pumping = false;
  /** Resolves when the look for due rows under way (if any) has ended. */
  #pumped: Promise<void> = Promise.resolve();
  #again = false;
  /** The last look found due rows still under way here (their lease ended before their work): their end kicks. */
  #overdueHere = false;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly rows: LeasedRows<R>,
    private readonly work: (row: R) => Promise<void>,
    private readonly log: Logger,
    private readonly opts: OutboxOptions,
  ) {}

  get closed(): boolean { return this.#closed; }

  /** Looks for due rows soon (after the current turn, whose commit may still be open). */
  kick(): void {
    if (this.#closed || this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => { this.#scheduled = false; void this.#pump(); });
  }

  async #pump(): Promise<void> {
    if (this.#pumping) { this.#again = true; return; }
    this.#pumping = true;
    let ended!: () => void;
    this.#pumped = new Promise<void>((resolve) => { ended = resolve; });
    try {
      do {
        this.#again = false;
        // Act only on what is on disk.
        await this.db.durable();
        if (this.#closed) return;
        const room = this.opts.maxInFlight - this.#inFlight.size;
        if (room <= 0) break; // a row that ends kicks again
        const now = Date.now();
        this.#overdueHere = false;
        for (const row of await this.rows.due(now, room)) {
          if (this.#inFlight.has(row.id)) { this.#overdueHere = true; continue; }
          const until = now + this.opts.leaseMs;
          if (!await this.rows.claim(row, until)) continue;
          if (this.#closed) {
            // close() came while the row was being claimed: it is not started, but given back
            await this.rows.release(row, until);
            break;
          }
          const done = this.work(row).catch((e: unknown) => {
            this.log.error(`${this.opts.what} bookkeeping failed`, { id: row.id, error: e instanceof Error ? e.message : String(e) });
          }).finally(() => {
            this.#inFlight.delete(row.id);
            this.kick();
          });
          this.#inFlight.set(row.id, { row, until, done });
        }
      } while (this.#again && !this.#closed);
    } catch (e) {
      // The store failed (a lost connection, a statement timeout, its fsync): the rows stay, and
      // the timer below looks again (after at most pollMs), as it would with no row due.
      this.log.error(`${this.opts.what} stopped`, { error: e instanceof Error ? e.message : String(e) });
    } finally {
      this.#pumping = false;
      ended();
    }
    await this.#arm();
  }

  /** A timer for the next due row that is not in flight here. */
  async #arm(): Promise<void> {
    if (this.#closed) return;
    if (this.#timer) { clearTimeout(this.#timer); this.#timer = undefined; }
    // All slots busy: the row that ends first kicks again (a timer now would only spin).
    if (this.#inFlight.size >= this.opts.maxInFlight) return;
    let next: number | undefined;
    try {
      next = await this.rows.nextDueMs();
    } catch (e) {
      // not known: look again after pollMs (a timer is always set, or nothing would look again)
      this.log.error(`${this.opts.what}: could not look for the next due row`, { error: e instanceof Error ? e.message : String(e) });
    }
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    // A due row that is under way here would fire the timer at once, turn after turn, until its work
    // ends (which kicks anyway): then the next look is after pollMs.
    const dueIn = next === undefined ? undefined : next - Date.now();
    const wait = dueIn === undefined || (dueIn <= 0 && this.#overdueHere) ? this.opts.pollMs : Math.min(Math.max(0, dueIn), this.opts.pollMs);
    this.#timer = setTimeout(() => { this.#timer = undefined; this.kick(); }, wait);
    this.#timer.unref();
  }

  /**
   * Takes no more rows (a row being claimed meanwhile is given back, not started); resolves when
   * the rows under way are done, or after `graceMs`: then the
   * rows still under way are released (due again at once, for another process or the next start;
   * what their work does after that is at most a repeat, which the outbox allows anyway).
   */
  async close(graceMs = Infinity): Promise<void> {
    this.#closed = true;
    if (this.#timer) { clearTimeout(this.#timer); this.#timer = undefined; }
    let timer: NodeJS.Timeout | undefined;
    const late = Number.isFinite(graceMs) ? new Promise<'late'>((r) => { timer = setTimeout(() => r('late'), graceMs); }) : undefined;
    const within = <T>(p: Promise<T>) => (late ? Promise.race([p, late]) : p);
    // a look under way starts nothing more once it sees #closed (what it claimed is given back):
    // then the rows under way are all in #inFlight
    let outcome = await within(this.#pumped);
    if (outcome !== 'late') outcome = await within(Promise.allSettled([...this.#inFlight.values()].map((f) => f.done)).then(() => undefined));
    if (timer) clearTimeout(timer);
    if (outcome !== 'late') return;
    for (const { row, until } of this.#inFlight.values()) {
      try {
        await this.rows.release(row, until);
        this.log.warn(`${this.opts.what}: work cut off by shutdown; released`, { id: row.id });
      } catch (e) {
        this.log.error(`${this.opts.what}: could not release a row`, { id: row.id, error: e instanceof Error ? e.message : String(e) });
      }
    }
    this.#inFlight.clear();
  }
}
