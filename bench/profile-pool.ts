/**
 * Request path: one server process vs a process pool (WORKERS=n), in the same run, with the same
 * method as bench/http.ts (load generator in this process, loopback, keep-alive node:http clients,
 * requests stamped before timing) and a trivial node:http server as the ceiling.
 * Scenarios: stamped whoami, stamped submit (create_user_tag), stamped sign_raw_payload
 * (secp256k1, distinct payloads) and sign_raw_payloads ×100.
 *
 * Run (needs the compiled build: the pool's workers run dist/src/poolworker.js):
 *   npx tsc -p tsconfig.json && node dist/bench/profile-pool.js
 * Env: BENCH_POOL_WORKERS (default 2), BENCH_POOL_REQUESTS (per cell, default 2000),
 *      BENCH_POOL_CLIENTS (default "1,16"), BENCH_POOL_ROUNDS (default 2, median by requests/s),
 *      SQLITE_SYNCHRONOUS (default FULL), BENCH_POOL_WRITE=0 (do not write bench/results/profile-pool-latest.md).
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { startServer, type RunningServer } from '../src/server.js';
import { loadConfig } from '../src/config.js';
import { nodeClients, medianByRps, percentile as pct, post, stampBody, startTrivial, writeResults, type LoadResult, type Req } from './load.js';

type Scenario = 'whoami' | 'submit' | 'sign' | 'batch';
interface Target { name: string; server: RunningServer; orgId: string; privateKeyId: string; key: { publicKey: string; privateKey: string }; dataDir: string }
interface Cell { target: string; scenario: string; clients: number; requests: number; rps: number; perSecond: number; p50Ms: number; p99Ms: number; errors: number }

function stamp(t: Target, body: string): string {
  return stampBody(body, t.key);
}

let seq = 0;
function request(t: Target, s: Scenario | 'trivial'): Req {
  const timestampMs = String(Date.now());
  let path: string;
  let body: string;
  const hex = () => randomBytes(32).toString('hex');
  switch (s) {
    case 'trivial':
    case 'whoami': path = '/public/v1/query/whoami'; body = JSON.stringify({ organizationId: t.orgId }); break;
    case 'submit': path = '/public/v1/submit/create_user_tag'; body = JSON.stringify({ parameters: { userTagName: `pool-${process.pid}-${seq++}`, userIds: [] }, organizationId: t.orgId, timestampMs, type: 'ACTIVITY_TYPE_CREATE_USER_TAG' }); break;
    case 'sign': path = '/public/v1/submit/sign_raw_payload'; body = JSON.stringify({ parameters: { signWith: t.privateKeyId, payload: hex(), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, organizationId: t.orgId, timestampMs, type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' }); break;
    case 'batch': path = '/public/v1/submit/sign_raw_payloads'; body = JSON.stringify({ parameters: { signWith: t.privateKeyId, payloads: Array.from({ length: 100 }, hex), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, organizationId: t.orgId, timestampMs, type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS' }); break;
  }
  return { path, body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stamp(t, body) } };
}

/** Sends every request once from `clients` keep-alive clients; a reply is an error unless 200 and not a FAILED activity. */
async function load(port: number, reqs: Req[], clients: number): Promise<LoadResult> {
  const c = nodeClients(port, clients, { ok: (status, body) => status === 200 && !body.includes('ACTIVITY_STATUS_FAILED') });
  try { return await c.run(reqs); } finally { c.close(); }
}

