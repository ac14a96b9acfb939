/**
 * Cursor pages of an organization's rows, newest first by the table's `seq` column (activities,
 * wallet accounts, secrets): `afterId` gives the older rows after that row, `beforeId` the newer
 * rows just before it (still newest first). A cursor that names no row of the organization gives
 * undefined (the caller's 404).
 */
import type Database from 'better-sqlite3';

export interface ListPage { limit: number; beforeId?: string; afterId?: string }

type Row = Record<string, unknown>;

/** One page of `table`; `filters` / `args` narrow it further (SQL conditions with their values). */
export type PageBySeq = (table: string, organizationId: string, page: ListPage, filters?: string[], args?: unknown[]) => Row[] | undefined;

/** Pages over one connection; its cursor lookups are prepared once per table. */
export function pagerOf(db: Database.Database): PageBySeq {
  const seqStatements = new Map<string, Database.Statement<[string, string], { seq: number }>>();
  const seqOf = (table: string, organizationId: string, id: string): number | undefined => {
    let stmt = seqStatements.get(table);
    if (!stmt) seqStatements.set(table, stmt = db.prepare<[string, string], { seq: number }>(`SELECT seq FROM ${table} WHERE organization_id = ? AND id = ?`));
    return stmt.get(organizationId, id)?.seq;
  };
  return (table, organizationId, page, filters = [], args = []) => pageBySeq(db, seqOf, table, organizationId, page, filters, args);
}

function pageBySeq(db: Database.Database, seqOf: (table: string, organizationId: string, id: string) => number | undefined,
  table: string, organizationId: string, page: ListPage, filters: string[], args: unknown[]): Row[] | undefined {
  const where = ['organization_id = ?', ...filters];
  const values: unknown[] = [organizationId, ...args];
  for (const [cursor, op] of [[page.afterId, '<'], [page.beforeId, '>']] as const) {
    if (cursor === undefined) continue;
    const seq = seqOf(table, organizationId, cursor);
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
