/**
 * Optional process pool (WORKERS > 1): node:cluster workers share the listening port; each runs
 * the whole request path (HTTP, stamps, SQLite connection with its own group commit) in its own
 * process, so requests use every core. The primary creates DATA_DIR and the bootstrap state once,
 * then forks; workers open the same database (WAL; writers from different processes wait on
 * SQLite's busy timeout). Workers run the compiled JavaScript (dist/src/poolworker.js).
 */
import cluster, { type Worker } from 'node:cluster';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { AggregatorRegistry } from 'prom-client';

export interface Pool {
  port: number;
  workers: number;
  /** The metrics of every worker, summed (gauges of the shared database: the maximum). */
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

export interface StartMessage { type: 'kmas:start'; config: Config }
export interface StopMessage { type: 'kmas:stop' }
export interface HelloMessage { type: 'kmas:hello' }
export interface ReadyMessage { type: 'kmas:ready'; port: number }
export interface FailedMessage { type: 'kmas:failed'; message: string }
/** A worker asks the primary for the pool's metrics (a scrape of GET /metrics); the reply has the same id. */
export interface MetricsRequest { type: 'kmas:metrics'; id: number }
export interface MetricsReply { type: 'kmas:metrics'; id: number; text?: string; error?: string }

/** dist/src/poolworker.js beside this module's folder, or (running from sources) the built copy; else undefined. */
export function workerEntry(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  const local = join(here, '..', 'poolworker.js');
  if (existsSync(local)) return local;
  const built = join(here, '..', '..', 'dist', 'src', 'poolworker.js');
  return existsSync(built) ? built : undefined;
}

/** How long a worker may take to stop beyond SHUTDOWN_TIMEOUT_MS before it is killed. */
const STOP_GRACE_MS = 5_000;
const MAX_RESTARTS_PER_MINUTE = 5;

export async function startPool(config: Config, log: Logger, entry: string): Promise<Pool> {
  cluster.setupPrimary({ exec: entry, args: [], silent: false });
  const workers = new Set<Worker>();
  let stopping = false;
  let port = config.port;
  const restarts: number[] = [];
  const aggregator = new AggregatorRegistry();
  const metrics = () => aggregator.clusterMetrics();
  const answerMetrics = (w: Worker) => (m: MetricsRequest) => {
    if (m?.type !== 'kmas:metrics') return;
    void metrics().then((text) => ({ text }), (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }))
      .then((r) => { try { w.send({ type: 'kmas:metrics', id: m.id, ...r } satisfies MetricsReply); } catch { /* the worker went away */ } });
  };

  const fork = (): Promise<Worker> => new Promise((resolve, reject) => {
    const w = cluster.fork();
    workers.add(w);
    w.on('message', answerMetrics(w));
    const onMessage = (m: HelloMessage | ReadyMessage | FailedMessage) => {
      // The worker asks for its configuration once its listener is installed. Every worker listens
      // with the configured port, also 0: cluster hands all of them the primary's one handle.
      // STAMP_WORKERS / SIGN_WORKERS = auto mean none in a pool (its processes already use the cores).
      if (m?.type === 'kmas:hello') {
        w.send({ type: 'kmas:start', config: { ...config, workers: 1, stampWorkers: config.stampWorkers < 0 ? 0 : config.stampWorkers, signWorkers: config.signWorkers < 0 ? 0 : config.signWorkers } } satisfies StartMessage);
      }
      else if (m?.type === 'kmas:ready') { w.off('message', onMessage); port = m.port; resolve(w); }
      else if (m?.type === 'kmas:failed') { w.off('message', onMessage); reject(new Error(m.message)); }
    };
    w.on('message', onMessage);
    w.once('exit', (code, signal) => {
      workers.delete(w);
      w.off('message', onMessage);
      reject(new Error(`worker exited during start (${signal ?? code})`));
      if (stopping) return;
      const now = Date.now();
      while (restarts.length > 0 && restarts[0]! < now - 60_000) restarts.shift();
      if (restarts.length >= MAX_RESTARTS_PER_MINUTE) {
        log.error('worker exited; too many restarts in the last minute, not replacing it', { pid: w.process.pid, code, signal });
        return;
      }
      restarts.push(now);
      log.error('worker exited; starting a replacement', { pid: w.process.pid, code, signal });
      fork().catch((e: unknown) => log.error('replacement worker failed to start', { error: e instanceof Error ? e.message : String(e) }));
    });
  });

  const stop = (): Promise<void> => {
    stopping = true;
    return Promise.all([...workers].map((w) => new Promise<void>((resolve) => {
      if (w.isDead()) { resolve(); return; }
      const t = setTimeout(() => w.kill('SIGKILL'), config.shutdownTimeoutMs + STOP_GRACE_MS);
      w.once('exit', () => { clearTimeout(t); resolve(); });
      try { w.send({ type: 'kmas:stop' } satisfies StopMessage); } catch { w.kill(); }
    }))).then(() => undefined);
  };

  try {
    await Promise.all(Array.from({ length: config.workers }, fork));
  } catch (e) {
    await stop();
    throw e;
  }
  return { port, workers: config.workers, metrics, stop };
}

let metricsSeq = 0;
let listening = false;
const metricsWaiting = new Map<number, { resolve: (text: string) => void; reject: (e: Error) => void }>();

/** In a pool worker: the pool's metrics, gathered by the primary. */
export function poolMetrics(timeoutMs = 10_000): Promise<string> {
  if (!listening) {
    listening = true;
    process.on('message', (m: MetricsReply) => {
      if (m?.type !== 'kmas:metrics') return;
      const w = metricsWaiting.get(m.id);
      if (!w) return;
      metricsWaiting.delete(m.id);
      if (m.text !== undefined) w.resolve(m.text); else w.reject(new Error(m.error ?? 'no metrics'));
    });
  }
  return new Promise<string>((resolve, reject) => {
    const id = ++metricsSeq;
    const t = setTimeout(() => { metricsWaiting.delete(id); reject(new Error('the pool\'s primary did not answer with metrics')); }, timeoutMs);
    metricsWaiting.set(id, { resolve: (v) => { clearTimeout(t); resolve(v); }, reject: (e) => { clearTimeout(t); reject(e); } });
    process.send?.({ type: 'kmas:metrics', id } satisfies MetricsRequest);
  });
}
