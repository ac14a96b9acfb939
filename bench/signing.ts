/**
 * Signing benchmark (issue 4 "Measure and report"), in one run, over loopback. Every server runs
 * in a process of its own (kmas as `bin/kmas.js serve` starts it; the trivial one), and so does
 * the load generator (load.ts loadInChild; requests stamped before timing, a warm-up before every
 * timed cell). Two load generators take turns on the request-path cells:
 *   - node:http client : keep-alive node:http clients (≈ 200 µs of CPU per request, like an
 *                        application's own Node client); it is what saturates first against the
 *                        trivial server
 *   - raw-socket client: rawload.ts, pre-encoded requests over plain sockets (a few tens of µs per
 *                        request, like wrk or autocannon), so the servers get the CPU
 * Scenarios:
 *   - trivial     : a node:http server answering a fixed JSON body (the ceiling)
 *   - calibration : the same server spending CALIBRATION_US of CPU per request first: what p99 a
 *                   load generator reports for an ideal server with a fixed cost
 *   - sign        : stamped POST /public/v1/submit/sign_raw_payload (secp256k1, HEXADECIMAL / NO_OP,
 *                   a distinct payload per request, so every request signs and commits its activity)
 *   - batch       : stamped POST /public/v1/submit/sign_raw_payloads with 100 payloads (signatures/s)
 *   - whoami      : stamped query (the request path without signing or a commit)
 *   - core        : the same signatures made by calling src/crypto directly, no HTTP, no storage
 * from 1 and 16 concurrent clients, against servers with the default settings (SIGN_WORKERS and
 * STAMP_WORKERS auto: one signing thread and one stamp thread on a machine with more than one
 * CPU; SQLITE_SYNCHRONOUS=FULL), with SIGN_WORKERS=0 (everything on the request thread: one
 * process, no pool), with SIGN_WORKERS=2 (batches split across two threads) and with
 * synchronous=NORMAL (no fsync per commit). After an untimed warm-up of every server, each cell
 * runs BENCH_SIGN_ROUNDS rounds, interleaved, and the round with the median rate is shown. A
 * breakdown of per-operation costs measured in isolation follows.
 *
 * Run: npm run build && node --expose-gc dist/bench/signing.js
 * Env: BENCH_SIGN_REQUESTS (timed sign_raw_payload requests per cell and round, default 3000),
 *      BENCH_SIGN_BATCHES (timed sign_raw_payloads requests per cell and round, default 60),
 *      BENCH_SIGN_ROUNDS (default 3).
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, cpus, loadavg, availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { SqliteSynchronous } from '../src/config.js';
import { generatePrivateKey, signDigest, signDigests, Vault, wipe } from '../src/crypto/index.js';
import { parseStamp } from '../src/http/stamp.js';
import { verifyStamp } from '../src/crypto/stamp.js';
import Database from 'better-sqlite3';
import { loadInChild, medianByRps, percentile as pct, post, stampBody as stampOf, startServerProcess, startTrivial, publish, type LoadClient, type Req, type ServerProcess } from './load.js';
interface Cell { scenario: string; client: LoadClient; concurrency: number; requests: number; rps: number; perSecond: number; unit: string; p50Ms: number; p99Ms: number; errors: number }

export interface SigningBenchResult {
  date: string;
  node: string;
  cpu: string;
  sqliteSynchronous: string;
  rounds: number;
  /** 1-minute load average at start and end (other processes share the cores) */
  loadAverage: [number, number];
  rows: Cell[];
  breakdown: { what: string; perOpUs: number; opsPerSecond: number }[];
  targets: { what: string; target: string; reached: string; met: boolean }[];
}

function cellOf(scenario: string, client: LoadClient, concurrency: number, requests: number, perReq: number, unit: string, m: { rps: number; lat: number[]; errors: number }): Cell {
  const sorted = [...m.lat].sort((a, b) => a - b);
  return { scenario, client, concurrency, requests, rps: m.rps, perSecond: m.rps * perReq, unit, p50Ms: pct(sorted, 50), p99Ms: pct(sorted, 99), errors: m.errors };
}

/** How each load generator is named in the tables. */
const CLIENT_LABEL: Record<LoadClient, string> = { node: 'node:http client', raw: 'raw-socket client' };

/** CPU time the calibration server spends per request (µs). */
const CALIBRATION_US = 100;

/** Times fn over `n` iterations (after a warm-up) → µs per op. */
function timeOps(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(50, n); i++) fn(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  return Number(process.hrtime.bigint() - t0) / 1e3 / n;
}

interface Harness { server: ServerProcess; key: { publicKey: string; privateKey: string }; orgId: string; privateKeyId: string }

