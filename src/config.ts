/**
 * Server settings: each has a default, an environment variable and a CLI flag.
 * Bad values stop start-up with a one-line message (ConfigError, exit code 2 in the CLI).
 */
import { normalizeCaip2, SOLANA_CAIP2 } from './chains/caip2.js';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { isIPv4, isIPv6 } from 'node:net';
import { p256 } from '@noble/curves/nist.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type SqliteSynchronous = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** Compressed P-256 public key (hex) registered as the root API key on first start. */
  rootApiPublicKey?: string;
  rootOrganizationName: string;
  rootUserName: string;
  /** How old a submit's timestampMs may be (ms). */
  timestampWindowMs: number;
  /** How far in the future a submit's timestampMs may be (ms). */
  timestampFutureMs: number;
  logLevel: LogLevel;
  bodyLimit: number;
  sqliteSynchronous: SqliteSynchronous;
  corsOrigin: string;
  /** Proxies whose X-Forwarded-For is believed (Express "trust proxy"): false, a hop count, or addresses / CIDRs / loopback, linklocal, uniquelocal. */
  trustProxy: false | number | string[];
  /** Master key for keys at rest (64 hex or base64 of 32 bytes); unset → DATA_DIR/master.key (created 0600). */
  masterKey?: string;
  /** Server processes sharing the port (node:cluster); 1 = serve from the calling process. */
  workers: number;
  /** Worker threads (each with its own wasm core) for batch signing; 0 = sign on the request thread. */
  signWorkers: number;
  /** Worker threads for stamp checks; -1 = auto (1 with more than one CPU and WORKERS = 1, else 0). */
  stampWorkers: number;
  /** Webhooks (src/webhooks.ts): delay before the first retry (ms), doubling per attempt. */
  webhookRetryMs: number;
  /** Webhooks: attempts per event, the first included. */
  webhookMaxAttempts: number;
  /** Webhooks: how long a receiver has to answer (ms). */
  webhookTimeoutMs: number;
  /** Webhooks: which addresses deliveries may go to (src/domain/destinations.ts); auto = any on a loopback HOST, else public. */
  webhookDestinations: 'auto' | 'public' | 'any';
  /** OIDC issuers whose tokens oauth / oauth_login / OAuth providers accept (src/auth/oidc.ts). */
  oidcIssuers: string[];
  /** SMTP server for e-mail auth, one-time codes and recovery (nodemailer URL); unset: those flows are refused. */
  smtpUrl?: string;
  /** From address of the e-mails kmas sends. */
  mailFrom: string;
  /** Local development without SMTP: e-mails are written to this directory as .eml files. */
  mailDir?: string;
  /** JSON-RPC endpoints of the networks kmas broadcasts to, as `caip2=url` entries (src/chains/networks.ts). */
  rpcUrls: string[];
  /** Broadcasting: how often a sent transaction's receipt is looked for (ms). */
  rpcPollMs: number;
  /** Broadcasting: how long one JSON-RPC call may take (ms). */
  rpcTimeoutMs: number;
  /** Outboxes (src/outbox.ts): the longest a node goes without looking for due rows (ms). */
  outboxPollMs: number;
  /** GET /metrics on a listener of its own (0 = any free port); unset: on the API port. */
  metricsPort?: number;
  /** Address of the metrics listener; unset: HOST. */
  metricsHost?: string;
  /** Bearer token GET /metrics requires; unset: none. */
  metricsToken?: string;
  /** Requests per second per API key (or passkey), bursts of as many; 0 = no limit. */
  rateLimitApiKey: number;
  /** Requests per second per organization, bursts of as many; 0 = no limit. */
  rateLimitOrganization: number;
  /** SIGTERM / SIGINT: how long requests in flight and outbox work may take to finish (ms). */
  shutdownTimeoutMs: number;
  /** PostgreSQL shared by every node (postgres:// URL, TLS via sslmode); unset: SQLite in DATA_DIR. */
  databaseUrl?: string;
  /** PostgreSQL: connections per node. */
  databasePoolSize: number;
  /** PostgreSQL: longest a statement may run (ms). */
  databaseStatementTimeoutMs: number;
  /** PostgreSQL: group transactions of writes a node runs at once. */
  databaseWriteGroups: number;
  /** PostgreSQL, under load: how long the next group of writes waits for more (ms; 0: at once). */
  databaseGroupWaitMs: number;
}

