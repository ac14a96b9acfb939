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
