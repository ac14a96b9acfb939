// More of the key / wallet API: Ed25519 and P-256 wallet accounts, pagination, persist:false,
// private key tags, @turnkey/http, idempotent resubmission, EIP-7702 authorizations, activity records.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { base58 } from '@scure/base';
import { keccak256, concat, toRlp, numberToHex } from 'viem';
import { startTestServer, submitBody, type TestServer } from '../server/harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const acct = (curve: string, path: string, addressFormat: string) => ({ curve, pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat }) as any;

describe('wallet accounts on every curve', () => {
  it('Solana (Ed25519, SLIP-10) and P-256 accounts sign; signatures verify with noble against the account public key', async () => {
    const w = await ts.sdk.createWallet({ walletName: 'multi', accounts: [
      acct('CURVE_ED25519', "m/44'/501'/0'/0'", 'ADDRESS_FORMAT_SOLANA'),
      acct('CURVE_P256', "m/44'/1'/0'/0/0", 'ADDRESS_FORMAT_COMPRESSED'),
      acct('CURVE_SECP256K1', "m/44'/0'/0'/0/0", 'ADDRESS_FORMAT_BITCOIN_MAINNET_P2PKH'),
    ] });
    const [sol, p, btc] = w.addresses as [string, string, string];
    const solAcct = (await ts.sdk.getWalletAccount({ walletId: w.walletId, address: sol })).account;
    expect(base58.encode(hexToBytes(solAcct.publicKey!))).toBe(sol);
    expect(solAcct.caip2Prefix).toBe('solana');
    const msg = new TextEncoder().encode('a solana message');
    const s1 = await ts.sdk.signRawPayload({ signWith: sol, payload: bytesToHex(msg), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' });
    expect(ed25519.verify(hexToBytes(s1.r + s1.s), msg, hexToBytes(solAcct.publicKey!))).toBe(true);
    expect(s1.v).toBe('00');

    const pAcct = (await ts.sdk.getWalletAccount({ walletId: w.walletId, address: p })).account;
    expect(pAcct.publicKey).toBe(p);
    const s2 = await ts.sdk.signRawPayload({ signWith: p, payload: 'p256 text', encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction: 'HASH_FUNCTION_SHA256' });
    const d2 = sha256(new TextEncoder().encode('p256 text'));
    expect(p256.verify(hexToBytes(s2.r + s2.s), d2, hexToBytes(p), { prehash: false })).toBe(true);
    const rec = p256.Signature.fromBytes(hexToBytes(s2.r + s2.s)).addRecoveryBit(Number(s2.v)).recoverPublicKey(d2);
    expect(bytesToHex(rec.toBytes(true))).toBe(p);

    expect(btc).toMatch(/^1[1-9A-HJ-NP-Za-km-z]{25,34}$/);
    const btcAcct = (await ts.sdk.getWalletAccount({ walletId: w.walletId, path: "m/44'/0'/0'/0/0" })).account;
    expect(btcAcct.address).toBe(btc);
    const s3 = await ts.sdk.signRawPayload({ signWith: btc, payload: 'deadbeef', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_SHA256' });
    expect(secp256k1.verify(hexToBytes(s3.r + s3.s), sha256(hexToBytes('deadbeef')), hexToBytes(btcAcct.publicKey!), { prehash: false })).toBe(true);
  });

  it('EIP-7702 authorization payloads are signed over keccak256(0x05 ‖ rlp([chainId, address, nonce]))', async () => {
    const w = await ts.sdk.createWallet({ walletName: '7702', accounts: [acct('CURVE_SECP256K1', "m/44'/60'/0'/0/0", 'ADDRESS_FORMAT_ETHEREUM')] });
    const address = w.addresses[0]!;
    const pub = (await ts.sdk.getWalletAccount({ walletId: w.walletId, address })).account.publicKey!;
    const auth = { address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', chainId: 1, nonce: 7 };
    const sig = await ts.sdk.signRawPayload({ signWith: address, payload: JSON.stringify(auth), encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const digest = keccak256(concat(['0x05', toRlp([numberToHex(auth.chainId), auth.address as `0x${string}`, numberToHex(auth.nonce)])]));
    expect(secp256k1.verify(hexToBytes(sig.r + sig.s), hexToBytes(digest.slice(2)), hexToBytes(pub), { prehash: false })).toBe(true);
  });
});

describe('list_wallet_accounts pagination, persist:false, includeWalletDetails', () => {
  it('pages newest first through every account, before/after cursors, walletDetails', async () => {
    const paths = [0, 1, 2, 3, 4].map((i) => acct('CURVE_SECP256K1', `m/44'/60'/0'/0/${i}`, 'ADDRESS_FORMAT_ETHEREUM'));
    // persist:false first: derived, returned, not stored
    const w = await ts.sdk.createWallet({ walletName: 'paged', accounts: [paths[0]] });
    const preview = await ts.sdk.createWalletAccounts({ walletId: w.walletId, accounts: paths.slice(1), persist: false });
    expect((await ts.sdk.getWalletAccounts({ walletId: w.walletId })).accounts).toHaveLength(1);
    const stored = await ts.sdk.createWalletAccounts({ walletId: w.walletId, accounts: paths.slice(1) });
    expect(stored.addresses).toEqual(preview.addresses);
    const all = [w.addresses[0]!, ...stored.addresses];

    const seen: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 5; i++) {
      const page = await ts.sdk.getWalletAccounts({ walletId: w.walletId, paginationOptions: after ? { limit: '2', after } : { limit: '2' } });
      seen.push(...page.accounts.map((a) => a.address));
      if (page.accounts.length < 2) break;
      after = page.accounts[page.accounts.length - 1]!.walletAccountId;
    }
    expect(seen).toEqual([...all].reverse());
    const first = await ts.sdk.getWalletAccounts({ walletId: w.walletId, paginationOptions: { limit: '2' } });
    const second = await ts.sdk.getWalletAccounts({ walletId: w.walletId, paginationOptions: { limit: '2', after: first.accounts[1]!.walletAccountId } });
    const back = await ts.sdk.getWalletAccounts({ walletId: w.walletId, paginationOptions: { limit: '2', before: second.accounts[0]!.walletAccountId } });
    expect(back.accounts.map((a) => a.walletAccountId)).toEqual(first.accounts.map((a) => a.walletAccountId));
    const detailed = await ts.sdk.getWalletAccounts({ walletId: w.walletId, includeWalletDetails: true });
    expect(detailed.accounts[0]!.walletDetails).toMatchObject({ walletId: w.walletId, walletName: 'paged' });
    expect((await ts.sdk.getWalletAccounts({ walletId: w.walletId })).accounts[0]!.walletDetails).toBeUndefined();
    // without walletId: accounts of every wallet of the organization
    const org = await ts.sdk.getWalletAccounts({ paginationOptions: { limit: '100' } });
    for (const a of all) expect(org.accounts.map((x) => x.address)).toContain(a);
  });
});

describe('private key tags', () => {
  it('tags given at creation appear on the key; tag updates can name keys; deleting a key drops its membership', async () => {
    const tag = await ts.sdk.createPrivateKeyTag({ privateKeyTagName: 'hot', privateKeyIds: [] });
    const k = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'tagged', curve: 'CURVE_SECP256K1', privateKeyTags: [tag.privateKeyTagId], addressFormats: [] }] });
    const id = k.privateKeys[0]!.privateKeyId!;
    expect((await ts.sdk.getPrivateKey({ privateKeyId: id })).privateKey.privateKeyTags).toEqual([tag.privateKeyTagId]);
    const tag2 = await ts.sdk.createPrivateKeyTag({ privateKeyTagName: 'cold', privateKeyIds: [id] });
    expect((await ts.sdk.getPrivateKey({ privateKeyId: id })).privateKey.privateKeyTags.sort()).toEqual([tag.privateKeyTagId, tag2.privateKeyTagId].sort());
    await ts.sdk.deletePrivateKeys({ privateKeyIds: [id], deleteWithoutExport: true });
    const again = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'other', curve: 'CURVE_P256', privateKeyTags: [tag.privateKeyTagId], addressFormats: [] }] });
    expect((await ts.sdk.getPrivateKey({ privateKeyId: again.privateKeys[0]!.privateKeyId! })).privateKey.privateKeyTags).toEqual([tag.privateKeyTagId]);
    const keys = await ts.sdk.getPrivateKeys({});
    expect(keys.privateKeys.map((x) => x.privateKeyId)).not.toContain(id);
  });
});

