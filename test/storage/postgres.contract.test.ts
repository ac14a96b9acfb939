// The storage contract (contract.ts) on the PostgreSQL adapter: every case on a database of its
// own, with a second pool on the same database standing for another kmas node. PostgreSQL comes
// from pgcluster.ts (KMAS_TEST_DATABASE_URL, or a throwaway cluster); without one the suite is
// skipped loudly, never passed.
import { afterAll, it } from 'vitest';
import { openPostgresDb } from '../../src/storage/postgres.js';
import type { Db } from '../../src/storage/types.js';
import { storageContract } from './contract.js';
import { dropFreshDatabases, freshDatabase, missingPostgres, testDatabaseUrl } from './pgcluster.js';

const server = await testDatabaseUrl();

if (server === undefined) {
  it.skip(missingPostgres('the storage contract on PostgreSQL'), () => undefined); // visible in the report as skipped, never as passed
} else {
  const urls = new WeakMap<Db, string>();
  afterAll(dropFreshDatabases);
  storageContract({
    name: 'postgres',
    async open() {
      const url = await freshDatabase();
      const db = await openPostgresDb(url);
      urls.set(db, url);
      return db;
    },
    async another(db) {
      return openPostgresDb(urls.get(db)!);
    },
  });
}
