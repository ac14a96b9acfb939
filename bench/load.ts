/**
 * Shared pieces of the HTTP benchmarks (http.ts, signing.ts, profile-pool.ts): the keep-alive
 * load loop (in this process, or in a process of its own: loadInChild), the trivial node:http
 * server they compare against, request stamping, percentiles, the median round, and writing
 * bench/results/. Not a benchmark itself (run.ts does not list it).
 */
import http from 'node:http';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { p256 } from '@noble/curves/nist.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { createPrivateKey, sign as nodeSign, type KeyObject } from 'node:crypto';

export interface Req { path: string; body: string; headers: Record<string, string> }
export interface LoadResult { wallMs: number; lat: number[]; errors: number }
export interface LoadOptions {
  /** collect the reply body (needed by `ok`); false drains it unread (default true) */
  readBody?: boolean;
  /** whether a reply counts as a success (default: status 200) */
  ok?: (status: number, body: string) => boolean;
}

const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

const signers = new Map<string, KeyObject>();

/** X-Stamp header value: P-256 (DER) signature of the body with the API key (node:crypto, key objects cached). */
export function stampBody(body: string, key: { publicKey: string; privateKey: string }): string {
  let signer = signers.get(key.privateKey);
  if (!signer) {
    const un = p256.Point.fromHex(key.publicKey).toBytes(false);
    signer = createPrivateKey({ format: 'jwk', key: { kty: 'EC', crv: 'P-256', d: Buffer.from(hexToBytes(key.privateKey)).toString('base64url'),
      x: Buffer.from(un.subarray(1, 33)).toString('base64url'), y: Buffer.from(un.subarray(33)).toString('base64url') } });
    signers.set(key.privateKey, signer);
  }
  const signature = nodeSign('sha256', Buffer.from(body, 'utf8'), signer).toString('hex');
  return b64url(JSON.stringify({ publicKey: key.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature }));
}

/** One POST over `agent` (Content-Length set from the body); the reply body is '' when readBody is false. */
export function post(agent: http.Agent, port: number, r: Req, readBody = true): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const q = http.request({ host: '127.0.0.1', port, method: 'POST', path: r.path, agent, headers: { ...r.headers, 'Content-Length': Buffer.byteLength(r.body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', readBody ? (c: Buffer) => chunks.push(c) : () => {});
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: readBody ? Buffer.concat(chunks).toString('utf8') : '' }));
      res.on('error', reject);
    });
    q.on('error', reject);
    q.end(r.body);
  });
}

/** A set of keep-alive clients: run() sends every request once; close() ends the connections. */
export interface LoadSession {
  run(reqs: Req[]): Promise<LoadResult>;
  close(): void;
}

/**
 * `concurrency` keep-alive node:http clients over one agent. Each run() sends every request once
 * and reports its wall time and per-request latency in ms; the connections a warm-up run opened
 * serve the timed run too, so its first requests meet no connection set-up.
 */
export function nodeClients(port: number, concurrency: number, opts: LoadOptions = {}): LoadSession {
  const readBody = opts.readBody ?? true;
  const ok = opts.ok ?? ((status: number) => status === 200);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const run = async (reqs: Req[]): Promise<LoadResult> => {
    const lat: number[] = new Array(reqs.length);
    let next = 0;
    let errors = 0;
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= reqs.length) return;
        const s = process.hrtime.bigint();
        const res = await post(agent, port, reqs[i]!, readBody);
        lat[i] = Number(process.hrtime.bigint() - s) / 1e6;
        if (!ok(res.status, res.body)) errors++;
      }
    }));
    return { wallMs: Number(process.hrtime.bigint() - t0) / 1e6, lat, errors };
  };
  return { run, close: () => agent.destroy() };
}

/**
 * The load generators: 'node' = node:http keep-alive clients (nodeClients() here; ≈ 200 µs of
 * CPU per request, like an application's own Node client), 'raw' = rawload.ts (pre-encoded
 * requests over plain sockets, a few tens of µs per request, like wrk or autocannon).
 */
export type LoadClient = 'node' | 'raw';

/**
 * nodeClients() (or rawload.ts rawClients, for client 'raw') from a separate process
 * (loadclient.ts), so that the server's event loop is its own: the first `warm` requests warm the
 * client, the connections and the server up, the rest are timed over the same connections. A
 * reply is an error unless it is a 200 (containing `expect`, when given).
 */
export function loadInChild(port: number, reqs: Req[], concurrency: number, warm: number, expect?: string, client: LoadClient = 'node'): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'kmas-bench-load-'));
  const file = join(dir, 'requests.json');
  writeFileSync(file, JSON.stringify(reqs));
  const script = join(dirname(fileURLToPath(import.meta.url)), 'loadclient.js');
  const args = [script, file, String(port), String(concurrency), String(warm), ...(expect ? [expect] : [])];
  return new Promise<LoadResult>((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1 << 28, env: { ...process.env, BENCH_CLIENT: client } }, (err, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      if (err) { reject(new Error(`load client failed: ${stderr || err.message}`)); return; }
      resolve(JSON.parse(stdout) as LoadResult);
    });
  });
}

