// GET /openapi.json (issue 17 "API document"): the document names exactly the paths the server
// serves (every operation of the registry and kmas's own endpoints, each answered by the real
// server), marks kmas's additions, and validates with @apidevtools/swagger-parser.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestServer, type TestServer } from './harness.js';
import { defaultRegistry } from '../../src/activities/registry.js';
import { swagger } from './swagger.js';

let ts: TestServer;
let doc: any;
beforeAll(async () => {
  ts = await startTestServer();
  const r = await fetch(`${ts.directUrl}/openapi.json`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/application\/json/);
  doc = await r.json();
});
afterAll(async () => { await ts?.stop(); });

const KMAS_PATHS = ['/healthz', '/readyz', '/openapi.json', '/metrics', '/public/v1/discovery/webhooks/jwks', '/.well-known/kmas-log-key'];

describe('GET /openapi.json', () => {
  it('validates with an OpenAPI parser', async () => {
    const api: any = await SwaggerParser.validate(structuredClone(doc));
    expect(api.swagger).toBe('2.0');
  });

  it('holds every operation of the registry, the kmas endpoints, and nothing else', () => {
    const registry = defaultRegistry();
    const served = [
      ...registry.queryPaths().map((p) => `/public/v1/query/${p}`),
      ...registry.submitPaths().map((p) => `/public/v1/submit/${p}`),
    ];
    expect(Object.keys(doc.paths).sort()).toEqual([...served, ...KMAS_PATHS].sort());
    // kmas's own operations (the verifiable log's queries): described by kmas, marked as such
    const own = served.filter((p) => p.includes('/kmas_'));
    expect(own.length).toBeGreaterThan(0);
    for (const p of own) {
      expect(swagger.paths[p], `${p} cannot collide with a Turnkey operation`).toBeUndefined();
      expect(doc.paths[p].post['x-kmas'], `${p} is marked as kmas's`).toBe(true);
    }
    for (const p of served.filter((x) => !own.includes(x))) {
      // the swagger's own description of the operation, request and reply definitions included
      expect(doc.paths[p].post, p).toEqual(swagger.paths[p]!.post);
      expect(doc.paths[p].post['x-kmas'], `${p} is the Turnkey API's, not marked`).toBeUndefined();
    }
    for (const p of KMAS_PATHS) expect(doc.paths[p].get['x-kmas'], `${p} is marked as kmas's`).toBe(true);
    // definitions: only those reached, every one defined (the parser resolved them all above)
    expect(Object.keys(doc.definitions).length).toBeLessThan(Object.keys(swagger.definitions).length);
    expect(doc.definitions.v1ActivityResponse).toEqual(swagger.definitions.v1ActivityResponse);
  });

  it('every path in it is served (none answers 404)', async () => {
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      const method = item.post ? 'POST' : 'GET';
      const r = await fetch(ts.directUrl + path, { method, headers: { 'Content-Type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
      await r.arrayBuffer();
      // an unstamped POST is refused with 401; a GET answers 200
      expect(r.status, `${method} ${path}`).toBe(method === 'POST' ? 401 : 200);
    }
    // and a path it does not hold is not served
    expect((await fetch(`${ts.directUrl}/public/v1/query/not_an_operation`, { method: 'POST', body: '{}' })).status).toBe(404);
  });

  it('leaves /metrics out when it is served on a port of its own', async () => {
    const own = await startTestServer({ metricsPort: 0 });
    try {
      const d: any = await (await fetch(`${own.directUrl}/openapi.json`)).json();
      expect(d.paths['/metrics']).toBeUndefined();
      expect(d.paths['/healthz']).toBeDefined();
    } finally {
      await own.stop();
    }
  });
});