async function target(name: string, workers: number, sync: string): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kmas-bench-pool-'));
  const server = await startServer({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', workers, sqliteSynchronous: sync as 'FULL', rateLimitApiKey: 0, rateLimitOrganization: 0 });
  const rk = server.rootApiKey!;
  const t: Target = { name, server, orgId: server.bootstrap.organizationId, privateKeyId: '', key: { publicKey: rk.publicKey, privateKey: rk.privateKey }, dataDir };
  const body = JSON.stringify({ parameters: { privateKeys: [{ privateKeyName: 'bench', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] }, organizationId: t.orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2' });
  const agent = new http.Agent({ keepAlive: false });
  const res = await post(agent, server.port, { path: '/public/v1/submit/create_private_keys', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stamp(t, body) } });
  agent.destroy();
  t.privateKeyId = JSON.parse(res.body).activity.result.createPrivateKeysResultV2.privateKeys[0].privateKeyId;
  return t;
}

export async function run(): Promise<Cell[]> {
  const workers = Number(process.env.BENCH_POOL_WORKERS ?? 2);
  const n = Number(process.env.BENCH_POOL_REQUESTS ?? 2000);
  const rounds = Math.max(1, Number(process.env.BENCH_POOL_ROUNDS ?? 2));
  const clientsList = (process.env.BENCH_POOL_CLIENTS ?? '1,16').split(',').map(Number);
  const sync = loadConfig({ env: process.env }).sqliteSynchronous;
  const load0 = loadavg()[0]!;
  const trivial = await startTrivial(JSON.stringify({ organizationId: 'fixed', organizationName: 'fixed', userId: 'fixed', username: 'fixed' }));
  const trivialPort = trivial.port;
  const single = await target('1 process', 1, sync);
  const pool = await target(`pool WORKERS=${workers}`, workers, sync);
  const cells: Cell[] = [];
  try {
    for (const clients of clientsList) {
      const scen: Scenario[] = ['whoami', 'submit', 'sign', 'batch'];
      const count = (s: Scenario | 'trivial') => (s === 'batch' ? Math.max(20, Math.round(n / 25)) : n);
      const plan: [string, number, Scenario | 'trivial', Target][] = [['trivial node:http', trivialPort, 'trivial', single]];
      for (const s of scen) for (const t of [single, pool]) plan.push([t.name, t.server.port, s, t]);
      for (const [, port, s, t] of plan) await load(port, Array.from({ length: Math.ceil(count(s) / 10) }, () => request(t, s)), clients);
      const got = new Map<string, { rps: number; lat: number[]; errors: number }[]>();
      for (let round = 0; round < rounds; round++) {
        for (const [name, port, s, t] of plan) {
          const reqs = s === 'trivial' || s === 'whoami' ? Array(count(s)).fill(request(t, s)) : Array.from({ length: count(s) }, () => request(t, s));
          const m = await load(port, reqs, clients);
          const k = `${name}|${s}`;
          got.set(k, [...(got.get(k) ?? []), { rps: (reqs.length / m.wallMs) * 1000, lat: m.lat, errors: m.errors }]);
        }
      }
      for (const [name, , s] of plan) {
        const list = got.get(`${name}|${s}`)!;
        const m = medianByRps(list);
        const sorted = [...m.lat].sort((a, b) => a - b);
        cells.push({ target: name, scenario: s, clients, requests: count(s), rps: m.rps, perSecond: m.rps * (s === 'batch' ? 100 : 1),
          p50Ms: pct(sorted, 50), p99Ms: pct(sorted, 99), errors: list.reduce((a, x) => a + x.errors, 0) });
      }
    }
  } finally {
    await single.server.stop();
    await pool.server.stop();
    await trivial.close();
    for (const t of [single, pool]) rmSync(t.dataDir, { recursive: true, force: true });
  }
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const lines = [
    `## Request path: one process vs pool (${new Date().toISOString()})`,
    '',
    `Node ${process.version}, ${cpus()[0]?.model ?? '?'} ×${cpus().length}; load generator in this process; SQLite synchronous=${sync}; ${rounds} interleaved rounds, median shown; 1-minute load average ${load0.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after.`,
    '',
    '| server | scenario | clients | requests/s | per second | p50 (ms) | p99 (ms) | ratio to trivial | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...cells.map((c) => {
      const triv = cells.find((x) => x.scenario === 'trivial' && x.clients === c.clients)!.rps;
      return `| ${c.target} | ${c.scenario === 'batch' ? 'sign_raw_payloads ×100' : c.scenario === 'sign' ? 'sign_raw_payload' : c.scenario === 'submit' ? 'submit (create_user_tag)' : c.scenario} | ${c.clients} | ${f(c.rps)} | ${c.scenario === 'batch' ? f(c.perSecond) + ' sig/s' : ''} | ${f(c.p50Ms, 2)} | ${f(c.p99Ms, 2)} | ${f(c.rps / triv, 3)} | ${c.errors} |`;
    }),
  ];
  console.log(lines.join('\n'));
  if (process.env.BENCH_POOL_WRITE !== '0') writeResults({ 'profile-pool-latest.md': lines.join('\n') + '\n' });
  return cells;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(() => process.exit(0), (e) => { console.error(e instanceof Error ? e.message : e); process.exit(1); });
}