export class ConfigError extends Error {
  constructor(message: string) { super(message); this.name = 'ConfigError'; }
}

interface Setting {
  key: keyof Config;
  env: string;
  flag: string;
  def: string | undefined;
  doc: string;
  parse: (raw: string, name: string) => unknown;
}

const int = (min: number, max: number) => (raw: string, name: string): number => {
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  return n;
};
const oneOf = <T extends string>(values: readonly T[], upper = false) => (raw: string, name: string): T => {
  const v = (upper ? raw.trim().toUpperCase() : raw.trim().toLowerCase()) as T;
  if (!values.includes(v)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return v;
};
const nonEmpty = (raw: string, name: string): string => {
  if (raw.trim() === '') throw new ConfigError(`${name} must not be empty`);
  return raw.trim();
};
const size = (raw: string, name: string): number => {
  const m = /^(\d+)\s*(b|kb|kib|mb|mib)?$/i.exec(raw.trim());
  if (!m) throw new ConfigError(`${name} must be a size like 1048576, 512kb or 1mb, got "${raw}"`);
  const unit = (m[2] ?? 'b').toLowerCase();
  const mult = unit === 'b' ? 1 : unit.startsWith('k') ? 1024 : 1024 * 1024;
  const n = Number(m[1]) * mult;
  if (n < 1024 || n > 64 * 1024 * 1024) throw new ConfigError(`${name} must be between 1 KiB and 64 MiB, got "${raw}"`);
  return n;
};
const compressedP256 = (raw: string, name: string): string => {
  const v = raw.trim().toLowerCase();
  const bad = () => new ConfigError(`${name} must be a compressed P-256 public key (66 hex characters starting 02 or 03, a point on the curve)`);
  if (!/^0[23][0-9a-f]{64}$/.test(v)) throw bad();
  try { p256.Point.fromHex(v); } catch { throw bad(); }
  return v;
};

const workerCount = (raw: string, name: string): number => {
  if (raw.trim().toLowerCase() === 'auto') return Math.max(1, Math.min(64, availableParallelism()));
  return int(1, 64)(raw, name);
};

/** 'auto' is kept as -1 (which also reads back, since startServer re-parses a loaded Config). */
const threadCount = (raw: string, name: string): number => {
  const v = raw.trim().toLowerCase();
  return v === 'auto' || v === '-1' ? -1 : int(0, 16)(raw, name);
};

const trustProxy = (raw: string, name: string): false | number | string[] => {
  const t = raw.trim();
  if (t === '' || t === 'false') return false;
  if (/^\d+$/.test(t)) return int(1, 64)(t, name);
  const items = t.split(',').map((x) => x.trim()).filter((x) => x !== '');
  for (const item of items) {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(item)) continue;
    const [address, prefix, extra] = item.split('/');
    const max = isIPv4(address!) ? 32 : isIPv6(address!) ? 128 : 0;
    if (max === 0 || extra !== undefined || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= max))) {
      throw new ConfigError(`${name}: '${item}' is not a hop count, an address, a CIDR block, loopback, linklocal or uniquelocal`);
    }
  }
  return items;
};

const databaseUrl = (raw: string, name: string): string => {
  const v = raw.trim();
  let u: URL;
  try { u = new URL(v); } catch { throw new ConfigError(`${name} must be a postgres:// URL (the value is not shown: it may hold a password)`); }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new ConfigError(`${name} must be a postgres:// or postgresql:// URL, got a ${u.protocol} URL`);
  return v;
};

const masterKeyText = (raw: string, name: string): string => {
  const v = raw.trim();
  const hex = /^(0x)?[0-9a-fA-F]{64}$/.test(v);
  const b64 = /^[A-Za-z0-9+/_-]{43}=?$/.test(v);
  if (!hex && !b64) throw new ConfigError(`${name} must be 32 bytes as 64 hex characters or base64 (the value is not shown)`);
  return v;
};

