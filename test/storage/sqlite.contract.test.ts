// The storage contract (contract.ts) on the embedded SQLite adapter, with a second connection to
// the same file standing for another process of a WORKERS pool.
import { afterAll } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db } from '../../src/storage/types.js';
import { storageContract } from './contract.js';

const dirs: string[] = [];
const files = new WeakMap<Db, string>();
afterAll(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

storageContract({
  name: 'sqlite',
  async open() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-contract-'));
    dirs.push(dir);
    const file = path.join(dir, 'kmas.sqlite');
    const db = openSqliteDb(file, { synchronous: 'NORMAL', multiProcess: true });
    files.set(db, file);
    return db;
  },
  async another(db) {
    return openSqliteDb(files.get(db)!, { synchronous: 'NORMAL', multiProcess: true });
  },
});
