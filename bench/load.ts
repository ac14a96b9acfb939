/**
 * Shared pieces of the HTTP benchmarks (http.ts, signing.ts, profile-pool.ts): the keep-alive
 * load loop, the trivial node:http server they compare against, request stamping, percentiles,
 * the median round, and writing bench/results/. Not a benchmark itself (run.ts does not list it).
 */
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';

export interface Req { path: string; body: string; headers: Record<string, string> }
export interface LoadResult { wallMs: number; lat: number[]; errors: number }
export interface LoadOptions {
  /** collect the reply body (needed by `ok`); false drains it unread (default true) */
  readBody?: boolean;
  /** whether a reply counts as a success (default: status 200) */
  ok?: (status: number, body: string) => boolean;
}

const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** X-Stamp header value: P-256 (DER, no low-S) signature of the body with the API key. */
export function stampBody(body: string, key: { publicKey: string; privateKey: string }): string {
  const sig = p256.sign(new TextEncoder().encode(body), hexToBytes(key.privateKey), { format: 'der', lowS: false });
  return b64url(JSON.stringify({ publicKey: key.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature: bytesToHex(sig) }));
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

/** Sends every request once from `concurrency` keep-alive clients; wall time and per-request latency in ms. */
export async function load(port: number, reqs: Req[], concurrency: number, opts: LoadOptions = {}): Promise<LoadResult> {
  const readBody = opts.readBody ?? true;
  const ok = opts.ok ?? ((status: number) => status === 200);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
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
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  agent.destroy();
  return { wallMs, lat, errors };
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

/** A node:http server on 127.0.0.1 answering every POST with the fixed JSON body (the ceiling). */
export async function startTrivial(fixed: string): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => { res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(fixed) }); res.end(fixed); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Writes files into <repo>/bench/results/ (created if missing), name → content. */
export function writeResults(files: Record<string, string>): void {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
}
