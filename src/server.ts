/** startServer(opts) per docs/design.md §3. */
import { destinationsFor } from './domain/destinations.js';
import { LogSigner, TransparencyLog } from './domain/activityLog.js';
import { useSha256 } from './tlog/hash.js';
import { nativeLogHashing } from './crypto/nativeHash.js';
import http from 'node:http';
import path from 'node:path';
import net, { type AddressInfo } from 'node:net';
import { loadConfig, type Config } from './config.js';
import { createLogger } from './log.js';
import { openSqliteDb } from './storage/sqlite.js';
import { prepareDataDir } from './storage/datadir.js';
import { defaultRegistry } from './activities/registry.js';
import { answerClientErrors, createApp, createHttpServer } from './http/app.js';
import { ensureBootstrap, type BootstrapInfo } from './bootstrap.js';
import { VERIFIER_BACKENDS } from './crypto/stamp.js';
import { batchedStdout, type LineSink } from './http/logsink.js';
import { poolMetrics, startPool, workerEntry } from './http/pool.js';
import { createMetricsServer } from './http/metricsserver.js';
import { metricsText, observeOutbox } from './metrics.js';
import { StampVerifier } from './crypto/verifypool.js';
import { availableParallelism } from 'node:os';
import cluster from 'node:cluster';
import type { Logger } from './log.js';
import type { ApiKeyPair } from './domain/keypair.js';
import { WebhookDispatcher } from './webhooks.js';
import { Mailer } from './mail.js';
import { OidcVerifier } from './auth/oidc.js';
import { Networks } from './chains/networks.js';
import type { Services } from './activities/types.js';
import type { Db } from './storage/types.js';
import { Broadcaster } from './broadcaster.js';
import { deadPolicies } from './policy/literalForms.js';

export interface StartOptions extends Partial<Omit<Config, 'dataDir'>> {
  dataDir: string;
  host?: string;
  port?: number;
  rootApiPublicKey?: string;
  timestampWindowMs?: number;
  logLevel?: Config['logLevel'];
}

export interface RunningServer {
  url: string;
  port: number;
  dataDir: string;
  bootstrap: BootstrapInfo;
  rootApiKey?: ApiKeyPair;
  config: Config;
  /** signing threads (SIGN_WORKERS after auto) of this process; 0 in a pool's primary */
  signThreads: number;
  /** GET /metrics: on `url` (METRICS_PORT unset) or on a listener of its own */
  metricsUrl: string;
  /** the server's logger (JSON lines) */
  log: Logger;
  /**
   * Graceful stop: no new connections; requests in flight are answered; the outboxes claim no more
   * work and release what is cut off; then the database closes. Bounded by SHUTDOWN_TIMEOUT_MS:
   * connections still open then are closed.
   */
  stop(): Promise<void>;
}

export const DB_FILE = 'kmas.sqlite';

