/**
 * Storage engines and nodes (issue 15 "Measure and report"): the same stamped requests against
 *   - SQLite, one node (the embedded default);
 *   - PostgreSQL, one node;
 *   - PostgreSQL, two nodes on the same database, the clients split between them: once with each
 *     node's requests naming an organization of their own (the root and a sub-organization, as the
 *     projection assumes), once all naming the root organization (both nodes append to one log);
 * each node a `kmas serve` process of its own, PostgreSQL a throwaway cluster of this run with
 * fsync and synchronous commit on (bench/pgcluster.ts), the load generator in its own processes.
 * Rounds interleave the three set-ups so background load hits them alike.
 *
 * Per scenario and set-up: the median round's rate, p50, p99, and the CPU seconds per 1,000
 * activities of each kmas node and of PostgreSQL (postmaster and backends, from /proc). From the
 * PostgreSQL two-node rows with an organization each, a projection for 1–16 nodes on a dedicated PostgreSQL (assumption
 * printed with it).
 *
 * Run: npm run build && node dist/bench/nodes.js
 * Env: BENCH_NODES_REQUESTS (timed requests per cell and round, default 1500), BENCH_NODES_BATCHES
 *      (timed sign_raw_payloads ×100 requests, default 30), BENCH_NODES_ROUNDS (default 3),
 *      BENCH_NODES_BASE (another checkout, built: adds "PostgreSQL, 1 node" of that build, for an
 *      A/B of the PostgreSQL path in the same run), BENCH_NODES_SCENARIOS (comma-separated names:
 *      only those scenarios), BENCH_NODES_TWO=0 (no two-node set-up, no projection),
 *      BENCH_NODES_CLIENTS (comma-separated client counts, default 1,16; the projection needs 16),
 *      BENCH_NODES_PG_SETTINGS (space-separated name=value settings for the throwaway cluster, to
 *      try a PostgreSQL setting: commit_delay and plan_cache_mode=force_generic_plan did not lower
 *      its CPU per activity), BENCH_NODES_GROUP_WAIT_MS (DATABASE_GROUP_WAIT_MS for this build's
 *      PostgreSQL nodes, not BENCH_NODES_BASE's: with BENCH_NODES_BASE=. an A/B of the setting).
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { cpuSeconds, loadInChild, percentile, post, stampBody, startServerProcess, type LoadResult, type Req, type ServerProcess } from './load.js';
import { startPgCluster, type PgCluster } from './pgcluster.js';
import { join, resolve } from 'node:path';

const COMPLETED = '"ACTIVITY_STATUS_COMPLETED"';
const BATCH = 100;

/** The organization a node's requests name, and the signing key there. */
interface Org { organizationId: string; privateKeyId: string }
/** `orgs`: one, or one per node (request j goes to node j mod N and names orgs[j mod orgs.length]). */
interface SetUp { name: string; nodes: ServerProcess[]; pg?: PgCluster; orgs: Org[]; seq: number }

