/**
 * GET /metrics on a listener of its own (METRICS_PORT): nothing else is served there, so the API
 * port can stay public while the metrics port is reachable only from the monitoring network.
 */
import http, { type IncomingMessage } from 'node:http';
import { ApiError, Grpc, notFound, unauthenticated } from '../errors.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../log.js';

export function createMetricsServer(metrics: () => Promise<string>, token: string | undefined, log: Logger): http.Server {
  return http.createServer((req, res) => {
    const error = (e: ApiError) => {
      const body = JSON.stringify(e.toStatus());
      res.writeHead(e.httpStatus, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    };
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') { error(notFound(`unknown path ${path}; this listener serves GET /metrics only`)); return; }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      error(new ApiError(Grpc.INVALID_ARGUMENT, `method ${req.method} is not allowed; use GET`, { httpStatus: 405, turnkeyErrorCode: 'METHOD_NOT_ALLOWED' }));
      return;
    }
    if (!metricsAuthorized(req, token)) { error(unauthenticated('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>')); return; }
    metrics().then((text) => {
      res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    }, (e: unknown) => {
      log.error('metrics could not be gathered', { error: e instanceof Error ? e.message : String(e) });
      error(new ApiError(Grpc.UNAVAILABLE, 'metrics could not be gathered'));
    });
  });
}

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** GET /metrics: true when no token is set, or the request's Authorization is `Bearer <token>`. */
export function metricsAuthorized(req: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = /^Bearer\s+(\S+)\s*$/i.exec(String(req.headers.authorization ?? ''))?.[1];
  if (given === undefined) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}
