// Which storage the server suites run on. KMAS_TEST_STORAGE=postgres (the vitest project
// "postgres"): every server a test starts keeps its state in a fresh database of the test
// PostgreSQL (test/storage/pgcluster.ts) with a master key of its own, both remembered beside
// its data dir, so that a restart with the same data dir (in-process or `kmas serve`) finds the
// same state. Unset: the embedded SQLite file in the data dir.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { freshDatabase } from '../storage/pgcluster.js';

/** The suite runs on the embedded SQLite file (tests that look into that file itself run only then). */
export const onSqlite = process.env.KMAS_TEST_STORAGE !== 'postgres';

export interface TestStorage { databaseUrl?: string; masterKey?: string }

export async function testStorage(dataDir: string): Promise<TestStorage> {
  if (onSqlite) return {};
  const file = `${dataDir}.storage.json`;
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as TestStorage;
  const storage = { databaseUrl: await freshDatabase(), masterKey: randomBytes(32).toString('hex') };
  writeFileSync(file, JSON.stringify(storage), { mode: 0o600 });
  return storage;
}

/** The same as environment variables, for a `kmas serve` process. */
export async function storageEnv(dataDir: string): Promise<Record<string, string>> {
  const s = await testStorage(dataDir);
  return s.databaseUrl === undefined ? {} : { DATABASE_URL: s.databaseUrl, KMAS_MASTER_KEY: s.masterKey! };
}
