// A database as an earlier release left it, for tests that upgrade it to the current schema:
// SQLite (WAL mode and the migrations up to `version` applied and recorded), or PostgreSQL (the
// migrations up to `version`, then the rows the test writes in that layout).
import Database from 'better-sqlite3';
import pg from 'pg';
import { MIGRATIONS } from '../../src/storage/migrations.js';
import { migrateClient, PG_MIGRATIONS } from '../../src/storage/pgMigrations.js';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db } from '../../src/storage/types.js';

export function sqliteAtVersion(file: string, version: number): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)');
  for (const m of MIGRATIONS.filter((x) => x.version <= version)) {
    db.exec(m.sql);
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, 1);
  }
  return db;
}

/**
 * Opens `file` with the current code (which applies the pending migrations), shows its tables
 * read-only to `inspect`, then the Db to `check`; closes both.
 */
export async function afterSqliteUpgrade(file: string, inspect: (raw: Database.Database) => void, check: (db: Db) => Promise<void>): Promise<void> {
  const db = openSqliteDb(file, { multiProcess: false });
  try {
    const raw = new Database(file, { readonly: true });
    try {
      inspect(raw);
    } finally { raw.close(); }
    await check(db);
  } finally {
    await db.close();
  }
}

/** Migrates the PostgreSQL database at `url` up to `version`, then runs `fill` in one transaction. */
export async function postgresAtVersion(url: string, version: number, fill: (c: pg.Client) => Promise<void>): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await migrateClient(c, PG_MIGRATIONS.filter((m) => m.version <= version));
    await c.query('BEGIN');
    await fill(c);
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
}
