// Wallet accounts named twice: the same account twice in one request (import_wallet as
// create_wallet), and one path in its spellings of the hardened mark (', h, H), which name the
// same indices and so the same key; paths are stored and returned canonical (hardened ').
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { encryptWalletToBundle } from '@turnkey/crypto';
import { freshDataDir, startTestServer, submitBody, type TestServer } from '../server/harness.js';
import { testStorage } from '../server/teststorage.js';
import { openDb } from '../../src/server.js';
import { loadConfig } from '../../src/config.js';

let ts: TestServer; let signer: string;
beforeAll(async () => { ts = await startTestServer(); signer = ts.server.bootstrap.signerPublicKey!; });
afterAll(async () => { await ts?.stop(); });

const MN = 'test test test test test test test test test test test junk';
const eth = (path: string) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });

async function importWallet(mnemonic: string, accounts: object[]) {
  const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
  const encryptedBundle = await encryptWalletToBundle({ mnemonic, importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
  return ts.raw('/public/v1/submit/import_wallet', submitBody('ACTIVITY_TYPE_IMPORT_WALLET', ts.orgId,
    { userId: ts.rootUserId, walletName: `w-${randomUUID()}`, encryptedBundle, accounts }));
}
const accountsOf = async (walletId: string) => (await ts.sdk.getWalletAccounts({ walletId } as any)).accounts as any[];
const getAccount = (walletId: string, params: object) => ts.raw('/public/v1/query/get_wallet_account', JSON.stringify({ organizationId: ts.orgId, walletId, ...params }));

describe('import_wallet', () => {
  // Guards: import_wallet refuses a repeated account (curve, path, address format) with 409, as create_wallet does, and stores nothing.
  it('refuses the same account twice in one request, as create_wallet does', async () => {
    const cw = await ts.raw('/public/v1/submit/create_wallet', submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId,
      { walletName: 'dup', accounts: [eth("m/44'/60'/0'/0/0"), eth("m/44'/60'/0'/0/0")] }));
    expect(cw.status, cw.text).toBe(409);
    const before = (await ts.sdk.getWallets({} as any)).wallets.length;
    const r = await importWallet(MN, [eth("m/44'/60'/0'/0/0"), eth("m/44'/60'/0'/0/0")]);
    if (r.status === 200) {
      const accounts = await accountsOf(r.json.activity.result.importWalletResult.walletId);
      expect(accounts.length, `import_wallet stored ${accounts.length} accounts with the same path and address`).toBe(1);
    }
    expect(r.status, r.text).toBe(409);
    expect(r.json).toMatchObject({ code: 6, message: expect.stringContaining('accounts[1]') });
    expect((await ts.sdk.getWallets({} as any)).wallets.length, 'no wallet stored').toBe(before);
  });

  // Guards: the duplicate check compares indices, not path text (h next to ' in one request is a repeat).
  it("refuses one path spelled with ' and with h in the same request", async () => {
    const r = await importWallet(MN, [eth("m/44'/60'/0'/0/0"), eth('m/44h/60h/0h/0/0')]);
    expect(r.status, r.text).toBe(409);
  });
});

describe('create_wallet_accounts', () => {
  // Guards: an account the wallet has, named with h / H instead of ', is the same account (409, not a second row with the same key).
  it("refuses an account the wallet already has when the path is spelled with h / H instead of '", async () => {
    const w: any = await ts.sdk.createWallet({ walletName: 'spelling', accounts: [eth("m/44'/60'/0'/0/0")] } as any);
    for (const path of ['m/44h/60h/0h/0/0', "m/44H/60'/0'/0/0"]) {
      const r = await ts.raw('/public/v1/submit/create_wallet_accounts', submitBody('ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', ts.orgId,
        { walletId: w.walletId, accounts: [eth(path)] }));
      if (r.status === 200) {
        const accounts = await accountsOf(w.walletId);
        expect(accounts.map((a: any) => `${a.path} ${a.address}`), 'two accounts of one wallet with the same key and address').toHaveLength(1);
      }
      expect(r.status, r.text).toBe(409);
    }
  });

  // Guards: a path sent with h is stored and read back canonical, and get_wallet_account finds it by either spelling.
  it('stores the canonical path; get_wallet_account by path finds it in any spelling', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: 'canonical', accounts: [eth('m/44h/60H/0h/0/7')] } as any);
    expect((await accountsOf(w.walletId)).map((a) => a.path)).toEqual(["m/44'/60'/0'/0/7"]);
    for (const path of ["m/44'/60'/0'/0/7", 'm/44h/60h/0h/0/7', "m/44H/60'/0h/0/7"]) {
      const r = await getAccount(w.walletId, { path });
      expect(r.status, `${path}: ${r.text}`).toBe(200);
      expect(r.json.account).toMatchObject({ path: "m/44'/60'/0'/0/7", address: w.addresses[0] });
    }
    expect((await getAccount(w.walletId, { path: "m/44'/60'/0'/0/8" })).status).toBe(404);
    expect((await getAccount(w.walletId, { path: 'not a path' })).status).toBe(404);
  });
});

describe('accounts stored before paths were canonical', () => {
  // Guards: a row stored with h (an older kmas) reads back canonical, is found by path and still counts as a duplicate.
  it('are read canonical, found by path in any spelling and refused again', async () => {
    const dataDir = freshDataDir();
    let s = await startTestServer({ dataDir });
    try {
      const w: any = await s.sdk.createWallet({ walletName: 'old', accounts: [eth("m/44'/60'/0'/0/1")] } as any);
      await s.stop(true);
      const db = await openDb(loadConfig({ overrides: { dataDir, ...await testStorage(dataDir) } }));
      try {
        await db.write((tx) => tx.keys.accounts.insert({
          id: randomUUID(), organizationId: s.orgId, walletId: w.walletId, curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32',
          path: 'm/44h/60H/0h/0/0', addressFormat: 'ADDRESS_FORMAT_ETHEREUM', address: '0x00000000000000000000000000000000000000a1',
          publicKey: '02' + '11'.repeat(32), sealed: new Uint8Array(64), name: null, createdMs: Date.now(), updatedMs: Date.now(),
        }));
      } finally {
        await db.close();
      }
      s = await startTestServer({ dataDir });
      const list = (await s.sdk.getWalletAccounts({ walletId: w.walletId } as any)).accounts as any[];
      expect(list.map((a) => a.path).sort()).toEqual(["m/44'/60'/0'/0/0", "m/44'/60'/0'/0/1"]);
      for (const path of ["m/44'/60'/0'/0/0", 'm/44h/60h/0h/0/0']) {
        const r = await s.raw('/public/v1/query/get_wallet_account', JSON.stringify({ organizationId: s.orgId, walletId: w.walletId, path }));
        expect(r.status, `${path}: ${r.text}`).toBe(200);
        expect(r.json.account).toMatchObject({ path: "m/44'/60'/0'/0/0", address: '0x00000000000000000000000000000000000000a1' });
      }
      const again = await s.raw('/public/v1/submit/create_wallet_accounts', submitBody('ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', s.orgId,
        { walletId: w.walletId, accounts: [eth("m/44'/60'/0'/0/0")] }));
      expect(again.status, again.text).toBe(409);
    } finally {
      await s.stop();
    }
  });
});