/** Comma-separated issuer URLs: https, or http on a loopback address (a local issuer). */
const issuerList = (raw: string, name: string): string[] => {
  const out: string[] = [];
  for (const item of raw.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    let u: URL;
    try { u = new URL(item); } catch { throw new ConfigError(`${name}: "${item}" is not a URL`); }
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) {
      throw new ConfigError(`${name}: "${item}" must be an https URL (http only on a loopback address)`);
    }
    out.push(item.replace(/\/+$/, ''));
  }
  return out;
};

/**
 * Comma-separated `eip155:<chain id>=<url>` / `solana:<genesis hash prefix>=<url>` entries, http or
 * https (a node in a private network often has no TLS: startServer warns about plain http beyond
 * loopback, since whoever sits on the path could lie about nonces, fees and receipts).
 */
const rpcList = (raw: string, name: string): string[] => {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const item of raw.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const eq = item.indexOf('=');
    const caip2 = normalizeCaip2(eq > 0 ? item.slice(0, eq).trim() : '');
    if (!/^eip155:[1-9]\d{0,15}$/.test(caip2) && !SOLANA_CAIP2.test(caip2)) {
      throw new ConfigError(`${name}: "${item}" must be eip155:<chain id>=<url> or solana:<genesis hash prefix>=<url>`);
    }
    if (seen.has(caip2)) throw new ConfigError(`${name}: ${caip2} is given twice`);
    seen.add(caip2);
    const raw = item.slice(eq + 1).trim();
    let u: URL;
    try { u = new URL(raw); } catch { throw new ConfigError(`${name}: "${raw}" (for ${caip2}) is not a URL`); }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ConfigError(`${name}: the URL for ${caip2} must be http or https`);
    out.push(`${caip2}=${raw}`);
  }
  return out;
};

/** A secret: visible ASCII, at least 16 characters (the value is not shown). */
const token = (raw: string, name: string): string => {
  const v = raw.trim();
  if (!/^[\x21-\x7e]{16,256}$/.test(v)) throw new ConfigError(`${name} must be 16 to 256 visible ASCII characters (the value is not shown)`);
  return v;
};

const smtpUrl = (raw: string, name: string): string => {
  const v = raw.trim();
  let u: URL;
  try { u = new URL(v); } catch { throw new ConfigError(`${name} must be a URL such as smtp://user:password@host:587 or smtps://host:465`); }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new ConfigError(`${name} must start with smtp:// or smtps://`);
  return v;
};

