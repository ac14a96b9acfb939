// Test harness for the kmas activity server: starts the real server in-process (design.md §3,
// `startServer` from src/server.ts) on port 0 with a fresh temporary DATA_DIR, and gives the tests
// the real public clients bound to it:
//   - @turnkey/sdk-server 8.2.1 (`new Turnkey({...}).apiClient()`),
//   - @turnkey/http 6.6.0 (`TurnkeyClient` + `ApiKeyStamper`, `createActivityPoller`),
//   - a raw stamped fetch whose X-Stamp is built here with @noble/curves over the exact body bytes,
//     for malformed and edge-case requests the clients cannot produce.
import { mkdtempSync, rmSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { afterEach, expect } from 'vitest';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { Turnkey } from '@turnkey/sdk-server';
import { TurnkeyClient, createActivityPoller } from '@turnkey/http';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { startServer, type RunningServer, type StartOptions } from '../../src/server.js';
import { swagger, validateReply, checkErrorBody } from './swagger.js';
import { testStorage } from './teststorage.js';
export { onSqlite, testStorage } from './teststorage.js';

export { createActivityPoller };

export interface ApiKeyPair { publicKey: string; privateKey: string }
export type Scheme = 'SIGNATURE_SCHEME_TK_API_P256' | 'SIGNATURE_SCHEME_TK_API_SECP256K1' | 'SIGNATURE_SCHEME_TK_API_ED25519';
export interface RawKey extends ApiKeyPair { scheme: Scheme }

/** A fresh P-256 API key in the form @turnkey/api-key-stamper takes (compressed public key hex, 32-byte private hex). */
export function newP256Key(): RawKey {
  const sk = p256.utils.randomSecretKey();
  return { publicKey: bytesToHex(p256.getPublicKey(sk, true)), privateKey: bytesToHex(sk), scheme: 'SIGNATURE_SCHEME_TK_API_P256' };
}
export function newSecp256k1Key(): RawKey {
  const sk = secp256k1.utils.randomSecretKey();
  return { publicKey: bytesToHex(secp256k1.getPublicKey(sk, true)), privateKey: bytesToHex(sk), scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1' };
}
export function newEd25519Key(): RawKey {
  const sk = ed25519.utils.randomSecretKey();
  return { publicKey: bytesToHex(ed25519.getPublicKey(sk)), privateKey: bytesToHex(sk), scheme: 'SIGNATURE_SCHEME_TK_API_ED25519' };
}

export const enc = new TextEncoder();

export function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Signature hex over the exact body bytes, per wire-compat §1.1 (P-256/secp256k1: SHA-256 + DER; Ed25519: raw). */
export function signBody(body: Uint8Array, key: RawKey): string {
  const sk = hexToBytes(key.privateKey);
  switch (key.scheme) {
    case 'SIGNATURE_SCHEME_TK_API_P256':
      return bytesToHex(p256.sign(body, sk, { format: 'der', lowS: false }));
    case 'SIGNATURE_SCHEME_TK_API_SECP256K1':
      return bytesToHex(secp256k1.sign(body, sk, { format: 'der' }));
    case 'SIGNATURE_SCHEME_TK_API_ED25519':
      return bytesToHex(ed25519.sign(body, sk));
  }
}

/** X-Stamp header value: base64url (no padding) of {"publicKey","scheme","signature"}. */
export function stampFor(body: string | Uint8Array, key: RawKey | ApiKeyPair, override: Partial<{ publicKey: string; scheme: string; signature: string }> = {}): string {
  const k: RawKey = 'scheme' in key ? (key as RawKey) : { ...key, scheme: 'SIGNATURE_SCHEME_TK_API_P256' };
  const bytes = typeof body === 'string' ? enc.encode(body) : body;
  const stamp = { publicKey: k.publicKey, scheme: k.scheme, signature: signBody(bytes, k), ...override };
  return base64url(enc.encode(JSON.stringify(stamp)));
}

export interface RawReply { status: number; headers: Headers; text: string; json: any }

export interface RawOptions {
  /** key to stamp with; omitted → no X-Stamp header */
  key?: RawKey | ApiKeyPair;
  /** a ready stamp header value (overrides key) */
  stamp?: string;
  method?: string;
  headers?: Record<string, string>;
  /** bytes to stamp when different from the body sent (tampering) */
  stampedBody?: string | Uint8Array;
}

/** POSTs `body` (exact bytes) to `url + path`, stamped as asked; never throws on HTTP status. */
export async function rawRequest(url: string, path: string, body: string | Uint8Array | undefined, opts: RawOptions = {}): Promise<RawReply> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...(opts.headers ?? {}) };
  if (opts.stamp !== undefined) headers['X-Stamp'] = opts.stamp;
  else if (opts.key && body !== undefined) headers['X-Stamp'] = stampFor(opts.stampedBody ?? body, opts.key);
  const res = await fetch(url + path, { method: opts.method ?? 'POST', headers, body: body as BodyInit | undefined, redirect: 'manual' });
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

/** The submit body exactly as @turnkey/sdk-server 8.2.1 builds it (field order parameters, organizationId, timestampMs, type). */
export function submitBody(type: string, organizationId: string, parameters: unknown, timestampMs: string = String(Date.now())): string {
  return JSON.stringify({ parameters, organizationId, timestampMs, type });
}

export function sdkClient(url: string, key: ApiKeyPair, organizationId: string) {
  return new Turnkey({ apiBaseUrl: url, apiPrivateKey: key.privateKey, apiPublicKey: key.publicKey, defaultOrganizationId: organizationId }).apiClient();
}

export function httpClient(url: string, key: ApiKeyPair): TurnkeyClient {
  return new TurnkeyClient({ baseUrl: url }, new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey }));
}