describe('activities', () => {
  it('@turnkey/http signs; an identical resubmission returns the same activity; get/list_activities show it', async () => {
    const k = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'http', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    const id = k.privateKeys[0]!.privateKeyId!;
    const parameters = { signWith: id, payload: 'hello', encoding: 'PAYLOAD_ENCODING_TEXT_UTF8' as const, hashFunction: 'HASH_FUNCTION_KECCAK256' as const };
    const body = { type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' as const, timestampMs: String(Date.now()), organizationId: ts.orgId, parameters };
    const r1 = await ts.http.signRawPayload(body);
    expect(r1.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const sig = r1.activity.result.signRawPayloadResult!;
    const pub = (await ts.sdk.getPrivateKey({ privateKeyId: id })).privateKey.publicKey;
    expect(secp256k1.verify(hexToBytes(sig.r + sig.s), keccak_256(new TextEncoder().encode('hello')), hexToBytes(pub), { prehash: false })).toBe(true);
    const r2 = await ts.http.signRawPayload(body);
    expect(r2.activity.id).toBe(r1.activity.id);
    const got = await ts.sdk.getActivity({ activityId: r1.activity.id });
    expect(got.activity.result.signRawPayloadResult).toEqual(sig);
    expect(got.activity.intent.signRawPayloadIntentV2).toEqual(parameters);
    const list = await ts.sdk.getActivities({ filterByType: ['ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'] });
    expect(list.activities.filter((a) => a.id === r1.activity.id)).toHaveLength(1);
  });

  it('every key operation replies with the spec form too (result.activity.intent / result)', async () => {
    const r = await ts.raw('/public/v1/submit/create_wallet', submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: 'spec', accounts: [], mnemonicLength: 15 }));
    expect(r.status).toBe(200);
    const a = r.json.activity;
    expect(a.intent.createWalletIntent).toEqual({ walletName: 'spec', accounts: [], mnemonicLength: 15 });
    expect(a.result.createWalletResult.walletId).toBeTruthy();
    expect(a.result.activity.result.createWalletResult).toEqual(a.result.createWalletResult);
    const q = await ts.raw('/public/v1/query/get_wallet', JSON.stringify({ organizationId: ts.orgId, walletId: a.result.createWalletResult.walletId }));
    expect(q.json.activity.result.wallet).toEqual(q.json.wallet);
  });
});
