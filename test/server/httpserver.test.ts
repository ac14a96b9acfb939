// createHttpServer (src/http/app.ts): node:http builds requests and responses on the app's own
// prototypes, so Express's per-request Object.setPrototypeOf changes nothing, and everything
// Express adds to them still works.
import { describe, it, expect, afterEach } from 'vitest';
import express from 'express';
import type { AddressInfo } from 'node:net';
import http, { type Server } from 'node:http';
import net from 'node:net';
import { answerClientErrors, createHttpServer } from '../../src/http/app.js';

let server: Server | undefined;
afterEach(async () => { await new Promise<void>((r) => (server ? server.close(() => r()) : r())); server = undefined; });

async function serve(app: express.Express): Promise<string> {
  server = createHttpServer(app);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

describe('createHttpServer', () => {
  it('hands Express requests and responses that already have its prototypes', async () => {
    const app = express();
    const seen: { reqProto: boolean; resProto: boolean; beforeExpress: boolean }[] = [];
    let arrived: boolean | undefined;
    app.post('/p/:id', (req, res) => {
      seen.push({
        reqProto: Object.getPrototypeOf(req) === app.request,
        resProto: Object.getPrototypeOf(res) === app.response,
        beforeExpress: arrived === true,
      });
      // Express's own request and response helpers
      res.status(201).set('X-Id', req.params.id).json({ path: req.path, host: req.hostname });
    });
    const base = await serve(app);
    // what node:http created, before Express ran (the first 'request' listener sees it first)
    server!.prependListener('request', (req, res) => {
      arrived = Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response;
    });
    const r = await fetch(`${base}/p/abc?x=1`, { method: 'POST', body: '{}' });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-id')).toBe('abc');
    expect(await r.json()).toEqual({ path: '/p/abc', host: '127.0.0.1' });
    expect(seen).toEqual([{ reqProto: true, resProto: true, beforeExpress: true }]);
  });

  it('still folds a leading "//" (base URL with a trailing slash) and reads bodies as a stream', async () => {
    const app = express();
    app.post('/public/v1/query/echo', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.type('text/plain').send(Buffer.concat(chunks).toString('utf8')));
    });
    const base = await serve(app);
    const r = await fetch(`${base}//public/v1/query/echo`, { method: 'POST', body: 'x'.repeat(100_000) });
    expect(r.status).toBe(200);
    expect((await r.text()).length).toBe(100_000);
  });
});

describe('answerClientErrors', () => {
  /** What the server writes back to `bytes` (the socket then closes), over a raw connection. */
  async function exchange(bytes: string): Promise<{ status: string; body: string }> {
    // timeouts as short as a test can wait for (node:http's defaults: 60 s for headers, 300 s for the request)
    server = http.createServer({ connectionsCheckingInterval: 50, headersTimeout: 200, requestTimeout: 300 }, (_req, res) => { res.end(); });
    answerClientErrors(server, '*');
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    let data = '';
    socket.on('data', (d: Buffer) => { data += d.toString('latin1'); });
    socket.write(bytes);
    await new Promise<void>((r) => socket.on('close', () => r()));
    return { status: data.split('\r\n', 1)[0]!, body: data.slice(data.indexOf('\r\n\r\n') + 4) };
  }

  it('a request whose headers do not arrive in time is a 408 (as node:http answers it), not a 400 "malformed"', async () => {
    const r = await exchange('POST /public/v1/query/whoami HTTP/1.1\r\nHost: x\r\n');
    expect(r.status).toBe('HTTP/1.1 408 Request Timeout');
    const body = JSON.parse(r.body);
    expect(body).toMatchObject({ code: 4, details: [{ turnkeyErrorCode: 'REQUEST_TIMEOUT' }] });
    expect(body.message).not.toMatch(/malformed/);
  });

  it('a malformed request line is still a 400 in the JSON error format', async () => {
    const r = await exchange('NOT HTTP\r\n\r\n');
    expect(r.status).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(r.body)).toMatchObject({ code: 3, message: 'malformed HTTP request' });
  });
});
