// Wallet derivation through the API against published vectors: BIP39 (Trezor English vectors,
// passphrase "TREZOR") imported with @turnkey/crypto, accounts derived by the server and compared
// with @scure/bip32 (secp256k1) and a test-side SLIP-10 Ed25519 derivation over the vector's seed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { HDKey } from '@scure/bip32';
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { base58 } from '@scure/base';
import { encryptPrivateKeyToBundle, encryptWalletToBundle } from '@turnkey/crypto';
import { publicKeyToAddress } from 'viem/accounts';
import { startTestServer, type TestServer } from '../server/harness.js';

const trezor: string[][] = JSON.parse(readFileSync(new URL('../vectors/bip39/trezor_vectors.json', import.meta.url), 'utf8')).english;
const ethers: any = JSON.parse(readFileSync(new URL('../vectors/ethereum/ethers_accounts.json', import.meta.url), 'utf8'));

/** SLIP-10 Ed25519 (hardened only), written here from the spec as an independent oracle. */
function slip10Ed25519(seed: Uint8Array, path: string): Uint8Array {
  let I = hmac(sha512, new TextEncoder().encode('ed25519 seed'), seed);
  let k = I.slice(0, 32);
  let c = I.slice(32);
  for (const part of path.split('/').slice(1)) {
    const idx = (Number(part.replace(/'$/, '')) | 0x80000000) >>> 0;
    const data = new Uint8Array(37);
    data.set(k, 1);
    new DataView(data.buffer).setUint32(33, idx);
    I = hmac(sha512, c, data);
    k = I.slice(0, 32);
    c = I.slice(32);
  }
  return k;
}

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

async function importMnemonic(text: string, accounts: object[]): Promise<{ walletId: string; addresses: string[] }> {
  const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
  const encryptedBundle = await encryptWalletToBundle({ mnemonic: text, importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey });
  return ts.sdk.importWallet({ userId: ts.rootUserId, walletName: 'vector', encryptedBundle, accounts: accounts as any });
}

describe('BIP39 / BIP32 / SLIP-10 through import_wallet', () => {
  const picks = [0, 3, 8, 11, 16, 23].map((i) => trezor[i]!);
  it.each(picks.map((v) => [v[1]!.split(' ').length, v] as const))('%i-word Trezor vector with passphrase TREZOR', async (_n, v) => {
    const [, mnemonic, seedHex, xprv] = v as string[];
    const root = HDKey.fromMasterSeed(hexToBytes(seedHex!));
    expect(root.privateExtendedKey).toBe(xprv); // the oracle agrees with the vector
    const specs = [
      { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' },
      { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/0'/1/2'/2/1000000000", addressFormat: 'ADDRESS_FORMAT_COMPRESSED' },
      { curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_SOLANA' },
    ];
    const w = await importMnemonic(`${mnemonic}\nTREZOR`, specs);
    const eth = root.derive(specs[0]!.path);
    expect(w.addresses[0]).toBe(publicKeyToAddress(`0x${bytesToHex(secp256k1.Point.fromBytes(eth.publicKey!).toBytes(false))}`));
    expect(w.addresses[1]).toBe(bytesToHex(root.derive(specs[1]!.path).publicKey!));
    const edPub = ed25519.getPublicKey(slip10Ed25519(hexToBytes(seedHex!), specs[2]!.path));
    expect(w.addresses[2]).toBe(base58.encode(edPub));
    const acct = await ts.sdk.getWalletAccount({ walletId: w.walletId, address: w.addresses[2]! });
    expect(acct.account.publicKey).toBe(bytesToHex(edPub));
  });

  it('ethers.js account vectors: import_private_key of the vector key gives the vector address', async () => {
    const list: { privateKey: string; address: string }[] = ethers;
    const picks = [0, 1, 2, 50, 100, 258].map((i) => list[i]!).filter((a) => /^0x[0-9a-f]{64}$/i.test(a.privateKey));
    expect(picks.length).toBeGreaterThanOrEqual(5);
    for (const a of picks) {
      const init = await ts.sdk.initImportPrivateKey({ userId: ts.rootUserId });
      const encryptedBundle = await encryptPrivateKeyToBundle({ privateKey: a.privateKey.slice(2), keyFormat: 'HEXADECIMAL', importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey });
      const r = await ts.sdk.importPrivateKey({ userId: ts.rootUserId, privateKeyName: `ethers-${a.address}`, encryptedBundle, curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] });
      expect(r.addresses[0]!.address).toBe(a.address);
    }
  });
});
