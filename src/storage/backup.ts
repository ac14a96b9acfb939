/**
 * `kmas backup`: a consistent copy of DATA_DIR/kmas.sqlite taken with SQLite's online backup API,
 * so the server may keep serving (and committing) while it runs. The copy is written under a
 * temporary name created with mode 0600, switched to a rollback journal (one self-contained file,
 * nothing left beside it), checked (PRAGMA integrity_check, schema version), then linked into
 * place; an existing file is never overwritten.
 *
 * The copy holds private keys and mnemonics only sealed under the master key (src/crypto/atrest.ts):
 * restoring it needs the same master key (DATA_DIR/master.key or KMAS_MASTER_KEY), which the
 * backup deliberately does not contain.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';

export interface BackupSummary {
  file: string;
  bytes: number;
  schemaVersion: number;
  organizations: number;
  activities: number;
}

export async function backupDatabase(dbFile: string, outFile: string): Promise<BackupSummary> {
  if (!fs.existsSync(dbFile)) throw new Error(`no database at ${dbFile} (is --data-dir right?)`);
  const target = path.resolve(outFile);
  if (fs.existsSync(target)) throw new Error(`${target} exists; choose a new file (a backup never overwrites)`);
  const tmp = `${target}.${process.pid}.tmp`;
  // Made 0600 before a byte is in it (SQLite would create it 0644).
  fs.closeSync(fs.openSync(tmp, 'wx', 0o600));
  try {
    const src = new Database(dbFile, { fileMustExist: true });
    try {
      src.pragma('busy_timeout = 5000');
      await src.backup(tmp);
    } finally {
      src.close();
    }
    const copy = new Database(tmp, { fileMustExist: true });
    let summary: Omit<BackupSummary, 'file' | 'bytes'>;
    try {
      // The copy carries the source's WAL mode: as a single file it is a rollback-journal database
      // (kmas turns WAL on again when it opens it), and no -wal / -shm files are left beside it.
      copy.pragma('journal_mode = DELETE');
      const check = copy.pragma('integrity_check', { simple: true });
      if (check !== 'ok') throw new Error(`the copy failed SQLite's integrity check: ${String(check)}`);
      const count = (sql: string) => (copy.prepare(sql).get() as { n: number }).n;
      summary = {
        schemaVersion: count('SELECT MAX(version) AS n FROM schema_migrations'),
        organizations: count('SELECT COUNT(*) AS n FROM organizations'),
        activities: count('SELECT COUNT(*) AS n FROM activities'),
      };
    } finally {
      copy.close();
    }
    fs.linkSync(tmp, target); // fails, rather than overwrites, if the file appeared meanwhile
    return { file: target, bytes: fs.statSync(target).size, ...summary };
  } finally {
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`, `${tmp}-journal`]) fs.rmSync(f, { force: true });
  }
}