/** Opens (and on first start initialises) DATA_DIR, then listens. */
export async function startServer(opts: StartOptions | Config): Promise<RunningServer> {
  const config = loadConfig({ overrides: opts as Partial<Record<keyof Config, unknown>> });
  const logSink = batchedStdout();
  const log = createLogger(config.logLevel, logSink);
  // A port someone else holds is found before anything is created in a new data directory.
  if (config.port !== 0 && cluster.isPrimary) await probePort(config.host, config.port);
  prepareDataDir(config.dataDir, DB_FILE, log);
  const db = await openDb(config);
  let boot: Awaited<ReturnType<typeof ensureBootstrap>>;
  try {
    // A pool's primary serves nothing: no signing threads there (each worker starts its own).
    const pooled = config.workers > 1 && cluster.isPrimary;
    boot = await ensureBootstrap(db, { ...config, signWorkers: pooled ? 0 : autoThreads(config.signWorkers, config) }, log);
  } catch (e) {
    await db.close();
    throw e;
  }
  const vault = boot.vault;
  // Once per start, in the process that owns the start (not again in each pool worker).
  if (cluster.isPrimary) {
    for (const dead of await db.read((tx) => deadPolicies(tx))) {
      log.warn('a stored policy can never match as written: fix its condition or consensus (kmas now refuses such expressions)', dead);
    }
  }
  if (config.workers > 1 && cluster.isPrimary) {
    const entry = workerEntry();
    if (entry) {
      // The bootstrap state exists now; the workers open the database themselves.
      vault.close();
      await db.close();
      return startPoolServer(config, log, logSink, boot, entry);
    }
    log.warn('WORKERS > 1 needs the compiled build (dist/src/poolworker.js); serving from this process', { workers: config.workers });
  }
  // Start-up is done (its commits were synced by SQLite): from now on the WAL is synced off the
  // event loop and replies wait for it (src/storage/sqliteUnit.ts WalSync).
  db.deferSyncs?.();
  const mailer = config.smtpUrl ? new Mailer(vault, { smtpUrl: config.smtpUrl, timeoutMs: config.webhookTimeoutMs }, config.mailFrom)
    : config.mailDir ? new Mailer(vault, { dir: config.mailDir }, config.mailFrom) : undefined;
  // the log hashes each stored activity (its record, its entry, the tree's edge): the native SHA-256
  useSha256(...nativeLogHashing);
  const tlog = new TransparencyLog(db, new LogSigner(boot.info.organizationId, vault.logPublicKey!, (m) => vault.signLog(m)));
  const webhookDestinations = destinationsFor(config.webhookDestinations, config.host);
  const webhooks = new WebhookDispatcher(db, (m) => vault.signWebhook(m), vault.webhookPublicKey!, log,
    { retryBaseMs: config.webhookRetryMs, maxAttempts: config.webhookMaxAttempts, timeoutMs: config.webhookTimeoutMs, pollMs: config.outboxPollMs, mailer,
      checkpoint: async (organizationId) => (await tlog.checkpoint(organizationId)).note, destinations: webhookDestinations });
  const chains = new Networks(config.rpcUrls, config.rpcTimeoutMs);
  for (const entry of config.rpcUrls) {
    const u = new URL(entry.slice(entry.indexOf('=') + 1));
    if (u.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)) {
      log.warn('an RPC endpoint is plain http beyond loopback: whoever is on the path can lie about nonces, fees and receipts', { network: entry.slice(0, entry.indexOf('=')), host: u.host });
    }
  }
  const kickDeliveries = () => webhooks.kick();
  const broadcaster = new Broadcaster(db, chains, kickDeliveries, log, { pollMs: config.rpcPollMs, outboxPollMs: config.outboxPollMs });
  const services: Services = {
    vault, chains, tlog, auth: { oidc: new OidcVerifier(config.oidcIssuers), mail: mailer !== undefined },
    kick: { deliveries: kickDeliveries, broadcasts: () => broadcaster.kick() }, webhookDestinations,
  };
  const stampThreads = autoThreads(config.stampWorkers, config);
  const verifier = new StampVerifier(stampThreads);
  const unobserve = observeOutbox(() => db.read(async (tx) => [...await tx.webhooks.pending(), { kind: 'broadcast', ...await tx.sendTransactions.pending() }]));
  // A pool worker answers a scrape with the pool's sum (the primary gathers it); with METRICS_PORT
  // set, the primary's listener serves the pool (src/http/pool.ts) and the workers serve none.
  const metricsOnApiPort = config.metricsPort === undefined;
  const metrics = cluster.isWorker ? () => poolMetrics() : metricsText;
  const app = createApp({ db, services, registry: defaultRegistry(), config, log, verifier, metrics: metricsOnApiPort ? metrics : undefined });
  const server = createHttpServer(app);
  answerClientErrors(server, config.corsOrigin);
  server.keepAliveTimeout = 65_000;
  const metricsServer = !metricsOnApiPort && !cluster.isWorker ? createMetricsServer(metrics, config.metricsToken, log) : undefined;
  const failed = async (e: unknown) => { unobserve(); await webhooks.close(); await broadcaster.close(); await db.close(); vault.close(); void verifier.close(); throw e; };
  await listen(server, config.port, config.host).catch(failed);
  const port = (server.address() as AddressInfo).port;
  const url = urlOf(config.host, port);
  let metricsUrl = `${url}/metrics`;
  if (metricsServer) {
    await listen(metricsServer, config.metricsPort!, config.metricsHost ?? config.host).catch((e: unknown) => { server.close(); return failed(e); });
    metricsUrl = `${urlOf(config.metricsHost ?? config.host, (metricsServer.address() as AddressInfo).port)}/metrics`;
  }
  const signThreads = vault.pool?.size ?? 0;
  log.info('listening', { url, metricsUrl, storage: db.engine, dataDir: config.dataDir, sqliteSynchronous: config.sqliteSynchronous, stampVerifiers: VERIFIER_BACKENDS, stampThreads: verifier.threads, signThreads, networks: chains.configured, webhookDestinations });

  let stopped: Promise<void> | undefined;
  return {
    url, port, dataDir: config.dataDir, bootstrap: boot.info, rootApiKey: boot.rootApiKey, config, signThreads, metricsUrl, log,
    stop() {
      stopped ??= (async () => {
        const start = performance.now();
        const deadline = start + config.shutdownTimeoutMs;
        // Outboxes first: no new claims; what is cut off at the deadline is released.
        const outboxes = Promise.all([webhooks.close(config.shutdownTimeoutMs), broadcaster.close(config.shutdownTimeoutMs)]);
        const drained = await drain(server, config.shutdownTimeoutMs);
        metricsServer?.close();
        metricsServer?.closeAllConnections();
        await outboxes;
        // Every reply waited for its commit's fsync already; this only covers writes with no reply.
        await Promise.race([db.durable().catch(() => undefined), sleep(Math.max(0, deadline - performance.now()))]);
        unobserve();
        await db.close();
        vault.close();
        await verifier.close();
        log.info('stopped', { drained, ms: Math.round(performance.now() - start) });
        logSink.flush();
      })();
      return stopped;
    },
  };
}

