/**
 * The SQLite adapter's log heads in memory: an append takes its organization's head without
 * deriving it from the entries' rows (there is no head row: logNodes.ts headFromNodes) when this
 * process wrote it last. One connection writes per process, one transaction at a time, so the
 * head this process committed is the head, unless:
 *   - another connection (a process of the pool, the CLI) committed since: the committed heads are
 *     a map of the row cache (rowcache.ts), dropped when PRAGMA data_version moves, checked at
 *     the first lookup of every write transaction (not when this process writes a cached table:
 *     that changes no head);
 *   - this transaction wrote it: heads written (or read) in a transaction are pending until it
 *     commits, and become the committed ones then; a rollback drops them;
 *   - a savepoint rolled back: the pending heads are dropped (the transaction's earlier appends
 *     stay, so an organization appended to in this transaction is derived from the entries again).
 * A head missing here is derived from the entries, so forgetting is always safe. The rows handed
 * out are shared: callers read them and never change them (appendActivity makes a new head).
 */
import type { LogHeadRow } from './types.js';
import type { RowCache } from './rowcache.js';

const MAX_HEADS = 10_000;

export class LogHeads {
  readonly #committed: Map<string, LogHeadRow>;
  #pending = new Map<string, LogHeadRow>();
  /** organizations appended to in this transaction (kept across savepoint rollbacks) */
  #touched = new Set<string>();

  constructor(private readonly cache: RowCache, private readonly read: (org: string) => LogHeadRow | undefined) {
    this.#committed = cache.map<LogHeadRow>({ ownWrites: false });
  }

  /** The head for an append in the current write transaction. */
  take(org: string): LogHeadRow | undefined {
    const pending = this.#pending.get(org);
    if (pending) return pending;
    if (!this.#touched.has(org)) {
      this.cache.check();
      const committed = this.#committed.get(org);
      if (committed) return committed;
    }
    const row = this.read(org);
    if (row) this.#pending.set(org, row);
    return row;
  }

  /** The head this process last committed for org, if it keeps one (read outside any transaction). */
  committed(org: string): LogHeadRow | undefined { return this.#committed.get(org); }

  /** The transaction wrote `row` (stored: the statements succeeded). */
  wrote(row: LogHeadRow): void {
    this.#pending.set(row.organizationId, row);
    this.#touched.add(row.organizationId);
  }

  /** The transaction changed an organization's log some other way: read its head again. */
  forget(org: string): void {
    this.#pending.delete(org);
    this.#touched.add(org);
  }

  rolledBackToSavepoint(): void { this.#pending.clear(); }

  ended(committed: boolean): void {
    if (committed) {
      for (const org of this.#touched) if (!this.#pending.has(org)) this.#committed.delete(org);
      if (this.#committed.size + this.#pending.size > MAX_HEADS) this.#committed.clear();
      for (const [org, row] of this.#pending) this.#committed.set(org, row);
    }
    this.#pending.clear();
    this.#touched.clear();
  }
}
