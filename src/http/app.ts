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
import type { ApiKeyCurve, ApiKeyRow, AuthenticatorRow, Store } from '../storage/types.js';
import { allowedOrigins, parseWebauthnStamp, verifyWebauthnStamp, type WebauthnStamp } from '../domain/authenticators.js';
import type { Registry } from '../activities/registry.js';
import { parseStamp } from './stamp.js';
import { SCHEME_CURVE, verifyStamp, type Stamp } from '../crypto/stamp.js';
import type { StampCheck } from '../crypto/signpool.js';
import type { StampVerifier } from '../crypto/verifypool.js';
import { candidateKeys, resolvePrincipal } from '../domain/credentials.js';
import { authorizeSubmit, refusal, type Voucher } from '../activities/consensus.js';
import { checkTimestamp, commitQueue, fingerprintOf, parseEnvelope, prepareSubmit, runQuery, submitInTransaction, type Envelope, type Prepared } from '../activities/engine.js';
import type { Obj } from '../domain/validate.js';
import type { SubmitOperation } from '../activities/types.js';
import { webhookJwks } from '../webhooks.js';
import { vaultOf } from '../domain/keys.js';
import { randomUUID } from 'node:crypto';
import { activities as activityCount, httpDuration, httpRequests, rateLimited, stampFailures, type StampFailure } from '../metrics.js';
import { RateLimited, RateLimiter } from './ratelimit.js';
import { openApiDocument } from './openapi.js';
import { METRICS_CONTENT_TYPE, metricsAuthorized } from './metricsserver.js';
import type { Principal } from '../domain/principal.js';

