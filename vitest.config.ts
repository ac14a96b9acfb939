import { configDefaults, defineConfig } from 'vitest/config';
import { postgresAvailable } from './test/storage/pgcluster.js';

// The core's vector and differential tests run twice: on build/kmas.wasm with everything else
// (project `all`), and on build/debug.wasm with its representation checks on (project
// `core-debug`, see test/core/build.ts), as libsecp256k1 runs its tests with VERIFY.
const DEBUG_CORE_TESTS = [
  'test/core/differential-*.test.ts',
  'test/core/wycheproof.test.ts',
  'test/core/rfc6979.test.ts',
  'test/core/edges.test.ts',
  'test/core/batch.test.ts',
  'test/core/hash.test.ts',
  'test/core/debug-build.test.ts',
];

// The API and server suites run a second time with every server they start on PostgreSQL
// (project `postgres`, KMAS_TEST_STORAGE=postgres: test/server/teststorage.ts): a throwaway
// cluster per test process, or KMAS_TEST_DATABASE_URL. Tests that look into the SQLite file itself
// run on SQLite only (onSqlite).
const POSTGRES_SUITES = ['test/api/**/*.test.ts', 'test/server/**/*.test.ts'];
// suites there that start no server: once is enough
const STORAGE_FREE = ['test/server/swagger.test.ts', 'test/server/checks.test.ts', 'test/server/workerpool.test.ts', 'test/server/verifypool.test.ts', 'test/server/httpserver.test.ts'];
const withPostgres = postgresAvailable();
if (!withPostgres) {
  const bar = '!'.repeat(100);
  console.warn(`\n${bar}\nWARNING: no PostgreSQL (no KMAS_TEST_DATABASE_URL, no initdb / pg_ctl found) — the API and server suites on\nPostgreSQL (project "postgres") are SKIPPED, NOT PASSED. Install Debian's postgresql (.ci/run does).\n${bar}\n`);
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/core/debug-build.test.ts'] } },
      { extends: true, test: { name: 'core-debug', include: DEBUG_CORE_TESTS, env: { KMAS_CORE_BUILD: 'debug' } } },
      ...(withPostgres ? [{ extends: true, test: { name: 'postgres', include: POSTGRES_SUITES, exclude: [...configDefaults.exclude, ...STORAGE_FREE], env: { KMAS_TEST_STORAGE: 'postgres' } } }] : []),
    ],
  },
});