/**
 * The configured storage: PostgreSQL shared by every node (DATABASE_URL), else the embedded SQLite
 * file in DATA_DIR. Nothing past this line knows which.
 */
export async function openDb(config: Config): Promise<Db> {
  if (config.databaseUrl !== undefined) {
    const { openPostgresDb } = await import('./storage/postgres.js');
    return openPostgresDb(config.databaseUrl, { poolSize: config.databasePoolSize, statementTimeoutMs: config.databaseStatementTimeoutMs, writeGroups: config.databaseWriteGroups, groupWaitMs: config.databaseGroupWaitMs });
  }
  return openSqliteDb(path.join(config.dataDir, DB_FILE),
    { synchronous: config.sqliteSynchronous, syncOffThread: true, multiProcess: config.workers > 1 || cluster.isWorker, sealLogLater: !(config.workers > 1 || cluster.isWorker) });
}

function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => { server.off('error', reject); resolve(); });
  });
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

const sleep = (ms: number) => new Promise<void>((r) => { setTimeout(r, ms).unref(); });

/**
 * Stops accepting connections and waits until the open ones are done: idle keep-alive connections
 * are closed at once and each busy one after its reply (node:http sends it with Connection: close
 * once the server is closing). Connections still open after timeoutMs are cut; false then.
 */
function drain(server: http.Server, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let done = false;
    const poll = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => {
      if (done) return;
      server.closeAllConnections();
      finish(false);
    }, timeoutMs);
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearInterval(poll);
      clearTimeout(cut);
      resolve(ok);
    };
    server.close(() => finish(true));
    server.closeIdleConnections();
  });
}

/** A thread count setting: as given, or for auto (-1) one thread when there is a spare CPU and no process pool. */
function autoThreads(setting: number, config: Config): number {
  return setting >= 0 ? setting : (availableParallelism() > 1 && config.workers <= 1 ? 1 : 0);
}

/** WORKERS > 1: the primary forks the pool (src/http/pool.ts) and serves nothing itself. */
async function startPoolServer(
  config: Config, log: Logger, logSink: LineSink, boot: Awaited<ReturnType<typeof ensureBootstrap>>, entry: string,
): Promise<RunningServer> {
  const pool = await startPool(config, log, entry);
  const url = urlOf(config.host, pool.port);
  let metricsUrl = `${url}/metrics`;
  // METRICS_PORT: the primary serves the pool's metrics there (the workers serve none).
  const metricsServer = config.metricsPort !== undefined ? createMetricsServer(() => pool.metrics(), config.metricsToken, log) : undefined;
  if (metricsServer) {
    await listen(metricsServer, config.metricsPort!, config.metricsHost ?? config.host).catch(async (e: unknown) => { await pool.stop(); throw e; });
    metricsUrl = `${urlOf(config.metricsHost ?? config.host, (metricsServer.address() as AddressInfo).port)}/metrics`;
  }
  log.info('listening', { url, metricsUrl, storage: config.databaseUrl !== undefined ? 'postgres' : 'sqlite', dataDir: config.dataDir, sqliteSynchronous: config.sqliteSynchronous, workers: pool.workers, stampVerifiers: VERIFIER_BACKENDS });
  let stopped: Promise<void> | undefined;
  return {
    url, port: pool.port, dataDir: config.dataDir, bootstrap: boot.info, rootApiKey: boot.rootApiKey, config, signThreads: 0, metricsUrl, log,
    stop() {
      stopped ??= pool.stop().then(() => {
        metricsServer?.close();
        metricsServer?.closeAllConnections();
        log.info('stopped', { workers: pool.workers });
        logSink.flush();
      });
      return stopped;
    },
  };
}

/** Listens on host:port once and closes again: rejects (EADDRINUSE, EACCES…) when the server could not listen there. */
function probePort(host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
