// The start-up contract (issue 3, design.md §3): bootstrap.json, root-api-key.json (mode 0600),
// ROOT_API_PUBLIC_KEY, health endpoints, and bad configuration values stopping start-up with a
// clear message (config parser and the real CLI).
import { describe, it, expect, afterAll } from 'vitest';
import { chmodSync, readFileSync, statSync, existsSync, rmSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { startTestServer, newP256Key, freshDataDir, rawRequest, submitBody, type TestServer } from './harness.js';
import { startServer } from '../../src/server.js';
import { loadConfig, ConfigError } from '../../src/config.js';
import { QUERY } from './checks.js';
import { ensureBuilt, kmasBin, root, spawnServe, type ServeProcess } from './build.js';
import { createServer as createNetServer } from 'node:net';
import { p256 } from '@noble/curves/nist.js';
import { hexToBytes, bytesToHex } from '@noble/hashes/utils.js';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';



const started: TestServer[] = [];
afterAll(async () => { for (const s of started) await s.stop(); });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

describe('first start on an empty data directory', () => {
  it('writes bootstrap.json with the documented fields, matching RunningServer.bootstrap', async () => {
    const ts = await startTestServer();
    started.push(ts);
    const b = JSON.parse(readFileSync(join(ts.dataDir, 'bootstrap.json'), 'utf8'));
    expect(b).toMatchObject({
      organizationId: expect.any(String), organizationName: expect.any(String), userId: expect.any(String),
      apiKeyId: expect.any(String), apiPublicKey: expect.stringMatching(/^0[23][0-9a-f]{64}$/),
    });
    for (const k of ['organizationId', 'organizationName', 'userId', 'apiKeyId', 'apiPublicKey']) expect(b[k]).toBe((ts.server.bootstrap as any)[k]);
    expect(b.organizationId).toMatch(UUID);
    expect(ts.server.port).toBeGreaterThan(0);
    expect(ts.server.url).toBe(`http://127.0.0.1:${ts.server.port}`);
    expect(ts.server.dataDir).toBe(ts.dataDir);
  });

  it('generates root-api-key.json (mode 0600) in the api-key-stamper form, and that key is the root user\'s', async () => {
    const ts = await startTestServer();
    started.push(ts);
    const file = join(ts.dataDir, 'root-api-key.json');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const k = JSON.parse(readFileSync(file, 'utf8'));
    expect(k.publicKey).toMatch(/^0[23][0-9a-f]{64}$/);
    expect(k.privateKey).toMatch(/^[0-9a-f]{64}$/);
    expect(k.publicKey).toBe(ts.server.bootstrap.apiPublicKey);
    expect(ts.server.rootApiKey).toEqual({ publicKey: k.publicKey, privateKey: k.privateKey });
    const who: any = await ts.sdk.getWhoami();
    expect(who.userId).toBe(ts.server.bootstrap.userId);
    expect(who.organizationName).toBe(ts.server.bootstrap.organizationName);
  });

  it('with ROOT_API_PUBLIC_KEY (rootApiPublicKey) registers that key and writes no private key', async () => {
    const key = newP256Key();
    const dataDir = freshDataDir();
    const server = await startServer({ host: '127.0.0.1', port: 0, dataDir, rootApiPublicKey: key.publicKey, logLevel: 'silent' });
    try {
      expect(server.bootstrap.apiPublicKey).toBe(key.publicKey);
      expect(server.rootApiKey).toBeUndefined();
      expect(existsSync(join(dataDir, 'root-api-key.json'))).toBe(false);
      for (const f of readdirSync(dataDir)) {
        if (statSync(join(dataDir, f)).isFile()) expect(readFileSync(join(dataDir, f)).includes(Buffer.from(key.privateKey)), `private key bytes in ${f}`).toBe(false);
      }
      const b = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
      expect(b.apiPublicKey).toBe(key.publicKey);
      const r = await rawRequest(server.url, QUERY('whoami'), JSON.stringify({ organizationId: server.bootstrap.organizationId }), { key });
      expect(r.status, r.text).toBe(200);
      expect(r.json.userId).toBe(server.bootstrap.userId);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('/healthz and /readyz answer 200 while serving', async () => {
    const ts = await startTestServer();
    started.push(ts);
    for (const p of ['/healthz', '/readyz']) expect((await fetch(ts.url + p)).status).toBe(200);
    await ts.stop();
    await expect(fetch(ts.url + '/healthz')).rejects.toThrow();
  });
});

describe('bad configuration stops start-up with a clear message', () => {
  it('the config parser names the bad setting', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ PORT: 'abc' }, /PORT/],
      [{ PORT: '70000' }, /PORT/],
      [{ PORT: '-1' }, /PORT/],
      [{ ROOT_API_PUBLIC_KEY: '04' + 'ab'.repeat(64) }, /ROOT_API_PUBLIC_KEY/],
      [{ ROOT_API_PUBLIC_KEY: 'zz' }, /ROOT_API_PUBLIC_KEY/],
      [{ TIMESTAMP_WINDOW_MS: 'soon' }, /TIMESTAMP_WINDOW_MS/],
      [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
      [{ SQLITE_SYNCHRONOUS: 'MAYBE' }, /SQLITE_SYNCHRONOUS/],
      [{ BODY_LIMIT: 'huge' }, /BODY_LIMIT/],
      [{ TRUST_PROXY: 'everyone' }, /TRUST_PROXY/],
      [{ TRUST_PROXY: '10.0.0.0/40' }, /TRUST_PROXY/],
      [{ TRUST_PROXY: '0' }, /TRUST_PROXY/],
      [{ RPC_URLS: 'mainnet=https://rpc.example.com' }, /RPC_URLS/],
      [{ RPC_URLS: 'eip155:0=https://rpc.example.com' }, /RPC_URLS/],
      [{ RPC_URLS: 'eip155:1=ftp://rpc.example.com' }, /RPC_URLS/],
      [{ RPC_URLS: 'eip155:1=not a url' }, /RPC_URLS/],
      [{ RPC_URLS: 'eip155:1=https://a.example.com,eip155:1=https://b.example.com' }, /RPC_URLS.*twice/],
      [{ RPC_URLS: 'solana:devnet=https://a.example.com,solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1=https://b.example.com' }, /RPC_URLS.*twice/],
      [{ METRICS_PORT: 'metrics' }, /METRICS_PORT/],
      [{ METRICS_TOKEN: 'short' }, /METRICS_TOKEN/],
      [{ RATE_LIMIT_API_KEY: '-5' }, /RATE_LIMIT_API_KEY/],
      [{ RATE_LIMIT_ORGANIZATION: 'lots' }, /RATE_LIMIT_ORGANIZATION/],
      [{ SHUTDOWN_TIMEOUT_MS: '10s' }, /SHUTDOWN_TIMEOUT_MS/],
    ];
    for (const [env, re] of cases) {
      let err: unknown;
      try { loadConfig({ env }); } catch (e) { err = e; }
      expect(err, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(re);
    }
    expect(loadConfig({ env: {} }).port).toBe(8080);
    expect(loadConfig({ env: {} }).host).toBe('127.0.0.1');
    expect(loadConfig({ env: {} }).trustProxy).toBe(false);
    expect(loadConfig({ env: { TRUST_PROXY: '2' } }).trustProxy).toBe(2);
    expect(loadConfig({ env: { TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' } }).trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::1']);
    expect(loadConfig({ env: { RPC_URLS: ' eip155:1=https://eth.example.com/v1/key , solana:mainnet=http://10.0.0.5:8899' } }).rpcUrls)
      .toEqual(['eip155:1=https://eth.example.com/v1/key', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp=http://10.0.0.5:8899']);
    expect(loadConfig({ env: {} }).rpcUrls).toEqual([]);
    const ops = loadConfig({ env: {} });
    expect([ops.metricsPort, ops.metricsToken, ops.rateLimitApiKey, ops.rateLimitOrganization, ops.shutdownTimeoutMs]).toEqual([undefined, undefined, 1000, 5000, 10_000]);
    expect(loadConfig({ env: { METRICS_PORT: '9464', RATE_LIMIT_API_KEY: '0' } })).toMatchObject({ metricsPort: 9464, rateLimitApiKey: 0 });
  });

  it('startServer rejects a bad option without starting', async () => {
    const dataDir = freshDataDir();
    try {
      await expect(startServer({ port: 99999, dataDir } as any)).rejects.toThrow(/port/i);
      await expect(startServer({ port: 0, dataDir, rootApiPublicKey: 'nope' } as any)).rejects.toThrow(/root/i);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the CLI (node bin/kmas.js serve) exits non-zero with a one-line message naming PORT', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const dataDir = freshDataDir();
    try {
      const r = spawnSync(process.execPath, [kmasBin, 'serve'], { cwd: root, env: { ...process.env, PORT: 'not-a-port', DATA_DIR: dataDir }, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stdout + r.stderr).not.toBe(0);
      expect(r.stderr + r.stdout).toMatch(/PORT/);
      expect(r.stderr + r.stdout).not.toMatch(/\n\s+at /); // no stack trace
      const r2 = spawnSync(process.execPath, [kmasBin, 'serve', '--port', '65536'], { cwd: root, env: { ...process.env, DATA_DIR: dataDir }, encoding: 'utf8', timeout: 30_000 });
      expect(r2.status).not.toBe(0);
      expect(r2.stderr + r2.stdout).toMatch(/port/i);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the CLI serves, logs one line naming the ids and files, and answers /healthz', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const dataDir = freshDataDir();
    let serve: ServeProcess | undefined;
    try {
      serve = await spawnServe(dataDir);
      await new Promise((r) => setTimeout(r, 200));
      const out = serve.output();
      const b = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
      const line = out.split('\n').find((l) => l.includes(b.organizationId));
      expect(line, `a log line naming the organization id: ${out.slice(0, 800)}`).toBeDefined();
      for (const v of [b.userId, b.apiKeyId]) expect(line).toContain(v);
      expect(line).toMatch(/bootstrap\.json/);
      expect(line).toMatch(/root-api-key\.json/);
      const key = JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8'));
      expect(out, 'the private key never appears in the log').not.toContain(key.privateKey);
      expect((await fetch(serve.url + '/healthz')).status).toBe(200);
    } finally {
      await serve?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('CLI commands', () => {
  const cli = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [kmasBin, ...args], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });

  it('--help names serve, init, api-key and the documented variables with their flags', (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const r = cli(['--help']);
    expect(r.status).toBe(0);
    for (const w of ['serve', 'init', 'api-key']) expect(r.stdout).toContain(w);
    for (const [env, flag] of [['HOST', '--host'], ['PORT', '--port'], ['DATA_DIR', '--data-dir'], ['ROOT_API_PUBLIC_KEY', '--root-api-public-key']]) {
      const ok = r.stdout.split('\n').some((l) => l.includes(flag + ' ') && new RegExp(`\\b${env}\\b`).test(l));
      expect(ok, `a help line names ${flag} together with ${env}`).toBe(true);
    }
  });

  it('api-key prints a P-256 key pair in the form @turnkey/api-key-stamper takes', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const r = cli(['api-key']);
    expect(r.status, r.stderr).toBe(0);
    const k = JSON.parse(r.stdout);
    expect(k.publicKey).toMatch(/^0[23][0-9a-f]{64}$/);
    expect(k.privateKey).toMatch(/^[0-9a-f]{64}$/);
    expect(bytesToHex(p256.getPublicKey(hexToBytes(k.privateKey), true))).toBe(k.publicKey);
    const stamp = await new ApiKeyStamper({ apiPublicKey: k.publicKey, apiPrivateKey: k.privateKey }).stamp('{}');
    const st = JSON.parse(Buffer.from(stamp.stampHeaderValue, 'base64url').toString('utf8'));
    expect(p256.verify(hexToBytes(st.signature), new TextEncoder().encode('{}'), hexToBytes(k.publicKey), { format: 'der', lowS: false })).toBe(true);
    expect(JSON.parse(cli(['api-key']).stdout).privateKey, 'a fresh key every time').not.toBe(k.privateKey);
  });

  it('init creates the data directory and prints bootstrap.json; serve then uses the same state', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const parent = freshDataDir();
    const dataDir = join(parent, 'nested', 'data');
    try {
      const r = cli(['init'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
      expect(r.status, r.stderr).toBe(0);
      const printed = JSON.parse(r.stdout);
      expect(printed).toEqual(JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')));
      expect(statSync(join(dataDir, 'root-api-key.json')).mode & 0o777).toBe(0o600);
      const server = await startServer({ port: 0, dataDir, logLevel: 'silent' });
      try {
        expect(server.bootstrap).toMatchObject(printed);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('--version prints the version of package.json', (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const r = cli(['--version']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version + '\n');
  });

  it('the data directory is 0700 and the database files 0600; an older, looser installation is tightened with a log line', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const parent = freshDataDir();
    const dataDir = join(parent, 'data');
    const mode = (f: string) => statSync(f).mode & 0o777;
    const db = join(dataDir, 'kmas.sqlite');
    try {
      const r = cli(['init'], { DATA_DIR: dataDir, LOG_LEVEL: 'info' });
      expect(r.status, r.stderr).toBe(0);
      expect(mode(dataDir)).toBe(0o700);
      expect(mode(db)).toBe(0o600);
      expect(r.stderr).not.toMatch(/tightened/);

      // as an installation made before kmas chose these modes
      chmodSync(dataDir, 0o755);
      chmodSync(db, 0o644);
      const again = cli(['init'], { DATA_DIR: dataDir, LOG_LEVEL: 'info' });
      expect(again.status, again.stderr).toBe(0);
      const lines = again.stderr.split('\n').filter((l) => /tightened/.test(l));
      expect(lines).toHaveLength(2);
      expect(lines.join('\n')).toContain('"from":"0755"');
      expect(lines.join('\n')).toContain('"from":"0644"');
      expect(mode(dataDir)).toBe(0o700);
      expect(mode(db)).toBe(0o600);

      // serving: SQLite's -wal and -shm files take the database's mode
      const server = await startServer({ port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent' });
      try {
        expect(mode(db + '-wal')).toBe(0o600);
        expect(mode(db + '-shm')).toBe(0o600);
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('serve on a port in use exits non-zero with a clear message', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const blocker = createNetServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as { port: number }).port;
    const dataDir = freshDataDir();
    try {
      const r = cli(['serve'], { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/listen|in use|EADDRINUSE/i);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      // found before the root organization and its keys were made: the new data directory stays empty
      expect(existsSync(dataDir) ? readdirSync(dataDir) : []).toEqual([]);
    } finally {
      await new Promise<void>((r) => blocker.close(() => r()));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('configuration takes effect', () => {
  it('timestampWindowMs bounds the age of a submit\'s timestampMs', async () => {
    const ts = await startTestServer({ timestampWindowMs: 10_000 } as any);
    started.push(ts);
    const body = (ageMs: number) => submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: `w-${ageMs}-${Math.random()}`, userIds: [] }, String(Date.now() - ageMs));
    // 30 s old would pass the default 5-minute window: refused only because this one is 10 s
    const old = await ts.raw('/public/v1/submit/create_user_tag', body(30_000));
    expect(old.status, old.text).toBe(400);
    expect(old.json.message).toMatch(/timestamp/i);
    const fresh = await ts.raw('/public/v1/submit/create_user_tag', body(1000));
    expect(fresh.status, fresh.text).toBe(200);
  });

  it('bodyLimit bounds the request size', async () => {
    const ts = await startTestServer({ bodyLimit: 4096 } as any);
    started.push(ts);
    const small = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId, pad: 'x'.repeat(3000) }));
    expect(small.status, small.text).toBe(200);
    const big = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId, pad: 'x'.repeat(5000) }));
    expect([413, 400]).toContain(big.status);
    expect(big.json).toMatchObject({ code: expect.any(Number), message: expect.any(String), details: expect.any(Array) });
  });

  it('corsOrigin sets Access-Control-Allow-Origin', async () => {
    const ts = await startTestServer({ corsOrigin: 'https://app.example.com' } as any);
    started.push(ts);
    const r = await fetch(ts.url + QUERY('whoami'), { method: 'OPTIONS', headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'POST' } });
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
  });
});
