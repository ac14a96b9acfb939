// Keys, wallets and signing through the real clients (@turnkey/sdk-server, @turnkey/viem, viem),
// every signature checked with independent libraries (@noble/curves, viem).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { createAccount } from '@turnkey/viem';
import {
  hashMessage, hashTypedData, keccak256, parseTransaction, recoverTransactionAddress, serializeTransaction,
  verifyMessage, verifyTypedData, getAddress, type Hex,
  type TypedDataDefinition,
} from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { startTestServer, type TestServer } from '../server/harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const ETH_ACCOUNT = { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' } as const;

/** Verifies an {r,s,v} ECDSA result with noble and checks v recovers the public key. */
function checkEcdsa(curve: typeof secp256k1 | typeof p256, digest: Uint8Array, sig: { r: string; s: string; v: string }, publicKeyHex: string): void {
  expect(sig.r).toMatch(/^[0-9a-f]{64}$/);
  expect(sig.s).toMatch(/^[0-9a-f]{64}$/);
  expect(sig.v).toMatch(/^0[01]$/);
  const compact = hexToBytes(sig.r + sig.s);
  expect(curve.verify(compact, digest, hexToBytes(publicKeyHex), { prehash: false })).toBe(true);
  const recovered = curve.Signature.fromBytes(compact).addRecoveryBit(Number(sig.v)).recoverPublicKey(digest);
  expect(bytesToHex(recovered.toBytes(true))).toBe(bytesToHex(curve.Point.fromHex(publicKeyHex).toBytes(true)));
}