/** A submit of the root user's, answered by node s; its activity's result. */
async function rootSubmit(s: ServerProcess, path: string, type: string, organizationId: string, parameters: unknown): Promise<any> {
  const body = JSON.stringify({ parameters, organizationId, timestampMs: String(Date.now()), type });
  const agent = new http.Agent({ keepAlive: false });
  const res = await post(agent, s.port, { path: `/public/v1/submit/${path}`, body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampBody(body, s.rootKey) } });
  agent.destroy();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.body}`);
  return JSON.parse(res.body).activity.result;
}

async function createKey(s: ServerProcess, organizationId = s.organizationId): Promise<Org> {
  const r = await rootSubmit(s, 'create_private_keys', 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2', organizationId,
    { privateKeys: [{ privateKeyName: 'bench', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] });
  return { organizationId, privateKeyId: r.createPrivateKeysResultV2.privateKeys[0].privateKeyId as string };
}

/** A sub-organization whose root user holds the bench's root API key, with a signing key of its own. */
async function createSubOrg(s: ServerProcess, name: string): Promise<Org> {
  const r = await rootSubmit(s, 'create_sub_organization', 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7', s.organizationId, {
    subOrganizationName: name, rootQuorumThreshold: 1,
    rootUsers: [{ userName: 'bench', apiKeys: [{ apiKeyName: 'bench', publicKey: s.rootKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
  });
  return createKey(s, r.createSubOrganizationResultV7.subOrganizationId as string);
}

async function sqliteSetUp(): Promise<SetUp> {
  const node = await startServerProcess();
  return { name: 'SQLite, 1 node', nodes: [node], orgs: [await createKey(node)], seq: 0 };
}

/**
 * `orgEach`: each node's requests name an organization of their own (the first node's the root
 * organization, the others' a sub-organization each), as the projection assumes: no two nodes
 * append to one organization's log. Otherwise all requests name the root organization.
 */
async function postgresSetUp(count: number, base?: string, orgEach = false): Promise<SetUp> {
  const pg = await startPgCluster({ settings: process.env.BENCH_NODES_PG_SETTINGS?.split(' ').filter(Boolean) });
  const wait = process.env.BENCH_NODES_GROUP_WAIT_MS;
  const env = { DATABASE_URL: pg.url, KMAS_MASTER_KEY: randomBytes(32).toString('hex'), ...(wait && !base ? { DATABASE_GROUP_WAIT_MS: wait } : {}) };
  const bin = base ? join(resolve(base), 'bin', 'kmas.js') : undefined;
  const first = await startServerProcess([], bin, { env });
  const nodes = [first];
  for (let i = 1; i < count; i++) nodes.push(await startServerProcess([], bin, { env, rootKey: first.rootKey }));
  const orgs = [await createKey(first)];
  if (orgEach) for (let i = 1; i < count; i++) orgs.push(await createSubOrg(first, `bench-node-${i}`));
  const what = count > 1 ? `${count} nodes, ${orgEach ? 'an organization each' : 'one organization'}` : '1 node';
  return { name: `PostgreSQL, ${what}${base ? ` (${base})` : ''}`, nodes, pg, orgs, seq: 0 };
}

/** Request j of a scenario: to node j mod N (load()), naming that node's organization. */
const submit = (t: SetUp, j: number, path: string, type: string, parameters: (org: Org) => unknown): Req => {
  const s = t.nodes[0]!;
  const org = t.orgs[j % t.orgs.length]!;
  const body = JSON.stringify({ parameters: parameters(org), organizationId: org.organizationId, timestampMs: String(Date.now()), type });
  return { path: `/public/v1/submit/${path}`, body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampBody(body, s.rootKey) } };
};

const SCENARIOS: { name: string; unit: number; make: (t: SetUp, n: number) => Req[] }[] = [
  {
    name: 'sign_raw_payload', unit: 1,
    make: (t, n) => Array.from({ length: n }, (_, j) => submit(t, j, 'sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      (org) => ({ signWith: org.privateKeyId, payload: randomBytes(32).toString('hex'), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }))),
  },
  {
    name: 'create_user_tag', unit: 1,
    make: (t, n) => Array.from({ length: n }, (_, j) => submit(t, j, 'create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', () => ({ userTagName: `bench-${t.seq++}`, userIds: [] }))),
  },
  {
    name: `sign_raw_payloads ×${BATCH}`, unit: BATCH,
    make: (t, n) => Array.from({ length: n }, (_, j) => submit(t, j, 'sign_raw_payloads', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS',
      (org) => ({ signWith: org.privateKeyId, payloads: Array.from({ length: BATCH }, () => randomBytes(32).toString('hex')), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }))),
  },
];

interface Round { rate: number; p50: number; p99: number; errors: number; nodeCpu: number[]; pgCpu: number; activities: number }

/** The requests split round-robin over the set-up's nodes, `clients` connections in all. */
async function load(t: SetUp, reqs: Req[], clients: number, warm: number): Promise<LoadResult> {
  const k = t.nodes.length;
  const parts = t.nodes.map((n, i) => loadInChild(n.port, reqs.filter((_, j) => j % k === i), Math.max(1, Math.round(clients / k)), Math.floor(warm / k), COMPLETED));
  const res = await Promise.all(parts);
  return { wallMs: Math.max(...res.map((r) => r.wallMs)), lat: res.flatMap((r) => r.lat), errors: res.reduce((a, r) => a + r.errors, 0) };
}

async function measure(t: SetUp, s: (typeof SCENARIOS)[number], clients: number, count: number, warm: number): Promise<Round> {
  const reqs = s.make(t, count + warm);
  const n0 = t.nodes.map((n) => cpuSeconds(n.pid));
  const p0 = t.pg?.cpuSeconds() ?? 0;
  const res = await load(t, reqs, clients, warm);
  // CPU per activity: warm-up included in both the CPU and the count
  const nodeCpu = t.nodes.map((n, i) => cpuSeconds(n.pid) - n0[i]!);
  const pgCpu = (t.pg?.cpuSeconds() ?? 0) - p0;
  const lat = [...res.lat].sort((a, b) => a - b);
  return { rate: (count * s.unit / res.wallMs) * 1000, p50: percentile(lat, 50), p99: percentile(lat, 99), errors: res.errors, nodeCpu, pgCpu, activities: reqs.length };
}

const median = <T>(xs: T[], by: (x: T) => number): T => [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)]!;
const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

export async function run(): Promise<string> {
  const n = Number(process.env.BENCH_NODES_REQUESTS ?? 1500);
  const nb = Number(process.env.BENCH_NODES_BATCHES ?? 30);
  const rounds = Math.max(1, Number(process.env.BENCH_NODES_ROUNDS ?? 3));
  const load0 = loadavg()[0]!;
  const base = process.env.BENCH_NODES_BASE;
  const two = process.env.BENCH_NODES_TWO !== '0';
  const only = process.env.BENCH_NODES_SCENARIOS?.split(',');
  const scenarios = SCENARIOS.filter((x) => !only || only.includes(x.name.split(' ')[0]!));
  const clientCounts = (process.env.BENCH_NODES_CLIENTS ?? '1,16').split(',').map(Number);
  // the projection reads the third set-up (two nodes, an organization each: its assumption)
  const setUps = [await sqliteSetUp(), await postgresSetUp(1), ...(two ? [await postgresSetUp(2, undefined, true), await postgresSetUp(2)] : []), ...(base ? [await postgresSetUp(1, base)] : [])];
  const out: string[] = [];
  // per scenario and clients: the median rounds of each set-up, for the projection
  const results = new Map<string, Round[]>();
  try {
    for (const t of setUps) {
      await load(t, SCENARIOS[0]!.make(t, 1000), 16, 0);
      await load(t, SCENARIOS[2]!.make(t, 8), 4, 0);
    }
    out.push(`| scenario | clients | set-up | rate /s | p50 / p99 ms | ÷ SQLite | CPU s per 1,000 activities: each kmas node | PostgreSQL |`, '|---|---|---|---|---|---|---|---|');
    for (const s of scenarios) {
      for (const c of clientCounts) {
        const count = s.unit > 1 ? nb : n;
        const warm = s.unit > 1 ? 4 : 200;
        const per: Round[][] = setUps.map(() => []);
        for (let r = 0; r < rounds; r++) {
          for (const [i, t] of setUps.entries()) {
            // two nodes with one client: the client talks to one of them, as it would
            if (c === 1 && t.nodes.length > 1) continue;
            per[i]!.push(await measure(t, s, c, count, warm));
          }
        }
        const med = per.map((l) => (l.length ? median(l, (x) => x.rate) : undefined));
        results.set(`${s.name}/${c}`, med.filter((x): x is Round => x !== undefined));
        for (const [i, t] of setUps.entries()) {
          const m = med[i];
          if (!m) continue;
          const spread = (() => { const rs = per[i]!.map((x) => x.rate); return (Math.max(...rs) - Math.min(...rs)) / 2 / m.rate; })();
          const perK = (cpu: number) => (cpu / m.activities * 1000).toFixed(3);
          out.push(`| ${s.name}${s.unit > 1 ? ' (signatures/s)' : ''} | ${c} | ${t.name} | ${fmt(m.rate)} (±${(spread * 100).toFixed(1)}%) | ${m.p50.toFixed(2)} / ${m.p99.toFixed(2)} | ${(m.rate / med[0]!.rate).toFixed(2)}${m.errors ? ` (${m.errors} errors)` : ''} | ${m.nodeCpu.map(perK).join(' + ')} | ${t.pg ? perK(m.pgCpu) : '–'} |`);
          process.stderr.write(`${out[out.length - 1]}\n`);
        }
      }
    }
    out.push('', `${cpus().length} × ${cpus()[0]?.model ?? '?'}, node ${process.version}; ${rounds} rounds interleaved; ${n} timed requests per cell (${nb} for ×${BATCH}); load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}.`);
    out.push('Rates: the median round; ± is half the range of the rounds. CPU: user + system seconds from /proc over the round (warm-up requests included in the count).');
    if (two) out.push('', ...projection(results));
  } finally {
    for (const t of setUps) {
      for (const node of t.nodes) await node.stop();
      t.pg?.destroy();
    }
  }
  return out.join('\n');
}

/**
 * Throughput for N nodes on a dedicated PostgreSQL, from the two-node PostgreSQL runs at 16
 * clients: each node on its own machine of this one's cores does cores ÷ (its CPU per activity)
 * activities a second; PostgreSQL on a machine of this one's cores saturates at cores ÷ (its CPU
 * per activity). N nodes give the smaller of N × the first and the second.
 */
function projection(results: Map<string, Round[]>): string[] {
  const cores = cpus().length;
  const lines = [
    `Projection for N nodes, each on a machine of ${cores} cores, one PostgreSQL on a machine of ${cores} cores: throughput = min(N × ${cores} ÷ node CPU per activity, ${cores} ÷ PostgreSQL CPU per activity), from the two-node PostgreSQL rounds at 16 clients where each node's requests name an organization of their own. Assumes CPU is the bottleneck (no network or disk limit, group commit keeping fsyncs off the critical path), CPU per activity constant as nodes are added (no lock contention: different keys and organizations), and a load generator elsewhere.`,
    '',
    '| scenario | node CPU ms/activity | PostgreSQL CPU ms/activity | 1 node | 2 | 4 | 8 | 16 | PostgreSQL saturates at |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const s of SCENARIOS) {
    const two = results.get(`${s.name}/16`)?.[2];
    if (!two) continue;
    const node = two.nodeCpu.reduce((a, b) => a + b, 0) / two.activities;
    const pgPer = two.pgCpu / two.activities;
    const nodeCap = cores / node;
    const pgCap = cores / pgPer;
    const at = (k: number) => fmt(Math.min(k * nodeCap, pgCap) * s.unit);
    lines.push(`| ${s.name}${s.unit > 1 ? ' (signatures/s)' : ' (activities/s)'} | ${(node * 1000).toFixed(3)} | ${(pgPer * 1000).toFixed(3)} | ${at(1)} | ${at(2)} | ${at(4)} | ${at(8)} | ${at(16)} | ${(pgCap / nodeCap).toFixed(1)} nodes |`);
  }
  return lines;
}

run().then((md) => { process.stdout.write(`${md}\n`); }, (e: unknown) => { process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`); process.exit(1); });
