/**
 * Prometheus metrics of this process (prom-client), served as GET /metrics (src/http/app.ts).
 *
 * One registry per process: the instruments below are module-level, so the storage, signing and
 * outbox code records into them without being handed anything. Names start with `kmas_`,
 * durations are in seconds, and distributions are histograms (they add up across nodes; summaries
 * do not). Label values are bounded sets (operation paths of the registry, activity types and
 * statuses, curves, fixed reasons), never request data.
 *
 * A WORKERS pool (src/http/pool.ts): each worker records into its own registry; a scrape of any
 * worker answers with the sum over the pool, which the primary gathers from every worker
 * (prom-client's AggregatorRegistry; gauges that describe the shared database take the maximum,
 * not the sum).
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'kmas_' });
// Gauges named like counters (promtool check metrics objects); the same counts remain by type
// (kmas_nodejs_active_handles, _requests, _resources).
for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total']) registry.removeSingleMetric(`kmas_nodejs_${name}`);
// A pool worker answers the primary's requests for its metrics (AggregatorRegistry) with these.
// (Constructing one installs prom-client's listener for those requests.)
if (cluster.isWorker) {
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
}

/** The exposition of this process (text format 0.0.4). */
export function metricsText(): Promise<string> {
  return registry.metrics();
}

/** Buckets (s) for request-sized work: 0.5 ms … 10 s. */
const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new Counter({
  name: 'kmas_http_requests_total', help: 'HTTP requests answered, by operation and HTTP status',
  labelNames: ['operation', 'status'] as const, registers: [registry],
});
export const httpDuration = new Histogram({
  name: 'kmas_http_request_duration_seconds', help: 'Time from the request to its reply, by operation',
  labelNames: ['operation'] as const, buckets: LATENCY, registers: [registry],
});
export const activities = new Counter({
  name: 'kmas_activities_total', help: 'Activities stored, by type and status',
  labelNames: ['type', 'status'] as const, registers: [registry],
});
/** The reasons a stamp (or its key) is refused; see stampFailureReason in src/http/app.ts. */
export type StampFailure = 'bad_signature' | 'unknown_key' | 'expired_key' | 'stale_timestamp' | 'ip_allowlist' | 'missing_stamp' | 'malformed_stamp';
export const stampFailures = new Counter({
  name: 'kmas_stamp_verification_failures_total', help: 'Requests refused at the stamp check, by reason',
  labelNames: ['reason'] as const, registers: [registry],
});
export const rateLimited = new Counter({
  name: 'kmas_rate_limited_total', help: 'Requests refused with 429 by the rate limits, by limit (api_key, organization)',
  labelNames: ['limit'] as const, registers: [registry],
});
export const signDuration = new Histogram({
  name: 'kmas_sign_duration_seconds', help: 'Signing jobs (single: one payload or transaction; batch: sign_raw_payloads), by curve, including a signing thread\'s queue',
  labelNames: ['curve', 'mode'] as const, buckets: LATENCY, registers: [registry],
});
export const signatures = new Counter({
  name: 'kmas_signatures_total', help: 'Signatures made, by curve',
  labelNames: ['curve'] as const, registers: [registry],
});
export const poolQueueWait = new Histogram({
  name: 'kmas_worker_pool_queue_wait_seconds', help: 'Time a job waits in a worker-thread pool\'s queue before it is handed to its thread, by pool (sign, stamp)',
  labelNames: ['pool'] as const, buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5], registers: [registry],
});
export const dbCommitDuration = new Histogram({
  name: 'kmas_db_commit_duration_seconds', help: 'SQLite write transactions, BEGIN IMMEDIATE to COMMIT (a group commit is one)',
  buckets: LATENCY, registers: [registry],
});
export const dbGroupWrites = new Histogram({
  name: 'kmas_db_group_writes', help: 'PostgreSQL: writes per group of writes sent to one transaction (1: a write alone; a group rolled back and run again alone is counted once, and in kmas_db_group_reruns_total)',
  buckets: [1, 2, 4, 8, 16, 32], registers: [registry],
});
export const dbGroupReruns = new Counter({
  name: 'kmas_db_group_reruns_total', help: 'PostgreSQL: group transactions rolled back whole, their writes run again each alone, by reason (conflict: two writes needed one lock, or one undone after a change; error: a write threw or a statement failed)',
  labelNames: ['reason'] as const, registers: [registry],
});
export const dbPredictedWrites = new Counter({
  name: 'kmas_db_predicted_writes_total', help: 'PostgreSQL: lone writes sent as one message, their reads assumed from what this node read or wrote before and checked with the COMMIT, by outcome (committed; versions, request or head: that check failed, the write ran again with its reads sent first)',
  labelNames: ['outcome'] as const, registers: [registry],
});
export const logSealed = new Counter({
  name: 'kmas_log_entries_sealed_total', help: 'SQLite: activities\' first log entries sealed after their commit, by where (thread: by the sealing thread; request: on the request thread, because an append, a log query or shutdown needed them before the thread had sealed them)',
  labelNames: ['where'] as const, registers: [registry],
});
export const dbStampContexts = new Counter({
  name: 'kmas_db_stamp_contexts_total', help: 'PostgreSQL: the rows a stamp is resolved against, by source (cached: a context this node read before, its auth version unchanged; read: read afresh, the first time or after a change)',
  labelNames: ['source'] as const, registers: [registry],
});
export const dbOrgData = new Counter({
  name: 'kmas_db_org_data_total', help: 'PostgreSQL: signing keys and webhook targets looked up, by source (cached: read by this node before, its organization\'s data version unchanged; read: read afresh)',
  labelNames: ['source'] as const, registers: [registry],
});
export const dbSyncDuration = new Histogram({
  name: 'kmas_db_wal_sync_duration_seconds', help: 'fsync of the SQLite WAL off the event loop (commits wait for it before their reply)',
  buckets: LATENCY, registers: [registry],
});
export const webhookDeliveries = new Counter({
  name: 'kmas_webhook_deliveries_total', help: 'Webhook and e-mail delivery attempts, by kind (webhook, email) and outcome (delivered, retry, given_up)',
  labelNames: ['kind', 'outcome'] as const, registers: [registry],
});

