/**
 * The Express host: raw body → stamp check over the exact bytes → JSON → envelope →
 * organization / principal → operation. Every failure leaves through errorMiddleware as
 * {code, message, details}.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiError, Grpc, invalidArgument, notFound, unauthenticated } from '../errors.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { ApiKeyCurve, ApiKeyRow, Store } from '../storage/types.js';
import type { Registry } from '../activities/registry.js';
import { parseStamp, SCHEME_CURVE, verifyStamp } from './stamp.js';
import { candidateKeys, resolvePrincipal } from '../domain/credentials.js';
import { checkTimestamp, commitQueue, fingerprintOf, parseEnvelope, runQuery, runSubmit } from '../activities/engine.js';
import type { Obj } from '../activities/validate.js';

export interface AppDeps {
  store: Store;
  registry: Registry;
  config: Config;
  log: Logger;
  /** Server clock (ms); replaceable in tests. */
  now?: () => number;
}

const CORS_ALLOW_HEADERS = 'content-type, accept, x-stamp, x-stamp-webauthn, x-client-version';
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function createApp(deps: AppDeps): express.Express {
  const { store, registry, config, log } = deps;
  const now = deps.now ?? Date.now;
  const submits = commitQueue(store);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);

  // One log line per request; `//public/...` (a trailing slash on the client's base URL) tolerated.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const start = process.hrtime.bigint();
    if (req.url.startsWith('//')) req.url = req.url.replace(/^\/{2,}/, '/');
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      log.info('request', {
        method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 100) / 100,
        ...(res.locals.activityId ? { activityId: res.locals.activityId } : {}),
        ...(res.locals.errorCode !== undefined ? { code: res.locals.errorCode } : {}),
      });
    });
    next();
  });

  app.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Access-Control-Allow-Origin', config.corsOrigin);
    if (config.corsOrigin !== '*') res.setHeader('Vary', 'Origin');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, GET, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS);
      res.setHeader('Access-Control-Max-Age', '86400');
      res.status(204).end();
      return;
    }
    next();
  });

  app.get('/healthz', (_req, res) => { sendJson(res, 200, { status: 'ok' }); });
  app.get('/readyz', (_req, res) => {
    if (store.isReady()) sendJson(res, 200, { status: 'ready' });
    else sendJson(res, 503, { code: Grpc.UNAVAILABLE, message: 'storage is not available', details: [] });
  });

  const rawBody = express.raw({ type: () => true, limit: config.bodyLimit });

  app.post('/public/v1/:kind/:op', rawBody, async (req: Request, res: Response) => {
    const kind = req.params.kind as string;
    const opName = req.params.op as string;
    const raw: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const nowMs = now();
    let reply: Record<string, unknown>;
    if (kind === 'query') {
      const op = registry.query(opName);
      if (!op) throw unknownOperation(kind, opName);
      const { keys } = authenticate(req, raw);
      const body = parseBody(raw);
      const orgId = requireOrganizationId(body);
      const { principal, organization } = resolvePrincipal(store, keys, orgId,
        { parentMayRead: op.parentMayRead, resolvesFromParent: op.resolvesFromParent === true }, nowMs);
      reply = runQuery(store, op, body, principal, organization, fingerprintOf(raw), nowMs);
    } else if (kind === 'submit') {
      const op = registry.submit(opName);
      if (!op) throw unknownOperation(kind, opName);
      const cred = authenticate(req, raw);
      const body = parseBody(raw);
      const env = parseEnvelope(op, body);
      checkTimestamp(env.timestampMs, nowMs, config.timestampWindowMs, config.timestampFutureMs);
      const fingerprint = fingerprintOf(raw);
      // Group commit (engine.ts): the submit runs inside the next shared transaction and this
      // promise settles only after its COMMIT. The credential is resolved again in there, since
      // an earlier submit of the same group may have deleted the key or its user.
      const out = await submits.run(() => {
        const keys = candidateKeys(store, cred.publicKey, cred.curve);
        if (keys.length === 0) throw unauthenticated('no API key is registered for the stamp\'s public key', 'PUBLIC_KEY_NOT_FOUND');
        const { principal, organization } = resolvePrincipal(store, keys, env.organizationId,
          { parentMayRead: false, resolvesFromParent: false }, nowMs);
        return runSubmit(store, op, env, principal, organization, fingerprint, nowMs);
      });
      res.locals.activityId = out.activity.id;
      reply = { activity: out.activity };
    } else {
      throw notFound(`unknown path ${req.path}`, 'NOT_FOUND');
    }
    sendJson(res, 200, reply);
  });

  // Known paths with another method → 405; anything else → 404.
  app.all('/public/v1/:kind/:op', (req: Request, res: Response) => {
    if (req.params.kind !== 'query' && req.params.kind !== 'submit') throw notFound(`unknown path ${req.path}`, 'NOT_FOUND');
    res.setHeader('Allow', 'POST, OPTIONS');
    throw new ApiError(Grpc.INVALID_ARGUMENT, `method ${req.method} is not allowed; use POST`,
      { httpStatus: 405, turnkeyErrorCode: 'METHOD_NOT_ALLOWED' });
  });
  app.all(['/healthz', '/readyz'], (req: Request, res: Response) => {
    res.setHeader('Allow', 'GET, HEAD, OPTIONS');
    throw new ApiError(Grpc.INVALID_ARGUMENT, `method ${req.method} is not allowed; use GET`,
      { httpStatus: 405, turnkeyErrorCode: 'METHOD_NOT_ALLOWED' });
  });
  app.use((req: Request) => { throw notFound(`unknown path ${req.path}`, 'NOT_FOUND'); });

  app.use(errorMiddleware(log));

  /** Verifies the stamp over the raw bytes; returns the registered keys it may stand for. */
  function authenticate(req: Request, raw: Buffer): { keys: ApiKeyRow[]; publicKey: string; curve: ApiKeyCurve } {
    const header = req.get('x-stamp');
    if (header === undefined || header === '') {
      if (req.get('x-stamp-webauthn') !== undefined) {
        throw unauthenticated('X-Stamp-Webauthn (passkey) stamps are not supported yet; sign with an API key (X-Stamp)', 'UNSUPPORTED_STAMP');
      }
      throw unauthenticated('missing X-Stamp header', 'SIGNATURE_MISSING');
    }
    const stamp = parseStamp(header);
    const curve = SCHEME_CURVE[stamp.scheme];
    const keys = candidateKeys(store, stamp.publicKey, curve);
    if (keys.length === 0) throw unauthenticated('no API key is registered for the stamp\'s public key', 'PUBLIC_KEY_NOT_FOUND');
    if (!verifyStamp(stamp, raw)) throw unauthenticated('the stamp signature does not verify over the request body', 'SIGNATURE_INVALID');
    return { keys, publicKey: stamp.publicKey, curve };
  }

  return app;
}

