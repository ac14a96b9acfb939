// Bad input for every key / wallet / signing / import / export operation: a clear
// {code, message, details} error, and nothing changes (no activity stored, records unchanged).
// Also: authorization (non-root users read only), keys of another organization, deleted keys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { generateP256KeyPair } from '@turnkey/crypto';
import { serializeTransaction } from 'viem';
import { newP256Key, sdkClient, startTestServer, submitBody, type TestServer, onSqlite } from '../server/harness.js';
import { checkAwaitsConsensus } from '../server/checks.js';

let ts: TestServer;
let secpId: string;
let secpAddress: string;
let p256Id: string;
let edId: string;
let edAddress: string;
let walletId: string;
let accountAddress: string;

const ETH = { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' } as const;
const DIGEST = 'ab'.repeat(32);

beforeAll(async () => {
  ts = await startTestServer();
  const k = await ts.sdk.createPrivateKeys({ privateKeys: [
    { privateKeyName: 'k', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] },
    { privateKeyName: 'p', curve: 'CURVE_P256', privateKeyTags: [], addressFormats: [] },
    { privateKeyName: 'e', curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_SOLANA'] },
  ] });
  secpId = k.privateKeys[0]!.privateKeyId!;
  secpAddress = k.privateKeys[0]!.addresses![0]!.address!;
  p256Id = k.privateKeys[1]!.privateKeyId!;
  edId = k.privateKeys[2]!.privateKeyId!;
  edAddress = k.privateKeys[2]!.addresses![0]!.address!;
  const w = await ts.sdk.createWallet({ walletName: 'w', accounts: [ETH] });
  walletId = w.walletId;
  accountAddress = w.addresses[0]!;
});
afterAll(async () => { await ts?.stop(); });

/** Everything a submit could change, as the clients see it. */
async function snapshot(): Promise<string> {
  const [acts, keys, wallets, accounts] = await Promise.all([
    ts.http.getActivities({ organizationId: ts.orgId, paginationOptions: { limit: '100' } } as any),
    ts.sdk.getPrivateKeys({}),
    ts.sdk.getWallets({}),
    ts.sdk.getWalletAccounts({ paginationOptions: { limit: '100' } } as any),
  ]);
  return JSON.stringify({ acts: acts.activities.map((a: any) => a.id), keys: keys.privateKeys, wallets: wallets.wallets, accounts: accounts.accounts });
}

async function expectRefused(path: string, type: string, parameters: unknown, status: number, messageLike: RegExp): Promise<void> {
  const before = await snapshot();
  const r = await ts.raw(`/public/v1/submit/${path}`, submitBody(type, ts.orgId, parameters));
  expect(r.status, `${path} ${JSON.stringify(parameters).slice(0, 200)} → ${r.text.slice(0, 300)}`).toBe(status);
  expect(typeof r.json.code).toBe('number');
  expect(r.json.message).toMatch(messageLike);
  expect(Array.isArray(r.json.details)).toBe(true);
  expect(await snapshot()).toBe(before);
}

const target = () => generateP256KeyPair().publicKeyUncompressed;
const unsignedTx = () => serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 0, to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', value: 1n, gas: 21000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n });

describe('bad input: nothing changes, clear errors', () => {
  it('create_private_keys', async () => {
    const T = 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2';
    await expectRefused('create_private_keys', T, { privateKeys: [] }, 400, /privateKeys/);
    await expectRefused('create_private_keys', T, { privateKeys: [{ privateKeyName: 'x', curve: 'CURVE_NOPE', privateKeyTags: [], addressFormats: [] }] }, 400, /privateKeys\[0\]\.curve/);
    // address format that does not fit the curve: 400 naming the field
    await expectRefused('create_private_keys', T, { privateKeys: [{ privateKeyName: 'x', curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] }, 400, /privateKeys\[0\]\.addressFormats\[0\]/);
    await expectRefused('create_private_keys', T, { privateKeys: [{ privateKeyName: 'x', curve: 'CURVE_P256', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_SOLANA'] }] }, 400, /addressFormats\[0\].*CURVE_ED25519/);
    await expectRefused('create_private_keys', T, { privateKeys: [{ privateKeyName: 'x', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_BOGUS'] }] }, 400, /addressFormats\[0\]/);
    await expectRefused('create_private_keys', T, { privateKeys: [{ curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] }, 400, /privateKeyName/);
    await expectRefused('create_private_keys', T, { privateKeys: [{ privateKeyName: 'x', curve: 'CURVE_SECP256K1', privateKeyTags: [randomUUID()], addressFormats: [] }] }, 404, /tag/);
  });

  it('delete_private_keys', async () => {
    const T = 'ACTIVITY_TYPE_DELETE_PRIVATE_KEYS';
    await expectRefused('delete_private_keys', T, { privateKeyIds: [] }, 400, /privateKeyIds/);
    await expectRefused('delete_private_keys', T, { privateKeyIds: [randomUUID()], deleteWithoutExport: true }, 404, /not found/);
    await expectRefused('delete_private_keys', T, { privateKeyIds: [secpId] }, 400, /exported|deleteWithoutExport/);
  });

  it('create_wallet / create_wallet_accounts / update_wallet / delete_wallets', async () => {
    await expectRefused('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'x', accounts: [ETH], mnemonicLength: 13 }, 400, /mnemonicLength/);
    await expectRefused('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { accounts: [ETH] }, 400, /walletName/);
    await expectRefused('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'x', accounts: [{ ...ETH, curve: 'CURVE_ED25519' }] }, 400, /accounts\[0\]/);
    await expectRefused('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'x', accounts: [{ ...ETH, path: 'm/x' }] }, 400, /accounts\[0\]\.path/);
    await expectRefused('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'x', accounts: [{ ...ETH, pathFormat: 'PATH_FORMAT_X' }] }, 400, /accounts\[0\]\.pathFormat/);
    await expectRefused('create_wallet_accounts', 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId: randomUUID(), accounts: [ETH] }, 404, /wallet/);
    await expectRefused('create_wallet_accounts', 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId, accounts: [] }, 400, /accounts/);
    await expectRefused('create_wallet_accounts', 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId, accounts: [ETH] }, 409, /already/);
    await expectRefused('update_wallet', 'ACTIVITY_TYPE_UPDATE_WALLET', { walletId: randomUUID(), walletName: 'n' }, 404, /wallet/);
    await expectRefused('update_wallet', 'ACTIVITY_TYPE_UPDATE_WALLET', { walletName: 'n' }, 400, /walletId/);
    await expectRefused('delete_wallets', 'ACTIVITY_TYPE_DELETE_WALLETS', { walletIds: [randomUUID()], deleteWithoutExport: true }, 404, /wallet/);
    await expectRefused('delete_wallets', 'ACTIVITY_TYPE_DELETE_WALLETS', { walletIds: [walletId] }, 400, /exported|deleteWithoutExport/);
  });

  it('sign_raw_payload: unknown signer, mismatched curve / encoding / hash, bad payloads', async () => {
    const T = 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2';
    const ok = { signWith: secpId, payload: DIGEST, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' };
    await expectRefused('sign_raw_payload', T, { ...ok, signWith: randomUUID() }, 404, /signWith/);
    await expectRefused('sign_raw_payload', T, { ...ok, signWith: '0x0000000000000000000000000000000000000001' }, 404, /signWith/);
    await expectRefused('sign_raw_payload', T, { ...ok, payload: 'abcd' }, 400, /payload.*32/);
    await expectRefused('sign_raw_payload', T, { ...ok, payload: 'zz' }, 400, /payload/);
    await expectRefused('sign_raw_payload', T, { ...ok, encoding: 'PAYLOAD_ENCODING_BASE64' }, 400, /encoding/);
    await expectRefused('sign_raw_payload', T, { ...ok, hashFunction: 'HASH_FUNCTION_MD5' }, 400, /hashFunction/);
    await expectRefused('sign_raw_payload', T, { ...ok, hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' }, 400, /hashFunction|NOT_APPLICABLE/);
    await expectRefused('sign_raw_payload', T, { ...ok, signWith: edId, hashFunction: 'HASH_FUNCTION_SHA256' }, 400, /ED25519/);
    await expectRefused('sign_raw_payload', T, { ...ok, signWith: edAddress, encoding: 'PAYLOAD_ENCODING_EIP712', payload: '{}' }, 400, /ED25519|encoding/);
    await expectRefused('sign_raw_payload', T, { ...ok, signWith: p256Id, encoding: 'PAYLOAD_ENCODING_EIP712', payload: '{}' }, 400, /SECP256K1|encoding/);
    await expectRefused('sign_raw_payload', T, { ...ok, encoding: 'PAYLOAD_ENCODING_EIP712', payload: '{not json' }, 400, /payload/);
    await expectRefused('sign_raw_payload', T, { ...ok, signWith: undefined }, 400, /signWith/);
    // wrong type for the path
    await expectRefused('sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', ok, 400, /type/);
  });

  it('sign_raw_payloads and sign_transaction', async () => {
    const ok = { signWith: accountAddress, payloads: [DIGEST, DIGEST], encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' };
    await expectRefused('sign_raw_payloads', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', { ...ok, payloads: [] }, 400, /payloads/);
    await expectRefused('sign_raw_payloads', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', { ...ok, payloads: [DIGEST, 'abcd'] }, 400, /payloads\[1\]/);
    await expectRefused('sign_raw_payloads', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', { ...ok, payloads: [DIGEST, 7] }, 400, /payloads\[1\]/);
    await expectRefused('sign_raw_payloads', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', { ...ok, signWith: randomUUID() }, 404, /signWith/);
    const T = 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2';
    await expectRefused('sign_transaction', T, { signWith: secpAddress, unsignedTransaction: 'zz', type: 'TRANSACTION_TYPE_ETHEREUM' }, 400, /unsignedTransaction/);
    await expectRefused('sign_transaction', T, { signWith: secpAddress, unsignedTransaction: '02c0ffee', type: 'TRANSACTION_TYPE_ETHEREUM' }, 400, /unsignedTransaction/);
    await expectRefused('sign_transaction', T, { signWith: secpAddress, unsignedTransaction: unsignedTx(), type: 'TRANSACTION_TYPE_TEMPO' }, 400, /type/);
    await expectRefused('sign_transaction', T, { signWith: secpAddress, unsignedTransaction: unsignedTx(), type: 'TRANSACTION_TYPE_SOLANA' }, 400, /unsignedTransaction/);
    await expectRefused('sign_transaction', T, { signWith: edId, unsignedTransaction: unsignedTx(), type: 'TRANSACTION_TYPE_ETHEREUM' }, 400, /SECP256K1/);
    await expectRefused('sign_transaction', T, { signWith: randomUUID(), unsignedTransaction: unsignedTx(), type: 'TRANSACTION_TYPE_ETHEREUM' }, 404, /signWith/);
  });

  it('import and export', async () => {
    await expectRefused('init_import_wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: randomUUID() }, 404, /user/);
    await expectRefused('init_import_private_key', 'ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY', {}, 400, /userId/);
    const bundle = JSON.stringify({ encappedPublic: '04' + 'aa'.repeat(64), ciphertext: 'bb'.repeat(40) });
    await expectRefused('import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: ts.rootUserId, walletName: 'x', encryptedBundle: bundle, accounts: [] }, 400, /init_import_wallet/);
    await expectRefused('import_private_key', 'ACTIVITY_TYPE_IMPORT_PRIVATE_KEY', { userId: ts.rootUserId, privateKeyName: 'x', encryptedBundle: bundle, curve: 'CURVE_SECP256K1', addressFormats: [] }, 400, /init_import_private_key/);
    await expectRefused('import_private_key', 'ACTIVITY_TYPE_IMPORT_PRIVATE_KEY', { userId: ts.rootUserId, privateKeyName: 'x', encryptedBundle: bundle, curve: 'CURVE_P256', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }, 400, /addressFormats\[0\]/);
    await expectRefused('export_wallet', 'ACTIVITY_TYPE_EXPORT_WALLET', { walletId, targetPublicKey: '04abcd' }, 400, /targetPublicKey/);
    await expectRefused('export_wallet', 'ACTIVITY_TYPE_EXPORT_WALLET', { walletId: randomUUID(), targetPublicKey: target() }, 404, /wallet/);
    await expectRefused('export_private_key', 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY', { privateKeyId: randomUUID(), targetPublicKey: target() }, 404, /private key/);
    await expectRefused('export_private_key', 'ACTIVITY_TYPE_EXPORT_PRIVATE_KEY', { privateKeyId: secpId }, 400, /targetPublicKey/);
    await expectRefused('export_wallet_account', 'ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT', { address: '0x0000000000000000000000000000000000000002', targetPublicKey: target() }, 404, /address/);
  });

  it('an import bundle made for another init (garbage ciphertext to a pending target) is refused and the target stays usable', async () => {
    const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
    expect(init.importBundle).toContain('enclaveQuorumPublic');
    const bundle = JSON.stringify({ encappedPublic: generateP256KeyPair().publicKeyUncompressed, ciphertext: 'bb'.repeat(40) });
    await expectRefused('import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: ts.rootUserId, walletName: 'x', encryptedBundle: bundle, accounts: [] }, 400, /encryptedBundle/);
  });

  it('queries: unknown ids → 404, missing fields → 400', async () => {
    const q = (path: string, body: object) => ts.raw(`/public/v1/query/${path}`, JSON.stringify({ organizationId: ts.orgId, ...body }));
    expect((await q('get_private_key', { privateKeyId: randomUUID() })).status).toBe(404);
    expect((await q('get_private_key', {})).status).toBe(400);
    expect((await q('get_wallet', { walletId: randomUUID() })).status).toBe(404);
    expect((await q('get_wallet_account', { walletId })).status).toBe(400);
    expect((await q('get_wallet_account', { walletId, address: secpAddress })).status).toBe(404);
    expect((await q('list_wallet_accounts', { walletId: randomUUID() })).status).toBe(404);
    expect((await q('list_wallet_accounts', { paginationOptions: { limit: '0' } })).status).toBe(400);
    expect((await q('list_wallet_accounts', { paginationOptions: { after: randomUUID() } })).status).toBe(400);
  });
});

describe('authorization and organization boundaries', () => {
  it('a non-root user may read keys and wallets; creating, signing, importing and exporting wait for approval', async () => {
    const key = newP256Key();
    const made = await ts.sdk.createUsers({ users: [{ userName: 'reader', apiKeys: [{ apiKeyName: 'r', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] });
    const reader = sdkClient(ts.url, key, ts.orgId);
    expect((await reader.getPrivateKey({ privateKeyId: secpId })).privateKey.privateKeyId).toBe(secpId);
    expect((await reader.getWallets({})).wallets.length).toBeGreaterThan(0);
    const before = await snapshot();
    const denied = async (path: string, type: string, parameters: unknown) => {
      const body = submitBody(type, ts.orgId, parameters);
      const r = await ts.raw(`/public/v1/submit/${path}`, body, { key });
      checkAwaitsConsensus(r, path);
    };
    await denied('sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { signWith: secpId, payload: DIGEST, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    await denied('create_private_keys', 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2', { privateKeys: [{ privateKeyName: 'x', curve: 'CURVE_P256', privateKeyTags: [], addressFormats: [] }] });
    await denied('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: 'x', accounts: [] });
    await denied('export_wallet', 'ACTIVITY_TYPE_EXPORT_WALLET', { walletId, targetPublicKey: target() });
    // its own import (one for another user is refused outright: importExport.test.ts)
    await denied('init_import_wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: made.userIds[0] });
    // five activities wait for approval; no key, wallet or account changed
    const keep = (snap: string) => { const o = JSON.parse(snap); delete o.acts; return o; };
    expect(keep(await snapshot())).toEqual(keep(before));
  });

  it.runIf(onSqlite)('a key of another organization cannot be used or seen (404, nothing stored)', async () => {
    // A second organization with its own root user and API key, written into the same database.
    const db = new Database(join(ts.dataDir, 'kmas.sqlite'));
    db.pragma('busy_timeout = 5000');
    const orgId = randomUUID();
    const userId = randomUUID();
    const key = newP256Key();
    const now = Date.now();
    db.prepare('INSERT INTO organizations (id, name, parent_id, root_quorum_threshold, created_ms, updated_ms) VALUES (?, ?, NULL, 1, ?, ?)').run(orgId, 'other', now, now);
    db.prepare('INSERT INTO users (id, organization_id, name, email, phone_number, is_root, created_ms, updated_ms) VALUES (?, ?, ?, NULL, NULL, 1, ?, ?)').run(userId, orgId, 'other-root', now, now);
    db.prepare(`INSERT INTO api_keys (id, organization_id, user_id, name, public_key, curve, credential_type, expiration_seconds, expires_at_ms, created_ms, updated_ms)
                VALUES (?, ?, ?, 'k', ?, 'API_KEY_CURVE_P256', 'CREDENTIAL_TYPE_API_KEY_P256', NULL, NULL, ?, ?)`).run(randomUUID(), orgId, userId, key.publicKey, now, now);
    db.close();
    const other = sdkClient(ts.url, key, orgId);
    const own = await other.createPrivateKeys({ privateKeys: [{ privateKeyName: 'mine', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    expect(own.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    for (const signWith of [secpId, secpAddress, accountAddress]) {
      const r = await ts.raw('/public/v1/submit/sign_raw_payload', submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', orgId,
        { signWith, payload: DIGEST, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }), { key });
      expect(r.status).toBe(404);
      expect(r.json.message).toMatch(/signWith/);
    }
    const get = await ts.raw('/public/v1/query/get_private_key', JSON.stringify({ organizationId: orgId, privateKeyId: secpId }), { key });
    expect(get.status).toBe(404);
    expect((await other.getPrivateKeys({})).privateKeys.map((k) => k.privateKeyId)).toEqual([own.privateKeys[0]!.privateKeyId]);
    expect((await other.getWallets({})).wallets).toEqual([]);
    const acts = await other.getActivities({});
    expect(acts.activities).toHaveLength(1);
  });

  it('a deleted key can no longer sign (404); delete with deleteWithoutExport works', async () => {
    const r = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'doomed', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] });
    const id = r.privateKeys[0]!.privateKeyId!;
    const addr = r.privateKeys[0]!.addresses![0]!.address!;
    await ts.sdk.signRawPayload({ signWith: id, payload: DIGEST, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const d = await ts.sdk.deletePrivateKeys({ privateKeyIds: [id], deleteWithoutExport: true });
    expect(d.privateKeyIds).toEqual([id]);
    for (const signWith of [id, addr]) {
      await expectRefused('sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { signWith, payload: DIGEST, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, 404, /signWith/);
    }
    const w = await ts.sdk.createWallet({ walletName: 'doomed-wallet', accounts: [{ ...ETH, path: "m/44'/60'/0'/0/5" }] });
    await ts.sdk.deleteWallets({ walletIds: [w.walletId], deleteWithoutExport: true });
    await expectRefused('sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { signWith: w.addresses[0], payload: DIGEST, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, 404, /signWith/);
  });
});
