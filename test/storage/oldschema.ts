// A database as an earlier release left it, for tests that upgrade it to the current schema:
// SQLite (WAL mode and the migrations up to `version` applied and recorded), or PostgreSQL (the
// migrations up to `version`, then the rows the test writes in that layout).
import Database from 'better-sqlite3';
import pg from 'pg';
import { MIGRATIONS } from '../../src/storage/migrations.js';
import { migrateClient, PG_MIGRATIONS } from '../../src/storage/pgMigrations.js';

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
