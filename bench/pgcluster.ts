/**
 * A throwaway PostgreSQL cluster for the benchmarks: initdb in a temp dir (as the `postgres`
 * system user when we run as root: initdb refuses root), a free loopback port, durable by default
 * (fsync and synchronous commit on, as a deployment runs it, so it is compared fairly with SQLite's
 * synced commits). Its CPU time, postmaster and backends together, comes from /proc.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface PgBinaries { initdb: string; pgCtl: string }

/** initdb and pg_ctl from one directory: /usr/local/bin, Debian's newest /usr/lib/postgresql/N/bin, then PATH. */
export function findPgBinaries(): PgBinaries | undefined {
  const dirs = ['/usr/local/bin'];
  try {
    const versions = fs.readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    dirs.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch { /* no Debian layout */ }
  dirs.push(...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean));
  for (const dir of dirs) {
    const initdb = path.join(dir, 'initdb');
    const pgCtl = path.join(dir, 'pg_ctl');
    if (fs.existsSync(initdb) && fs.existsSync(pgCtl)) return { initdb, pgCtl };
  }
  return undefined;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a PostgreSQL binary, as the `postgres` system user when we are root. */
export function runPg(bin: string, args: string[], timeout = 60_000): void {
  const [cmd, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
}

/**
 * runPg without blocking this process: a fault test's clients keep sending while PostgreSQL stops
 * or starts, as they would against a server that fails on its own.
 */
export function runPgAsync(bin: string, args: string[], timeout = 60_000): Promise<void> {
  const [cmd, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { encoding: 'utf8', timeout }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${bin} ${args.join(' ')} failed (${err.code ?? err.signal}):\n${stdout}\n${stderr}`));
      else resolve();
    });
  });
}

export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface PgCluster {
  /** the maintenance database's URL */
  url: string;
  /** the directory holding data/ and postgres.log */
  dir: string;
  data: string;
  /** the pg_ctl it runs (as the `postgres` system user when we are root) */
  pgCtl: string;
  /** pg_ctl start again (same port and data) */
  start(): void;
  /** pg_ctl stop -m immediate */
  stop(): void;
  /** the same two without blocking this process */
  startAsync(): Promise<void>;
  stopAsync(): Promise<void>;
  /** stops it and deletes its directory */
  destroy(): void;
  /** CPU seconds of the postmaster and every backend, those that have exited included */
  cpuSeconds(): number;
}

export interface PgClusterOptions {
  /** fsync=off (tests): loses nothing unless the machine itself crashes */
  noFsync?: boolean;
  /** more `-c name=value` settings */
  settings?: string[];
}

const CLOCK_TICKS = 100;

/** One process's own CPU and, for the postmaster, that of its exited children (waited for). */
function procCpu(pid: number, withChildren: boolean): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = Number(f[11]) + Number(f[12]);
    return (withChildren ? own + Number(f[13]) + Number(f[14]) : own) / CLOCK_TICKS;
  } catch { return 0; }
}

/** Live children of a process (from /proc/<pid>/stat's ppid). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid) out.push(Number(e));
    } catch { /* gone */ }
  }
  return out;
}

export async function startPgCluster(opts: PgClusterOptions = {}): Promise<PgCluster> {
  const bins = findPgBinaries();
  if (!bins) throw new Error('no PostgreSQL binaries (initdb, pg_ctl): apt-get install -y postgresql');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-pg-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'postgres.log');
  if (isRoot) {
    const r = spawnSync('chown', ['postgres:', dir]);
    if (r.status !== 0) throw new Error(`chown postgres ${dir} failed: ${r.stderr?.toString() ?? ''}`);
  }
  const port = await freeLoopbackPort();
  const settings = [...(opts.noFsync ? ['fsync=off'] : []), 'listen_addresses=127.0.0.1', ...(opts.settings ?? [])];
  const startArgs = ['start', '-w', '-t', '60', '-D', data, '-l', log, '-o', `${settings.map((s) => `-c ${s}`).join(' ')} -p ${port} -k ${dir}`];
  const stopArgs = ['stop', '-D', data, '-m', 'immediate'];
  const start = () => runPg(bins.pgCtl, startArgs);
  const stop = () => runPg(bins.pgCtl, stopArgs);
  const destroy = () => {
    try { stop(); } catch { /* not running */ }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    runPg(bins.initdb, ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', ...(opts.noFsync ? ['--no-sync'] : [])]);
    start();
  } catch (e) {
    const logText = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
    destroy();
    throw new Error(`could not start a throwaway PostgreSQL cluster: ${(e as Error).message}\n${logText}`, { cause: e });
  }
  const postmaster = () => Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`, dir, data, pgCtl: bins.pgCtl, start, stop, destroy,
    startAsync: () => runPgAsync(bins.pgCtl, startArgs),
    stopAsync: () => runPgAsync(bins.pgCtl, stopArgs),
    cpuSeconds() {
      const pm = postmaster();
      return procCpu(pm, true) + childrenOf(pm).reduce((a, pid) => a + procCpu(pid, false), 0);
    },
  };
}