export interface AppDeps {
  store: Store;
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
  const { store, registry, config, log } = deps;
  const now = deps.now ?? Date.now;
  const verifier = deps.verifier;
  // Concurrency signal for the stamp and signing threads: API requests in progress (body read,
  // not yet answered). One (a lone client) → work inline, no thread hop; several → others are
  // waiting for this thread, so the work goes to a thread. (Counting requests per turn of the
  // event loop instead missed load from clients whose requests arrive one per turn.)
  let inProgress = 0;
  const concurrent = () => inProgress > 1;
  const done = () => { inProgress--; };
  const submits = commitQueue(store);
  const corsOrigin = config.corsOrigin;
  const limiter = config.rateLimitApiKey > 0 || config.rateLimitOrganization > 0
    ? new RateLimiter(config.rateLimitApiKey, config.rateLimitOrganization) : undefined;
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
    else {
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
    readBody(req, config.bodyLimit, (err, raw) => {
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
    let key: string | undefined;
    try { key = vaultOf(store).webhookPublicKey; } catch { /* no key management on this store */ }
    if (!key) { fail(x, notFound('this server has no webhook signing key', 'NOT_FOUND')); return; }
    send(x, 200, webhookJwks(key), { 'Cache-Control': 'public, max-age=86400, s-maxage=86400, stale-if-error=604800' });
  });
  app.all('/public/v1/discovery/webhooks/jwks', (req: Request, res: Response) => {
    fail(exchange(req, res), methodNotAllowed(req.method, 'GET, HEAD, OPTIONS', 'GET'));
  });
  app.get('/readyz', (req: Request, res: Response) => {
    const x = exchange(req, res, 'readyz');
    if (store.isReady()) send(x, 200, { status: 'ready' });
    else send(x, 503, { code: Grpc.UNAVAILABLE, message: 'storage is not available', details: [] });
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

  /** The submit body as an envelope of `op` whose timestamp is within the window. */
  function envelopeOf(x: Exchange, op: SubmitOperation, raw: Buffer, nowMs: number): Envelope {
    const env = parseEnvelope(op, parseBody(raw));
    x.organizationId = env.organizationId;
    try {
      checkTimestamp(env.timestampMs, nowMs, config.timestampWindowMs, config.timestampFutureMs);
    } catch (e) {
      x.stampFailure = 'stale_timestamp';
      throw e;
    }
    return env;
  }

  /** Takes the request's tokens (per credential, per organization), or refuses it with 429. */
  function admit(principal: Principal, organizationId: string, nowMs: number): void {
    limiter?.admit(principal.credential.id, organizationId, nowMs);
  }

  async function route(x: Exchange, kind: string, opName: string, raw: Buffer): Promise<Record<string, unknown> | Serialized> {
    const nowMs = now();
    const clientAddress = clientAddressOf(x.req);
    if (kind === 'query') {
      const op = registry.query(opName);
      if (!op) throw unknownOperation(kind, opName);
      const { keys } = await authenticate(x, raw);
      const body = parseBody(raw);
      const orgId = requireOrganizationId(body);
      x.organizationId = orgId;
      const { principal, organization } = resolvePrincipal(store, keys, orgId,
        { parentMayRead: op.parentMayRead, resolvesFromParent: op.resolvesFromParent === true, clientAddress }, nowMs);
      admit(principal, orgId, nowMs);
      const query = op.validate(body);
      // A query that asks outside the store (a network's node) does so once the caller is known.
      const external = op.external ? await op.external(query, store, organization.id) : undefined;
      const reply = runQuery(store, op, query, principal, organization, fingerprintOf(raw), nowMs, external);
      // What it read may include commits whose fsync is still under way: show it once on disk.
      const durable = store.durable?.();
      if (durable) await durable;
      return reply;
    }
    if (kind === 'submit') {
      const op = registry.submit(opName);
      if (!op) throw unknownOperation(kind, opName);
      const cred = credentialOf(x);
      let pre: Prepared | undefined;
      let env: Envelope;
      // A lone request (nothing else in progress) is served on this thread: a thread hop would
      // add its latency and save no one any time.
      if (!op.prepare || !concurrent() || cred.kind === 'passkey') {
        await verify(x, cred, raw);
        env = envelopeOf(x, op, raw, nowMs);
      } else {
        // Work the operation can do before its transaction (signing on a signing thread, which
        // also checks the stamp: one thread hop for both) runs now, against the state as it is;
        // the transaction checks everything again. Until the stamp has verified, any refusal is
        // answered only after verifying it the usual way, so a bad stamp still gets its 401.
        try {
          env = envelopeOf(x, op, raw, nowMs);
        } catch (e) {
          await verify(x, cred, raw);
          throw e;
        }
        const check: StampCheck = { stamp: cred.stamp, body: raw, verified: false };
        let who: ReturnType<typeof resolvePrincipal> | undefined;
        try {
          who = resolvePrincipal(store, cred.keys, env.organizationId, { parentMayRead: op.parentMaySubmit === true, resolvesFromParent: false, clientAddress }, nowMs);
        } catch { /* the transaction gives the answer */ }
        if (who) pre = await prepareSubmit(store, op, env, who.principal, who.organization, nowMs, check);
        if (!check.verified) await verify(x, cred, raw);
      }
      const fingerprint = fingerprintOf(raw);
      if (op.external && !store.activities.byFingerprint(fingerprint, Number(env.timestampMs))) {
        // Work outside the store (an OIDC issuer's keys) before the transaction; a refusal stores nothing.
        // Only for a caller the operation admits: no outside request on behalf of anyone else.
        const intent = pre?.intent ?? op.validate(env.parameters, env.type);
        const { principal, organization } = resolvePrincipal(store, cred.keys, env.organizationId, { parentMayRead: op.parentMaySubmit === true, resolvesFromParent: false, clientAddress }, nowMs);
        const decision = authorizeSubmit(store, op, principal, intent, env.type, organization, nowMs);
        if (decision.outcome !== 'OUTCOME_ALLOW') {
          // Such an activity cannot wait for approvals: what it checked outside would be stale by then.
          throw refusal(decision, op.path);
        }
        pre = { ...pre, intent, external: await op.external(intent, store) };
      }
      // Group commit (engine.ts): the submit runs inside the next shared transaction and this
      // promise settles only after its COMMIT. The credential is resolved again in there, since
      // an earlier submit of the same group may have deleted the key or its user.
      const out = await submits.run(() => {
        const keys = cred.kind === 'key' ? registeredKeys(cred.stamp.publicKey, cred.curve) : stillRegistered(cred);
        const { principal, organization } = resolvePrincipal(store, keys, env.organizationId,
          { parentMayRead: op.parentMaySubmit === true, resolvesFromParent: false, clientAddress }, nowMs);
        // The queue runs this in a savepoint of its own, so a refusal (this 429 too) leaves nothing behind.
        admit(principal, env.organizationId, nowMs);
        return submitInTransaction(store, op, env!, principal, organization, fingerprint, nowMs, pre, voucherOf(cred));
      });
      x.activityId = out.activity.id as string;
      activityCount.inc({ type: String(out.activity.type), status: String(out.activity.status) });
      return new Serialized(`{"activity":${out.activityJson}}`);
    }
    throw notFound(`unknown path ${x.path}`, 'NOT_FOUND');
  }

  /** The stamp as a vote records it (an activity that waits for approvals, approve_activity). */
  function voucherOf(cred: Credential): Voucher {
    if (cred.kind === 'key') return { publicKey: cred.stamp.publicKey, signature: cred.stamp.signature, scheme: cred.stamp.scheme };
    return { publicKey: '', signature: cred.webauthn.signature, scheme: 'SIGNATURE_SCHEME_WEBAUTHN' };
  }

  /** The stamp's credential (registered keys or passkeys it may stand for), not yet verified. */
  function credentialOf(x: Exchange): Credential {
    const header = headerValue(x.req, 'x-stamp');
    if (header === undefined || header === '') {
      const passkey = headerValue(x.req, 'x-stamp-webauthn');
      if (passkey !== undefined && passkey !== '') {
        x.stampFailure = 'malformed_stamp';
        const webauthn = parseWebauthnStamp(passkey);
        x.stampFailure = 'unknown_key';
        const keys = store.authenticators.byCredentialId(webauthn.credentialId);
        if (keys.length === 0) throw unauthenticated(TurnkeyMessage.CREDENTIAL_NOT_FOUND, 'CREDENTIAL_NOT_FOUND', 'no passkey is registered with the stamp\'s credential id');
        x.stampFailure = undefined;
        return { kind: 'passkey', webauthn, keys };
      }
      x.stampFailure = 'missing_stamp';
      throw unauthenticated(TurnkeyMessage.STAMP_MISSING, 'SIGNATURE_MISSING');
    }
    x.stampFailure = 'malformed_stamp';
    const stamp = parseStamp(header);
    x.stampFailure = 'unknown_key';
    const curve = SCHEME_CURVE[stamp.scheme];
    const keys = registeredKeys(stamp.publicKey, curve);
    x.stampFailure = undefined;
    return { kind: 'key', stamp, keys, curve };
  }

  /** The passkey registrations the stamp verified for that are still registered (for the transaction). */
  function stillRegistered(cred: PasskeyCredential): AuthenticatorRow[] {
    const verified = new Set(cred.keys.map((k) => k.id));
    const keys = store.authenticators.byCredentialId(cred.webauthn.credentialId).filter((k) => verified.has(k.id));
    if (keys.length === 0) throw unauthenticated(TurnkeyMessage.CREDENTIAL_NOT_FOUND, 'CREDENTIAL_NOT_FOUND', 'the passkey that stamped this request is no longer registered');
    return keys;
  }

  /**
   * Checks a passkey stamp against each registration of its credential id (each organization has
   * its own allowed origins); keeps the registrations it verifies for and records their new
   * signature counters.
   */
  function verifyPasskey(cred: PasskeyCredential, raw: Buffer): boolean {
    const verified: { row: AuthenticatorRow; signCount: number }[] = [];
    for (const row of cred.keys) {
      const r = verifyWebauthnStamp(cred.webauthn, row, raw, allowedOrigins(store, row.organizationId));
      if (r.ok) verified.push({ row, signCount: r.signCount });
    }
    const moved = verified.filter((v) => v.signCount > v.row.signCount);
    if (moved.length > 0) store.transaction(() => { for (const v of moved) store.authenticators.setSignCount(v.row.id, v.signCount); });
    cred.keys = verified.map((v) => v.row);
    return verified.length > 0;
  }

  /** The API keys registered for a stamp's public key (401 when there is none). */
  function registeredKeys(publicKey: string, curve: ApiKeyCurve): ApiKeyRow[] {
    const keys = candidateKeys(store, publicKey, curve);
    if (keys.length === 0) throw unauthenticated(TurnkeyMessage.PUBLIC_KEY_NOT_FOUND, 'PUBLIC_KEY_NOT_FOUND', 'no API key is registered for the stamp\'s public key');
    return keys;
  }

  /** Verifies the stamp over the raw bytes (401 when it does not). */
  async function verify(x: Exchange, cred: Credential, raw: Buffer): Promise<void> {
    const ok = cred.kind === 'passkey' ? verifyPasskey(cred, raw)
      : verifier ? await verifier.verify(cred.stamp, raw, concurrent()) : verifyStamp(cred.stamp, raw);
    if (!ok) {
      x.stampFailure = 'bad_signature';
      throw unauthenticated(cred.kind === 'passkey' ? TurnkeyMessage.WEBAUTHN_SIGNATURE : TurnkeyMessage.API_KEY_SIGNATURE, 'SIGNATURE_INVALID',
        'the stamp signature does not verify over the request body');
    }
  }

  async function authenticate(x: Exchange, raw: Buffer): Promise<Credential> {
    const cred = credentialOf(x);
    await verify(x, cred, raw);
    return cred;
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
  return http.createServer({
    IncomingMessage: Request as unknown as typeof IncomingMessage,
    ServerResponse: Response as unknown as typeof ServerResponse,
  }, requestListener(app));
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

/**
 * Reads the whole body (at most `limit` bytes after decoding). Content-Encoding identity, gzip,
 * deflate and br are accepted (as body-parser did); others → 415. After a refusal the rest of the
 * request is read off before answering, so the connection stays usable.
 */
function readBody(req: IncomingMessage, limit: number, cb: (err: ApiError | undefined, body?: Buffer) => void): void {
  const te = req.headers['transfer-encoding'];
  const cl = req.headers['content-length'];
  if (te === undefined && (cl === undefined || Number.isNaN(Number(cl)))) { cb(undefined, Buffer.alloc(0)); return; }
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  let source: Readable;
  let inflater: Transform | undefined;
  if (encoding === 'identity') {
    if (cl !== undefined && Number(cl) > limit) { drain(req, () => cb(tooLarge())); return; }
    source = req;
  } else if (encoding === 'gzip' || encoding === 'deflate' || encoding === 'br') {
    const z = encoding === 'gzip' ? zlib.createGunzip() : encoding === 'deflate' ? zlib.createInflate() : zlib.createBrotliDecompress();
    req.pipe(z);
    source = inflater = z;
  } else {
    cb(new ApiError(Grpc.INVALID_ARGUMENT, 'unsupported content encoding', { httpStatus: 415, turnkeyErrorCode: 'REQUEST_INVALID' }));
    return;
  }
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

interface KeyCredential { kind: 'key'; stamp: Stamp; keys: ApiKeyRow[]; curve: ApiKeyCurve }
interface PasskeyCredential { kind: 'passkey'; webauthn: WebauthnStamp; keys: AuthenticatorRow[] }
type Credential = KeyCredential | PasskeyCredential;

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

function requireOrganizationId(body: Obj): string {
  const id = body.organizationId;
  if (typeof id !== 'string' || id === '') {
    throw invalidArgument('organizationId is required', [{ field: 'organizationId', description: 'is required (a non-empty string)' }]);
  }
  return id;
}

/**
 * Requests Node's HTTP parser refuses before the handler sees them (oversized headers, malformed
 * request lines) still get the JSON error format instead of Node's empty default reply.
 */
export function answerClientErrors(server: import('node:http').Server, corsOrigin: string): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) { socket.destroy(); return; }
    const tooLargeHeaders = err.code === 'HPE_HEADER_OVERFLOW';
    const e = tooLargeHeaders
      ? new ApiError(Grpc.RESOURCE_EXHAUSTED, 'request headers are larger than the server accepts', { httpStatus: 431, turnkeyErrorCode: 'REQUEST_TOO_LARGE' })
      : invalidArgument('malformed HTTP request');
    const body = JSON.stringify(e.toStatus());
    socket.end(
      `HTTP/1.1 ${e.httpStatus} ${tooLargeHeaders ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n`
      + `Content-Type: application/json; charset=utf-8\r\nAccess-Control-Allow-Origin: ${corsOrigin}\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
