/**
 * HTTP request-path benchmark (issue 3 "Measure and report").
 *
 * Through the real kmas server (`bin/kmas.js serve` in a process of its own on a free loopback port,
 * fresh temporary DATA_DIR, settings from the environment) versus a trivial node:http server
 * answering a fixed JSON body (also a process of its own), in the same run, from 1 and 16
 * concurrent keep-alive clients of a load generator in a third process (load.ts loadInChild):
 *   - trivial   : POST → fixed JSON (the floor: node:http + the client loop)
 *   - whoami    : stamped POST /public/v1/query/whoami (stamp check + lookups + JSON reply)
 *   - submit    : stamped POST /public/v1/submit/create_user_tag with a unique name per request
 *                 (stamp check, validation, SQLite write transaction committed before the reply)
 * Requests are stamped before the timed loop (client-side signing is not measured). Reported:
 * requests/s, p50 and p99 latency, and the ratio of requests/s to the trivial server at the same
 * concurrency. The SQLite `synchronous` setting is read from the server's configuration
 * (env SQLITE_SYNCHRONOUS, default of src/config.ts) and passed to the server explicitly.
 *
 * Run: npm run build && node dist/bench/http.js   (or: node dist/bench/run.js http)
 * Each (scenario, concurrency) cell is measured in BENCH_HTTP_ROUNDS rounds (default 3), the scenarios
 * interleaved round by round so that background load hits them alike; the round with the median
 * requests/s is reported.
 * Env: BENCH_HTTP_REQUESTS (timed requests per round, default 2000), BENCH_HTTP_ROUNDS (default 3).
 */
import { readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { loadInChild, medianByRps, percentile, stampBody as stamp, startServerProcess, startTrivial, publish, type Req as Prepared } from './load.js';

export interface HttpBenchRow {
  scenario: 'trivial' | 'whoami' | 'submit';
  concurrency: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** rps / trivial rps at the same concurrency */
  ratio: number;
  errors: number;
}

export interface HttpBenchResult {
  date: string;
  node: string;
  cpu: string;
  sqliteSynchronous: string;
  sqliteJournalMode: string;
  /** other effective server settings that bear on the numbers */
  serverSettings: Record<string, unknown>;
  requestsPerScenario: number;
  rounds: number;
  /** 1-minute load average before and after the run (other processes share the machine) */
  loadAverage: [number, number];
  rows: HttpBenchRow[];
}

export async function run(opts: { requests?: number; rounds?: number; write?: boolean; print?: boolean } = {}): Promise<HttpBenchResult> {
  const n = opts.requests ?? Number(process.env.BENCH_HTTP_REQUESTS ?? 2000);
  const loadBefore = loadavg()[0]!;
  const rounds = Math.max(1, opts.rounds ?? Number(process.env.BENCH_HTTP_ROUNDS ?? 3));
  const warm = 1000;
  const cfg = loadConfig({ env: process.env });
  // every setting from the environment (SQLITE_SYNCHRONOUS, WORKERS, STAMP_WORKERS, …) reaches the
  // server process; only the address, the data directory and the log level are the benchmark's own
  const server = await startServerProcess();
  const trivial = await startTrivial(JSON.stringify({ organizationId: 'fixed', organizationName: 'fixed', userId: 'fixed', username: 'fixed' }));
  const trivialPort = trivial.port;

  try {
    const key = server.rootKey;
    const orgId = server.organizationId;
    const whoBody = JSON.stringify({ organizationId: orgId });
    const whoReq: Prepared = { path: '/public/v1/query/whoami', body: whoBody, headers: { 'Content-Type': 'application/json', 'X-Stamp': stamp(whoBody, key) } };
    let seq = 0;
    const submitReqs = (count: number): Prepared[] => Array.from({ length: count }, () => {
      const body = JSON.stringify({ parameters: { userTagName: `bench-${process.pid}-${seq++}`, userIds: [] }, organizationId: orgId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_USER_TAG' });
      return { path: '/public/v1/submit/create_user_tag', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stamp(body, key) } };
    });
    const same = (r: Prepared, count: number) => Array.from({ length: count }, () => r);
    const trivialReq: Prepared = { path: '/public/v1/query/whoami', body: whoBody, headers: whoReq.headers };

    const rows: HttpBenchRow[] = [];
    for (const concurrency of [1, 16]) {
      const scenarios: [HttpBenchRow['scenario'], number, () => Prepared[]][] = [
        ['trivial', trivialPort, () => same(trivialReq, warm + n)],
        ['whoami', server.port, () => same(whoReq, warm + n)],
        ['submit', server.port, () => submitReqs(warm + n)],
      ];
      for (const [scenario, port, make] of scenarios) {
        await loadInChild(port, scenario === 'submit' ? submitReqs(2000) : make().slice(0, 2000), concurrency, 0);
      }
      const measured = new Map<string, { rps: number; lat: number[]; errors: number }[]>();
      for (let round = 0; round < rounds; round++) {
        for (const [scenario, port, make] of scenarios) {
          const reqs = scenario === 'submit' ? submitReqs(warm + n) : make();
          const { wallMs, lat, errors } = await loadInChild(port, reqs, concurrency, warm);
          const list = measured.get(scenario) ?? [];
          list.push({ rps: (n / wallMs) * 1000, lat, errors });
          measured.set(scenario, list);
        }
      }
      const median = (scenario: string) => medianByRps(measured.get(scenario) ?? []);
      const trivialRps = median('trivial').rps;
      for (const [scenario] of scenarios) {
        const m = median(scenario);
        const sorted = [...m.lat].sort((a, b) => a - b);
        const errors = (measured.get(scenario) ?? []).reduce((acc, x) => acc + x.errors, 0);
        rows.push({ scenario, concurrency, requests: n, rps: m.rps, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), ratio: m.rps / trivialRps, errors });
      }
    }

    const dbFile = readdirSync(server.dataDir).find((f) => /\.(sqlite|sqlite3|db)$/.test(f));
    let journal = 'unknown';
    if (dbFile) {
      const db = new Database(join(server.dataDir, dbFile), { readonly: true, fileMustExist: true });
      try { journal = String(db.pragma('journal_mode', { simple: true })).toUpperCase(); } finally { db.close(); }
    }
    const effective = cfg as unknown as Record<string, unknown>;
    const synchronous = String(effective.sqliteSynchronous);
    const serverSettings = Object.fromEntries(['workers', 'stampWorkers', 'signWorkers', 'timestampWindowMs', 'bodyLimit']
      .filter((k) => effective[k] !== undefined).map((k) => [k, effective[k] === -1 ? 'auto' : effective[k]]));

    const result: HttpBenchResult = {
      date: new Date().toISOString(), node: process.version, cpu: `${cpus()[0]?.model ?? 'unknown'} ×${cpus().length}`,
      sqliteSynchronous: synchronous, sqliteJournalMode: journal, serverSettings, requestsPerScenario: n, rounds, loadAverage: [loadBefore, loadavg()[0]!], rows,
    };
    const table = toMarkdown(result);
    publish('http', result, table, opts);
    return result;
  } finally {
    await trivial.close();
    await server.stop();
  }
}

export function toMarkdown(r: HttpBenchResult): string {
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '—');
  const lines = [
    `## HTTP request path (${r.date})`,
    '',
    `Node ${r.node}, ${r.cpu}; kmas, the trivial server and the load generator each in a process of their own, loopback, keep-alive node:http clients; ${r.requestsPerScenario} timed requests per round after 1000 untimed, ${r.rounds} interleaved rounds, median round shown (requests stamped before timing).`,
    `SQLite PRAGMA synchronous = ${r.sqliteSynchronous}, journal_mode = ${r.sqliteJournalMode}; every submit is committed before its reply.`,
    `Server settings: ${Object.entries(r.serverSettings).map(([k, v]) => `${k}=${v}`).join(', ') || '(defaults)'}.`,
    `1-minute load average ${r.loadAverage[0].toFixed(2)} before / ${r.loadAverage[1].toFixed(2)} after the run (the machine is shared: absolute numbers are noisy, the same-run ratios less so).`,
    '',
    '| scenario | clients | requests/s | p50 (ms) | p99 (ms) | ratio to trivial | errors |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map((x) => `| ${x.scenario === 'trivial' ? 'trivial node:http (fixed JSON)' : x.scenario === 'whoami' ? 'stamped whoami' : 'stamped submit (create_user_tag)'} | ${x.concurrency} | ${f(x.rps, 0)} | ${f(x.p50Ms, 3)} | ${f(x.p99Ms, 3)} | ${f(x.ratio, 3)} | ${x.errors} |`),
  ];
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().catch((e) => { console.error(e instanceof Error ? e.message : e); process.exit(1); });
}
