// Key material is made before the write transaction (SubmitOperation.derive): create_wallet,
// create_wallet_accounts, create_sub_organization with a wallet and create_private_keys derive
// their keys while no transaction is open, then the transaction only stores them. Checked by
// counting open write callbacks of the server's own SQLite unit of work (one request at a time,
// so nothing else runs meanwhile) around the Vault's key-making calls.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { startTestServer, submitBody, uniqueName, type TestServer } from '../server/harness.js';
import { probeKeyMaking } from '../server/writeprobe.js';

let ts: TestServer;
const calls = probeKeyMaking(['newWallet', 'deriveAccounts', 'newPrivateKey']);

beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => {
  await ts?.stop();
});

const accounts = (n: number) => Array.from({ length: n }, (_, i) => ({
  curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: `m/44'/60'/0'/0/${i}`, addressFormat: 'ADDRESS_FORMAT_COMPRESSED',
}));

describe('keys are derived before the write transaction', () => {
  it('create_wallet, create_wallet_accounts, create_private_keys and create_sub_organization make their keys with no write open', async () => {
    calls.length = 0;
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('w'), accounts: accounts(2) } as any);
    expect(w.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const more: any = await ts.sdk.createWalletAccounts({ walletId: w.walletId, accounts: accounts(3).slice(2) } as any);
    expect(more.addresses).toHaveLength(1);
    const pk: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('k'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
    expect(pk.privateKeys).toHaveLength(1);
    const sub: any = await ts.sdk.createSubOrganization({
      subOrganizationName: uniqueName('sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'root', authenticators: [], apiKeys: [], oauthProviders: [] }],
      wallet: { walletName: 'w', accounts: accounts(1) },
    } as any);
    expect(sub.activity.status, JSON.stringify(sub.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(sub.wallet.addresses).toHaveLength(1);

    expect(calls.map((c) => c.what)).toEqual(['newWallet', 'deriveAccounts', 'deriveAccounts', 'newPrivateKey', 'newWallet', 'deriveAccounts']);
    expect(calls.filter((c) => c.insideWrite), 'key material made inside a write transaction').toEqual([]);
    // what the transaction stored is what was derived: the ids and addresses the replies name
    const stored: any = await ts.sdk.getWalletAccounts({ walletId: w.walletId } as any);
    expect(stored.accounts.map((a: any) => a.address).sort()).toEqual([...w.addresses, ...more.addresses].sort());
    const key: any = await ts.sdk.getPrivateKey({ privateKeyId: pk.privateKeys[0].privateKeyId } as any);
    expect(key.privateKey.addresses).toEqual(pk.privateKeys[0].addresses);
  });

  it('an identical body sent again gets its stored activity and derives nothing', async () => {
    const body = submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: uniqueName('again'), accounts: accounts(1) });
    const first = await ts.raw('/public/v1/submit/create_wallet', body);
    expect(first.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    calls.length = 0;
    const again = await ts.raw('/public/v1/submit/create_wallet', body);
    expect(again.json.activity.id).toBe(first.json.activity.id);
    expect(calls).toEqual([]);
  });

  it('the derived accounts are the BIP32 children of the wallet\'s mnemonic (checked with @scure/bip32 after an export)', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('w'), accounts: accounts(2) } as any);
    // export the mnemonic to a key we hold, then derive independently
    const { generateP256KeyPair, decryptExportBundle } = await import('@turnkey/crypto');
    const target = generateP256KeyPair();
    const exported: any = await ts.sdk.exportWallet({ walletId: w.walletId, targetPublicKey: target.publicKeyUncompressed } as any);
    const mnemonic = await decryptExportBundle({ exportBundle: exported.exportBundle, embeddedKey: target.privateKey, organizationId: ts.orgId, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey! });
    const root = HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic));
    const expected = [0, 1].map((i) => bytesToHex(secp256k1.getPublicKey(root.derive(`m/44'/60'/0'/0/${i}`).privateKey!, true)));
    expect(w.addresses).toEqual(expected);
  });
});
