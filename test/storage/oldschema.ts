// A SQLite database as an earlier release left it: WAL mode and the migrations up to `version`
// applied and recorded, for tests that upgrade it to the current schema.
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../src/storage/migrations.js';

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
