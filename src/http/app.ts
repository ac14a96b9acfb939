/**
 * The Express host: raw body → stamp check over the exact bytes → JSON → envelope →
 * organization / principal → operation. Every failure leaves as {code, message, details}.
 *
 * Express does the routing (case-insensitive, one trailing slash tolerated, query string ignored,
 * `:kind` / `:op` percent-decoded); a first middleware folds the `//public/...` a base URL with a
 * trailing slash produces. The body is read by readBody below rather than express.raw: the
 * body-parser chain cost more CPU per request than the P-256 stamp check (docs/server.md).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import zlib from 'node:zlib';
import type { Readable, Transform } from 'node:stream';
import { ApiError, Grpc, invalidArgument, notFound, TurnkeyMessage, unauthenticated } from '../errors.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Db } from '../storage/types.js';
import { StorageUnavailableError } from '../storage/errors.js';
import { parseWebauthnStamp } from '../domain/authenticators.js';
import type { Registry } from '../activities/registry.js';
import { parseStamp } from './stamp.js';
import { SCHEME_CURVE } from '../crypto/stamp.js';
import type { StampVerifier } from '../crypto/verifypool.js';
import { Pipeline, type Request as ApiRequest, type StampHeader, type Trace } from '../activities/pipeline.js';
import type { Obj } from '../domain/validate.js';
import type { Services } from '../activities/types.js';
import { webhookJwks } from '../webhooks.js';
import { randomUUID } from 'node:crypto';
import { activities as activityCount, httpDuration, httpRequests, rateLimited, stampFailures, type StampFailure } from '../metrics.js';
import { RateLimited, RateLimiter } from './ratelimit.js';
import { openApiDocument } from './openapi.js';
import { METRICS_CONTENT_TYPE, metricsAuthorized } from './metricsserver.js';

export interface AppDeps {
  db: Db;
  services: Services;
  registry: Registry;
  config: Config;
  log: Logger;
  /** Server clock (ms); replaceable in tests. */
  now?: () => number;
  /** Stamp checks (P-256 on worker threads); default: every check on the calling thread. */
  verifier?: StampVerifier;
  /** GET /metrics on this app: the exposition text (undefined: not served here, e.g. on METRICS_PORT). */
  metrics?: () => Promise<string>;
}


const CORS_ALLOW_HEADERS = 'content-type, accept, x-stamp, x-stamp-webauthn, x-client-version, x-request-id';
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Per-request state for the log line and the metrics. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  start: number;
  /** the client's X-Request-Id (when usable) or a new one; echoed in the reply */
  requestId: string;
  /** metrics label: `query/<op>` / `submit/<op>` of the registry, or a fixed name (healthz, unknown, …) */
  operation: string;
  organizationId?: string;
  activityId?: string;
  /** why a stamp was refused (metrics) */
  stampFailure?: StampFailure;
  done: boolean;
}

/** An incoming X-Request-Id is kept when it is 1-128 visible ASCII characters. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
/** What the request log line and the metrics call requests that are not API operations. */
const OTHER = 'other';

