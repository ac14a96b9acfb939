// `kmas migrate-store` (src/migratestore.ts), end to end: an embedded installation made through
// the real API (sub-organization, users with API keys, a wallet with accounts, private keys, tags,
// a policy, signatures, a webhook delivery waiting in the outbox, a FAILED activity) is stopped,
// moved by the real CLI (`node bin/kmas.js migrate-store`, a child process) into a fresh
// PostgreSQL database, and a kmas node started on that database answers exactly as the embedded
// one did, with the same root API key, and its moved keys sign (verified with @noble/curves
// against the public keys listed before the move) and export. Refusals change nothing: a server
// still running on the source, no or a wrong master key, a target that is not empty. Skipped
// loudly without PostgreSQL (pgcluster.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptExportBundle, generateP256KeyPair } from '@turnkey/crypto';
import { startServer, type RunningServer } from '../../src/server.js';
import { SERVER_KEYS } from '../../src/domain/keys.js';
import { leafHash, rootOf, verifyInclusion } from '../../src/tlog/merkle.js';
import { dropFreshDatabases, freshDatabase, missingPostgres, postgresAvailable } from './pgcluster.js';
import { ensureBuilt, kmasBin, root } from '../server/build.js';
import { freshDataDir, newP256Key, sdkClient, submitBody, rawRequest, uniqueName, type ApiKeyPair } from '../server/harness.js';

const available = postgresAvailable();
if (!available) missingPostgres('the migrate-store tests (test/storage/migratestore.test.ts)');

interface CliResult { code: number | null; out: string; err: string }

