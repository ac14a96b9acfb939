import { describe, expect, it } from 'vitest';
import { HDKey as ScureHDKey } from '@scure/bip32';
import { deriveAccountPrivateKey, deriveWalletAccounts, privateKeyAddresses, publicKeyHexFromPrivate } from '../../src/crypto/wallets.js';
import { mnemonicToSeed } from '../../src/crypto/hd.js';
import { err, hex, loadVector } from './helpers.js';

describe('wallet accounts', () => {
  const v = loadVector<any>('bitcoin/address_vectors.json');
  const seed = mnemonicToSeed(v.mnemonic);
  it('derives the well-known accounts of "abandon … about" in one call', () => {
    const specs = v.abandonAbout.accounts.map((a: any) => ({
      curve: a.curve === 'ed25519' ? 'CURVE_ED25519' : 'CURVE_SECP256K1',
      pathFormat: 'PATH_FORMAT_BIP32',
      path: a.path,
      addressFormat: a.format,
    }));
    const out = deriveWalletAccounts(seed, specs);
    expect(out.map((a) => a.address)).toEqual(v.abandonAbout.accounts.map((a: any) => a.address));
    expect(out[0].publicKey).toBe(hex(ScureHDKey.fromMasterSeed(seed).derive(specs[0].path).publicKey!));
    expect(out[0].publicKey).toMatch(/^0[23][0-9a-f]{64}$/);
    expect(out[4].publicKey).toMatch(/^[0-9a-f]{64}$/); // Ed25519
  });
  it('account private key matches the derivation', () => {
    const k = deriveAccountPrivateKey(seed, 'secp256k1', "m/44'/60'/0'/0/0");
    expect(hex(k)).toBe(hex(ScureHDKey.fromMasterSeed(seed).derive("m/44'/60'/0'/0/0").privateKey!));
    expect(publicKeyHexFromPrivate('secp256k1', k)).toBe(hex(ScureHDKey.fromMasterSeed(seed).derive("m/44'/60'/0'/0/0").publicKey!));
  });
  it('bad specs name the field; nothing is derived when one is bad', () => {
    const ok = { curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' };
    const cases: [any, string, string][] = [
      [{ ...ok, curve: 'CURVE_NOPE' }, 'UNSUPPORTED_CURVE', 'accounts[1].curve'],
      [{ ...ok, pathFormat: 'PATH_FORMAT_X' }, 'INVALID_PATH', 'accounts[1].pathFormat'],
      [{ ...ok, path: 'm/x' }, 'INVALID_PATH', 'accounts[1].path'],
      [{ ...ok, curve: 'CURVE_ED25519' }, 'INVALID_PATH', 'accounts[1].path'],
      [{ ...ok, curve: 'CURVE_ED25519', path: "m/44'/501'/0'/0'" }, 'ADDRESS_FORMAT_CURVE_MISMATCH', 'accounts[1].addressFormat'],
      [{ ...ok, curve: 'CURVE_P256' }, 'ADDRESS_FORMAT_CURVE_MISMATCH', 'accounts[1].addressFormat'],
      [{ ...ok, addressFormat: 'ADDRESS_FORMAT_WHAT' }, 'UNSUPPORTED_ADDRESS_FORMAT', 'accounts[1].addressFormat'],
    ];
    for (const [bad, code, field] of cases) {
      const e = err(() => deriveWalletAccounts(seed, [ok, bad]));
      expect(e.code).toBe(code);
      expect(e.field).toBe(field);
    }
  });
  it('private key addresses', () => {
    const pub = Uint8Array.from(Buffer.from('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', 'hex'));
    const out = privateKeyAddresses('secp256k1', pub, ['ADDRESS_FORMAT_ETHEREUM', 'ADDRESS_FORMAT_BITCOIN_MAINNET_P2WPKH', 'ADDRESS_FORMAT_COMPRESSED']);
    expect(out).toEqual([
      { format: 'ADDRESS_FORMAT_ETHEREUM', address: '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf' },
      { format: 'ADDRESS_FORMAT_BITCOIN_MAINNET_P2WPKH', address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4' },
      { format: 'ADDRESS_FORMAT_COMPRESSED', address: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798' },
    ]);
    const e = err(() => privateKeyAddresses('p256', pub, ['ADDRESS_FORMAT_COMPRESSED', 'ADDRESS_FORMAT_ETHEREUM'], 'privateKeys[0].addressFormats'));
    expect(e.field).toBe('privateKeys[0].addressFormats[1]');
    expect(e.code).toBe('ADDRESS_FORMAT_CURVE_MISMATCH');
  });
});