export function createApp(deps: AppDeps): express.Express {
  const { db, services, registry, config, log } = deps;
  const now = deps.now ?? Date.now;
  const verifier = deps.verifier;
  // Concurrency signal for the stamp and signing threads: API requests in progress (body read,
  // not yet answered). One (a lone client) → work inline, no thread hop; several → others are
  // waiting for this thread, so the work goes to a thread. (Counting requests per turn of the
  // event loop instead missed load from clients whose requests arrive one per turn.)
  let inProgress = 0;
  const concurrent = () => inProgress > 1;
  const done = () => { inProgress--; };
  const corsOrigin = config.corsOrigin;
  const limiter = config.rateLimitApiKey > 0 || config.rateLimitOrganization > 0
    ? new RateLimiter(config.rateLimitApiKey, config.rateLimitOrganization) : undefined;
  const pipeline = new Pipeline({
    db, services, verifier, lookupSubmit: (path) => registry.submit(path),
    timestampWindowMs: config.timestampWindowMs, timestampFutureMs: config.timestampFutureMs,
    ...(limiter ? { admit: (credentialId: string, organizationId: string, nowMs: number) => limiter.admit(credentialId, organizationId, nowMs) } : {}),
  });
  const varyOrigin = corsOrigin !== '*';

  /** The one way out: JSON reply + the request's log line. */
  function send(x: Exchange, status: number, obj: unknown, extra?: Record<string, string>, code?: number, reason?: string): void {
    if (x.done) return;
    x.done = true;
    const { res } = x;
    if (res.headersSent || res.destroyed) {
      res.end();
    } else {
      const body = obj instanceof Serialized ? obj.json : JSON.stringify(obj);
      const headers: Record<string, string | number> = {
        'Access-Control-Allow-Origin': corsOrigin,
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      };
      if (varyOrigin) headers.Vary = 'Origin';
      headers['X-Request-Id'] = x.requestId;
      if (extra) Object.assign(headers, extra);
      res.writeHead(status, headers);
      res.end(body);
    }
    logLine(x, status, code, reason);
  }

  /**
   * The request's one log line and its metrics. Fields: request id, client address, method, path,
   * operation, organization, activity, HTTP status, gRPC code, duration, and for a refusal its
   * reason in words (the error message, which by rule holds no key material or request values).
   */
  function logLine(x: Exchange, status: number, code?: number, reason?: string): void {
    const elapsed = performance.now() - x.start;
    httpRequests.inc({ operation: x.operation, status });
    httpDuration.observe({ operation: x.operation }, elapsed / 1000);
    const fields: Record<string, unknown> = {
      requestId: x.requestId, client: clientAddressOf(x.req), method: x.req.method, path: x.path, operation: x.operation, status,
      durationMs: Math.round(elapsed * 100) / 100,
    };
    if (x.organizationId) fields.organizationId = x.organizationId;
    if (x.activityId) fields.activityId = x.activityId;
    // gRPC code: the error's, or OK (0) for a success
    if (code !== undefined) fields.code = code;
    else if (status < 400) fields.code = 0;
    if (reason !== undefined) fields.reason = reason.length > 300 ? `${reason.slice(0, 300)}…` : reason;
    log.info('request', fields);
  }

  function fail(x: Exchange, err: unknown): void {
    let e: ApiError;
    if (err instanceof ApiError) e = err;
    else if (err instanceof StorageUnavailableError) {
      // the database is away (a restart, a failover): try again, the same body is safe to resend
      e = new ApiError(Grpc.UNAVAILABLE, 'storage is not available; retry the request', { turnkeyErrorCode: 'UNAVAILABLE', reason: err.message });
    } else {
      // The reply names an error id that the log line carries too (Turnkey's form), never the error itself.
      const errorId = randomUUID();
      log.error('internal error', { requestId: x.requestId, errorId, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
      e = new ApiError(Grpc.INTERNAL, `${TurnkeyMessage.INTERNAL} (${errorId})`, { turnkeyErrorCode: 'INTERNAL' });
    }
    const failure = x.stampFailure ?? stampFailureOf(e);
    if (failure) stampFailures.inc({ reason: failure });
    if (e instanceof RateLimited) rateLimited.inc({ limit: e.limit });
    const extra: Record<string, string> | undefined = e instanceof MethodNotAllowed ? { Allow: e.allow }
      : e instanceof RateLimited ? { 'Retry-After': String(e.retryAfter) } : undefined;
    send(x, e.httpStatus, e.toStatus(), extra, e.code, e.reason ?? e.message);
  }

  /** A Prometheus exposition (GET /metrics). */
  function sendText(x: Exchange, text: string): void {
    if (x.done) return;
    x.done = true;
    if (!x.res.headersSent && !x.res.destroyed) {
      x.res.writeHead(200, {
        'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(text),
        'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', 'X-Request-Id': x.requestId,
      });
      x.res.end(text);
    } else x.res.end();
    logLine(x, 200);
  }

  function methodNotAllowed(method: string | undefined, allow: string, use: string): ApiError {
    return new MethodNotAllowed(`method ${method} is not allowed; use ${use}`, allow);
  }

  /** Builds the per-request state and, unless the exchange already ended, runs `body`. */
  function exchange(req: IncomingMessage, res: ServerResponse, operation = OTHER): Exchange {
    const given = headerValue(req, 'x-request-id');
    const requestId = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
    return { req, res, path: (req.url ?? '/').split('?', 1)[0]!, start: performance.now(), requestId, operation, done: false };
  }

  /** The socket's address, or (behind trusted proxies, TRUST_PROXY) the client X-Forwarded-For names. */
  function clientAddressOf(req: IncomingMessage): string | undefined {
    return config.trustProxy === false ? req.socket.remoteAddress : (req as Request).ip;
  }

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);
  app.set('trust proxy', config.trustProxy);

  // The API first (every request but a preflight or a probe is one). The body is read here,
  // raw (the stamp covers its exact bytes), not by a body parser.
  app.post('/public/v1/:kind/:op', (req: Request, res: Response) => {
    const kind = req.params.kind as string;
    const op = req.params.op as string;
    const known = kind === 'query' ? registry.query(op) : kind === 'submit' ? registry.submit(op) : undefined;
    const x = exchange(req, res, known ? `${kind}/${op}` : 'unknown');
    readBody(req, res, config.bodyLimit, (err, raw) => {
      if (err) { fail(x, err); return; }
      inProgress++;
      route(x, kind, op, raw!).then((reply) => send(x, 200, reply), (e: unknown) => fail(x, e)).finally(done);
    });
  });
  app.options(/.*/, (req: Request, res: Response) => {
    const x = exchange(req, res, 'preflight');
    const headers: Record<string, string> = {
      'Access-Control-Allow-Origin': corsOrigin,
      'Access-Control-Allow-Methods': 'POST, GET, OPTIONS',
      'Access-Control-Allow-Headers': CORS_ALLOW_HEADERS,
      'Access-Control-Max-Age': '86400',
      'X-Request-Id': x.requestId,
    };
    if (varyOrigin) headers.Vary = 'Origin';
    x.done = true;
    res.writeHead(204, headers);
    res.end();
    logLine(x, 204);
  });

  app.get('/healthz', (req: Request, res: Response) => { send(exchange(req, res, 'healthz'), 200, { status: 'ok' }); });
  // The webhook signature keys (src/webhooks.ts), unauthenticated, cacheable as wire-compat §6 says.
  app.get('/public/v1/discovery/webhooks/jwks', (req: Request, res: Response) => {
    const x = exchange(req, res, 'jwks');
    const key = services.vault.webhookPublicKey;
    if (!key) { fail(x, notFound('this server has no webhook signing key', 'NOT_FOUND')); return; }
    send(x, 200, webhookJwks(key), { 'Cache-Control': 'public, max-age=86400, s-maxage=86400, stale-if-error=604800' });
  });
  app.all('/public/v1/discovery/webhooks/jwks', (req: Request, res: Response) => {
    fail(exchange(req, res), methodNotAllowed(req.method, 'GET, HEAD, OPTIONS', 'GET'));
  });
  // The verifiable activity log's public key (docs/server.md), unauthenticated: what clients check checkpoints with.
  app.get('/.well-known/kmas-log-key', (req: Request, res: Response) => {
    const signer = services.tlog.signer;
    send(exchange(req, res, 'log-key'), 200, { keyName: signer.keyName, publicKey: Buffer.from(signer.publicKey).toString('hex'), verifierKey: signer.verifierKey },
      { 'Cache-Control': 'public, max-age=3600' });
  });
  app.all('/.well-known/kmas-log-key', (req: Request, res: Response) => {
    fail(exchange(req, res), methodNotAllowed(req.method, 'GET, HEAD, OPTIONS', 'GET'));
  });
  app.get('/readyz', (req: Request, res: Response) => {
    const x = exchange(req, res, 'readyz');
    pipeline.ready().then((ready) => {
      if (ready) send(x, 200, { status: 'ready' });
      else send(x, 503, { code: Grpc.UNAVAILABLE, message: 'storage is not available', details: [] });
    }, (e: unknown) => fail(x, e));
  });
  // The API's own description (src/http/openapi.ts), built once from the registry.
  let openApiJson: Serialized | undefined;
  app.get('/openapi.json', (req: Request, res: Response) => {
    openApiJson ??= new Serialized(JSON.stringify(openApiDocument(registry, { metrics: deps.metrics !== undefined })));
    send(exchange(req, res, 'openapi'), 200, openApiJson, { 'Cache-Control': 'public, max-age=3600' });
  });
  if (deps.metrics) {
    const metrics = deps.metrics;
    app.get('/metrics', (req: Request, res: Response) => {
      const x = exchange(req, res, 'metrics');
      if (!metricsAuthorized(req, config.metricsToken)) {
        fail(x, unauthenticated('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>'));
        return;
      }
      metrics().then((text) => sendText(x, text), (e: unknown) => fail(x, e));
    });
  }
  app.all(['/healthz', '/readyz', '/openapi.json', ...(deps.metrics ? ['/metrics'] : [])], (req: Request, res: Response) => {
    fail(exchange(req, res), methodNotAllowed(req.method, 'GET, HEAD, OPTIONS', 'GET'));
  });

  app.all('/public/v1/:kind/:op', (req: Request, res: Response) => {
    const x = exchange(req, res, 'unknown');
    const kind = String(req.params.kind).toLowerCase();
    if (kind !== 'query' && kind !== 'submit') fail(x, notFound(`unknown path ${x.path}`, 'NOT_FOUND'));
    else fail(x, methodNotAllowed(req.method, 'POST, OPTIONS', 'POST'));
  });

  app.use((req: Request, res: Response) => { fail(exchange(req, res), notFound(`unknown path ${req.path}`, 'NOT_FOUND')); });
  // Errors Express itself raises (e.g. a path segment that cannot be percent-decoded).
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: number }).status;
    fail(exchange(req, res), status !== undefined && status >= 400 && status < 500
      ? invalidArgument('the request path could not be decoded') : err);
  });

  async function route(x: Exchange, kind: string, opName: string, raw: Buffer): Promise<Record<string, unknown> | Serialized> {
    const nowMs = now();
    const trace: Trace = {};
    let parsed: Obj | undefined;
    const request: ApiRequest = {
      raw, body: () => (parsed ??= parseBody(raw)), header: stampHeader(x), clientAddress: clientAddressOf(x.req), concurrent: concurrent(), trace,
    };
    try {
      if (kind === 'query') {
        const op = registry.query(opName);
        if (!op) throw unknownOperation(kind, opName);
        return await pipeline.query(op, request, nowMs);
      }
      if (kind === 'submit') {
        const op = registry.submit(opName);
        if (!op) throw unknownOperation(kind, opName);
        const out = await pipeline.submit(op, request, nowMs);
        activityCount.inc({ type: String(out.activity.type), status: String(out.activity.status) });
        return new Serialized(`{"activity":${out.activityJson}}`);
      }
      throw notFound(`unknown path ${x.path}`, 'NOT_FOUND');
    } finally {
      if (trace.organizationId !== undefined) x.organizationId = trace.organizationId;
      if (trace.activityId !== undefined) x.activityId = trace.activityId;
      if (trace.stampFailure !== undefined) x.stampFailure = trace.stampFailure;
    }
  }

  /** The stamp headers, parsed (a malformed one is refused here); nothing is looked up yet. */
  function stampHeader(x: Exchange): StampHeader {
    const header = headerValue(x.req, 'x-stamp');
    if (header === undefined || header === '') {
      const passkey = headerValue(x.req, 'x-stamp-webauthn');
      if (passkey === undefined || passkey === '') return { kind: 'none' };
      x.stampFailure = 'malformed_stamp';
      const webauthn = parseWebauthnStamp(passkey);
      x.stampFailure = undefined;
      return { kind: 'passkey', webauthn };
    }
    x.stampFailure = 'malformed_stamp';
    const stamp = parseStamp(header);
    x.stampFailure = undefined;
    return { kind: 'key', stamp, curve: SCHEME_CURVE[stamp.scheme] };
  }

  return app;
}

