/**
 * Signing benchmark (issue 4 "Measure and report"), in one run, over loopback:
 *   - trivial      : a node:http server answering a fixed JSON body (the ceiling)
 *   - sign         : stamped POST /public/v1/submit/sign_raw_payload (secp256k1, HEXADECIMAL / NO_OP,
 *                    a distinct payload per request so every request signs and commits an activity)
 *   - batch        : stamped POST /public/v1/submit/sign_raw_payloads with 100 payloads (signatures/s)
 *   - core         : the same signatures made by calling src/crypto directly (signDigest, and
 *                    signDigests = the core's batch path), no HTTP, no storage
 * from 1 and 16 concurrent keep-alive clients, and a breakdown of the per-request costs measured in
 * isolation (stamp check, sealed-key sign, one SQLite commit with synchronous FULL / NORMAL), a stamped
 * whoami (the request path without signing or commit), and the same signing requests against a second
 * server with synchronous=NORMAL to show what the per-request fsync costs. Requests are stamped before timing.
 *
 * Run: npx tsc -p tsconfig.json && node --expose-gc dist/bench/signing.js
 * Env: BENCH_SIGN_REQUESTS (timed sign_raw_payload requests per cell, default 1000),
 *      BENCH_SIGN_BATCHES (timed sign_raw_payloads requests per cell, default 60),
 *      BENCH_SIGN_WORKERS (SIGN_WORKERS of the pooled server, default 1),
 *      SQLITE_SYNCHRONOUS (server setting, default from src/config.ts).
 */
import http from 'node:http';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { startServer, type RunningServer } from '../src/server.js';
import { loadConfig, type SqliteSynchronous } from '../src/config.js';
import { generatePrivateKey, signDigest, signDigests, Vault, wipe } from '../src/crypto/index.js';
import { parseStamp, verifyStamp } from '../src/http/stamp.js';
import Database from 'better-sqlite3';
import { load as loadAll, percentile as pct, post, stampBody as stampOf, startTrivial, writeResults, type LoadResult, type Req } from './load.js';
interface Cell { scenario: string; concurrency: number; requests: number; rps: number; perSecond: number; unit: string; p50Ms: number; p99Ms: number; errors: number }

export interface SigningBenchResult {
  date: string;
  node: string;
  cpu: string;
  sqliteSynchronous: string;
  /** 1-minute load average at start and end (other processes share the cores) */
  loadAverage: [number, number];
  rows: Cell[];
  breakdown: { what: string; perOpUs: number; opsPerSecond: number }[];
  targets: { what: string; target: string; reached: string; met: boolean }[];
}

/** Sends each request once from `concurrency` keep-alive clients; a reply is an error unless 200 (and `check` accepts its body). */
function load(port: number, reqs: Req[], concurrency: number, check?: (body: string) => boolean): Promise<LoadResult> {
  return loadAll(port, reqs, concurrency, { ok: (status, body) => status === 200 && (!check || check(body)) });
}

function cell(scenario: string, concurrency: number, reqs: number, perReq: number, unit: string, m: { wallMs: number; lat: number[]; errors: number }): Cell {
  const sorted = [...m.lat].sort((a, b) => a - b);
  const rps = (reqs / m.wallMs) * 1000;
  return { scenario, concurrency, requests: reqs, rps, perSecond: rps * perReq, unit, p50Ms: pct(sorted, 50), p99Ms: pct(sorted, 99), errors: m.errors };
}

/** Times fn over `n` iterations (after a warm-up) → µs per op. */
function timeOps(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(50, n); i++) fn(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  return Number(process.hrtime.bigint() - t0) / 1e3 / n;
}

interface Harness { server: RunningServer; key: { publicKey: string; privateKey: string }; orgId: string; privateKeyId: string; dataDir: string }

