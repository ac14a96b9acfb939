/**
 * Cursor pages of an organization's rows, newest first by the table's `seq` column (activities,
 * wallet accounts, secrets): `afterId` gives the older rows after that row, `beforeId` the newer
 * rows just before it (still newest first). A cursor that names no row of the organization gives
 * undefined (the caller's 404).
 */
import type Database from 'better-sqlite3';

export interface ListPage { limit: number; beforeId?: string; afterId?: string }

type Row = Record<string, unknown>;

// The cursor lookups, prepared once per connection and table.
const seqStatements = new WeakMap<Database.Database, Map<string, Database.Statement<[string, string], { seq: number }>>>();

function seqOf(db: Database.Database, table: string, organizationId: string, id: string): number | undefined {
  let byTable = seqStatements.get(db);
  if (!byTable) seqStatements.set(db, byTable = new Map());
  let stmt = byTable.get(table);
  if (!stmt) byTable.set(table, stmt = db.prepare<[string, string], { seq: number }>(`SELECT seq FROM ${table} WHERE organization_id = ? AND id = ?`));
  return stmt.get(organizationId, id)?.seq;
}

/** One page of `table`; `filters` / `args` narrow it further (SQL conditions with their values). */
export function pageBySeq(db: Database.Database, table: string, organizationId: string, page: ListPage, filters: string[] = [], args: unknown[] = []): Row[] | undefined {
  const where = ['organization_id = ?', ...filters];
  const values: unknown[] = [organizationId, ...args];
  for (const [cursor, op] of [[page.afterId, '<'], [page.beforeId, '>']] as const) {
    if (cursor === undefined) continue;
    const seq = seqOf(db, table, organizationId, cursor);
    if (seq === undefined) return undefined;
    where.push(`seq ${op} ?`);
    values.push(seq);
  }
  const ascending = page.beforeId !== undefined && page.afterId === undefined;
  values.push(page.limit);
  const rows = db.prepare(`SELECT * FROM ${table} WHERE ${where.join(' AND ')} ORDER BY seq ${ascending ? 'ASC' : 'DESC'} LIMIT ?`).all(...values) as Row[];
  if (ascending) rows.reverse();
  return rows;
}