/**
 * The node:http server for the app. Its requests and responses are created with Express's own
 * prototypes (app.request, app.response), so the Object.setPrototypeOf Express applies to every
 * request finds them in place and changes nothing. Changing an object's prototype after creation
 * makes V8 deoptimize every later access to it, in Express and in node:http alike: measured on the
 * bench machine, that alone cost about 50 µs per request, as much as the rest of Express and
 * node:http together (docs/server.md).
 */
export function createHttpServer(app: express.Express): http.Server {
  const { IncomingMessage: Incoming, ServerResponse: Outgoing } = http;
  // Old-style constructors (node:http's own classes are functions, callable this way), so that
  // their prototype objects can be Express's.
  function Request(this: IncomingMessage, socket: Socket): void { Incoming.call(this, socket); }
  Request.prototype = app.request;
  function Response(this: ServerResponse, req: IncomingMessage, options?: unknown): void {
    (Outgoing as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  Response.prototype = app.response;
  const listener = requestListener(app);
  const server = http.createServer({
    IncomingMessage: Request as unknown as typeof IncomingMessage,
    ServerResponse: Response as unknown as typeof ServerResponse,
  }, listener);
  // Expect: 100-continue goes to the app too, not answered by node:http: readBody sends 100 Continue only for a body it will read
  server.on('checkContinue', listener);
  return server;
}

/**
 * The HTTP server's listener: the Express app, after one normalization Express routing cannot
 * express: a base URL ending in `/` makes the clients send `//public/...`, served the same.
 */
function requestListener(app: express.Express): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = req.url;
    if (url !== undefined && url.charCodeAt(1) === 47 && url.charCodeAt(0) === 47) req.url = url.replace(/^\/{2,}/, '/');
    app(req as Request, res as Response);
  };
}

