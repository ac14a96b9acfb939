// Addresses given in the letter case their format allows name the same account: bech32 and
// bech32m in all upper case (BIP-173/350: valid, e.g. from QR codes; mixed case is invalid), and
// hex (0x-prefixed Sui / Aptos addresses, hex public keys) in any case, as Ethereum addresses
// already were. Formats whose case is part of the address (base58) stay exact.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, submitBody, newestActivityId, type TestServer } from '../server/harness.js';
import { checkError, SUBMIT } from '../server/checks.js';

let ts: TestServer;
let walletId = '';
const accounts: Record<string, string> = {};

const ACCOUNTS = [
  ['P2WPKH', 'CURVE_SECP256K1', "m/84'/0'/0'/0/0", 'ADDRESS_FORMAT_BITCOIN_MAINNET_P2WPKH'],
  ['P2TR', 'CURVE_SECP256K1', "m/86'/0'/0'/0/0", 'ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR'],
  ['COSMOS', 'CURVE_SECP256K1', "m/44'/118'/0'/0/0", 'ADDRESS_FORMAT_COSMOS'],
  ['SUI', 'CURVE_ED25519', "m/44'/784'/0'/0'/0'", 'ADDRESS_FORMAT_SUI'],
  ['APTOS', 'CURVE_ED25519', "m/44'/637'/0'/0'/0'", 'ADDRESS_FORMAT_APTOS'],
  ['COMPRESSED', 'CURVE_SECP256K1', "m/44'/0'/0'/0/1", 'ADDRESS_FORMAT_COMPRESSED'],
  ['SOLANA', 'CURVE_ED25519', "m/44'/501'/0'/0'", 'ADDRESS_FORMAT_SOLANA'],
] as const;

beforeAll(async () => {
  ts = await startTestServer();
  const w: any = await ts.sdk.createWallet({ walletName: 'cases', accounts: ACCOUNTS.map(([, curve, path, addressFormat]) => ({ curve, pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat })) } as any);
  walletId = w.walletId;
  ACCOUNTS.forEach(([name], i) => { accounts[name] = w.addresses[i]; });
});
afterAll(async () => { await ts?.stop(); });

const curveOf = (name: string) => ACCOUNTS.find(([n]) => n === name)![1];
const sign = (signWith: string, name: string) => ts.raw(SUBMIT('sign_raw_payload'), submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ts.orgId,
  { signWith, payload: '11'.repeat(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: curveOf(name) === 'CURVE_ED25519' ? 'HASH_FUNCTION_NOT_APPLICABLE' : 'HASH_FUNCTION_NO_OP' }));
const hexUpper = (a: string) => (a.startsWith('0x') ? `0x${a.slice(2).toUpperCase()}` : a.toUpperCase());

describe('signWith and get_wallet_account by address, in another letter case', () => {
  for (const [name, form] of [['P2WPKH', 'upper'], ['P2TR', 'upper'], ['COSMOS', 'upper'], ['SUI', 'hex'], ['APTOS', 'hex'], ['COMPRESSED', 'hex']] as const) {
    it(`${name}: the address in ${form === 'upper' ? 'upper case (bech32 allows it)' : 'upper-case hex'} signs with the same account`, async () => {
      const address = accounts[name]!;
      const spelled = form === 'upper' ? address.toUpperCase() : hexUpper(address);
      expect(spelled).not.toBe(address);
      const r = await sign(spelled, name);
      expect(r.status, r.text).toBe(200);
      expect(r.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      const found: any = await ts.raw('/public/v1/query/get_wallet_account', JSON.stringify({ organizationId: ts.orgId, walletId, address: spelled }));
      expect(found.status, found.text).toBe(200);
      expect(found.json.account.address).toBe(address);
    });
  }

  it('a bech32 address in mixed case (invalid, BIP-173) and a base58 address in another case name no account: 404, nothing stored', async () => {
    const before = await newestActivityId(ts);
    const p2wpkh = accounts.P2WPKH!;
    const mixed = p2wpkh.slice(0, 6).toUpperCase() + p2wpkh.slice(6);
    const sol = accounts.SOLANA!;
    const swapped = [...sol].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    for (const [spelled, name] of [[mixed, 'P2WPKH'], [swapped, 'SOLANA']]) checkError(await sign(spelled!, name!), 404, spelled);
    expect(await newestActivityId(ts)).toBe(before);
    // and the exact spellings still sign
    for (const [a, name] of [[p2wpkh, 'P2WPKH'], [sol, 'SOLANA']]) expect((await sign(a!, name!)).status).toBe(200);
  });
});
