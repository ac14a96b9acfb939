/**
 * DATA_DIR's permissions. The keys in the database are sealed under the master key, but the rest
 * (users, e-mail addresses, policies, activities) is for kmas's own user only: the directory is
 * created 0700 and the database files 0600 (openSqliteStore creates the database 0600; SQLite
 * gives its -wal and -shm files the database's mode). An installation made before this, with
 * 0755 / 0644, is tightened at start, and each change is logged.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/** Creates DATA_DIR (0700) or tightens it and the database files in it; logs what it changed. */
export function prepareDataDir(dataDir: string, dbFile: string, log: Pick<Logger, 'warn'>): void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (process.platform === 'win32') return; // modes do not apply; ACLs are the directory's
  const tighten = (file: string, mode: number) => {
    let st: fs.Stats;
    try { st = fs.statSync(file); } catch { return; }
    if ((st.mode & 0o777 & ~mode) === 0) return;
    fs.chmodSync(file, mode);
    log.warn('tightened the permissions of a data file (others on this host could read it)', { file, from: octal(st.mode), to: octal(mode) });
  };
  tighten(dataDir, 0o700);
  const db = path.join(dataDir, dbFile);
  for (const f of [db, `${db}-wal`, `${db}-shm`]) tighten(f, 0o600);
}
