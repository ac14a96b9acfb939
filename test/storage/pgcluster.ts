// PostgreSQL for the tests: KMAS_TEST_DATABASE_URL when set, else one throwaway cluster per test
// process (initdb in a temp dir, a free port on 127.0.0.1, fsync off), stopped and deleted when
// the process exits — also when it is killed: a watchdog shell outlives it for that. Without
// binaries and without a URL, testDatabaseUrl() gives undefined and the suite skips LOUDLY
// (missingPostgres prints the banner).
import { execFile, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { findPgBinaries, freeLoopbackPort, runPg, type PgBinaries } from '../../bench/pgcluster.js';

/** Whether the tests can have a PostgreSQL: a URL given, or binaries to start a cluster from. */
export function postgresAvailable(): boolean {
  return (process.env.KMAS_TEST_DATABASE_URL ?? '') !== '' || findPgBinaries() !== undefined;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * runPg (as the `postgres` system user when we are root) without blocking this process: a fault test's clients keep sending while PostgreSQL
 * stops or starts, as they would against a server that fails on its own.
 */
function runPgAsync(bin: string, args: string[], timeout = 60_000): Promise<void> {
  const [cmd, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { encoding: 'utf8', timeout }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${bin} ${args.join(' ')} failed (${err.code ?? err.signal}):\n${stdout}\n${stderr}`));
      else resolve();
    });
  });
}

async function startCluster(bins: PgBinaries): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-pg-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'postgres.log');
  if (isRoot) {
    const r = spawnSync('chown', ['postgres:', dir]);
    if (r.status !== 0) throw new Error(`chown postgres ${dir} failed: ${r.stderr?.toString() ?? ''}`);
  }
  const stop = () => {
    spawnSync(isRoot ? 'runuser' : bins.pgCtl, isRoot ? ['-u', 'postgres', '--', bins.pgCtl, 'stop', '-D', data, '-m', 'immediate'] : ['stop', '-D', data, '-m', 'immediate'], { timeout: 20_000 });
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    runPg(bins.initdb, ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
    const port = await freeLoopbackPort();
    // fsync=off loses nothing unless the machine itself crashes; commits stay synchronous, so a
    // server stopped with -m immediate (the fault tests) keeps every acknowledged commit.
    const startArgs = ['start', '-w', '-t', '60', '-D', data, '-l', log, '-o', `-c fsync=off -c listen_addresses=127.0.0.1 -p ${port} -k ${dir}`];
    runPg(bins.pgCtl, startArgs);
    control = { start: () => runPgAsync(bins.pgCtl, startArgs), stop: () => runPgAsync(bins.pgCtl, ['stop', '-D', data, '-m', 'immediate']) };
    process.once('exit', stop);
    // Should this process die without running its exit handlers (SIGKILL, a worker torn down),
    // the watchdog stops the cluster and removes its directory once the process is gone.
    const ctl = isRoot ? `runuser -u postgres -- '${bins.pgCtl}'` : `'${bins.pgCtl}'`;
    const watchdog = spawn('sh', ['-c',
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${ctl} stop -D '${data}' -m immediate >/dev/null 2>&1; rm -rf '${dir}'`],
    { detached: true, stdio: 'ignore' });
    watchdog.unref();
    return `postgres://postgres@127.0.0.1:${port}/postgres`;
  } catch (e) {
    const logText = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
    stop();
    throw new Error(`could not start a throwaway PostgreSQL cluster: ${(e as Error).message}\n${logText}`, { cause: e });
  }
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
    const bins = findPgBinaries();
    if (!bins) return undefined;
    throwaway = await startCluster(bins);
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
