// End-to-end smoke checks of the activity server with the real public clients
// (@turnkey/sdk-server 8.2.1, @turnkey/http 6.6.0 + @turnkey/api-key-stamper).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Turnkey } from '@turnkey/sdk-server';
import { TurnkeyClient, createActivityPoller } from '@turnkey/http';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { WalletStamper } from '@turnkey/wallet-stamper';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { toDerSignature } from '@turnkey/crypto';
import { startServer, type RunningServer } from '../../src/server.js';

function newKey() {
  const sk = p256.utils.randomSecretKey();
  return { publicKey: bytesToHex(p256.getPublicKey(sk, true)), privateKey: bytesToHex(sk) };
}
const sdkFor = (url: string, key: { publicKey: string; privateKey: string }, org: string) =>
  new Turnkey({ apiBaseUrl: url, apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey, defaultOrganizationId: org }).apiClient();
const httpFor = (url: string, key: { publicKey: string; privateKey: string }) =>
  new TurnkeyClient({ baseUrl: url }, new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey }));

describe('activity server basics', () => {
  let dir: string;
  let srv: RunningServer;
  let org: string;
  let root: { publicKey: string; privateKey: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kmas-basic-'));
    srv = await startServer({ dataDir: dir, port: 0, logLevel: 'silent' });
    org = srv.bootstrap.organizationId;
    root = srv.rootApiKey!;
  });
  afterAll(async () => {
    await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('bootstraps files: bootstrap.json and a 0600 root-api-key.json', () => {
    const boot = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8'));
    expect(boot).toMatchObject({
      organizationId: org, organizationName: srv.bootstrap.organizationName, userId: srv.bootstrap.userId,
      apiKeyId: srv.bootstrap.apiKeyId, apiPublicKey: root.publicKey,
    });
    expect(statSync(join(dir, 'root-api-key.json')).mode & 0o777).toBe(0o600);
    expect(bytesToHex(p256.getPublicKey(Buffer.from(root.privateKey, 'hex'), true))).toBe(root.publicKey);
  });

  it('whoami through @turnkey/sdk-server and @turnkey/http', async () => {
    const a = await sdkFor(srv.url, root, org).getWhoami({});
    expect(a).toMatchObject({ organizationId: org, userId: srv.bootstrap.userId, organizationName: srv.bootstrap.organizationName });
    const b = await httpFor(srv.url, root).getWhoami({ organizationId: org });
    expect(b).toMatchObject({ organizationId: org, userId: srv.bootstrap.userId, username: a.username });
    // trailing slash on the base URL → //public/... still served
    const c = await sdkFor(srv.url + '/', root, org).getWhoami({});
    expect(c.userId).toBe(srv.bootstrap.userId);
  });

  it('creates a user holding an API key, then acts as that user', async () => {
    const sdk = sdkFor(srv.url, root, org);
    const userKey = newKey();
    const created = await sdk.createUsers({
      users: [{ userName: 'alice', userEmail: 'alice@example.com', apiKeys: [{ apiKeyName: 'alice key', publicKey: userKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }],
    });
    expect(created.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(created.userIds).toHaveLength(1);
    const aliceId = created.userIds[0]!;
    // The spec's nested form is present too.
    const nested = (created.activity.result as any).activity;
    expect(nested.type).toBe('ACTIVITY_TYPE_CREATE_USERS_V4');
    expect(nested.result.createUsersResult.userIds).toEqual([aliceId]);

    const who = await httpFor(srv.url, userKey).getWhoami({ organizationId: org });
    expect(who).toMatchObject({ organizationId: org, userId: aliceId, username: 'alice' });

    // alice (non-root) may add a key to herself through the poller, but not create users.
    const http = httpFor(srv.url, userKey);
    const poll = createActivityPoller({ client: http, requestFn: http.createApiKeys });
    const k2 = newKey();
    const act = await poll({
      type: 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', timestampMs: String(Date.now()), organizationId: org,
      parameters: { userId: aliceId, apiKeys: [{ apiKeyName: 'second', publicKey: k2.publicKey, curveType: 'API_KEY_CURVE_P256' }] },
    });
    expect(act.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const keyId = (act.result as any).createApiKeysResult.apiKeyIds[0];
    const got = await http.getApiKey({ organizationId: org, apiKeyId: keyId });
    expect(got.apiKey.credential).toEqual({ publicKey: k2.publicKey, type: 'CREDENTIAL_TYPE_API_KEY_P256' });

    await expect(sdkFor(srv.url, userKey, org).createUsers({ users: [{ userName: 'mallory', apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] }))
      .rejects.toThrow(/Turnkey error 7/);
  });

  it('get_activity and list_activities return the stored activity; resubmission reuses it', async () => {
    const http = httpFor(srv.url, root);
    const body = { type: 'ACTIVITY_TYPE_CREATE_USER_TAG' as const, timestampMs: String(Date.now()), organizationId: org, parameters: { userTagName: 'ops', userIds: [] } };
    const first = await http.createUserTag(body);
    const again = await http.createUserTag(body);
    expect(again.activity.id).toBe(first.activity.id);
    expect(first.activity.fingerprint).toBe('sha256:' + createHash('sha256').update(JSON.stringify(body)).digest('hex'));
    const got = await http.getActivity({ organizationId: org, activityId: first.activity.id });
    expect(got.activity).toEqual(first.activity);
    const list = await http.getActivities({ organizationId: org, paginationOptions: { limit: '1' } });
    expect(list.activities.map((a) => a.id)).toEqual([first.activity.id]);
  });

  it('an Ethereum wallet stamps with SECP256K1_EIP191 through @turnkey/wallet-stamper', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const sdk = sdkFor(srv.url, root, org);
    // account.publicKey is uncompressed (0x04…); the server stores the compressed form stamps carry.
    const created = await sdk.createUsers({
      users: [{ userName: 'wallet user', apiKeys: [{ apiKeyName: 'eth', publicKey: account.publicKey.slice(2), curveType: 'API_KEY_CURVE_SECP256K1' }], authenticators: [], oauthProviders: [], userTags: [] }],
    });
    const stamper = new WalletStamper({
      type: 'ethereum' as any,
      signMessage: (message: string) => account.signMessage({ message }),
      getPublicKey: async () => account.publicKey,
    } as any);
    const client = new TurnkeyClient({ baseUrl: srv.url }, stamper);
    const who = await client.getWhoami({ organizationId: org });
    expect(who.userId).toBe(created.userIds[0]);
  });

  it('accepts DER with non-minimal 32-byte integers, as @turnkey/crypto toDerSignature (wallet-stamper) writes them', async () => {
    const sk = Buffer.from(root.privateKey, 'hex');
    let body = '';
    let compact: Uint8Array | undefined;
    for (let i = 0; i < 5000 && !compact; i++) {
      body = JSON.stringify({ organizationId: org, n: i });
      const sig = p256.sign(new TextEncoder().encode(body), sk, { lowS: false });
      if (sig[0] === 0 && sig[1]! < 0x80) compact = sig; // r has a redundant leading zero byte in 32-byte form
    }
    expect(compact).toBeDefined();
    const der = toDerSignature(bytesToHex(compact!));
    expect(der.slice(4, 10)).toBe('022000'); // r written as a 32-byte INTEGER with a redundant leading zero
    const stamp = Buffer.from(JSON.stringify({ publicKey: root.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature: der })).toString('base64url');
    const res = await fetch(`${srv.url}/public/v1/query/whoami`, { method: 'POST', headers: { 'X-Stamp': stamp, 'Content-Type': 'application/json' }, body });
    expect(res.status).toBe(200);
    expect((await res.json()).userId).toBe(srv.bootstrap.userId);
  });

  it('refuses a stamp made over other bytes with 401 in the API error format', async () => {
    const body = JSON.stringify({ organizationId: org });
    const stamp = await new ApiKeyStamper({ apiPublicKey: root.publicKey, apiPrivateKey: root.privateKey }).stamp(JSON.stringify({ organizationId: org + 'x' }));
    const res = await fetch(`${srv.url}/public/v1/query/whoami`, { method: 'POST', headers: { 'X-Stamp': stamp.stampHeaderValue, 'Content-Type': 'application/json' }, body });
    expect(res.status).toBe(401);
    const json = await res.json();
    expect(json.code).toBe(16);
    expect(typeof json.message).toBe('string');
    expect(Array.isArray(json.details)).toBe(true);
  });
});

describe('sub-organization credentials (rows written through the storage layer)', () => {
  it('whoami names the sub-organization when the body names its parent; the parent may read, not write', async () => {
    const { openSqliteDb } = await import('../../src/storage/sqlite.js');
    const dir = mkdtempSync(join(tmpdir(), 'kmas-sub-'));
    try {
      let srv = await startServer({ dataDir: dir, port: 0, logLevel: 'silent' });
      const parent = srv.bootstrap.organizationId;
      const root = srv.rootApiKey!;
      await srv.stop();
      const subKey = newKey();
      const sub = { org: 'sub-org-1', user: 'sub-user-1', key: 'sub-key-1' };
      const db = openSqliteDb(join(dir, 'kmas.sqlite'));
      const now = Date.now();
      await db.write(async (store) => {
        await store.organizations.insert({ id: sub.org, name: 'child', parentId: parent, rootQuorumThreshold: 1, createdMs: now, updatedMs: now });
        await store.users.insert({ id: sub.user, organizationId: sub.org, name: 'child root', email: null, phoneNumber: null, isRoot: true, createdMs: now, updatedMs: now });
        await store.apiKeys.insert({ id: sub.key, organizationId: sub.org, userId: sub.user, name: 'k', publicKey: subKey.publicKey, curve: 'API_KEY_CURVE_P256', credentialType: 'CREDENTIAL_TYPE_API_KEY_P256', expirationSeconds: null, expiresAtMs: null, createdMs: now, updatedMs: now });
      });
      await db.close();
      srv = await startServer({ dataDir: dir, port: 0, logLevel: 'silent' });
      try {
        const who = await httpFor(srv.url, subKey).getWhoami({ organizationId: parent });
        expect(who).toMatchObject({ organizationId: sub.org, organizationName: 'child', userId: sub.user, username: 'child root' });
        // the sub-org credential cannot read the parent
        await expect(httpFor(srv.url, subKey).getUsers({ organizationId: parent })).rejects.toThrow(/Turnkey error 16: could not find public key in organization or its parent organization/);
        // the parent's root may read the sub-organization …
        const users = await httpFor(srv.url, root).getUsers({ organizationId: sub.org });
        expect(users.users.map((u) => u.userId)).toEqual([sub.user]);
        // … but not act in it
        await expect(sdkFor(srv.url, root, sub.org).createUserTag({ userTagName: 't', userIds: [] })).rejects.toThrow(/Turnkey error 7: request not authorized/);
      } finally {
        await srv.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('configuration', () => {
  it('reads defaults, then environment, then flags, then explicit options', async () => {
    const { loadConfig } = await import('../../src/config.js');
    const d = loadConfig();
    expect(d).toMatchObject({ host: '127.0.0.1', port: 8080, timestampWindowMs: 300000, bodyLimit: 1048576, sqliteSynchronous: 'FULL', logLevel: 'info' });
    const c = loadConfig({ env: { PORT: '9000', LOG_LEVEL: 'WARN', BODY_LIMIT: '2mb' }, argv: ['--port', '9001', '--sqlite-synchronous=normal'] });
    expect(c).toMatchObject({ port: 9001, logLevel: 'warn', bodyLimit: 2 * 1024 * 1024, sqliteSynchronous: 'NORMAL' });
    expect(loadConfig({ env: { PORT: '9000' }, overrides: { port: 0 } }).port).toBe(0);
  });

  it('refuses bad values with a one-line ConfigError naming the setting', async () => {
    const { loadConfig, ConfigError } = await import('../../src/config.js');
    const cases: [Record<string, string>, RegExp][] = [
      [{ PORT: '70000' }, /PORT/],
      [{ PORT: '80a' }, /PORT/],
      [{ TIMESTAMP_WINDOW_MS: '-1' }, /TIMESTAMP_WINDOW_MS/],
      [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
      [{ SQLITE_SYNCHRONOUS: 'sometimes' }, /SQLITE_SYNCHRONOUS/],
      [{ BODY_LIMIT: '1tb' }, /BODY_LIMIT/],
      [{ ROOT_API_PUBLIC_KEY: '02' + 'ff'.repeat(32) }, /ROOT_API_PUBLIC_KEY/], // x ≥ p: not on the curve
      [{ ROOT_API_PUBLIC_KEY: '04abcd' }, /ROOT_API_PUBLIC_KEY/],
    ];
    for (const [env, re] of cases) {
      let err: unknown;
      try { loadConfig({ env }); } catch (e) { err = e; }
      expect(err, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(re);
      expect((err as Error).message).not.toContain('\n');
    }
    expect(() => loadConfig({ argv: ['--nope', '1'] })).toThrow(ConfigError);
  });

  it('registers ROOT_API_PUBLIC_KEY on first start and writes no private key file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kmas-rootkey-'));
    const key = newKey();
    const srv = await startServer({ dataDir: dir, port: 0, logLevel: 'silent', rootApiPublicKey: key.publicKey });
    try {
      expect(srv.rootApiKey).toBeUndefined();
      expect(srv.bootstrap.apiPublicKey).toBe(key.publicKey);
      expect(() => statSync(join(dir, 'root-api-key.json'))).toThrow();
      const who = await sdkFor(srv.url, key, srv.bootstrap.organizationId).getWhoami({});
      expect(who.userId).toBe(srv.bootstrap.userId);
    } finally {
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('restart', () => {
  it('keeps the organization and rebuilds a lost bootstrap.json from the database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kmas-restart-'));
    try {
      const a = await startServer({ dataDir: dir, port: 0, logLevel: 'silent' });
      await a.stop();
      rmSync(join(dir, 'bootstrap.json'));
      const b = await startServer({ dataDir: dir, port: 0, logLevel: 'silent' });
      try {
        expect(b.bootstrap).toEqual(a.bootstrap);
        expect(JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8'))).toEqual(a.bootstrap);
        expect(b.rootApiKey).toEqual(a.rootApiKey);
        const who = await sdkFor(b.url, b.rootApiKey!, b.bootstrap.organizationId).getWhoami({});
        expect(who.userId).toBe(a.bootstrap.userId);
      } finally {
        await b.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
