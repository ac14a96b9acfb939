import { configDefaults, defineConfig } from 'vitest/config';

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

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      { extends: true, test: { name: 'all', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/core/debug-build.test.ts'] } },
      { extends: true, test: { name: 'core-debug', include: DEBUG_CORE_TESTS, env: { KMAS_CORE_BUILD: 'debug' } } },
    ],
  },
});