export const SETTINGS: readonly Setting[] = [
  { key: 'host', env: 'HOST', flag: '--host', def: '127.0.0.1', doc: 'Address to listen on', parse: nonEmpty },
  { key: 'port', env: 'PORT', flag: '--port', def: '8080', doc: 'TCP port (0 = any free port)', parse: int(0, 65535) },
  { key: 'dataDir', env: 'DATA_DIR', flag: '--data-dir', def: './data', doc: 'Directory holding kmas.sqlite, bootstrap.json, root-api-key.json', parse: nonEmpty },
  { key: 'rootApiPublicKey', env: 'ROOT_API_PUBLIC_KEY', flag: '--root-api-public-key', def: undefined, doc: 'Compressed P-256 public key (hex) for the root user on first start; if unset a key pair is generated into DATA_DIR/root-api-key.json', parse: compressedP256 },
  { key: 'rootOrganizationName', env: 'ROOT_ORGANIZATION_NAME', flag: '--root-organization-name', def: 'Root Organization', doc: 'Name of the root organization created on first start', parse: nonEmpty },
  { key: 'rootUserName', env: 'ROOT_USER_NAME', flag: '--root-user-name', def: 'root', doc: 'Name of the root user created on first start', parse: nonEmpty },
  { key: 'timestampWindowMs', env: 'TIMESTAMP_WINDOW_MS', flag: '--timestamp-window-ms', def: '300000', doc: 'Maximum age of a submit\'s timestampMs (ms)', parse: int(1000, 86_400_000) },
  { key: 'timestampFutureMs', env: 'TIMESTAMP_FUTURE_MS', flag: '--timestamp-future-ms', def: '60000', doc: 'Maximum lead of a submit\'s timestampMs over the server clock (ms)', parse: int(0, 86_400_000) },
  { key: 'logLevel', env: 'LOG_LEVEL', flag: '--log-level', def: 'info', doc: 'debug | info | warn | error | silent', parse: oneOf(['debug', 'info', 'warn', 'error', 'silent'] as const) },
  { key: 'bodyLimit', env: 'BODY_LIMIT', flag: '--body-limit', def: '1048576', doc: 'Largest accepted request body (bytes, or 512kb / 1mb)', parse: size },
  { key: 'sqliteSynchronous', env: 'SQLITE_SYNCHRONOUS', flag: '--sqlite-synchronous', def: 'FULL', doc: 'SQLite PRAGMA synchronous: FULL (durable at commit), NORMAL, OFF, EXTRA', parse: oneOf(['OFF', 'NORMAL', 'FULL', 'EXTRA'] as const, true) },
  { key: 'corsOrigin', env: 'CORS_ORIGIN', flag: '--cors-origin', def: '*', doc: 'Access-Control-Allow-Origin value for browser clients', parse: nonEmpty },
  { key: 'trustProxy', env: 'TRUST_PROXY', flag: '--trust-proxy', def: 'false', doc: 'Reverse proxies whose X-Forwarded-For gives the client address (for IP allowlists): false (the socket\'s address), a hop count, or a comma-separated list of addresses, CIDR blocks, loopback, linklocal, uniquelocal', parse: trustProxy },
  { key: 'masterKey', env: 'KMAS_MASTER_KEY', flag: '--master-key', def: undefined, doc: 'Master key encrypting private keys and mnemonics at rest (64 hex chars or base64 of 32 bytes; prefer the env variable); unset: DATA_DIR/master.key, created on first start with mode 0600', parse: masterKeyText },
  { key: 'workers', env: 'WORKERS', flag: '--workers', def: '1', doc: 'Server processes sharing the port (node:cluster; SQLite WAL shared); 1 = one process, auto = one per CPU', parse: workerCount },
  { key: 'signWorkers', env: 'SIGN_WORKERS', flag: '--sign-workers', def: 'auto', doc: 'Worker threads (each with its own wasm core) that open sealed keys and sign off the event loop (sign_raw_payload(s), sign_transaction; batches split across them); 0 = sign on the request thread; auto = 1 when the machine has more than one CPU and WORKERS is 1, else 0', parse: threadCount },
  { key: 'stampWorkers', env: 'STAMP_WORKERS', flag: '--stamp-workers', def: 'auto', doc: 'Worker threads checking stamps off the event loop; auto = 1 when the machine has more than one CPU and WORKERS is 1, else 0', parse: threadCount },
  { key: 'webhookRetryMs', env: 'WEBHOOK_RETRY_MS', flag: '--webhook-retry-ms', def: '2000', doc: 'Webhook deliveries: delay before the first retry (ms), doubling with every further attempt (at most 10 minutes)', parse: int(10, 3_600_000) },
  { key: 'webhookMaxAttempts', env: 'WEBHOOK_MAX_ATTEMPTS', flag: '--webhook-max-attempts', def: '12', doc: 'Webhook deliveries: attempts per event before it is given up', parse: int(1, 100) },
  { key: 'webhookTimeoutMs', env: 'WEBHOOK_TIMEOUT_MS', flag: '--webhook-timeout-ms', def: '10000', doc: 'Webhook deliveries: how long a receiver has to answer (ms)', parse: int(100, 300_000) },
  { key: 'webhookDestinations', env: 'WEBHOOK_DESTINATIONS', flag: '--webhook-destinations', def: 'auto', doc: 'Webhook addresses users may name: public (only public IP addresses: no loopback, private, link-local or reserved ones, checked when an endpoint is made and at each delivery), any, or auto (any when HOST is a loopback address, else public)', parse: oneOf(['auto', 'public', 'any'] as const) },
  { key: 'oidcIssuers', env: 'OIDC_ISSUERS', flag: '--oidc-issuers', def: 'https://accounts.google.com,https://appleid.apple.com,https://www.facebook.com', doc: 'OIDC issuers whose ID tokens the OAuth flows accept (comma-separated; keys found through each issuer\'s /.well-known/openid-configuration); https, or http on a loopback address', parse: issuerList },
  { key: 'smtpUrl', env: 'SMTP_URL', flag: '--smtp-url', def: undefined, doc: 'SMTP server for e-mail auth, one-time codes and recovery, e.g. smtp://user:password@mail.example.com:587 (STARTTLS when offered) or smtps://…:465; unset: those flows are refused (prefer the env variable: it holds a password)', parse: smtpUrl },
  { key: 'mailFrom', env: 'MAIL_FROM', flag: '--mail-from', def: 'kmas <no-reply@localhost>', doc: 'From address of the e-mails kmas sends', parse: nonEmpty },
  { key: 'rpcUrls', env: 'RPC_URLS', flag: '--rpc-urls', def: '', doc: 'JSON-RPC endpoints of the networks kmas broadcasts to (eth_send_transaction, eth_send_raw_transaction, sol_send_transaction, get_nonces, balances), as comma-separated caip2=url entries: eip155:<chain id>=<url> or solana:<genesis hash prefix>=<url> (solana:mainnet / solana:devnet stand for theirs); https, or http (warned about beyond loopback); unset: broadcasting is refused', parse: rpcList },
  { key: 'rpcPollMs', env: 'RPC_POLL_MS', flag: '--rpc-poll-ms', def: '2000', doc: 'Broadcasting: how often the receipt of a sent transaction is looked for (ms)', parse: int(20, 600_000) },
  { key: 'rpcTimeoutMs', env: 'RPC_TIMEOUT_MS', flag: '--rpc-timeout-ms', def: '10000', doc: 'Broadcasting: how long one JSON-RPC call may take (ms)', parse: int(100, 300_000) },
  { key: 'outboxPollMs', env: 'OUTBOX_POLL_MS', flag: '--outbox-poll-ms', def: '5000', doc: 'Webhook, e-mail and broadcast outboxes: the longest a node goes without looking for due rows (ms), so that rows another node (or WORKERS process) enqueued, or left when it died, are taken up once their lease ends', parse: int(20, 600_000) },
  { key: 'metricsPort', env: 'METRICS_PORT', flag: '--metrics-port', def: undefined, doc: 'Serve GET /metrics (Prometheus) on a listener of its own at this port (0 = any free port) instead of the API port', parse: int(0, 65535) },
  { key: 'metricsHost', env: 'METRICS_HOST', flag: '--metrics-host', def: undefined, doc: 'Address of the METRICS_PORT listener; unset: HOST', parse: nonEmpty },
  { key: 'metricsToken', env: 'METRICS_TOKEN', flag: '--metrics-token', def: undefined, doc: 'Bearer token GET /metrics requires (Authorization: Bearer <token>); unset: none (prefer the env variable)', parse: token },
  { key: 'rateLimitApiKey', env: 'RATE_LIMIT_API_KEY', flag: '--rate-limit-api-key', def: '1000', doc: 'Requests per second one API key (or passkey) may make, in bursts of as many, counted per node; over it: 429 RESOURCE_EXHAUSTED with Retry-After; 0 = no limit', parse: int(0, 1_000_000) },
  { key: 'rateLimitOrganization', env: 'RATE_LIMIT_ORGANIZATION', flag: '--rate-limit-organization', def: '5000', doc: 'Requests per second for one organization (all its credentials), in bursts of as many, counted per node; 0 = no limit', parse: int(0, 1_000_000) },
  { key: 'shutdownTimeoutMs', env: 'SHUTDOWN_TIMEOUT_MS', flag: '--shutdown-timeout-ms', def: '10000', doc: 'On SIGTERM / SIGINT: how long requests in flight and outbox work may take to finish before the rest is cut off (ms)', parse: int(100, 600_000) },
  { key: 'databaseUrl', env: 'DATABASE_URL', flag: '--database-url', def: undefined, doc: 'PostgreSQL shared by any number of kmas nodes, e.g. postgres://kmas:secret@db.internal:5432/kmas?sslmode=verify-full (KMAS_MASTER_KEY is then required); unset: SQLite in DATA_DIR (prefer the env variable: it holds a password)', parse: databaseUrl },
  { key: 'databasePoolSize', env: 'DATABASE_POOL_SIZE', flag: '--database-pool-size', def: '10', doc: 'PostgreSQL: connections each node keeps', parse: int(1, 1000) },
  { key: 'databaseStatementTimeoutMs', env: 'DATABASE_STATEMENT_TIMEOUT_MS', flag: '--database-statement-timeout-ms', def: '10000', doc: 'PostgreSQL: longest a statement may run (ms) before it is cancelled', parse: int(100, 3_600_000) },
  { key: 'databaseWriteGroups', env: 'DATABASE_WRITE_GROUPS', flag: '--database-write-groups', def: '1', doc: 'PostgreSQL: group transactions of writes each node runs at once (the writes asked for meanwhile form the next group); 1: one after another', parse: int(1, 64) },
  { key: 'databaseGroupWaitMs', env: 'DATABASE_GROUP_WAIT_MS', flag: '--database-group-wait-ms', def: '0', doc: 'PostgreSQL, under load: how long (ms) the next group of writes waits for more writes (only after a group of two or more, so a lone writer never waits; at once when 32 are queued): fewer, larger transactions, less database CPU per write, for at most this much latency; 0: start at once', parse: int(0, 100) },
  { key: 'mailDir', env: 'MAIL_DIR', flag: '--mail-dir', def: undefined, doc: 'Local development without an SMTP server: e-mails are written to this directory as .eml files (mode 0600; they hold login bundles and codes); SMTP_URL wins when both are set', parse: nonEmpty },
];

