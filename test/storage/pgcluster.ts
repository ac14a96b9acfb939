// PostgreSQL for the tests: KMAS_TEST_DATABASE_URL when set, else one throwaway cluster per test
// process (initdb in a temp dir, a free port on 127.0.0.1, fsync off), stopped and deleted when
// the process exits — also when it is killed: a watchdog shell outlives it for that. Without
// binaries and without a URL, testDatabaseUrl() gives undefined and the suite skips LOUDLY
// (missingPostgres prints the banner).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { findPgBinaries, startPgCluster } from '../../bench/pgcluster.js';

/** Whether the tests can have a PostgreSQL: a URL given, or binaries to start a cluster from. */
export function postgresAvailable(): boolean {
  return (process.env.KMAS_TEST_DATABASE_URL ?? '') !== '' || findPgBinaries() !== undefined;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * fsync=off loses nothing unless the machine itself crashes; commits stay synchronous, so a server
 * stopped with -m immediate (the fault tests) keeps every acknowledged commit.
 */
async function startCluster(): Promise<string> {
  const c = await startPgCluster({ noFsync: true });
  control = { start: c.startAsync, stop: c.stopAsync };
  process.once('exit', () => c.destroy());
  // Should this process die without running its exit handlers (SIGKILL, a worker torn down),
  // the watchdog stops the cluster and removes its directory once the process is gone.
  const ctl = isRoot ? `runuser -u postgres -- '${c.pgCtl}'` : `'${c.pgCtl}'`;
  const watchdog = spawn('sh', ['-c',
    `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${ctl} stop -D '${c.data}' -m immediate >/dev/null 2>&1; rm -rf '${c.dir}'`],
  { detached: true, stdio: 'ignore' });
  watchdog.unref();
  return c.url;
}

/** the throwaway cluster's pg_ctl start / stop -m immediate (same port and data) */
let control: { start(): Promise<void>; stop(): Promise<void> } | undefined;
let cluster: Promise<string | undefined> | undefined;
/** the throwaway cluster's URL (its databases go with it) */
let throwaway: string | undefined;
/** databases freshDatabase() made on a server given by KMAS_TEST_DATABASE_URL */
const created: string[] = [];

/**
 * The server the PostgreSQL suites use (a URL of its maintenance database), or undefined when
 * there is none: then the caller skips loudly (missingPostgres).
 */
export function testDatabaseUrl(): Promise<string | undefined> {
  cluster ??= (async () => {
    const url = process.env.KMAS_TEST_DATABASE_URL;
    if (url) return url;
    if (!findPgBinaries()) return undefined;
    throwaway = await startCluster();
    return throwaway;
  })();
  return cluster;
}

/** A new, empty database (CREATE DATABASE kmas_t_<random>) on that server; its URL. */
export async function freshDatabase(): Promise<string> {
  const base = await testDatabaseUrl();
  if (!base) throw new Error('no PostgreSQL for the tests (see testDatabaseUrl)');
  const name = `kmas_t_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    if (base !== throwaway) created.push(name);
  } finally {
    await admin.end();
  }
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Drops the databases freshDatabase() made on a server of KMAS_TEST_DATABASE_URL (call it in
 * afterAll, once their pools are closed); nothing to do on a throwaway cluster.
 */
export async function dropFreshDatabases(): Promise<void> {
  const base = await testDatabaseUrl();
  if (!base || created.length === 0) return;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    for (const name of created.splice(0)) await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  } finally {
    await admin.end();
  }
}

/**
 * Stops the throwaway cluster abruptly (pg_ctl stop -m immediate) or starts it again on the same
 * port, for fault tests. false when the server is not ours (KMAS_TEST_DATABASE_URL) or there is none.
 */
export async function controlTestCluster(action: 'stop' | 'start'): Promise<boolean> {
  const base = await testDatabaseUrl();
  if (!base || base !== throwaway || !control) return false;
  await control[action]();
  return true;
}

/** Prints the banner of a PostgreSQL suite that cannot run and returns the title of its skipped test. */
export function missingPostgres(what: string): string {
  const bar = '!'.repeat(100);
  console.warn(
    `\n${bar}\nWARNING: no PostgreSQL — ${what} is SKIPPED, NOT PASSED.\n` +
      'Set KMAS_TEST_DATABASE_URL, or install the PostgreSQL server binaries (initdb, pg_ctl; apt-get install -y postgresql on Debian).\n' +
      `${bar}\n`,
  );
  return `WARNING: ${what} NOT RUN — no PostgreSQL (set KMAS_TEST_DATABASE_URL or install postgresql)`;
}
