// delete_wallet_accounts through @turnkey/sdk-server: the export rule (an account counts as
// exported once it or its wallet was), what remains listed and signable, and refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateP256KeyPair } from '@turnkey/crypto';
import { startTestServer, submitBody, type TestServer } from '../server/harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const eth = (i: number) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: `m/44'/60'/0'/0/${i}`, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });
const accountsOf = async (walletId: string) => ((await ts.sdk.getWalletAccounts({ walletId, paginationOptions: { limit: '100' } } as any)) as any).accounts;
const del = (params: object) => ts.raw('/public/v1/submit/delete_wallet_accounts', submitBody('ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS', ts.orgId, params));

describe('delete_wallet_accounts', () => {
  it('needs an export or deleteWithoutExport; deleted accounts are gone from lists and from signing', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: 'accounts', accounts: [eth(0), eth(1), eth(2)] } as any);
    const accounts = await accountsOf(w.walletId);
    const byAddress = (a: string) => accounts.find((x: any) => x.address === a);
    const [a0, a1, a2] = w.addresses.map(byAddress);

    const refused = await del({ walletAccountIds: [a0.walletAccountId] });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.message).toMatch(/never been exported/);

    const forced: any = await ts.sdk.deleteWalletAccounts({ walletAccountIds: [a0.walletAccountId], deleteWithoutExport: true } as any);
    expect(forced.walletAccountIds).toEqual([a0.walletAccountId]);

    // Exported on its own: no flag needed.
    await ts.sdk.exportWalletAccount({ address: a1.address, targetPublicKey: generateP256KeyPair().publicKeyUncompressed } as any);
    await ts.sdk.deleteWalletAccounts({ walletAccountIds: [a1.walletAccountId] } as any);
    expect((await accountsOf(w.walletId)).map((x: any) => x.address)).toEqual([a2.address]);

    const sign = await ts.raw('/public/v1/submit/sign_raw_payload', submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ts.orgId,
      { signWith: a0.address, payload: '00'.repeat(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }));
    expect(sign.status, sign.text).toBe(404);

    // The wallet's export covers the remaining account.
    await ts.sdk.exportWallet({ walletId: w.walletId, targetPublicKey: generateP256KeyPair().publicKeyUncompressed } as any);
    await ts.sdk.deleteWalletAccounts({ walletAccountIds: [a2.walletAccountId] } as any);
    expect(await accountsOf(w.walletId)).toEqual([]);
  });

  it('an unknown account id is a 404 and deletes nothing', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: 'keep', accounts: [eth(0)] } as any);
    const [a] = await accountsOf(w.walletId);
    const r = await del({ walletAccountIds: [a.walletAccountId, '00000000-0000-4000-8000-000000000000'], deleteWithoutExport: true });
    expect(r.status, r.text).toBe(404);
    expect((await accountsOf(w.walletId)).length).toBe(1);
  });
});