/** What an outbox has waiting, for the gauges below (read from the store at scrape time). */
export interface OutboxPending { kind: 'webhook' | 'email' | 'broadcast'; count: number; oldestMs: number | undefined }
const OUTBOX_KINDS = ['webhook', 'email', 'broadcast'] as const;
const outboxSources = new Set<() => Promise<OutboxPending[]>>();

/** Adds a reader of pending outbox rows; returns its removal. */
export function observeOutbox(read: () => Promise<OutboxPending[]>): () => void {
  outboxSources.add(read);
  return () => { outboxSources.delete(read); };
}

async function outboxNow(): Promise<Map<string, { count: number; oldestMs: number | undefined }>> {
  const out = new Map<string, { count: number; oldestMs: number | undefined }>(OUTBOX_KINDS.map((k) => [k, { count: 0, oldestMs: undefined }]));
  for (const read of outboxSources) {
    let rows: OutboxPending[];
    try { rows = await read(); } catch { continue; /* a store that is closing */ }
    for (const r of rows) {
      const m = out.get(r.kind)!;
      m.count += r.count;
      if (r.oldestMs !== undefined && (m.oldestMs === undefined || r.oldestMs < m.oldestMs)) m.oldestMs = r.oldestMs;
    }
  }
  return out;
}

new Gauge({
  name: 'kmas_outbox_depth', help: 'Outbox items not yet done (webhook deliveries, e-mails, sent transactions awaiting their receipt), by kind',
  labelNames: ['kind'] as const, registers: [registry], aggregator: 'max',
  async collect() {
    for (const [kind, m] of await outboxNow()) this.set({ kind }, m.count);
  },
});
new Gauge({
  name: 'kmas_outbox_oldest_age_seconds', help: 'Age of the oldest pending outbox item, by kind (0 when none waits)',
  labelNames: ['kind'] as const, registers: [registry], aggregator: 'max',
  async collect() {
    const now = Date.now();
    for (const [kind, m] of await outboxNow()) this.set({ kind }, m.oldestMs === undefined ? 0 : Math.max(0, now - m.oldestMs) / 1000);
  },
});

/** Seconds since a performance.now() reading. */
export function secondsSince(start: number): number {
  return (performance.now() - start) / 1000;
}