describe('private keys through @turnkey/sdk-server', () => {
  it('creates keys on all three curves with addresses, lists and gets them', async () => {
    const r = await ts.sdk.createPrivateKeys({
      privateKeys: [
        { privateKeyName: 'k1', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM', 'ADDRESS_FORMAT_COMPRESSED'] },
        { privateKeyName: 'p1', curve: 'CURVE_P256', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_UNCOMPRESSED'] },
        { privateKeyName: 'e1', curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_SOLANA'] },
      ],
    });
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.privateKeys).toHaveLength(3);
    const [k1, p1, e1] = r.privateKeys;
    const got = await ts.sdk.getPrivateKey({ privateKeyId: k1!.privateKeyId! });
    expect(got.privateKey.curve).toBe('CURVE_SECP256K1');
    expect(got.privateKey.privateKeyName).toBe('k1');
    // The Ethereum address is the keccak of the public key: check independently.
    const uncompressed = secp256k1.Point.fromHex(got.privateKey.publicKey).toBytes(false);
    expect(k1!.addresses![0]).toEqual({ format: 'ADDRESS_FORMAT_ETHEREUM', address: publicKeyToAddress(`0x${bytesToHex(uncompressed)}`) });
    expect(k1!.addresses![1]!.address).toBe(got.privateKey.publicKey);
    const gp = await ts.sdk.getPrivateKey({ privateKeyId: p1!.privateKeyId! });
    expect(p1!.addresses![0]!.address).toBe(bytesToHex(p256.Point.fromHex(gp.privateKey.publicKey).toBytes(false)));
    const ge = await ts.sdk.getPrivateKey({ privateKeyId: e1!.privateKeyId! });
    expect(ge.privateKey.publicKey).toMatch(/^[0-9a-f]{64}$/);
    const list = await ts.sdk.getPrivateKeys({});
    const ids = list.privateKeys.map((k) => k.privateKeyId);
    for (const k of r.privateKeys) expect(ids).toContain(k.privateKeyId);
  });

  it('signs raw payloads on every curve; noble verifies and v recovers the key', async () => {
    const r = await ts.sdk.createPrivateKeys({
      privateKeys: [
        { privateKeyName: 'sk', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] },
        { privateKeyName: 'sp', curve: 'CURVE_P256', privateKeyTags: [], addressFormats: [] },
        { privateKeyName: 'se', curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_SOLANA'] },
      ],
    });
    const [k, p, e] = await Promise.all(r.privateKeys.map((x) => ts.sdk.getPrivateKey({ privateKeyId: x.privateKeyId! })));
    const msg = 'hello kmas';
    const enc = new TextEncoder().encode(msg);

    // secp256k1 by id, text + keccak
    const s1 = await ts.sdk.signRawPayload({ signWith: k!.privateKey.privateKeyId, payload: msg, encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction: 'HASH_FUNCTION_KECCAK256' });
    checkEcdsa(secp256k1, keccak_256(enc), s1, k!.privateKey.publicKey);
    // secp256k1 by address, 0x-hex digest, no-op
    const digest = sha256(enc);
    const s2 = await ts.sdk.signRawPayload({ signWith: k!.privateKey.addresses[0]!.address!, payload: `0x${bytesToHex(digest)}`, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    checkEcdsa(secp256k1, digest, s2, k!.privateKey.publicKey);
    // ... and by the lowercase address
    const s2b = await ts.sdk.signRawPayload({ signWith: k!.privateKey.addresses[0]!.address!.toLowerCase(), payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(s2b).toMatchObject({ r: s2.r, s: s2.s, v: s2.v });
    // P-256 sha256
    const s3 = await ts.sdk.signRawPayload({ signWith: p!.privateKey.privateKeyId, payload: bytesToHex(enc), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_SHA256' });
    checkEcdsa(p256, digest, s3, p!.privateKey.publicKey);
    // Ed25519 by Solana address
    const s4 = await ts.sdk.signRawPayload({ signWith: e!.privateKey.addresses[0]!.address!, payload: bytesToHex(enc), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' });
    expect(s4.v).toBe('00');
    expect(ed25519.verify(hexToBytes(s4.r + s4.s), enc, hexToBytes(e!.privateKey.publicKey))).toBe(true);
    // the specification's intent echoes signWith as sent, an address staying that address
    expect((s4.activity as any).result.activity.intent.signRawPayloadIntent.privateKeyId).toBe(e!.privateKey.addresses[0]!.address);

    // The stored activity carries both intent forms (replies.md).
    const act = s1.activity as any;
    expect(act.intent.signRawPayloadIntentV2.signWith).toBe(k!.privateKey.privateKeyId);
    expect(act.result.activity.intent.signRawPayloadIntent).toEqual({ privateKeyId: k!.privateKey.privateKeyId, payload: msg, encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction: 'HASH_FUNCTION_KECCAK256' });
    expect(act.result.activity.result.signRawPayloadResult).toEqual({ r: s1.r, s: s1.s, v: s1.v });
  });

  it('sign_raw_payloads signs 100 payloads through the batch path; each verifies', async () => {
    const r = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'batch', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    const id = r.privateKeys[0]!.privateKeyId!;
    const pub = (await ts.sdk.getPrivateKey({ privateKeyId: id })).privateKey.publicKey;
    const payloads = Array.from({ length: 100 }, (_, i) => bytesToHex(sha256(new TextEncoder().encode(`payload ${i}`))));
    const out = await ts.sdk.signRawPayloads({ signWith: id, payloads, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(out.signatures).toHaveLength(100);
    out.signatures!.forEach((sig, i) => checkEcdsa(secp256k1, hexToBytes(payloads[i]!), sig as any, pub));
    // same digest → same signature as the single path (RFC 6979 determinism)
    const single = await ts.sdk.signRawPayload({ signWith: id, payload: payloads[7]!, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect({ r: single.r, s: single.s, v: single.v }).toEqual(out.signatures![7]);
  });
});

describe('wallets through @turnkey/sdk-server and a @turnkey/viem account', () => {
  let walletId: string;
  let address: Hex;

  it('creates a wallet with accounts and reads it back', async () => {
    const w = await ts.sdk.createWallet({ walletName: 'main', accounts: [ETH_ACCOUNT, { ...ETH_ACCOUNT, path: "m/44'/60'/0'/0/1" }], mnemonicLength: 24 });
    expect(w.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    walletId = w.walletId;
    expect(w.addresses).toHaveLength(2);
    address = w.addresses[0]! as Hex;
    expect(getAddress(address)).toBe(address);
    const g = await ts.sdk.getWallet({ walletId });
    expect(g.wallet).toMatchObject({ walletId, walletName: 'main', exported: false, imported: false });
    const accts = await ts.sdk.getWalletAccounts({ walletId });
    expect(accts.accounts.map((a) => a.address).sort()).toEqual([...w.addresses].sort());
    const one = await ts.sdk.getWalletAccount({ walletId, address });
    expect(one.account).toMatchObject({ walletId, address, path: "m/44'/60'/0'/0/0", curve: 'CURVE_SECP256K1', addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });
    const pub = secp256k1.Point.fromHex(one.account.publicKey!).toBytes(false);
    expect(publicKeyToAddress(`0x${bytesToHex(pub)}`)).toBe(address);
    const more = await ts.sdk.createWalletAccounts({ walletId, accounts: [{ ...ETH_ACCOUNT, path: "m/44'/60'/0'/0/2" }] });
    expect(more.addresses).toHaveLength(1);
    const upd = await ts.sdk.updateWallet({ walletId, walletName: 'renamed' });
    expect(upd.walletId).toBe(walletId);
    expect((await ts.sdk.getWallet({ walletId })).wallet.walletName).toBe('renamed');
    expect((await ts.sdk.getWallets({})).wallets.map((x) => x.walletId)).toContain(walletId);
  });

  it('a viem account signs a message, typed data and an EIP-1559 transaction; viem verifies each', async () => {
    const account = await createAccount({ client: ts.sdk, organizationId: ts.orgId, signWith: address });
    expect(account.address).toBe(address);

    const message = 'kmas says hi';
    const sig = await account.signMessage({ message });
    expect(await verifyMessage({ address, message, signature: sig })).toBe(true);

    const typedData = {
      domain: { name: 'kmas', version: '1', chainId: 1, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' as Hex },
      // viem's serializeTypedData (what @turnkey/viem sends) keeps the domain only when the types
      // list EIP712Domain; real dapps pass it, so the test does too.
      types: {
        EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }],
        Person: [{ name: 'name', type: 'string' }, { name: 'wallet', type: 'address' }], Mail: [{ name: 'from', type: 'Person' }, { name: 'to', type: 'Person' }, { name: 'contents', type: 'string' }] } as const,
      primaryType: 'Mail' as const,
      message: {
        from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' as Hex },
        to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' as Hex },
        contents: 'Hello, Bob!',
      },
    };
    // (typed loosely: viem's types cannot express a domain listed in `types` as EIP712Domain)
    const definition = typedData as unknown as TypedDataDefinition;
    const tsig = await account.signTypedData(definition);
    expect(await verifyTypedData({ address, ...definition, signature: tsig })).toBe(true);

    const tx = { type: 'eip1559' as const, chainId: 1, nonce: 3, to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as Hex, value: 10n ** 15n, maxFeePerGas: 3n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n, gas: 21000n };
    const signed = await account.signTransaction(tx);
    expect(await recoverTransactionAddress({ serializedTransaction: signed as any })).toBe(address);
    const parsed = parseTransaction(signed);
    expect(parsed).toMatchObject({ chainId: 1, nonce: 3, to: tx.to.toLowerCase(), value: tx.value });

    // The raw signature behind signMessage verifies with noble too (v recovers the signer).
    const raw = await ts.sdk.signRawPayload({ signWith: address, payload: hashMessage(message), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const pub = (await ts.sdk.getWalletAccount({ walletId, address })).account.publicKey!;
    checkEcdsa(secp256k1, hexToBytes(hashMessage(message).slice(2)), raw, pub);
    expect(sig.slice(2, 130)).toBe(raw.r + raw.s);
    const td = await ts.sdk.signRawPayload({ signWith: address, payload: JSON.stringify({ ...typedData, domain: { ...typedData.domain } }), encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' });
    checkEcdsa(secp256k1, hexToBytes(hashTypedData(definition).slice(2)), td, pub);
  });

  it('sign_transaction signs legacy, EIP-2930 and EIP-1559 transactions (with and without 0x)', async () => {
    const base = { chainId: 11155111, nonce: 0, to: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' as Hex, value: 1n, gas: 21000n };
    const txs = [
      serializeTransaction({ ...base, type: 'legacy', gasPrice: 10n ** 9n }),
      serializeTransaction({ ...base, type: 'eip2930', gasPrice: 10n ** 9n, accessList: [] }),
      serializeTransaction({ ...base, type: 'eip1559', maxFeePerGas: 2n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n }),
    ];
    for (const [i, unsigned] of txs.entries()) {
      const r = await ts.sdk.signTransaction({ signWith: address, unsignedTransaction: i === 1 ? unsigned : unsigned.slice(2), type: 'TRANSACTION_TYPE_ETHEREUM' });
      expect(r.signedTransaction).toMatch(/^[0-9a-f]+$/);
      expect(await recoverTransactionAddress({ serializedTransaction: `0x${r.signedTransaction}` as any })).toBe(address);
      expect(keccak256(unsigned)).toMatch(/^0x/);
      const act = r.activity as any;
      expect(act.result.activity.intent.signTransactionIntent.privateKeyId).toBe(address);
    }
  });
});