/** Reads settings from (in rising priority) defaults, env, CLI flags, then explicit overrides. */
export function loadConfig(opts: {
  env?: Record<string, string | undefined>;
  argv?: string[];
  overrides?: Partial<Record<keyof Config, unknown>>;
} = {}): Config {
  const env = opts.env ?? {};
  const flags = parseFlags(opts.argv ?? []);
  const out: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    let raw: string | undefined = s.def;
    let name = s.env;
    const fromEnv = env[s.env];
    if (fromEnv !== undefined && fromEnv !== '') { raw = fromEnv; name = s.env; }
    if (flags.has(s.flag)) { raw = flags.get(s.flag); name = s.flag; }
    const ov = opts.overrides?.[s.key];
    if (ov !== undefined && ov !== null) {
      raw = typeof ov === 'string' ? ov : typeof ov === 'number' || typeof ov === 'boolean' ? String(ov) : Array.isArray(ov) ? ov.join(',') : undefined;
      name = s.key;
      if (raw === undefined) throw new ConfigError(`${s.key} has an invalid value`);
    }
    out[s.key] = raw === undefined ? undefined : s.parse(raw, name);
  }
  const cfg = out as unknown as Config;
  cfg.dataDir = path.resolve(cfg.dataDir);
  if (cfg.mailDir !== undefined) cfg.mailDir = path.resolve(cfg.mailDir);
  if (cfg.databaseUrl !== undefined && cfg.masterKey === undefined) {
    // DATA_DIR/master.key would be one node's own key: every node must open what another sealed.
    throw new ConfigError('KMAS_MASTER_KEY is required with DATABASE_URL: every node must use the same master key (from your secret store); a DATA_DIR/master.key would be one node\'s own');
  }
  return cfg;
}

function parseFlags(argv: string[]): Map<string, string> {
  const known = new Set(SETTINGS.map((s) => s.flag));
  const m = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new ConfigError(`unexpected argument "${a}" (see kmas --help)`);
    const eq = a.indexOf('=');
    const flag = eq >= 0 ? a.slice(0, eq) : a;
    if (!known.has(flag)) throw new ConfigError(`unknown option ${flag} (see kmas --help)`);
    let value: string | undefined;
    if (eq >= 0) value = a.slice(eq + 1);
    else { value = argv[i + 1]; i++; }
    if (value === undefined) throw new ConfigError(`option ${flag} needs a value`);
    m.set(flag, value);
  }
  return m;
}

export function settingsHelp(): string {
  return SETTINGS.map((s) => `  ${(s.flag + ' <v>').padEnd(32)} ${s.env.padEnd(24)} ${s.doc}${s.def !== undefined ? ` (default ${s.def})` : ''}`).join('\n');
}
