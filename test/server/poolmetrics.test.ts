// GET /metrics with WORKERS=2 (issue 17 "Metrics"): whichever worker a scrape reaches, it answers
// with the pool's sum (gathered by the primary from every worker), so counters are true for the
// node; with METRICS_PORT the primary serves the same sum on its own listener.
import { describe, it, expect } from 'vitest';
import http from 'node:http';
import { rmSync } from 'node:fs';
import { startServer } from '../../src/server.js';
import { freshDataDir, stampFor } from './harness.js';
import { ensureBuilt } from './build.js';
import { sample } from './promtext.js';

/** One GET or POST on a fresh connection (so cluster's round-robin spreads them over the workers). */
function request(url: string, body?: string, stamp?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': 'application/json', 'X-Stamp': stamp!, 'Content-Length': String(Buffer.byteLength(body)) };
    const req = http.request(url, { method: body === undefined ? 'GET' : 'POST', agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('metrics of a process pool (WORKERS=2)', () => {
  it('every scrape, through any worker or the primary\'s METRICS_PORT, counts the requests of all workers', async () => {
    const why = ensureBuilt();
    expect(why, why).toBeUndefined();
    for (const metricsPort of [undefined, 0]) {
      const dataDir = freshDataDir();
      const server = await startServer({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', workers: 2, metricsPort });
      try {
        const body = JSON.stringify({ organizationId: server.bootstrap.organizationId });
        const n = 12;
        for (let i = 0; i < n; i++) expect((await request(`${server.url}/public/v1/query/whoami`, body, stampFor(body, server.rootApiKey!))).status).toBe(200);
        for (let i = 0; i < 6; i++) {
          const r = await request(server.metricsUrl);
          expect(r.status, r.text.slice(0, 300)).toBe(200);
          expect(sample(r.text, 'kmas_http_requests_total', { operation: 'query/whoami', status: '200' })).toBe(n);
          // the outbox gauges describe the one shared database: the maximum over workers, not a sum
          expect(sample(r.text, 'kmas_outbox_depth', { kind: 'webhook' })).toBe(0);
        }
      } finally {
        await server.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  }, 120_000);
});
