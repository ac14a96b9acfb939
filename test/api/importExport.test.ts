// Import and export bundles with @turnkey/crypto (the client side), the well-known test mnemonic,
// and a scan of the SQLite files for key material.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, existsSync, readdirSync, statSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptExportBundle, encryptPrivateKeyToBundle, encryptWalletToBundle, generateP256KeyPair } from '@turnkey/crypto';
import { publicKeyToAddress } from 'viem/accounts';
import { startTestServer, createMember, newestActivityId, submitBody, uniqueName, type TestServer, type Member, onSqlite } from '../server/harness.js';
import { checkError } from '../server/checks.js';

const wellKnown = JSON.parse(readFileSync(new URL('../vectors/ethereum/well_known.json', import.meta.url), 'utf8'));
const MNEMONIC: string = wellKnown.bip44Mnemonic.mnemonic;
const ACCOUNTS: { path: string; privateKey: string; address: string }[] = wellKnown.bip44Mnemonic.accounts;
const ethAccount = (path: string) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }) as const;

let ts: TestServer;
let signer: string;
beforeAll(async () => {
  ts = await startTestServer();
  signer = ts.server.bootstrap.signerPublicKey!;
});
afterAll(async () => { await ts?.stop(); });

async function importKnownWallet(name: string): Promise<{ walletId: string; addresses: string[] }> {
  const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
  const encryptedBundle = await encryptWalletToBundle({
    mnemonic: MNEMONIC, importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer,
  });
  const r = await ts.sdk.importWallet({ userId: ts.rootUserId, walletName: name, encryptedBundle, accounts: ACCOUNTS.map((a) => ethAccount(a.path)) });
  expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  return { walletId: r.walletId, addresses: r.addresses };
}

describe('bundle signer', () => {
  it('is published in bootstrap.json and on the running server (uncompressed P-256 hex)', () => {
    expect(signer).toMatch(/^04[0-9a-f]{128}$/);
    const file = JSON.parse(readFileSync(join(ts.dataDir, 'bootstrap.json'), 'utf8'));
    expect(file.signerPublicKey).toBe(signer);
  });

  it.runIf(onSqlite)('survives a restart (same signer, master key file 0600); keys made before still sign; another master key is refused', async () => {
    const other = await startTestServer();
    const s1 = other.server.bootstrap.signerPublicKey;
    const made = await other.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'before', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] });
    const address = made.privateKeys[0]!.addresses![0]!.address!;
    await other.stop(true);
    const keyFile = join(other.dataDir, 'master.key');
    expect(existsSync(keyFile)).toBe(true);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const restarted = await startTestServer({ dataDir: other.dataDir });
    expect(restarted.server.bootstrap.signerPublicKey).toBe(s1);
    const digest = 'cd'.repeat(32);
    const sig = await restarted.sdk.signRawPayload({ signWith: address, payload: digest, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const pub = secp256k1.Signature.fromBytes(hexToBytes(sig.r + sig.s)).addRecoveryBit(Number(sig.v)).recoverPublicKey(hexToBytes(digest));
    expect(publicKeyToAddress(`0x${bytesToHex(pub.toBytes(false))}`)).toBe(address);
    await restarted.stop(true);
    // A different master key cannot open the stored signer: start-up fails with a clear message.
    await expect(startTestServer({ dataDir: other.dataDir, masterKey: 'ab'.repeat(32) })).rejects.toThrow(/master key/);
    rmSync(other.dataDir, { recursive: true, force: true });
  });

  it('KMAS_MASTER_KEY (masterKey) is used instead of a key file', async () => {
    const mk = 'cd'.repeat(32);
    const s = await startTestServer({ masterKey: mk });
    expect(existsSync(join(s.dataDir, 'master.key'))).toBe(false);
    await s.sdk.createWallet({ walletName: 'w', accounts: [ethAccount("m/44'/60'/0'/0/0")] });
    await s.stop(true);
    const again = await startTestServer({ dataDir: s.dataDir, masterKey: mk });
    expect(again.server.bootstrap.signerPublicKey).toBe(s.server.bootstrap.signerPublicKey);
    await again.stop();
  });
});

