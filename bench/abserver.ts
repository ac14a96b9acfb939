/**
 * A/B of two builds of the whole server (issue 14 "Measure and report"): this checkout's
 * `kmas serve` against a baseline checkout's (built with `npm run build`, e.g. the previous commit
 * in a git worktree), each in a process of its own with the default settings, the same stamped
 * requests from the load generator's process (load.ts loadInChild), rounds interleaved A, B, A, B
 * so that background load hits both alike. Scenarios, from 1 and 16 concurrent clients:
 *   - whoami            : stamped query
 *   - create_user_tag   : stamped submit, a write committed (and synced) before the reply
 *   - sign_raw_payload  : stamped submit, one secp256k1 signature and its activity
 *   - sign_raw_payloads : stamped submit, 100 signatures in one activity (signatures/s)
 * Reported per build: the median round's rate, p50 and p99, the spread of the rounds' rates
 * ((max − min) / median), new ÷ old of the median rates, and the median (and interquartile range)
 * of each round's new ÷ old: the two builds of a round run back to back, so that ratio is the one
 * to trust on a noisy machine.
 *
 * Run: npm run build && node dist/bench/abserver.js <baseline checkout>
 * Env: BENCH_AB_REQUESTS (timed requests per cell and round, default 2000), BENCH_AB_BATCHES
 *      (timed sign_raw_payloads requests, default 40), BENCH_AB_ROUNDS (default 3),
 *      BENCH_AB_SCENARIOS (comma-separated names, default all), BENCH_AB_CLIENTS (default 1,16).
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuSeconds, loadInChild, percentile, post, stampBody, startServerProcess, type Req, type ServerProcess } from './load.js';

interface Target { name: string; server: ServerProcess; privateKeyId: string; seq: number }

const COMPLETED = '"ACTIVITY_STATUS_COMPLETED"';
const BATCH = 100;

async function target(name: string, bin?: string): Promise<Target> {
  const server = await startServerProcess([], bin);
  const body = JSON.stringify({ parameters: { privateKeys: [{ privateKeyName: 'bench', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] }, organizationId: server.organizationId, timestampMs: String(Date.now()), type: 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2' });
  const agent = new http.Agent({ keepAlive: false });
  const res = await post(agent, server.port, { path: '/public/v1/submit/create_private_keys', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampBody(body, server.rootKey) } });
  agent.destroy();
  const privateKeyId = JSON.parse(res.body).activity.result.createPrivateKeysResultV2.privateKeys[0].privateKeyId as string;
  return { name, server, privateKeyId, seq: 0 };
}

const submit = (t: Target, path: string, type: string, parameters: unknown): Req => {
  const body = JSON.stringify({ parameters, organizationId: t.server.organizationId, timestampMs: String(Date.now()), type });
  return { path: `/public/v1/submit/${path}`, body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampBody(body, t.server.rootKey) } };
};

const SCENARIOS: { name: string; unit: number; make: (t: Target, n: number) => Req[]; expect?: string }[] = [
  {
    name: 'whoami', unit: 1,
    make: (t, n) => {
      const body = JSON.stringify({ organizationId: t.server.organizationId });
      const r = { path: '/public/v1/query/whoami', body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampBody(body, t.server.rootKey) } };
      return Array.from({ length: n }, () => r);
    },
  },
  {
    name: 'create_user_tag', unit: 1, expect: COMPLETED,
    make: (t, n) => Array.from({ length: n }, () => submit(t, 'create_user_tag', 'ACTIVITY_TYPE_CREATE_USER_TAG', { userTagName: `bench-${t.seq++}`, userIds: [] })),
  },
  {
    name: 'sign_raw_payload', unit: 1, expect: COMPLETED,
    make: (t, n) => Array.from({ length: n }, () => submit(t, 'sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      { signWith: t.privateKeyId, payload: randomBytes(32).toString('hex'), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' })),
  },
  {
    name: `sign_raw_payloads ×${BATCH}`, unit: BATCH, expect: COMPLETED,
    make: (t, n) => Array.from({ length: n }, () => submit(t, 'sign_raw_payloads', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS',
      { signWith: t.privateKeyId, payloads: Array.from({ length: BATCH }, () => randomBytes(32).toString('hex')), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' })),
  },
];

interface Round { rate: number; p50: number; p99: number; errors: number; cpuUs: number }

export async function run(baseline: string): Promise<string> {
  const n = Number(process.env.BENCH_AB_REQUESTS ?? 2000);
  const nb = Number(process.env.BENCH_AB_BATCHES ?? 40);
  const rounds = Math.max(1, Number(process.env.BENCH_AB_ROUNDS ?? 3));
  const load0 = loadavg()[0]!;
  const rev = (dir: string) => { try { return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { return '?'; } };
  const targets = [await target(`old (${rev(baseline)})`, join(resolve(baseline), 'bin', 'kmas.js')), await target(`new (${rev('.')})`)];
  const out: string[] = [];
  try {
    // untimed warm-up of both
    for (const t of targets) {
      await loadInChild(t.server.port, SCENARIOS[2]!.make(t, 2000), 16, 0, COMPLETED);
      await loadInChild(t.server.port, SCENARIOS[3]!.make(t, 10), 4, 0, COMPLETED);
    }
    out.push(`A/B of the server: ${targets[0]!.name} vs ${targets[1]!.name}; ${cpus().length} × ${cpus()[0]?.model ?? '?'}, node ${process.version}; ${rounds} rounds interleaved; load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)} (updated below)`, '');
    out.push('| scenario | clients | old /s (spread) | old p50 / p99 ms | new /s (spread) | new p50 / p99 ms | new ÷ old | per-round new ÷ old: median (IQR) | server CPU µs/request old → new (median round) |', '|---|---|---|---|---|---|---|---|---|');
    const only = process.env.BENCH_AB_SCENARIOS?.split(',').filter(Boolean);
    const clients = (process.env.BENCH_AB_CLIENTS ?? '1,16').split(',').map(Number);
    for (const s of SCENARIOS.filter((x) => !only || only.includes(x.name.split(' ')[0]!))) {
      for (const c of clients) {
        const count = s.unit > 1 ? nb : n;
        const warm = s.unit > 1 ? 4 : 300;
        const per: Round[][] = targets.map(() => []);
        for (let r = 0; r < rounds; r++) {
          for (const [i, t] of targets.entries()) {
            const reqs = s.make(t, count + warm);
            const cpu0 = cpuSeconds(t.server.pid);
            const res = await loadInChild(t.server.port, reqs, c, warm, s.expect);
            // the server's CPU per request (warm-up included in both the time and the count)
            const cpuUs = ((cpuSeconds(t.server.pid) - cpu0) * 1e6) / reqs.length;
            const lat = [...res.lat].sort((a, b) => a - b);
            per[i]!.push({ rate: (count * s.unit / res.wallMs) * 1000, p50: percentile(lat, 50), p99: percentile(lat, 99), errors: res.errors, cpuUs });
          }
        }
        const med = per.map((l) => [...l].sort((a, b) => a.rate - b.rate)[Math.floor(l.length / 2)]!);
        const spread = per.map((l) => { const rs = l.map((x) => x.rate); return (Math.max(...rs) - Math.min(...rs)) / med[per.indexOf(l)]!.rate; });
        const errors = per.flat().reduce((a, x) => a + x.errors, 0);
        const cell = (i: number) => `${Math.round(med[i]!.rate).toLocaleString('en-US')} (±${(spread[i]! * 50).toFixed(1)}%)`;
        const lat = (i: number) => `${med[i]!.p50.toFixed(2)} / ${med[i]!.p99.toFixed(2)}`;
        const cpu = per.map((l) => [...l.map((x) => x.cpuUs)].sort((a, b) => a - b)[Math.floor(l.length / 2)]!);
        // each round's new ÷ old (the two ran back to back, so a load burst hits both): steadier than the ratio of medians
        const paired = per[1]!.map((x, r) => x.rate / per[0]![r]!.rate).sort((a, b) => a - b);
        const q = (f: number) => paired[Math.min(paired.length - 1, Math.floor(f * paired.length))]!;
        out.push(`| ${s.name}${s.unit > 1 ? ' (signatures/s)' : ''} | ${c} | ${cell(0)} | ${lat(0)} | ${cell(1)} | ${lat(1)} | ${(med[1]!.rate / med[0]!.rate).toFixed(3)}${errors ? ` (${errors} errors)` : ''} | ${q(0.5).toFixed(3)} (${q(0.25).toFixed(3)}–${q(0.75).toFixed(3)}) | ${Math.round(cpu[0]!)} → ${Math.round(cpu[1]!)} (${(cpu[1]! / cpu[0]!).toFixed(3)}) |`);
        process.stderr.write(`${out[out.length - 1]}\n`);
      }
    }
    out[0] = out[0]!.replace(/→ [\d.]+ \(updated below\)/, `→ ${loadavg()[0]!.toFixed(2)}`);
    out.push('', 'spread: half the range of the rounds\' rates, as a share of the median round\'s rate.');
  } finally {
    for (const t of targets) await t.server.stop();
  }
  return out.join('\n');
}

const baseline = process.argv[2];
if (!baseline) {
  process.stderr.write('usage: node dist/bench/abserver.js <baseline checkout, built>\n');
  process.exit(2);
}
run(baseline).then((md) => { process.stdout.write(`${md}\n`); }, (e: unknown) => { process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`); process.exit(1); });