/** A reply body already in JSON (the submit reply reuses the activity's stored serialization). */
class Serialized {
  constructor(readonly json: string) {}
}

class MethodNotAllowed extends ApiError {
  constructor(message: string, readonly allow: string) {
    super(Grpc.INVALID_ARGUMENT, message, { httpStatus: 405, turnkeyErrorCode: 'METHOD_NOT_ALLOWED' });
  }
}

/**
 * The stamp-check reason of a refusal raised past the stamp itself, where the credential is
 * resolved (src/domain/credentials.ts, src/domain/ipAllowlist.ts), told by its error code.
 */
function stampFailureOf(e: ApiError): StampFailure | undefined {
  switch (e.turnkeyErrorCode) {
    case 'API_KEY_EXPIRED': return 'expired_key';
    case 'IP_NOT_ALLOWED': return 'ip_allowlist';
    case 'CREDENTIAL_NOT_FOUND': return e.code === Grpc.UNAUTHENTICATED ? 'unknown_key' : undefined;
    // a key registered elsewhere than the organization the request names (resolved after the stamp)
    case 'PUBLIC_KEY_NOT_FOUND': return 'unknown_key';
    default: return undefined;
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

const tooLarge = () => new ApiError(Grpc.RESOURCE_EXHAUSTED, 'request body is larger than the server accepts', { httpStatus: 413, turnkeyErrorCode: 'REQUEST_TOO_LARGE' });
const unreadable = () => invalidArgument('the request body could not be read or decoded');

/** node:http's test of an Expect header asking for 100 Continue. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * Reads the whole body (at most `limit` bytes after decoding). Content-Encoding identity, gzip,
 * deflate and br are accepted (as body-parser did); others → 415. After a refusal the rest of the
 * request is read off before answering, so the connection stays usable. A client that sent
 * `Expect: 100-continue` gets 100 Continue only once the body is going to be read: a refusal
 * before that (a declared length over the limit, an encoding not accepted) is answered at once,
 * and node:http closes the connection after it, since that body never comes.
 */
function readBody(req: IncomingMessage, res: ServerResponse, limit: number, cb: (err: ApiError | undefined, body?: Buffer) => void): void {
  const te = req.headers['transfer-encoding'];
  const cl = req.headers['content-length'];
  if (te === undefined && (cl === undefined || Number.isNaN(Number(cl)))) { cb(undefined, Buffer.alloc(0)); return; }
  const awaitsContinue = CONTINUE.test(req.headers.expect ?? '');
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  let source: Readable;
  let inflater: Transform | undefined;
  if (encoding === 'identity') {
    if (cl !== undefined && Number(cl) > limit) {
      if (awaitsContinue) cb(tooLarge());
      else drain(req, () => cb(tooLarge()));
      return;
    }
    source = req;
  } else if (encoding === 'gzip' || encoding === 'deflate' || encoding === 'br') {
    const z = encoding === 'gzip' ? zlib.createGunzip() : encoding === 'deflate' ? zlib.createInflate() : zlib.createBrotliDecompress();
    req.pipe(z);
    source = inflater = z;
  } else {
    cb(new ApiError(Grpc.INVALID_ARGUMENT, 'unsupported content encoding', { httpStatus: 415, turnkeyErrorCode: 'REQUEST_INVALID' }));
    return;
  }
  if (awaitsContinue) res.writeContinue();
  const chunks: Buffer[] = [];
  let length = 0;
  let finished = false;
  const finish = (err: ApiError | undefined) => {
    if (finished) return;
    finished = true;
    source.removeListener('data', onData);
    if (inflater) {
      req.unpipe(inflater);
      inflater.on('error', () => {});
      inflater.destroy();
    }
    if (err) { drain(req, () => cb(err)); return; }
    if (inflater) req.resume();
    cb(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
  };
  const onData = (c: Buffer) => {
    length += c.length;
    if (length > limit) { finish(tooLarge()); return; }
    chunks.push(c);
  };
  source.on('data', onData);
  source.once('end', () => finish(undefined));
  source.once('error', () => finish(unreadable()));
  if (inflater) req.once('error', () => finish(unreadable()));
  req.once('aborted', () => finish(unreadable()));
}

/** Reads off the rest of a request, then calls back (the reply follows). */
function drain(req: IncomingMessage, then: () => void): void {
  if (req.complete || req.destroyed) { then(); return; }
  let called = false;
  const once = () => { if (!called) { called = true; then(); } };
  req.on('end', once);
  req.on('close', once);
  req.on('error', once);
  req.resume();
}

function unknownOperation(kind: string, op: string): ApiError {
  return notFound(`unknown or unsupported operation /public/v1/${kind}/${op}`, 'NOT_FOUND');
}

function parseBody(raw: Buffer): Obj {
  let text: string;
  const bad = (reason: string) => new ApiError(Grpc.INVALID_ARGUMENT, TurnkeyMessage.BAD_BODY, { turnkeyErrorCode: 'REQUEST_INVALID', reason });
  try { text = utf8.decode(raw); } catch { throw bad('request body is not valid UTF-8'); }
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { throw bad('request body is not valid JSON'); }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw bad('request body must be a JSON object');
  return parsed as Obj;
}

/**
 * Requests Node's HTTP parser refuses before the handler sees them (oversized headers, malformed
 * request lines) still get the JSON error format instead of Node's empty default reply.
 */
export function answerClientErrors(server: import('node:http').Server, corsOrigin: string): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) { socket.destroy(); return; }
    // the statuses node:http itself gives these (its default clientError answer)
    const [e, reason] = err.code === 'HPE_HEADER_OVERFLOW'
      ? [new ApiError(Grpc.RESOURCE_EXHAUSTED, 'request headers are larger than the server accepts', { httpStatus: 431, turnkeyErrorCode: 'REQUEST_TOO_LARGE' }), 'Request Header Fields Too Large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        // headersTimeout / requestTimeout: the request did not arrive in time (a slow or stalled client)
        ? [new ApiError(Grpc.DEADLINE_EXCEEDED, 'the request was not received in time', { httpStatus: 408, turnkeyErrorCode: 'REQUEST_TIMEOUT' }), 'Request Timeout']
        : [invalidArgument('malformed HTTP request'), 'Bad Request'];
    const body = JSON.stringify(e.toStatus());
    socket.end(
      `HTTP/1.1 ${e.httpStatus} ${reason}\r\n`
      + `Content-Type: application/json; charset=utf-8\r\nAccess-Control-Allow-Origin: ${corsOrigin}\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