/** A server process with the given settings (every setting the numbers depend on given explicitly) and one secp256k1 key. */
async function harness(settings: { synchronous: 'FULL' | 'NORMAL'; signWorkers: string }): Promise<Harness> {
  const server = await startServerProcess(['--workers', '1', '--stamp-workers', 'auto', '--sqlite-synchronous', settings.synchronous, '--sign-workers', settings.signWorkers]);
  const key = server.rootKey;
  const orgId = server.organizationId;
  const body = JSON.stringify({ parameters: { privateKeys: [{ privateKeyName: 'bench', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] }, organizationId: orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2' });
  const agent = new http.Agent({ keepAlive: false });
  const res = await post(agent, server.port, { path: '/public/v1/submit/create_private_keys', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampOf(body, key) } });
  agent.destroy();
  const privateKeyId = JSON.parse(res.body).activity.result.createPrivateKeysResultV2.privateKeys[0].privateKeyId as string;
  return { server, key, orgId, privateKeyId };
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

const COMPLETED = '"ACTIVITY_STATUS_COMPLETED"';

export async function run(opts: { requests?: number; batches?: number; rounds?: number; write?: boolean; print?: boolean } = {}): Promise<SigningBenchResult> {
  const n = opts.requests ?? Number(process.env.BENCH_SIGN_REQUESTS ?? 3000);
  const nb = opts.batches ?? Number(process.env.BENCH_SIGN_BATCHES ?? 60);
  const rounds = Math.max(1, opts.rounds ?? Number(process.env.BENCH_SIGN_ROUNDS ?? 3));
  const BATCH = 100;
  const WARM = 1000;
  const WARM_BATCHES = 6;
  const load0 = loadavg()[0]!;
  // -1 = auto (src/config.ts): the defaults a user gets from `npm start`.
  const servers = {
    default: await harness({ synchronous: 'FULL', signWorkers: 'auto' }),
    inline: await harness({ synchronous: 'FULL', signWorkers: '0' }),
    two: await harness({ synchronous: 'FULL', signWorkers: '2' }),
    normal: await harness({ synchronous: 'NORMAL', signWorkers: 'auto' }),
  };
  const autoThreads = availableParallelism() > 1 ? 1 : 0;
  const label = {
    default: `defaults: SIGN_WORKERS=auto (${autoThreads} thread), synchronous=FULL`,
    inline: 'SIGN_WORKERS=0 (request thread only), synchronous=FULL',
    two: 'SIGN_WORKERS=2, synchronous=FULL',
    normal: `SIGN_WORKERS=auto, synchronous=NORMAL`,
  };
  const signOf = (k: keyof typeof label) => `stamped sign_raw_payload — ${label[k]}`;
  const batchOf = (k: keyof typeof label) => `stamped sign_raw_payloads ×${BATCH} — ${label[k]}`;
  const TRIVIAL = 'trivial node:http (fixed JSON)';
  const CALIBRATION = `calibration: node:http spending ${CALIBRATION_US} µs of CPU per request`;
  const fixed = JSON.stringify({ activity: { status: 'ACTIVITY_STATUS_COMPLETED' } });
  const trivial = await startTrivial(fixed);
  const calibration = await startTrivial(fixed, CALIBRATION_US);
  const rows: Cell[] = [];
  try {
    // Warm-up, not timed: every server's JIT, SQLite cache and WAL reach their steady state.
    for (const h of Object.values(servers)) {
      await loadInChild(h.server.port, signReqs(h, 3000), 16, 0, COMPLETED);
      await loadInChild(h.server.port, batchReqs(h, 20, BATCH), 4, 0, COMPLETED);
    }
    await loadInChild(trivial.port, signReqs(servers.default, 3000), 16, 0);
    await loadInChild(calibration.port, signReqs(servers.default, 1000), 16, 0);
    for (const c of [1, 16]) {
      type Spec = { scenario: string; client: LoadClient; port: number; make: () => Req[]; warm: number; perReq: number; unit: string; expect?: string };
      const cells: Spec[] = [];
      for (const client of ['node', 'raw'] as const) {
        cells.push({ scenario: TRIVIAL, client, port: trivial.port, make: () => signReqs(servers.default, n + WARM), warm: WARM, perReq: 1, unit: 'requests' });
        if (c === 16) cells.push({ scenario: CALIBRATION, client, port: calibration.port, make: () => signReqs(servers.default, n + WARM), warm: WARM, perReq: 1, unit: 'requests' });
        for (const k of ['default', 'inline'] as const) {
          cells.push({ scenario: signOf(k), client, port: servers[k].server.port, make: () => signReqs(servers[k], n + WARM), warm: WARM, perReq: 1, unit: 'signatures', expect: COMPLETED });
        }
      }
      cells.push(
        { scenario: signOf('normal'), client: 'node', port: servers.normal.server.port, make: () => signReqs(servers.normal, n + WARM), warm: WARM, perReq: 1, unit: 'signatures', expect: COMPLETED },
        { scenario: `stamped whoami — ${label.default}`, client: 'node', port: servers.default.server.port, make: () => whoReqs(servers.default, n + WARM), warm: WARM, perReq: 1, unit: 'requests' },
        ...(['default', 'inline', 'two'] as const).map((k): Spec => ({ scenario: batchOf(k), client: 'node', port: servers[k].server.port, make: () => batchReqs(servers[k], nb + WARM_BATCHES, BATCH), warm: WARM_BATCHES, perReq: BATCH, unit: 'signatures', expect: COMPLETED })),
      );
      const key = (cell: { scenario: string; client: LoadClient }) => `${cell.scenario}|${cell.client}`;
      const measured = new Map<string, { rps: number; lat: number[]; errors: number; wallMs: number }[]>();
      for (let round = 0; round < rounds; round++) {
        for (const cell of cells) {
          const reqs = cell.make();
          const r = await loadInChild(cell.port, reqs, c, cell.warm, cell.expect, cell.client);
          const list = measured.get(key(cell)) ?? [];
          list.push({ ...r, rps: ((reqs.length - cell.warm) / r.wallMs) * 1000 });
          measured.set(key(cell), list);
        }
      }
      for (const cell of cells) {
        const all = measured.get(key(cell))!;
        const m = medianByRps(all);
        const requests = cell.perReq > 1 ? nb : n;
        rows.push(cellOf(cell.scenario, cell.client, c, requests, cell.perReq, cell.unit, { ...m, errors: all.reduce((a, x) => a + x.errors, 0) }));
      }
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
    const WORKERS = 2;
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
    const sample = signReqs(servers.default, 200);
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

    const exact = (name: string, c: number, client: LoadClient = 'node') => rows.find((r) => r.scenario === name && r.concurrency === c && r.client === client)!;
    const best = (name: string, client: LoadClient) => [1, 16].map((c) => exact(name, c, client)).reduce((a, b) => (b.rps > a.rps ? b : a));
    const targets = [
      ...(['node', 'raw'] as const).flatMap((client) => (['default', 'inline'] as const).map((k) => {
        const r = best(signOf(k), client).rps / best(TRIVIAL, client).rps;
        return { what: `stamped sign_raw_payload vs trivial server (best concurrency each), ${CLIENT_LABEL[client]}, ${label[k]}`, target: '≥ 40 %', reached: `${(r * 100).toFixed(1)} %`, met: r >= 0.4 };
      })),
      ...(['default', 'inline', 'two'] as const).map((k) => {
        const v = Math.max(exact(batchOf(k), 1).perSecond, exact(batchOf(k), 16).perSecond);
        return { what: `signatures/s through sign_raw_payloads, ${label[k]}`, target: '≥ 10,000', reached: v.toFixed(0), met: v >= 10_000 };
      }),
      ...(['node', 'raw'] as const).flatMap((client) => (['default', 'inline'] as const).map((k) => {
        const p = exact(signOf(k), 16, client).p99Ms;
        return { what: `p99 of sign_raw_payload at 16 clients, ${CLIENT_LABEL[client]}, ${label[k]}`, target: '≤ 10 ms', reached: `${p.toFixed(2)} ms`, met: p <= 10 };
      })),
    ];

    const result: SigningBenchResult = {
      date: new Date().toISOString(), node: process.version, cpu: `${cpus()[0]?.model ?? 'unknown'} ×${cpus().length}`,
      sqliteSynchronous: 'FULL (NORMAL where a row says so)', rounds, loadAverage: [load0, loadavg()[0]!], rows, breakdown, targets,
    };
    const md = toMarkdown(result);
    publish('signing', result, md, opts);
    return result;
  } finally {
    await trivial.close();
    await calibration.close();
    for (const x of Object.values(servers)) await x.server.stop();
  }
}

export function toMarkdown(r: SigningBenchResult): string {
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return [
    `## Signing through the API (${r.date})`,
    '',
    `Node ${r.node}, ${r.cpu}; every server (kmas as \`bin/kmas.js serve\` starts it, the trivial one) and the load generator in a process of its own (loopback; two load generators: keep-alive node:http clients, and pre-encoded requests over raw sockets),`,
    `requests stamped before timing, a warm-up before every cell, ${r.rounds} interleaved rounds per cell (median round shown). Every sign request signs a distinct payload and commits its activity;`,
    `SQLite synchronous = ${r.sqliteSynchronous} (journal WAL). Ratios within the run are steadier than the absolute numbers.`,
    `1-minute load average ${r.loadAverage[0].toFixed(2)} at start, ${r.loadAverage[1].toFixed(2)} at end (on ${r.cpu.split('×').pop()} cores; other processes were running).`,
    '',
    '| scenario | load generator | clients | requests | requests/s | signatures/s | p50 (ms) | p99 (ms) | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map((c) => `| ${c.scenario} | ${CLIENT_LABEL[c.client]} | ${c.concurrency} | ${c.requests} | ${n(c.rps)} | ${c.unit === 'signatures' ? n(c.perSecond) : '—'} | ${f(c.p50Ms)} | ${f(c.p99Ms)} | ${c.errors} |`),
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
