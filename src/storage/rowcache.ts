/**
 * Caches of rows every request reads and few requests write: API keys by public key, the
 * organization and user a request acts as, and the signing key it names. Correctness rules:
 *   - every write of a cached table through this store calls clear() (also inside a transaction
 *     that is later rolled back: clearing is always safe);
 *   - a row is cached only when it is committed: outside a transaction, or inside one before it
 *     wrote any cached table (a write transaction starts from the latest commit);
 *   - everything is dropped when another connection (another process of the pool, the CLI) has
 *     committed (PRAGMA data_version), checked at the first lookup of every write transaction
 *     (so a transaction never acts on rows older than the commit it starts from) and otherwise
 *     once per turn of the event loop (a read may see the state as of the start of its turn);
 *   - callers get copies, so nothing they do to a row reaches the cache.
 * Time-dependent checks (API key expiry) are never cached: callers make them on every request.
 */
import type Database from 'better-sqlite3';

const MAX_ENTRIES = 10_000;

export class RowCache {
  readonly #maps: Map<string, unknown>[] = [];
  /** maps cleared only when another connection committed (map({ ownWrites: false })) */
  readonly #otherMaps: Map<string, unknown>[] = [];
  readonly #db: Database.Database;
  readonly #dataVersion: Database.Statement<[], number>;
  #seenVersion: number;
  #checkedThisTurn = false;
  #checkedThisTransaction = false;
  #dirtyInTransaction = false;
  readonly #endTurn = () => { this.#checkedThisTurn = false; };

  constructor(db: Database.Database) {
    this.#db = db;
    this.#dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.#seenVersion = this.#dataVersion.get()!;
  }

  /**
   * A new map of this cache, cleared with the others; `ownWrites: false` for one whose values this
   * process's writes of the cached tables cannot change (the log heads): it is cleared only when
   * another connection committed.
   */
  map<T>(opts: { ownWrites?: boolean } = {}): Map<string, T> {
    const m = new Map<string, T>();
    (opts.ownWrites === false ? this.#otherMaps : this.#maps).push(m as Map<string, unknown>);
    return m;
  }

  /** Drops every cached row; call on every write of a cached table. */
  clear(): void {
    for (const m of this.#maps) m.clear();
    if (this.#db.inTransaction) this.#dirtyInTransaction = true;
  }

  /** The outermost transaction ended (committed or rolled back). */
  transactionEnded(): void {
    this.#dirtyInTransaction = false;
    this.#checkedThisTransaction = false;
  }

  /**
   * The cached value for key, else load() (cached when committed). undefined is not cached.
   * `copy` makes the caller's copy (default: a shallow copy of a row object).
   */
  get<T>(map: Map<string, T>, key: string, load: () => T | undefined, copy: (v: T) => T = shallow): T | undefined {
    this.#fresh();
    let v = map.get(key);
    if (v === undefined) {
      v = load();
      if (v === undefined) return undefined;
      if (!this.#db.inTransaction || !this.#dirtyInTransaction) {
        if (map.size >= MAX_ENTRIES) map.clear();
        map.set(key, v);
      }
    }
    return copy(v);
  }

  /** Drops everything if another connection committed since the last check (once per write transaction, as get() does). */
  check(): void { this.#fresh(); }

  /** Drops everything if another connection committed since the last check. */
  #fresh(): void {
    if (this.#db.inTransaction) {
      if (this.#checkedThisTransaction) return;
      this.#checkedThisTransaction = true;
    } else {
      if (this.#checkedThisTurn) return;
      this.#checkedThisTurn = true;
      setImmediate(this.#endTurn);
    }
    const v = this.#dataVersion.get()!;
    if (v !== this.#seenVersion) {
      this.#seenVersion = v;
      for (const m of this.#maps) m.clear();
      for (const m of this.#otherMaps) m.clear();
    }
  }
}

function shallow<T>(v: T): T {
  return Array.isArray(v) ? (v.map((r: object) => ({ ...r })) as T) : ({ ...(v as object) } as T);
}
