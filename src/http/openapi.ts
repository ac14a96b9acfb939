/**
 * GET /openapi.json: an OpenAPI (swagger 2.0) document of exactly what this server serves, built
 * at run time from the operation registry and the public Turnkey swagger (public_api.swagger.json
 * beside this file, see ATTRIBUTION.md), so that it cannot drift from either:
 * - every operation of the registry, with the swagger's path item for it (request and reply
 *   definitions, summary, tags), and no other swagger path;
 * - the definitions those path items reach, and no others;
 * - kmas's own endpoints (probes, webhook JWKS, this document, metrics when served on the API
 *   port), each marked `x-kmas: true`, as is anything kmas had to describe itself.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../paths.js';
import type { Registry } from '../activities/registry.js';

type Json = Record<string, any>;

interface Swagger {
  info: Json;
  tags?: { name: string; description?: string }[];
  paths: Record<string, Json>;
  definitions: Record<string, Json>;
  securityDefinitions: Record<string, Json>;
}

let source: Swagger | undefined;

function swagger(): Swagger {
  source ??= JSON.parse(readFileSync(join(packageRoot(), 'src', 'http', 'public_api.swagger.json'), 'utf8')) as Swagger;
  return source;
}

const ERROR_RESPONSE = { description: 'An error: {code, message, details} (grpc-gateway rpcStatus).', schema: { $ref: '#/definitions/rpcStatus' } };

/** kmas's own definitions (marked). */
const KMAS_DEFINITIONS: Record<string, Json> = {
  kmasProbe: {
    type: 'object', 'x-kmas': true, required: ['status'],
    properties: { status: { type: 'string', description: '"ok" (healthz) or "ready" (readyz)' } },
  },
  kmasJwks: {
    type: 'object', 'x-kmas': true, required: ['keys'],
    properties: { keys: { type: 'array', items: { type: 'object', additionalProperties: true } } },
    description: 'JSON Web Key Set holding the Ed25519 key that signs webhook deliveries',
  },
  kmasLogKey: {
    type: 'object', 'x-kmas': true, required: ['keyName', 'publicKey', 'verifierKey'],
    properties: { keyName: { type: 'string' }, publicKey: { type: 'string' }, verifierKey: { type: 'string' } },
    description: 'The Ed25519 key that signs the verifiable activity log\'s checkpoints: its note key name, raw public key (hex) and C2SP note verifier key',
  },
  kmasOpenApi: { type: 'object', 'x-kmas': true, additionalProperties: true, description: 'This document' },
};

function get(summary: string, description: string, schema: Json | undefined, extra: Json = {}): Json {
  const ok: Json = { description: 'A successful response.' };
  if (schema) ok.schema = schema;
  return {
    get: {
      'x-kmas': true, summary, description, operationId: `Kmas_${summary.replace(/[^A-Za-z0-9]+/g, '_')}`, tags: ['Operations'],
      security: [], responses: { 200: ok, default: ERROR_RESPONSE }, ...extra,
    },
  };
}

export function openApiDocument(registry: Registry, opts: { metrics: boolean }): Json {
  const src = swagger();
  const paths: Record<string, Json> = {};
  const served = [
    ...registry.queryPaths().map((p) => `/public/v1/query/${p}`),
    ...registry.submitPaths().map((p) => `/public/v1/submit/${p}`),
  ].sort();
  for (const path of served) {
    paths[path] = src.paths[path] !== undefined ? structuredClone(src.paths[path]) : {
      // An operation the swagger lacks: described by kmas, body and reply left open.
      post: {
        'x-kmas': true, summary: path.slice(path.lastIndexOf('/') + 1), operationId: `Kmas_${path.replace(/\W+/g, '_')}`,
        parameters: [{ name: 'body', in: 'body', required: true, schema: { type: 'object' } }],
        responses: { 200: { description: 'A successful response.', schema: { type: 'object' } }, default: ERROR_RESPONSE },
      },
    };
  }
  paths['/healthz'] = get('Liveness', 'The process serves HTTP.', { $ref: '#/definitions/kmasProbe' });
  paths['/readyz'] = get('Readiness', 'The database is open and writable (503 otherwise).', { $ref: '#/definitions/kmasProbe' });
  paths['/public/v1/discovery/webhooks/jwks'] = get('Webhook signing keys', 'The public key webhook deliveries are signed with.', { $ref: '#/definitions/kmasJwks' });
  paths['/.well-known/kmas-log-key'] = get('Log key', 'The public key the verifiable activity log\'s checkpoints are signed with.', { $ref: '#/definitions/kmasLogKey' });
  paths['/openapi.json'] = get('OpenAPI document', 'This document.', { $ref: '#/definitions/kmasOpenApi' });
  if (opts.metrics) {
    paths['/metrics'] = get('Metrics', 'Prometheus text exposition (kmas_* metrics); with METRICS_TOKEN set, Authorization: Bearer <token> is required.',
      { type: 'string' }, { produces: ['text/plain'], security: [{ MetricsToken: [] }, {}] });
  }

  const definitions: Record<string, Json> = {};
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) { for (const n of node) visit(n); return; }
    if (node === null || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/definitions/')) {
        const name = v.slice('#/definitions/'.length);
        if (definitions[name] !== undefined) continue;
        const def = KMAS_DEFINITIONS[name] ?? src.definitions[name];
        if (def === undefined) throw new Error(`openapi: ${v} is not defined`);
        definitions[name] = structuredClone(def);
        visit(definitions[name]);
      } else visit(v);
    }
  };
  visit(paths);

  const used = new Set<string>();
  for (const item of Object.values(paths)) for (const op of Object.values(item)) for (const t of (op.tags ?? []) as string[]) used.add(t);
  const tags = (src.tags ?? []).filter((t) => used.has(t.name));
  tags.push({ name: 'Operations', description: 'kmas\'s own endpoints (probes, metrics, this document)', 'x-kmas': true } as { name: string });

  const securityDefinitions: Record<string, Json> = {
    ApiKeyAuth: src.securityDefinitions.ApiKeyAuth!,
    AuthenticatorAuth: src.securityDefinitions.AuthenticatorAuth!,
  };
  if (opts.metrics) securityDefinitions.MetricsToken = { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Bearer <METRICS_TOKEN>', 'x-kmas': true };

  return {
    swagger: '2.0',
    info: {
      title: 'kmas API',
      version: src.info.version ?? '1.0',
      description: 'The operations of the Turnkey public API this kmas server serves, as the Turnkey swagger describes them, '
        + 'and kmas\'s own endpoints (marked x-kmas: true). Requests are stamped (X-Stamp or X-Stamp-WebAuthn) over the exact body bytes.',
    },
    'x-kmas': { source: 'Turnkey public_api.swagger.json (tkhq/sdk, Apache-2.0), filtered to the operations served' },
    consumes: ['application/json'],
    produces: ['application/json'],
    tags,
    paths,
    definitions,
    securityDefinitions,
    security: [{ ApiKeyAuth: [] }, { AuthenticatorAuth: [] }],
  };
}