describe('import_wallet with the well-known test mnemonic', () => {
  it('gives the known Ethereum accounts; signing with them recovers the known addresses', async () => {
    const { walletId, addresses } = await importKnownWallet('hardhat');
    expect(addresses).toEqual(ACCOUNTS.map((a) => a.address));
    const w = await ts.sdk.getWallet({ walletId });
    expect(w.wallet.imported).toBe(true);
    const digest = hexToBytes('aa'.repeat(32));
    const sig = await ts.sdk.signRawPayload({ signWith: ACCOUNTS[1]!.address, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    // Same bytes as signing with the known private key (RFC 6979).
    const expected = secp256k1.sign(digest, hexToBytes(ACCOUNTS[1]!.privateKey.slice(2)), { prehash: false, format: 'recovered' });
    expect(sig.r + sig.s).toBe(bytesToHex(expected.slice(1)));
    expect(Number(sig.v)).toBe(expected[0]);
  });

  it('the import target is single-use', async () => {
    const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
    const encryptedBundle = await encryptWalletToBundle({
      mnemonic: MNEMONIC, importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer,
    });
    await ts.sdk.importWallet({ userId: ts.rootUserId, walletName: 'once', encryptedBundle, accounts: [] });
    const again = await ts.raw('/public/v1/submit/import_wallet', JSON.stringify({
      type: 'ACTIVITY_TYPE_IMPORT_WALLET', timestampMs: String(Date.now()), organizationId: ts.orgId,
      parameters: { userId: ts.rootUserId, walletName: 'twice', encryptedBundle, accounts: [] },
    }));
    expect(again.status).toBe(400);
    expect(again.json.message).toMatch(/init_import_wallet/);
  });

  it('export_wallet → decryptExportBundle gives the same mnemonic; export_wallet_account gives the known key', async () => {
    const { walletId } = await importKnownWallet('to-export');
    const kp = generateP256KeyPair();
    const ex = await ts.sdk.exportWallet({ walletId, targetPublicKey: kp.publicKeyUncompressed });
    const mnemonic = await decryptExportBundle({
      exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: ts.orgId, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: signer,
    });
    expect(mnemonic).toBe(MNEMONIC);
    expect((await ts.sdk.getWallet({ walletId })).wallet.exported).toBe(true);
    // Without the override the client refuses the bundle (it is not Turnkey's signer).
    await expect(decryptExportBundle({ exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: ts.orgId, returnMnemonic: true })).rejects.toThrow();

    const kp2 = generateP256KeyPair();
    const exa = await ts.sdk.exportWalletAccount({ address: ACCOUNTS[2]!.address, targetPublicKey: kp2.publicKey });
    const key = await decryptExportBundle({
      exportBundle: exa.exportBundle, embeddedKey: kp2.privateKey, organizationId: ts.orgId, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: signer,
    });
    expect(`0x${key}`).toBe(ACCOUNTS[2]!.privateKey);
  });
});

describe('whose import: userId', () => {
  // Two non-root users a policy lets import (any wallet or key, without approvals): the policy can
  // say what they may do, not for whom, since an import's userId is no policy keyword.
  let alice: Member;
  let bob: Member;
  let removePolicy: () => Promise<void>;
  beforeAll(async () => {
    alice = await createMember(ts, uniqueName('alice'));
    bob = await createMember(ts, uniqueName('bob'));
    const p: any = await ts.sdk.createPolicy({ policyName: uniqueName('imports'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${alice.id}' || user.id == '${bob.id}')`, condition: "activity.action == 'IMPORT'" } as any);
    removePolicy = async () => { await ts.sdk.deletePolicy({ policyId: p.policyId }); };
  });
  afterAll(async () => { await removePolicy?.(); });

  const submit = (m: Member, path: string, type: string, parameters: object) =>
    ts.raw(`/public/v1/submit/${path}`, submitBody(type, ts.orgId, parameters), { key: m.key });

  it('a non-root user may not import with, nor start an import for, another user\'s userId: 403, nothing stored, that user\'s import target left for it', async () => {
    const init = await submit(bob, 'init_import_wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: bob.id });
    expect(init.status, init.text).toBe(200);
    const importBundle = init.json.activity.result.initImportWalletResult.importBundle;
    // alice reads bob's import bundle (an activity of the organization) and encrypts a mnemonic of her own to it
    const aliceMnemonic = 'test test test test test test test test test test test junk';
    const hers = await encryptWalletToBundle({ mnemonic: aliceMnemonic, importBundle, userId: bob.id, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    const before = await newestActivityId(ts);
    const asBob = await submit(alice, 'import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: bob.id, walletName: uniqueName('as-bob'), encryptedBundle: hers, accounts: [] });
    checkError(asBob, 403, 'import_wallet as another user');
    const forBob = await submit(alice, 'init_import_wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: bob.id });
    checkError(forBob, 403, 'init_import_wallet for another user');
    const keyForBob = await submit(alice, 'init_import_private_key', 'ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY', { userId: bob.id });
    checkError(keyForBob, 403, 'init_import_private_key for another user');
    expect(await newestActivityId(ts)).toBe(before);
    // bob's target is still his: his own import goes through
    const his = await encryptWalletToBundle({ mnemonic: MNEMONIC, importBundle, userId: bob.id, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    const own = await submit(bob, 'import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: bob.id, walletName: uniqueName('bobs'), encryptedBundle: his, accounts: [] });
    expect(own.status, own.text).toBe(200);
    expect(own.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  });

  it('import_private_key as another user is refused the same way', async () => {
    const init = await submit(bob, 'init_import_private_key', 'ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY', { userId: bob.id });
    expect(init.status, init.text).toBe(200);
    const encryptedBundle = await encryptPrivateKeyToBundle({ privateKey: ACCOUNTS[1]!.privateKey, keyFormat: 'HEXADECIMAL',
      importBundle: init.json.activity.result.initImportPrivateKeyResult.importBundle, userId: bob.id, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    const before = await newestActivityId(ts);
    const asBob = await submit(alice, 'import_private_key', 'ACTIVITY_TYPE_IMPORT_PRIVATE_KEY',
      { userId: bob.id, privateKeyName: uniqueName('as-bob'), encryptedBundle, curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] });
    checkError(asBob, 403, 'import_private_key as another user');
    expect(await newestActivityId(ts)).toBe(before);
  });

  // guards: a user imports for itself under the policy; a root user may act for any user of the organization
  it('a non-root user imports for itself; a root user may start and finish an import for another user', async () => {
    const own = await submit(alice, 'init_import_wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: alice.id });
    expect(own.status, own.text).toBe(200);
    const init = await ts.sdk.initImportWallet({ userId: alice.id });
    const encryptedBundle = await encryptWalletToBundle({ mnemonic: MNEMONIC, importBundle: init.importBundle, userId: alice.id, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    const r = await ts.sdk.importWallet({ userId: alice.id, walletName: uniqueName('for-alice'), encryptedBundle, accounts: [] });
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  });
});

describe('import_private_key / export_private_key', () => {
  it('encryptPrivateKeyToBundle → import → the known address; export → the same key', async () => {
    const known = ACCOUNTS[0]!;
    const init = await ts.sdk.initImportPrivateKey({ userId: ts.rootUserId });
    const encryptedBundle = await encryptPrivateKeyToBundle({
      privateKey: known.privateKey, keyFormat: 'HEXADECIMAL', importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId,
      dangerouslyOverrideSignerPublicKey: signer,
    });
    const r = await ts.sdk.importPrivateKey({
      userId: ts.rootUserId, privateKeyName: 'known', encryptedBundle, curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'],
    });
    expect(r.addresses).toEqual([{ format: 'ADDRESS_FORMAT_ETHEREUM', address: known.address }]);
    const got = await ts.sdk.getPrivateKey({ privateKeyId: r.privateKeyId });
    expect(got.privateKey.imported).toBe(true);
    expect(publicKeyToAddress(`0x${bytesToHex(secp256k1.Point.fromHex(got.privateKey.publicKey).toBytes(false))}`)).toBe(known.address);

    const kp = generateP256KeyPair();
    const ex = await ts.sdk.exportPrivateKey({ privateKeyId: r.privateKeyId, targetPublicKey: kp.publicKeyUncompressed });
    const key = await decryptExportBundle({
      exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: ts.orgId, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: signer,
    });
    expect(`0x${key}`).toBe(known.privateKey);
    expect((await ts.sdk.getPrivateKey({ privateKeyId: r.privateKeyId })).privateKey.exported).toBe(true);
  });

  it('an Ed25519 key round-trips (Solana key format)', async () => {
    const seed = hexToBytes('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60'); // RFC 8032 test 1
    const init = await ts.sdk.initImportPrivateKey({ userId: ts.rootUserId });
    const encryptedBundle = await encryptPrivateKeyToBundle({
      privateKey: bytesToHex(seed), keyFormat: 'HEXADECIMAL', importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId,
      dangerouslyOverrideSignerPublicKey: signer,
    });
    const r = await ts.sdk.importPrivateKey({ userId: ts.rootUserId, privateKeyName: 'ed', encryptedBundle, curve: 'CURVE_ED25519', addressFormats: ['ADDRESS_FORMAT_SOLANA'] });
    const got = await ts.sdk.getPrivateKey({ privateKeyId: r.privateKeyId });
    expect(got.privateKey.publicKey).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    const kp = generateP256KeyPair();
    const ex = await ts.sdk.exportPrivateKey({ privateKeyId: r.privateKeyId, targetPublicKey: kp.publicKeyUncompressed });
    const key = await decryptExportBundle({
      exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: ts.orgId, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: signer,
    });
    expect(key).toBe(bytesToHex(seed));
  });
});

describe('at rest', () => {
  it.runIf(onSqlite)('the SQLite file, its WAL and SHM hold no private key bytes (raw or hex) and no mnemonic text', async () => {
    // Material the server has seen: the imported mnemonic and keys, and keys it generated (exported here to learn them).
    await importKnownWallet('scan');
    const init = await ts.sdk.initImportPrivateKey({ userId: ts.rootUserId });
    const imported = ACCOUNTS[1]!.privateKey.slice(2);
    await ts.sdk.importPrivateKey({
      userId: ts.rootUserId, privateKeyName: 'scan-key', curve: 'CURVE_SECP256K1', addressFormats: [],
      encryptedBundle: await encryptPrivateKeyToBundle({ privateKey: imported, keyFormat: 'HEXADECIMAL', importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer }),
    });
    const created = await ts.sdk.createPrivateKeys({ privateKeys: [
      { privateKeyName: 'gen-k1', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] },
      { privateKeyName: 'gen-ed', curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: [] },
    ] });
    const wallet = await ts.sdk.createWallet({ walletName: 'gen-wallet', accounts: [ethAccount("m/44'/60'/0'/0/0")] });
    const secrets: string[] = [imported, ...ACCOUNTS.map((a) => a.privateKey.slice(2))];
    const texts: string[] = [MNEMONIC];
    for (const k of created.privateKeys) {
      const kp = generateP256KeyPair();
      const ex = await ts.sdk.exportPrivateKey({ privateKeyId: k.privateKeyId!, targetPublicKey: kp.publicKeyUncompressed });
      secrets.push(await decryptExportBundle({ exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: ts.orgId, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: signer }));
    }
    const kp = generateP256KeyPair();
    const exw = await ts.sdk.exportWallet({ walletId: wallet.walletId, targetPublicKey: kp.publicKeyUncompressed });
    const genMnemonic = await decryptExportBundle({ exportBundle: exw.exportBundle, embeddedKey: kp.privateKey, organizationId: ts.orgId, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: signer });
    texts.push(genMnemonic);
    expect(secrets.every((s) => /^[0-9a-f]{64}$/.test(s))).toBe(true);

    const files = readdirSync(ts.dataDir).filter((f) => f.startsWith('kmas.sqlite'));
    expect(files).toContain('kmas.sqlite');
    expect(files).toContain('kmas.sqlite-wal');
    let scanned = 0;
    for (const f of files) {
      const bytes = readFileSync(join(ts.dataDir, f));
      scanned += bytes.length;
      for (const s of secrets) {
        expect(bytes.includes(Buffer.from(s, 'hex')), `${f} holds raw key bytes`).toBe(false);
        expect(bytes.includes(Buffer.from(s, 'utf8')), `${f} holds a hex key`).toBe(false);
        expect(bytes.includes(Buffer.from(s.toUpperCase(), 'utf8')), `${f} holds an upper-case hex key`).toBe(false);
      }
      for (const t of texts) {
        expect(bytes.includes(Buffer.from(t, 'utf8')), `${f} holds a mnemonic`).toBe(false);
        // not even a run of its first words
        expect(bytes.includes(Buffer.from(t.split(' ').slice(0, 4).join(' '), 'utf8')), `${f} holds mnemonic words`).toBe(false);
      }
    }
    expect(scanned).toBeGreaterThan(0);
    // The scan can fail: the same search finds material that IS in the files (the public key of an imported account).
    const pub = (await ts.sdk.getWalletAccounts({ walletId: wallet.walletId })).accounts[0]!.publicKey!;
    const all = Buffer.concat(files.map((f) => readFileSync(join(ts.dataDir, f))));
    expect(all.includes(Buffer.from(pub, 'utf8'))).toBe(true);
  });
});