async function harness(sync: SqliteSynchronous, signWorkers = 0): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kmas-bench-sign-'));
  const server = await startServer({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', sqliteSynchronous: sync, signWorkers });
  const key = server.rootApiKey ?? JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8'));
  const orgId = server.bootstrap.organizationId;
  const body = JSON.stringify({ parameters: { privateKeys: [{ privateKeyName: 'bench', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] }, organizationId: orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2' });
  const agent = new http.Agent({ keepAlive: false });
  const res = await post(agent, server.port, { path: '/public/v1/submit/create_private_keys', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampOf(body, key) } });
  agent.destroy();
  const privateKeyId = JSON.parse(res.body).activity.result.createPrivateKeysResultV2.privateKeys[0].privateKeyId as string;
  return { server, key, orgId, privateKeyId, dataDir };
}

function signReqs(h: Harness, count: number): Req[] {
  return Array.from({ length: count }, () => {
    const body = JSON.stringify({ parameters: { signWith: h.privateKeyId, payload: randomBytes(32).toString('hex'), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, organizationId: h.orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' });
    return { path: '/public/v1/submit/sign_raw_payload', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampOf(body, h.key) } };
  });
}

function batchReqs(h: Harness, count: number, size: number): Req[] {
  return Array.from({ length: count }, () => {
    const payloads = Array.from({ length: size }, () => randomBytes(32).toString('hex'));
    const body = JSON.stringify({ parameters: { signWith: h.privateKeyId, payloads, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, organizationId: h.orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS' });
    return { path: '/public/v1/submit/sign_raw_payloads', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampOf(body, h.key) } };
  });
}

function whoReqs(h: Harness, count: number): Req[] {
  const body = JSON.stringify({ organizationId: h.orgId });
  const r: Req = { path: '/public/v1/query/whoami', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampOf(body, h.key) } };
  return Array.from({ length: count }, () => r);
}

/** One durable commit of an activity-sized row in a fresh WAL database with the given synchronous setting (µs). */
function commitUs(sync: SqliteSynchronous, n: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'kmas-bench-commit-'));
  const db = new Database(join(dir, 'c.sqlite'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${sync}`);
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, record TEXT NOT NULL)');
    const ins = db.prepare('INSERT INTO t (id, record) VALUES (?, ?)');
    const record = 'x'.repeat(1500);
    let i = 0;
    const tx = db.transaction(() => { ins.run(`r${i++}`, record); });
    return timeOps(n, () => tx.immediate());
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const completed = (body: string) => body.includes('"ACTIVITY_STATUS_COMPLETED"');

export async function run(opts: { requests?: number; batches?: number; write?: boolean; print?: boolean } = {}): Promise<SigningBenchResult> {
  const n = opts.requests ?? Number(process.env.BENCH_SIGN_REQUESTS ?? 1000);
  const nb = opts.batches ?? Number(process.env.BENCH_SIGN_BATCHES ?? 60);
  const BATCH = 100;
  const cfg = loadConfig({ env: process.env });
  const load0 = loadavg()[0]!;
  const h = await harness(cfg.sqliteSynchronous);
  const hOff = await harness(cfg.sqliteSynchronous === 'NORMAL' ? 'OFF' : 'NORMAL');
  const altSync = cfg.sqliteSynchronous === 'NORMAL' ? 'OFF' : 'NORMAL';
  const WORKERS = Number(process.env.BENCH_SIGN_WORKERS ?? 1);
  const hPool = await harness(cfg.sqliteSynchronous, WORKERS);
  const trivial = await startTrivial(JSON.stringify({ activity: { status: 'ACTIVITY_STATUS_COMPLETED' } }));
  const trivialPort = trivial.port;
  const rows: Cell[] = [];
  try {
    for (const c of [1, 16]) {
      // warm-up
      await load(trivialPort, signReqs(h, 200), c);
      await load(h.server.port, signReqs(h, 200), c);
      await load(hOff.server.port, signReqs(hOff, 200), c);
      await load(h.server.port, batchReqs(h, 5, BATCH), Math.min(c, 4));

      const t = signReqs(h, n);
      rows.push(cell('trivial node:http (fixed JSON)', c, n, 1, 'requests', await load(trivialPort, t, c)));
      rows.push(cell(`stamped sign_raw_payload (SQLite synchronous=${cfg.sqliteSynchronous})`, c, n, 1, 'signatures', await load(h.server.port, signReqs(h, n), c, completed)));
      rows.push(cell(`stamped sign_raw_payload (SQLite synchronous=${altSync})`, c, n, 1, 'signatures', await load(hOff.server.port, signReqs(hOff, n), c, completed)));
      rows.push(cell('stamped whoami (query: stamp check + routing, no signing, no commit)', c, n, 1, 'requests', await load(h.server.port, whoReqs(h, n), c)));
      rows.push(cell(`stamped sign_raw_payloads ×${BATCH} (synchronous=${cfg.sqliteSynchronous})`, c, nb, BATCH, 'signatures', await load(h.server.port, batchReqs(h, nb, BATCH), c, completed)));
      rows.push(cell(`stamped sign_raw_payloads ×${BATCH} (synchronous=${altSync})`, c, nb, BATCH, 'signatures', await load(hOff.server.port, batchReqs(hOff, nb, BATCH), c, completed)));
      await load(hPool.server.port, batchReqs(hPool, 5, BATCH), Math.min(c, 4));
      rows.push(cell(`stamped sign_raw_payloads ×${BATCH} (synchronous=${cfg.sqliteSynchronous}, SIGN_WORKERS=${WORKERS})`, c, nb, BATCH, 'signatures', await load(hPool.server.port, batchReqs(hPool, nb, BATCH), c, completed)));
    }

    // Core, directly: the same kind of signatures (secp256k1, 32-byte digests, one key).
    const sk = generatePrivateKey('secp256k1');
    const digests = Array.from({ length: 2000 }, () => new Uint8Array(randomBytes(32)));
    const singleUs = timeOps(2000, (i) => { signDigest('secp256k1', digests[i % digests.length]!, sk); });
    const batches = Array.from({ length: 20 }, (_, b) => digests.slice(b * BATCH, (b + 1) * BATCH));
    const batchUs = timeOps(40, (i) => { signDigests('secp256k1', batches[i % batches.length]!, sk); }) / BATCH;
    // Through the Vault (open the sealed key + sign + wipe), as the handler does.
    const vault = new Vault(new Uint8Array(randomBytes(32)));
    const ctx = { kind: 'private_key', organizationId: 'o', recordId: 'k' };
    const sealed = vault.seal(sk, ctx);
    wipe(sk);
    // The signing threads: 40 batches of 100 hex payloads in flight at once, per signature.
    vault.useWorkers(WORKERS);
    await vault.pool!.whenReady();
    const hexBatches = batches.map((b) => b.map((d) => bytesToHex(d)));
    const offThread = () => Promise.all(Array.from({ length: 40 }, (_, i) => vault.signOffThread(sealed, ctx, { op: 'payloads', curve: 'secp256k1', payloads: hexBatches[i % hexBatches.length]!, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' })));
    await offThread();
    const p0 = process.hrtime.bigint();
    await offThread();
    const poolUs = Number(process.hrtime.bigint() - p0) / 1e3 / (40 * BATCH);
    vault.close();
    const vaultUs = timeOps(2000, (i) => { vault.signPayload(sealed, ctx, 'secp256k1', { payload: bytesToHex(digests[i % digests.length]!), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }); });
    // The stamp check alone (parse + P-256 verify over the body), as the server does per request.
    const sample = signReqs(h, 200);
    const stampUs = timeOps(2000, (i) => {
      const r = sample[i % sample.length]!;
      if (!verifyStamp(parseStamp(r.headers['X-Stamp']!), new TextEncoder().encode(r.body))) throw new Error('stamp');
    });

    const fullUs = commitUs('FULL', 300);
    const normalUs = commitUs('NORMAL', 2000);
    const breakdown = [
      { what: 'SQLite commit of one activity row, WAL, synchronous=FULL', perOpUs: fullUs, opsPerSecond: 1e6 / fullUs },
      { what: 'SQLite commit of one activity row, WAL, synchronous=NORMAL', perOpUs: normalUs, opsPerSecond: 1e6 / normalUs },
      { what: 'core signDigest (secp256k1, single)', perOpUs: singleUs, opsPerSecond: 1e6 / singleUs },
      { what: `core signDigests (batch ×${BATCH}), per signature`, perOpUs: batchUs, opsPerSecond: 1e6 / batchUs },
      { what: `Vault.signOffThread (sign_raw_payloads ×${BATCH} on ${WORKERS} signing thread(s), 40 in flight), per signature`, perOpUs: poolUs, opsPerSecond: 1e6 / poolUs },
      { what: 'Vault.signPayload (open sealed key + sign + wipe)', perOpUs: vaultUs, opsPerSecond: 1e6 / vaultUs },
      { what: 'stamp check (parse + P-256 verify of the body)', perOpUs: stampUs, opsPerSecond: 1e6 / stampUs },
    ];

    const get = (prefix: string, c: number) => rows.find((r) => r.scenario.startsWith(prefix) && r.concurrency === c)!;
    const triv = Math.max(get('trivial', 1).rps, get('trivial', 16).rps);
    const sign16 = get(`stamped sign_raw_payload (SQLite synchronous=${cfg.sqliteSynchronous})`, 16);
    const bestSign = Math.max(get(`stamped sign_raw_payload (SQLite synchronous=${cfg.sqliteSynchronous})`, 1).rps, sign16.rps);
    const batchRow = `stamped sign_raw_payloads ×${BATCH} (synchronous=${cfg.sqliteSynchronous})`;
    const poolRow = `stamped sign_raw_payloads ×${BATCH} (synchronous=${cfg.sqliteSynchronous}, SIGN_WORKERS=${WORKERS})`;
    const exact = (name: string, c: number) => rows.find((r) => r.scenario === name && r.concurrency === c)!;
    const bestBatch = Math.max(exact(batchRow, 1).perSecond, exact(batchRow, 16).perSecond);
    const bestPool = Math.max(exact(poolRow, 1).perSecond, exact(poolRow, 16).perSecond);
    const targets = [
      { what: 'stamped sign_raw_payload vs trivial server (best concurrency each)', target: '≥ 40 %', reached: `${((bestSign / triv) * 100).toFixed(1)} %`, met: bestSign / triv >= 0.4 },
      { what: 'signatures/s through sign_raw_payloads (request thread)', target: '≥ 10,000', reached: bestBatch.toFixed(0), met: bestBatch >= 10_000 },
      { what: `signatures/s through sign_raw_payloads (SIGN_WORKERS=${WORKERS})`, target: '≥ 10,000', reached: bestPool.toFixed(0), met: bestPool >= 10_000 },
      { what: 'p99 of sign_raw_payload at 16 clients', target: '≤ 10 ms', reached: `${sign16.p99Ms.toFixed(2)} ms`, met: sign16.p99Ms <= 10 },
    ];

    const result: SigningBenchResult = {
      date: new Date().toISOString(), node: process.version, cpu: `${cpus()[0]?.model ?? 'unknown'} ×${cpus().length}`,
      sqliteSynchronous: cfg.sqliteSynchronous, loadAverage: [load0, loadavg()[0]!], rows, breakdown, targets,
    };
    const md = toMarkdown(result);
    if (opts.print !== false) console.log(md);
    if (opts.write !== false) {
      writeResults({ [`signing-${result.date.slice(0, 10)}.json`]: JSON.stringify(result, null, 2) + '\n', 'signing-latest.md': md + '\n' });
    }
    return result;
  } finally {
    await trivial.close();
    for (const x of [h, hOff, hPool]) {
      await x.server.stop();
      rmSync(x.dataDir, { recursive: true, force: true });
    }
  }
}

export function toMarkdown(r: SigningBenchResult): string {
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return [
    `## Signing through the API (${r.date})`,
    '',
    `Node ${r.node}, ${r.cpu}; one process (server and load clients share it), loopback, keep-alive node:http clients,`,
    `requests stamped before timing, every request signs (distinct payloads) and commits its activity. Server SQLite synchronous = ${r.sqliteSynchronous} (journal WAL).`,
    `1-minute load average ${r.loadAverage[0].toFixed(2)} at start, ${r.loadAverage[1].toFixed(2)} at end (on ${r.cpu.split('×').pop()} cores; other processes were running).`,
    '',
    '| scenario | clients | requests | requests/s | signatures/s | p50 (ms) | p99 (ms) | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map((c) => `| ${c.scenario} | ${c.concurrency} | ${c.requests} | ${n(c.rps)} | ${c.unit === 'signatures' ? n(c.perSecond) : '—'} | ${f(c.p50Ms)} | ${f(c.p99Ms)} | ${c.errors} |`),
    '',
    '| in isolation (no HTTP, no storage) | µs per op | ops/s |',
    '|---|---:|---:|',
    ...r.breakdown.map((b) => `| ${b.what} | ${f(b.perOpUs, 1)} | ${n(b.opsPerSecond)} |`),
    '',
    '| target | wanted | reached | met |',
    '|---|---|---|---|',
    ...r.targets.map((t) => `| ${t.what} | ${t.target} | ${t.reached} | ${t.met ? 'yes' : 'no'} |`),
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().catch((e) => { console.error(e); process.exitCode = 1; });
}
