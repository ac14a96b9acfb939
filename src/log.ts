/**
 * The server's log: one JSON object per line (pino), start-up and shutdown included:
 * `{"level":"info","time":"<ISO 8601>","pid":…,"msg":"…", …fields}`.
 *
 * Never pass it bodies, stamps, key material, codes or bundles. As a second line of defence the
 * members named in REDACTED are replaced by "[redacted]" wherever a caller put them (top level or
 * one level down).
 */
import { pino, stdTimeFunctions } from 'pino';
import type { LogLevel } from './config.js';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Field names that must never reach a log line with their value. */
const REDACTED = [
  'privateKey', 'apiPrivateKey', 'mnemonic', 'seed', 'masterKey', 'stamp', 'body', 'headers',
  'otpCode', 'bundle', 'credentialBundle', 'encryptedBundle', 'exportBundle', 'importBundle',
  'token', 'oidcToken', 'password', 'authorization',
];

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const p = pino({
    level,
    base: { pid: process.pid },
    timestamp: stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: [...REDACTED, ...REDACTED.map((f) => `*.${f}`)], censor: '[redacted]' },
  }, { write });
  return {
    debug: (m, f) => { p.debug(f ?? {}, m); },
    info: (m, f) => { p.info(f ?? {}, m); },
    warn: (m, f) => { p.warn(f ?? {}, m); },
    error: (m, f) => { p.error(f ?? {}, m); },
  };
}

/** The exit code of a serving process that met an error nothing caught (sysexits' EX_SOFTWARE). */
export const UNCAUGHT_EXIT_CODE = 70;

/**
 * For a process that serves (`kmas serve`, a pool worker): an exception nothing caught, or a
 * rejected promise nobody handles, is a bug whose damage cannot be bounded (a transaction, a lock
 * or a reply may be left half done), so the process does not go on serving. It writes one error
 * line to `log()` (the error's name and message, no stack trace: the log's rule) and exits with
 * UNCAUGHT_EXIT_CODE for its supervisor (systemd, Kubernetes, the pool's primary) to start it
 * again. Acknowledged writes are durable already; requests in flight get no reply and may be sent
 * again (an identical body is one activity).
 */
export function exitOnUncaught(log: () => Logger): void {
  let exiting = false;
  const exit = (kind: 'uncaughtException' | 'unhandledRejection', e: unknown) => {
    if (exiting) return;
    exiting = true;
    const error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    try {
      log().error('an error nothing caught: exiting for the supervisor to restart the process', { kind, error: error.length > 300 ? `${error.slice(0, 300)}…` : error });
    } finally {
      process.exit(UNCAUGHT_EXIT_CODE);
    }
  };
  process.on('uncaughtException', (e) => exit('uncaughtException', e));
  process.on('unhandledRejection', (e) => exit('unhandledRejection', e));
}