/** Nearest-rank percentile of an ascending list (NaN when empty). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

/** The round with the median requests/s (the upper middle one for an even count). */
export function medianByRps<T extends { rps: number }>(rounds: T[]): T {
  const list = [...rounds].sort((a, b) => a.rps - b.rps);
  return list[Math.floor(list.length / 2)]!;
}

const TRIVIAL_SOURCE = `
const http = require('node:http');
const fixed = process.argv[1];
const burnMs = Number(process.argv[2] || 0) / 1000;
const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    if (burnMs > 0) { const t = performance.now(); while (performance.now() - t < burnMs); }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(fixed) }); res.end(fixed);
  });
});
server.listen(0, '127.0.0.1', () => process.send(server.address().port));
process.on('disconnect', () => process.exit(0));
`;

/**
 * A node:http server on 127.0.0.1 answering every POST with the fixed JSON body (the ceiling), in
 * a process of its own: the garbage and threads of the servers under test do not slow it down.
 * With burnUs > 0 it first spins that long per request (a calibration: an ideal server with a
 * fixed CPU cost, served in arrival order).
 */
export async function startTrivial(fixed: string, burnUs = 0): Promise<{ port: number; close: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-e', TRIVIAL_SOURCE, fixed, String(burnUs)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve(Number(m)));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`trivial server exited (${code})`)));
  });
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) { resolve(); return; }
      child.once('exit', () => resolve());
      child.disconnect();
    }),
  };
}

export interface ServerProcessOptions {
  /** added to this process's environment (e.g. DATABASE_URL, KMAS_MASTER_KEY) */
  env?: Record<string, string>;
  /** the root API key when this node did not create the root organization */
  rootKey?: { publicKey: string; privateKey: string };
}

/** A kmas server started as users start it (bin/kmas.js serve), in a process of its own. */
export interface ServerProcess {
  port: number;
  /** the server process (its CPU time: cpuSeconds) */
  pid: number;
  dataDir: string;
  organizationId: string;
  rootKey: { publicKey: string; privateKey: string };
  stop(): Promise<void>;
}

/**
 * Starts `bin/kmas.js serve` on a free loopback port with a fresh DATA_DIR, `flags` added (e.g.
 * ['--sign-workers', '0']), logging off; resolves once /readyz answers 200.
 */
/** `kmas serve` of this checkout, or of another one (`bin`: its bin/kmas.js, e.g. a baseline build). */
export async function startServerProcess(flags: string[] = [], bin = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'kmas.js'), opts: ServerProcessOptions = {}): Promise<ServerProcess> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'kmas-bench-server-'));
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), bin, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--log-level', 'silent',
    // a load generator is one client with one key: the rate limits would measure themselves
    '--rate-limit-api-key', '0', '--rate-limit-organization', '0', ...flags],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...opts.env } });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => { if (stderr.length < 10_000) stderr += c.toString('utf8'); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const agent = new http.Agent({ keepAlive: false });
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`kmas serve exited with code ${child.exitCode}`);
      const ok = await get(agent, port, '/readyz').then((st) => st === 200, () => false);
      if (ok) break;
      if (i > 300) throw new Error('kmas serve did not become ready');
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${(e as Error).message}${stderr ? `\n${stderr}` : ''}`);
  } finally {
    agent.destroy();
  }
  const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as { organizationId: string };
  // a node joining a database another node bootstrapped gets no key file: it is given the key
  const rootKey = opts.rootKey ?? JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8')) as { publicKey: string; privateKey: string };
  return {
    port, pid: child.pid!, dataDir, organizationId: boot.organizationId, rootKey,
    async stop() {
      if (child.exitCode === null) { child.kill('SIGTERM'); await exited; }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** CPU seconds a process has used so far, all its threads (user + system, from /proc; Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after the command name, which is in parentheses and may hold spaces
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
}
/** USER_HZ: the unit of /proc's CPU times (100 on Linux's common configurations). */
const CLOCK_TICKS = 100;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
  });
}

function get(agent: http.Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const q = http.request({ host: '127.0.0.1', port, method: 'GET', path, agent }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
    q.on('error', reject);
    q.end();
  });
}

/**
 * A benchmark's outcome: its markdown printed (unless print is false) and, unless write is false,
 * bench/results/<name>-<date>.json (the result) and <name>-latest.md (the markdown).
 */
export function publish(name: string, result: { date: string }, md: string, opts: { print?: boolean; write?: boolean }): void {
  if (opts.print !== false) console.log(md);
  if (opts.write !== false) {
    writeResults({ [`${name}-${result.date.slice(0, 10)}.json`]: JSON.stringify(result, null, 2) + '\n', [`${name}-latest.md`]: md + '\n' });
  }
}

/** Writes files into <repo>/bench/results/ (created if missing), name → content. */
export function writeResults(files: Record<string, string>): void {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
}