export type SdkClient = ReturnType<typeof sdkClient>;

// ---------------------------------------------------------------------------------------------
// Every reply the tests receive — from @turnkey/sdk-server (global fetch), @turnkey/http
// (cross-fetch/node-fetch) and the raw helper alike — passes through a recording proxy that
// validates it: POST replies on swagger paths against the path's response definition (2xx) or
// rpcStatus + {code, message, details} (non-2xx); every other non-2xx reply against the error
// format. Violations fail the test that caused them (afterEach below).
// ---------------------------------------------------------------------------------------------
export const replyViolations: string[] = [];
/** How many replies the proxy has checked (lets a test prove the clients go through it). */
export const proxyStats = { checked: 0 };

afterEach(() => {
  const v = replyViolations.splice(0);
  expect(v, 'replies that do not match the swagger / error format').toEqual([]);
});

function swaggerPathOf(url: string): string {
  return url.split('?')[0]!.replace(/^\/{2,}/, '/');
}

export function validateProxiedReply(method: string, url: string, status: number, contentType: string, body: Buffer): string[] {
  if (method === 'OPTIONS' || method === 'HEAD') return [];
  const path = swaggerPathOf(url);
  if (status < 300 && !(path in swagger.paths)) return [];
  let json: unknown;
  try { json = JSON.parse(body.toString('utf8')); } catch { return [`${method} ${url} → ${status}: body is not JSON: ${body.toString('utf8').slice(0, 200)}`]; }
  const errs: string[] = [];
  if (!/application\/json/.test(contentType)) errs.push(`content-type ${contentType}`);
  if (method === 'POST' && path in swagger.paths) errs.push(...validateReply(path, status, json));
  else if (status >= 300) errs.push(...checkErrorBody(json));
  if (status >= 500) errs.push(`status ${status}`);
  return errs.map((e) => `${method} ${url} → ${status}: ${e}`);
}

/** A transparent recording proxy in front of `target` (loopback). */
async function startProxy(target: URL): Promise<{ url: string; close(): Promise<void> }> {
  const agent = new http.Agent({ keepAlive: true });
  const proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const headers = { ...req.headers, host: target.host };
      const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent }, (ur) => {
        const out: Buffer[] = [];
        ur.on('data', (c: Buffer) => out.push(c));
        ur.on('end', () => {
          const body = Buffer.concat(out);
          proxyStats.checked++;
          replyViolations.push(...validateProxiedReply(req.method ?? '', req.url ?? '', ur.statusCode ?? 0, String(ur.headers['content-type'] ?? ''), body));
          const h = { ...ur.headers };
          delete h['transfer-encoding'];
          delete h['connection'];
          delete h['keep-alive'];
          h['content-length'] = String(body.length);
          res.writeHead(ur.statusCode ?? 502, h);
          res.end(body);
        });
        ur.on('error', () => res.destroy());
      });
      up.on('error', (e) => { replyViolations.push(`${req.method} ${req.url}: upstream error ${e.message}`); res.destroy(); });
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const port = (proxy.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => { agent.destroy(); proxy.close(() => r()); proxy.closeAllConnections(); }),
  };
}

export interface TestServer {
  server: RunningServer;
  /** the recording proxy in front of the server (what every client uses) */
  url: string;
  /** the server itself, bypassing the proxy */
  directUrl: string;
  dataDir: string;
  orgId: string;
  rootUserId: string;
  rootKey: ApiKeyPair;
  /** sdk-server client acting as the root user */
  sdk: SdkClient;
  /** @turnkey/http client acting as the root user */
  http: TurnkeyClient;
  /** raw request stamped by the root key unless opts say otherwise */
  raw(path: string, body: string | Uint8Array | undefined, opts?: RawOptions): Promise<RawReply>;
  /** stops the server; removes the data dir unless keep */
  stop(keep?: boolean): Promise<void>;
}

export function freshDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'kmas-test-'));
}