function unknownOperation(kind: string, op: string): ApiError {
  return notFound(`unknown or unsupported operation /public/v1/${kind}/${op}`, 'NOT_FOUND');
}

function parseBody(raw: Buffer): Obj {
  let text: string;
  try { text = utf8.decode(raw); } catch { throw invalidArgument('request body is not valid UTF-8'); }
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { throw invalidArgument('request body is not valid JSON'); }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalidArgument('request body must be a JSON object');
  }
  return parsed as Obj;
}

function requireOrganizationId(body: Obj): string {
  const id = body.organizationId;
  // An empty string is an (unknown) organization id, answered 404 by the resolution.
  if (typeof id !== 'string') {
    throw invalidArgument('organizationId is required', [{ field: 'organizationId', description: 'is required (a string)' }]);
  }
  return id;
}

function sendJson(res: Response, status: number, obj: unknown): void {
  res.status(status).setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.end(JSON.stringify(obj));
}

interface BodyParserError { type?: string; status?: number; expose?: boolean }

export function errorMiddleware(log: Logger) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction): void => {
    let e: ApiError;
    if (err instanceof ApiError) e = err;
    else if (isBodyParserError(err)) {
      if (err.type === 'entity.too.large') {
        e = new ApiError(Grpc.RESOURCE_EXHAUSTED, 'request body is larger than the server accepts', { httpStatus: 413, turnkeyErrorCode: 'REQUEST_TOO_LARGE' });
      } else if (err.type === 'encoding.unsupported' || err.type === 'charset.unsupported') {
        e = new ApiError(Grpc.INVALID_ARGUMENT, 'unsupported content encoding', { httpStatus: 415, turnkeyErrorCode: 'REQUEST_INVALID' });
      } else {
        e = invalidArgument('the request body could not be read or decoded');
      }
    } else {
      log.error('internal error', { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
      e = new ApiError(Grpc.INTERNAL, 'internal error', { turnkeyErrorCode: 'INTERNAL' });
    }
    res.locals.errorCode = e.code;
    if (res.headersSent) { res.end(); return; }
    sendJson(res, e.httpStatus, e.toStatus());
  };
}

/** Errors raised while reading the body (body-parser / http-errors, including zlib failures): 4xx. */
function isBodyParserError(err: unknown): err is BodyParserError {
  if (typeof err !== 'object' || err === null) return false;
  const status = (err as BodyParserError).status;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/**
 * Requests Node's HTTP parser refuses before Express sees them (oversized headers, malformed
 * request lines) still get the JSON error format instead of Node's empty default reply.
 */
export function answerClientErrors(server: import('node:http').Server, corsOrigin: string): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) { socket.destroy(); return; }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const e = tooLarge
      ? new ApiError(Grpc.RESOURCE_EXHAUSTED, 'request headers are larger than the server accepts', { httpStatus: 431, turnkeyErrorCode: 'REQUEST_TOO_LARGE' })
      : invalidArgument('malformed HTTP request');
    const body = JSON.stringify(e.toStatus());
    socket.end(
      `HTTP/1.1 ${e.httpStatus} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n`
      + `Content-Type: application/json; charset=utf-8\r\nAccess-Control-Allow-Origin: ${corsOrigin}\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