/** `node bin/kmas.js migrate-store …` with only the environment given (none inherited from the test run's storage). */
function migrateStore(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const base = { ...process.env };
  for (const k of ['DATABASE_URL', 'KMAS_MASTER_KEY', 'DATA_DIR']) delete base[k];
  const child = spawn(process.execPath, [kmasBin, 'migrate-store', ...args], { cwd: root, env: { ...base, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8'); });
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8'); });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out, err })));
}

/** A loopback port nobody listens on (webhook deliveries to it fail and wait in the outbox). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address() as net.AddressInfo; s.close(() => resolve(port)); });
  });
}

/** Every file of a directory with its SHA-256 (the source must come out of the move byte for byte as it went in). */
function fingerprintDir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fs.readdirSync(dir).sort()) out[f] = createHash('sha256').update(fs.readFileSync(path.join(dir, f))).digest('hex');
  return out;
}

/** Rows per table of the SQLite file, read from a copy (opening the source would add -wal / -shm beside it). */
function sqliteCounts(file: string): Record<string, number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-ms-count-'));
  try {
    const copy = path.join(dir, 'copy.sqlite');
    fs.copyFileSync(file, copy);
    const db = new Database(copy, { readonly: true });
    try {
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' ORDER BY name`).all() as { name: string }[]).map((t) => t.name);
      return Object.fromEntries(tables.map((t) => [t, (db.prepare(`SELECT COUNT(*) AS n FROM "${t}"`).get() as { n: number }).n]));
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Every table of the PostgreSQL database: its rows, and a digest of their text (what "changes nothing" compares). */
async function pgState(url: string): Promise<Record<string, string>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const tables = (await c.query<{ t: string }>(`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)).rows.map((r) => r.t);
    const out: Record<string, string> = {};
    for (const t of tables) {
      const r = await c.query<{ n: string; h: string | null }>(`SELECT COUNT(*)::text AS n, md5(string_agg(x::text, '|' ORDER BY x::text)) AS h FROM "${t}" x`);
      out[t] = `${r.rows[0]!.n} ${r.rows[0]!.h ?? ''}`;
    }
    return out;
  } finally {
    await c.end();
  }
}

const HOUR = 3_600_000;

describe.runIf(available)('kmas migrate-store: an embedded installation moved into PostgreSQL', () => {
  const dirs: string[] = [];
  let dataDir = '';
  let masterKey = '';
  let rootKey: ApiKeyPair;
  let orgId = '';
  let subOrgId = '';
  let subKey: ApiKeyPair;
  let aliceKey: ApiKeyPair;
  let signerPublicKey = '';
  let embedded: RunningServer | undefined;
  let node: RunningServer | undefined;
  let target = '';
  /** replies of the embedded installation, compared with the PostgreSQL node's */
  const before: Record<string, any> = {};
  let failedActivityId = '';
  let keyAddress = '';
  let keyId = '';
  let keyPublic = '';
  let ethAddress = '';
  let ethPublic = '';
  let solAddress = '';
  let solPublic = '';
  let walletId = '';
  let pending = { id: '', fingerprint: '', payload: '' };

  /** The replies compared before and after the move: every list the installation answers. */
  async function snapshot(url: string): Promise<Record<string, unknown>> {
    const sdk = sdkClient(url, rootKey, orgId);
    const sub = sdkClient(url, subKey, subOrgId);
    const users: any = await sdk.getUsers({});
    const out: Record<string, any> = {
      whoami: await sdk.getWhoami({ organizationId: orgId }),
      subWhoami: await sub.getWhoami({ organizationId: subOrgId }),
      aliceWhoami: await sdkClient(url, aliceKey, orgId).getWhoami({ organizationId: orgId }),
      configs: await sdk.getOrganizationConfigs({} as any),
      activities: await sdk.getActivities({ paginationOptions: { limit: '100' } } as any),
      subActivities: await sub.getActivities({ organizationId: subOrgId, paginationOptions: { limit: '100' } } as any),
      failed: await sdk.getActivity({ activityId: failedActivityId }),
      users,
      apiKeys: await Promise.all(users.users.map((u: any) => sdk.getApiKeys({ userId: u.userId }))),
      wallets: await sdk.getWallets({}),
      accounts: await sdk.getWalletAccounts({ walletId } as any),
      privateKeys: await sdk.getPrivateKeys({}),
      userTags: await sdk.listUserTags({}),
      privateKeyTags: await sdk.listPrivateKeyTags({}),
      policies: await sdk.getPolicies({}),
      subOrgs: await sdk.getSubOrgIds({} as any),
      webhookEndpoints: await sdk.listWebhookEndpoints({} as any),
      subWallets: await sub.getWallets({ organizationId: subOrgId }),
      pending: await sdk.getActivity({ activityId: pending.id }),
      ipAllowlist: await sdk.getIpAllowlist({} as any),
      contractInterfaces: await sdk.getSmartContractInterfaces({} as any),
    };
    // sdk-server wraps a query's reply in a made-up activity of its own (type UNKNOWN, a fresh id and time): not stored data
    for (const v of Object.values(out)) {
      for (const r of Array.isArray(v) ? v : [v]) if (r?.activity?.type === 'ACTIVITY_TYPE_UNKNOWN_V1') delete r.activity;
    }
    return out;
  }

  beforeAll(async () => {
    expect(ensureBuilt()).toBeUndefined();
    dataDir = freshDataDir();
    dirs.push(dataDir);
    embedded = await startServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', dataDir, webhookRetryMs: HOUR, rateLimitApiKey: 0, rateLimitOrganization: 0 });
    rootKey = embedded.rootApiKey!;
    orgId = embedded.bootstrap.organizationId;
    signerPublicKey = embedded.bootstrap.signerPublicKey!;
    const url = embedded.url;
    const sdk = sdkClient(url, rootKey, orgId);

    aliceKey = newP256Key();
    const alice: any = await sdk.createUsers({ users: [{ userName: 'alice', userEmail: 'alice@example.com', apiKeys: [{ apiKeyName: 'alice key', publicKey: aliceKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const aliceId = alice.userIds[0];
    subKey = newP256Key();
    const sub: any = await sdk.createSubOrganization({
      subOrganizationName: uniqueName('moved-sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'sub root', apiKeys: [{ apiKeyName: 'sub key', publicKey: subKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    } as any);
    subOrgId = sub.subOrganizationId;
    await sdkClient(url, subKey, subOrgId).createWallet({ organizationId: subOrgId, walletName: 'sub wallet', accounts: [] } as any);

    const w: any = await sdk.createWallet({ walletName: 'treasury', accounts: [
      { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' },
      { curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_SOLANA' },
    ] } as any);
    walletId = w.walletId;
    [ethAddress, solAddress] = w.addresses;
    ethPublic = (await sdk.getWalletAccount({ walletId, address: ethAddress } as any) as any).account.publicKey;
    solPublic = (await sdk.getWalletAccount({ walletId, address: solAddress } as any) as any).account.publicKey;
    const pk: any = await sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'hot key', curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'], privateKeyTags: [] }] } as any);
    keyId = pk.privateKeys[0].privateKeyId;
    keyAddress = pk.privateKeys[0].addresses[0].address;
    keyPublic = (await sdk.getPrivateKey({ privateKeyId: keyId }) as any).privateKey.publicKey;
    await sdk.createUserTag({ userTagName: 'signers', userIds: [aliceId] } as any);
    await sdk.createPrivateKeyTag({ privateKeyTagName: 'hot', privateKeyIds: [keyId] } as any);
    await sdk.createPolicy({ policyName: 'root approves signatures', effect: 'EFFECT_ALLOW', condition: "activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'", consensus: `approvers.any(user, user.id == '${embedded.bootstrap.userId}')`, notes: 'moved' } as any);
    const digest = keccak_256(new TextEncoder().encode('signed before the move'));
    await sdk.signRawPayload({ signWith: ethAddress, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    await sdk.signRawPayload({ signWith: keyAddress, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });

    // A FAILED activity: a root quorum of a user without API keys would lock the organization out.
    const bob: any = await sdk.createUsers({ users: [{ userName: 'bob', apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const failed = await rawRequest(url, '/public/v1/submit/update_root_quorum',
      submitBody('ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', orgId, { threshold: 1, userIds: [bob.userIds[0]] }), { key: rootKey });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    failedActivityId = failed.json.activity.id;

    // Consensus: alice's signature waits for the root user's approval (pending activity, her vote, the policy evaluation).
    const waiting: any = await sdkClient(url, aliceKey, orgId).signRawPayload({ signWith: keyAddress, payload: bytesToHex(keccak_256(new TextEncoder().encode('approved after the move'))), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(waiting.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    pending = { id: waiting.activity.id, fingerprint: waiting.activity.fingerprint, payload: waiting.activity.intent.signRawPayloadIntentV2.payload };
    await sdk.setIpAllowlist({ rules: [{ cidr: '127.0.0.0/8' }] } as any);
    await sdk.initImportPrivateKey({ userId: embedded.bootstrap.userId } as any);
    await sdk.createSmartContractInterface({ smartContractAddress: '0x00000000000000000000000000000000000000aa', smartContractInterface: JSON.stringify([{ type: 'function', name: 'ping', inputs: [], outputs: [], stateMutability: 'view' }]), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'ping' } as any);

    // The outbox: an endpoint nobody answers; its deliveries wait an hour for their next attempt.
    await sdk.createWebhookEndpoint({ url: `http://127.0.0.1:${await closedPort()}/hook`, name: 'unreachable', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
    await sdk.createUserTag({ userTagName: 'announced', userIds: [] } as any);

    Object.assign(before, await snapshot(url));
    masterKey = fs.readFileSync(path.join(dataDir, 'master.key'), 'utf8').trim();
    target = await freshDatabase();
  }, 120_000);

  afterAll(async () => {
    await embedded?.stop();
    await node?.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    await dropFreshDatabases();
  });

  it('refuses while a server is running on the data dir, and without or with a wrong master key; the target stays untouched', async () => {
    const running = await migrateStore(['--from', dataDir, '--to', target], { KMAS_MASTER_KEY: masterKey });
    expect(running.code, running.err).toBe(1);
    expect(running.err).toMatch(/a kmas server is running/);
    await embedded!.stop();
    embedded = undefined;
    expect(await pgState(target), 'nothing was created in the target').toEqual({});

    const sourceBefore = fingerprintDir(dataDir);
    const none = await migrateStore(['--from', dataDir, '--to', target]);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/needs KMAS_MASTER_KEY/);

    const wrongKey = randomBytes(32).toString('hex');
    const wrong = await migrateStore(['--from', dataDir, '--to', target], { KMAS_MASTER_KEY: wrongKey });
    expect(wrong.code).toBe(1);
    expect(wrong.err).toMatch(/not this installation's master key/);
    expect(wrong.err + wrong.out).not.toContain(wrongKey);
    expect(wrong.err + wrong.out).not.toContain(masterKey);

    // Without the key file beside it, the stored server keys themselves tell a wrong key.
    const bare = freshDataDir();
    dirs.push(bare);
    fs.copyFileSync(path.join(dataDir, 'kmas.sqlite'), path.join(bare, 'kmas.sqlite'));
    const sealedWrong = await migrateStore(['--from', bare, '--to', target], { KMAS_MASTER_KEY: wrongKey });
    expect(sealedWrong.code).toBe(1);
    expect(sealedWrong.err).toMatch(/does not open with KMAS_MASTER_KEY/);

    expect(await pgState(target), 'nothing was created in the target').toEqual({});
    expect(fingerprintDir(dataDir)).toEqual(sourceBefore);
  }, 60_000);

  it('a table or column PostgreSQL lacks, or a value its column type cannot take, is refused: no row is written', async () => {
    /** A copy of the installation changed by `change` (closed cleanly: no -wal left beside it). */
    const variant = (change: (db: Database.Database) => void): string => {
      const dir = freshDataDir();
      dirs.push(dir);
      fs.copyFileSync(path.join(dataDir, 'kmas.sqlite'), path.join(dir, 'kmas.sqlite'));
      const db = new Database(path.join(dir, 'kmas.sqlite'));
      change(db);
      db.close();
      return dir;
    };
    const extra = variant((db) => {
      db.exec("CREATE TABLE extra_things (id TEXT PRIMARY KEY); INSERT INTO extra_things VALUES ('x')");
      db.exec('ALTER TABLE users ADD COLUMN nickname TEXT');
    });
    const url1 = await freshDatabase();
    const r1 = await migrateStore(['--from', extra, '--to', url1], { KMAS_MASTER_KEY: masterKey });
    expect(r1.code).toBe(1);
    expect(r1.err).toMatch(/SQLite table extra_things has no PostgreSQL counterpart/);
    expect(r1.err).toMatch(/SQLite column users\.nickname has no PostgreSQL counterpart/);
    const state1 = await pgState(url1);
    expect(Object.keys(state1)).toContain('organizations');
    for (const [t, v] of Object.entries(state1)) if (t !== 'schema_migrations') expect(v, t).toBe('0 ');

    const bad = variant((db) => { db.exec('UPDATE users SET is_root = 2 WHERE rowid = (SELECT MAX(rowid) FROM users)'); });
    const url2 = await freshDatabase();
    const r2 = await migrateStore(['--from', bad, '--to', url2], { KMAS_MASTER_KEY: masterKey });
    expect(r2.code).toBe(1);
    expect(r2.err).toMatch(/users \(rowid \d+\)\.is_root: PostgreSQL column of type boolean/);
    for (const [t, v] of Object.entries(await pgState(url2))) if (t !== 'schema_migrations') expect(v, t).toBe('0 ');
  }, 60_000);

  it('moves every table (counts checked), leaves the source byte for byte as it was, and says so in JSON', async () => {
    const sourceBefore = fingerprintDir(dataDir);
    const counts = sqliteCounts(path.join(dataDir, 'kmas.sqlite'));
    expect(counts.webhook_deliveries, 'a delivery waits in the outbox').toBeGreaterThan(0);
    expect(counts.server_secrets).toBe(SERVER_KEYS.length);
    // --to from DATABASE_URL, --from as --from=…
    const r = await migrateStore([`--from=${dataDir}`], { DATABASE_URL: target, KMAS_MASTER_KEY: masterKey });
    expect(r.code, r.err).toBe(0);
    const summary = JSON.parse(r.out);
    expect(summary.storage).toBe('postgres');
    expect(summary.tables).toEqual(counts);
    expect(summary.rows).toBe(Object.values(counts).reduce((a, b) => a + b, 0));
    expect(summary.check.serverKeys).toBe(SERVER_KEYS.length);
    for (const t of ['pending_activities', 'votes', 'policy_evaluations', 'ip_allowlists', 'import_targets', 'smart_contract_interfaces', 'tag_members', 'private_key_addresses']) expect(counts[t], t).toBeGreaterThan(0);
    expect(summary.check.sealedOpened).toBe(counts.private_keys! + counts.wallets! + counts.wallet_accounts! + counts.org_secrets! + counts.import_targets!);
    expect(summary.check.signed.map((s: any) => `${s.table} ${s.curve}`).sort()).toEqual(['private_keys CURVE_SECP256K1', 'wallet_accounts CURVE_ED25519', 'wallet_accounts CURVE_SECP256K1']);
    expect(r.out + r.err).not.toContain(masterKey);
    expect(fingerprintDir(dataDir), 'the source is unchanged (no -wal / -shm either)').toEqual(sourceBefore);

    const state = await pgState(target);
    for (const [t, n] of Object.entries(counts)) expect(state[t]!.split(' ')[0], t).toBe(String(n));
  }, 60_000);

  it('a node on the PostgreSQL database answers as the embedded one did, with the same root key; moved keys sign and export', async () => {
    const nodeDir = freshDataDir();
    dirs.push(nodeDir);
    node = await startServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', dataDir: nodeDir, databaseUrl: target, masterKey, webhookRetryMs: HOUR, rateLimitApiKey: 0, rateLimitOrganization: 0 });
    expect(node.bootstrap.organizationId).toBe(orgId);
    expect(node.rootApiKey, 'the node made no root key of its own').toBeUndefined();
    expect(node.bootstrap.signerPublicKey, 'the bundle signer moved').toBe(signerPublicKey);
    expect(before.activities.activities.length).toBeGreaterThan(15);
    expect(before.pending.activity.votes).toHaveLength(1);
    expect(await snapshot(node.url)).toEqual(before);

    const sdk = sdkClient(node.url, rootKey, orgId);
    const msg = new TextEncoder().encode('signed after the move');
    const digest = keccak_256(msg);
    const s1: any = await sdk.signRawPayload({ signWith: ethAddress, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(secp256k1.verify(hexToBytes(s1.r + s1.s), digest, hexToBytes(ethPublic), { prehash: false })).toBe(true);
    const pub1 = secp256k1.Signature.fromBytes(hexToBytes(s1.r + s1.s)).addRecoveryBit(Number(s1.v)).recoverPublicKey(digest).toBytes(false);
    expect(`0x${bytesToHex(keccak_256(pub1.slice(1)).slice(-20))}`).toBe(ethAddress.toLowerCase());
    const s2: any = await sdk.signRawPayload({ signWith: keyAddress, payload: bytesToHex(msg), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_SHA256' });
    expect(secp256k1.verify(hexToBytes(s2.r + s2.s), sha256(msg), hexToBytes(keyPublic), { prehash: false })).toBe(true);
    const s3: any = await sdk.signRawPayload({ signWith: solAddress, payload: bytesToHex(msg), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' });
    expect(ed25519.verify(hexToBytes(s3.r + s3.s), msg, hexToBytes(solPublic))).toBe(true);

    // The activity that waited for consensus is approved on the PostgreSQL node, and signs.
    const approved: any = await sdk.approveActivity({ fingerprint: pending.fingerprint } as any);
    expect(approved.activity.id).toBe(pending.id);
    expect(approved.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(approved.activity.votes).toHaveLength(2);
    const s4 = approved.signRawPayloadResult;
    expect(secp256k1.verify(hexToBytes(s4.r + s4.s), hexToBytes(pending.payload), hexToBytes(keyPublic), { prehash: false })).toBe(true);

    // Export: the moved key, sealed to a key we hold under the moved bundle signer.
    const kp = generateP256KeyPair();
    const ex: any = await sdk.exportPrivateKey({ privateKeyId: keyId, targetPublicKey: kp.publicKeyUncompressed } as any);
    const sk = await decryptExportBundle({ exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: orgId, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: signerPublicKey });
    expect(bytesToHex(secp256k1.getPublicKey(hexToBytes(sk.replace(/^0x/, '')), true))).toBe(keyPublic.length === 66 ? keyPublic : bytesToHex(secp256k1.Point.fromHex(keyPublic).toBytes(true)));

    // New rows continue after the moved ones (identities were moved on).
    const tag: any = await sdk.createUserTag({ userTagName: uniqueName('after'), userIds: [] } as any);
    const listed: any = await sdk.getActivities({ paginationOptions: { limit: '1' } } as any);
    expect(listed.activities[0].id).toBe(tag.activity.id);

    // The log continues the moved tree (its PostgreSQL head was built from the SQLite entries): the
    // approval and the tag are entries after the moved ones, and a proof from the stored nodes
    // verifies against the tree of all the entries' bytes.
    const logQuery = async (op: string, body: Record<string, unknown>) => {
      const r = await rawRequest(node!.url, `/public/v1/query/${op}`, JSON.stringify({ organizationId: orgId, ...body }), { key: rootKey });
      expect(r.status, r.text).toBe(200);
      return r.json;
    };
    const all = await logQuery('kmas_list_log_entries', { start: '0', limit: '1000' });
    const size = Number(all.treeSize);
    const ids: string[] = all.entries.map((e: { activityId: string }) => e.activityId);
    expect(ids.filter((id) => id === pending.id)).toHaveLength(2); // waiting (moved), approved (here)
    expect(ids[size - 1]).toBe(tag.activity.id);
    const leaves = all.entries.map((e: { entry: string }) => leafHash(Buffer.from(e.entry, 'base64')));
    const proof = await logQuery('kmas_get_log_inclusion_proof', { activityId: tag.activity.id, treeSize: String(size) });
    expect(Number(proof.index)).toBe(size - 1);
    expect(verifyInclusion(leaves[size - 1], size - 1, size, proof.proof.map((p: string) => Buffer.from(p, 'base64')), rootOf(leaves))).toBe(true);
    await node.stop();
    node = undefined;
  }, 90_000);

  it('a second move into the now non-empty database is refused and changes nothing', async () => {
    const state = await pgState(target);
    const r = await migrateStore(['--from', dataDir, '--to', target], { KMAS_MASTER_KEY: masterKey });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/target database is not empty/);
    expect(await pgState(target)).toEqual(state);
  }, 60_000);
});