/** The root API key and organization id that a server wrote to `dataDir` at its first start. */
export function rootOf(dataDir: string): { key: ApiKeyPair; orgId: string } {
  return {
    key: JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8')),
    orgId: JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).organizationId,
  };
}

/** Starts the real server on 127.0.0.1:0 with a fresh (or the given) data dir. */
export async function startTestServer(opts: Partial<StartOptions> = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? freshDataDir();
  const server = await startServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', ...await testStorage(dataDir), ...opts, dataDir });
  const rootKey: ApiKeyPair | undefined = server.rootApiKey ?? (existsSync(join(dataDir, 'root-api-key.json'))
    ? JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8'))
    : undefined);
  if (!rootKey) throw new Error('no root API key available to the tests (pass none in ROOT_API_PUBLIC_KEY or use the generated one)');
  const proxy = await startProxy(new URL(server.url));
  const url = proxy.url;
  const orgId = server.bootstrap.organizationId;
  let stopped = false;
  return {
    server, url, directUrl: server.url, dataDir, orgId, rootUserId: server.bootstrap.userId, rootKey,
    sdk: sdkClient(url, rootKey, orgId),
    http: httpClient(url, rootKey),
    raw: (path, body, o = {}) => rawRequest(url, path, body, { key: o.stamp === undefined && !('key' in o) ? rootKey : o.key, ...o }),
    async stop(keep = false) {
      if (stopped) return;
      stopped = true;
      await proxy.close();
      await server.stop();
      if (!keep) { rmSync(dataDir, { recursive: true, force: true }); rmSync(`${dataDir}.storage.json`, { force: true }); }
    },
  };
}

/** gRPC code that wire-compat §2.3 pairs with an HTTP status. */
export const GRPC_FOR_HTTP: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 429: 8, 500: 13 };

/** Id of the newest activity of the org (undefined when none), through list_activities. */
export async function newestActivityId(ts: TestServer): Promise<string | undefined> {
  const r = await ts.http.getActivities({ organizationId: ts.orgId, paginationOptions: { limit: '1' } } as any);
  return r.activities[0]?.id;
}

/** Every activity of the org, newest first, walking the `after` cursor 100 at a time. */
export async function allActivities(ts: TestServer): Promise<any[]> {
  const out: any[] = [];
  let after: string | undefined;
  for (let i = 0; i < 10_000; i++) {
    const page = await ts.http.getActivities({ organizationId: ts.orgId, paginationOptions: after ? { limit: '100', after } : { limit: '100' } } as any);
    out.push(...page.activities);
    if (page.activities.length < 100) break;
    after = page.activities[page.activities.length - 1].id;
  }
  return out;
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A user of `ts`'s organization with a P-256 API key of its own, and an sdk-server client stamping with it. */
export interface Member { id: string; key: RawKey; sdk: ReturnType<typeof sdkClient> }

export async function createMember(ts: TestServer, name: string): Promise<Member> {
  const key = newP256Key();
  const r: any = await ts.sdk.createUsers({ users: [{ userName: name, apiKeys: [{ apiKeyName: name, publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  return { id: r.userIds[0], key, sdk: sdkClient(ts.url, key, ts.orgId) };
}

/** An ALLOW policy letting `userId` sign with any key of the organization; returns its removal. */
export async function allowSigning(ts: TestServer, userId: string): Promise<() => Promise<void>> {
  const p: any = await ts.sdk.createPolicy({ policyName: uniqueName('signs'), effect: 'EFFECT_ALLOW', notes: '',
    consensus: `approvers.any(user, user.id == '${userId}')`, condition: "activity.action == 'SIGN'" } as any);
  return async () => { await ts.sdk.deletePolicy({ policyId: p.policyId }); };
}

/** What the policy tests act on: a server, a member who signs under the policies, and a secp256k1 key with an Ethereum address. */
export interface PolicySubjects { ts: TestServer; carol: Member; keyA: { id: string; address: string } }

export async function policySubjects(): Promise<PolicySubjects> {
  const ts = await startTestServer();
  const carol = await createMember(ts, uniqueName('carol'));
  const r: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('a'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
  return { ts, carol, keyA: { id: r.privateKeys[0].privateKeyId, address: r.privateKeys[0].addresses[0].address } };
}

/** Captures the server's JSON log lines written to process.stdout (others pass through) until restore(). */
export function captureLogLines(): { lines: string[]; restore: () => void } {
  const lines: string[] = [];
  const orig = process.stdout.write.bind(process.stdout);
  (process.stdout as any).write = (chunk: any, ...rest: any[]) => {
    const s = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (s.startsWith('{"level"')) { lines.push(s); const cb = rest.find((x) => typeof x === 'function'); if (cb) cb(); return true; }
    return orig(chunk, ...rest);
  };
  return { lines, restore: () => { (process.stdout as any).write = orig; } };
}
