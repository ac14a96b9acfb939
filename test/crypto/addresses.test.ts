import { describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { getAddress, publicKeyToAddress } from 'viem/utils';
import { bech32, bech32m, createBase58check } from '@scure/base';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  ADDRESS_FORMATS,
  addressFromPublicKey,
  addressFormatInfo,
  assertFormatFitsCurve,
  defaultPathFor,
  ethereumAddress,
  p2pkhAddress,
  p2trAddress,
  p2wpkhAddress,
  taprootOutputKey,
  toChecksumAddress,
} from '../../src/crypto/addresses.js';
import { deriveFromSeed, mnemonicToSeed } from '../../src/crypto/hd.js';
import { getPublicKey, type CurveId } from '../../src/crypto/curves.js';
import { CryptoError } from '../../src/encoding/errors.js';
import { hex, loadVector, unhex } from './helpers.js';

const err = (fn: () => unknown): CryptoError | undefined => {
  try {
    fn();
  } catch (e) {
    if (e instanceof CryptoError) return e;
    throw e;
  }
  return undefined;
};

describe('Ethereum addresses', () => {
  const accounts = loadVector<any[]>('ethereum/ethers_accounts.json');
  it(`ethers accounts (${accounts.length})`, () => {
    for (const a of accounts) {
      const pub = getPublicKey('secp256k1', unhex(a.privateKey), false);
      expect(ethereumAddress(pub)).toBe(a.address);
      expect(addressFromPublicKey('ADDRESS_FORMAT_ETHEREUM', 'secp256k1', getPublicKey('secp256k1', unhex(a.privateKey)))).toBe(a.address);
    }
  });
  const wk = loadVector<any>('ethereum/well_known.json');
  it('EIP-55 spec cases', () => {
    for (const a of wk.eip55ChecksumTestCases.all) {
      expect(toChecksumAddress(a.toLowerCase())).toBe(a);
      expect(toChecksumAddress(a.toUpperCase().replace(/^0X/, '0x'))).toBe(a);
      expect(toChecksumAddress(a)).toBe(getAddress(a.toLowerCase()));
    }
  });
  it('private keys 1, 2, 3', () => {
    for (const t of wk.privateKeyToAddress) {
      expect(ethereumAddress(getPublicKey('secp256k1', unhex(t.privateKey)))).toBe(t.address);
    }
  });
  it('the "test … junk" mnemonic accounts (BIP39 → BIP32 → BIP44 → address)', () => {
    const entries = Object.values(wk).filter((x: any) => x && x.mnemonic && Array.isArray(x.accounts)) as any[];
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) {
      const seed = mnemonicToSeed(e.mnemonic);
      for (const a of e.accounts) {
        const k = deriveFromSeed('secp256k1', seed, a.path);
        if (a.privateKey) expect('0x' + hex(k.privateKey!)).toBe(a.privateKey.toLowerCase());
        expect(addressFromPublicKey('ADDRESS_FORMAT_ETHEREUM', 'secp256k1', k.publicKey)).toBe(a.address);
      }
    }
  });
  it('agrees with viem publicKeyToAddress on random keys', () => {
    for (let i = 0; i < 50; i++) {
      const sk = secp256k1.utils.randomSecretKey();
      const pub = secp256k1.getPublicKey(sk, false);
      expect(ethereumAddress(pub)).toBe(publicKeyToAddress(`0x${hex(pub)}`));
    }
  });
});

describe('Bitcoin addresses', () => {
  const v = loadVector<any>('bitcoin/address_vectors.json');
  const seed = mnemonicToSeed(v.mnemonic);
  it('BIP84 P2WPKH', () => {
    for (const t of v.bip84) {
      const k = deriveFromSeed('secp256k1', seed, t.path);
      expect(hex(k.publicKey)).toBe(t.publicKey);
      expect(addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_MAINNET_P2WPKH', 'secp256k1', k.publicKey)).toBe(t.address);
    }
  });
  it('BIP86 P2TR (key-path tweak through the core)', () => {
    for (const t of v.bip86) {
      const k = deriveFromSeed('secp256k1', seed, t.path);
      expect(hex(k.publicKey.slice(1))).toBe(t.internalKey);
      expect(hex(taprootOutputKey(k.publicKey))).toBe(t.outputKey);
      expect(addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR', 'secp256k1', k.publicKey)).toBe(t.address);
      // same witness program on the other networks
      for (const [net, hrp] of [['TESTNET', 'tb'], ['SIGNET', 'tb'], ['REGTEST', 'bcrt']] as const) {
        const a = addressFromPublicKey(`ADDRESS_FORMAT_BITCOIN_${net}_P2TR`, 'secp256k1', k.publicKey);
        const d = bech32m.decode(a as `${string}1${string}`);
        expect(d.prefix).toBe(hrp);
        expect(d.words[0]).toBe(1);
        expect(hex(bech32m.fromWords(d.words.slice(1)))).toBe(t.outputKey);
      }
    }
  });
  it('BIP173 P2WPKH examples', () => {
    const pub = unhex(v.bip173.publicKey);
    expect(p2wpkhAddress(pub, 'mainnet')).toBe(v.bip173.mainnetP2wpkh);
    expect(p2wpkhAddress(pub, 'testnet')).toBe(v.bip173.testnetP2wpkh);
    expect(addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_SIGNET_P2WPKH', 'secp256k1', pub)).toBe(v.bip173.testnetP2wpkh);
    const r = bech32.decode(addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_REGTEST_P2WPKH', 'secp256k1', pub) as `${string}1${string}`);
    expect(r.prefix).toBe('bcrt');
    expect(bech32.encode('bc', r.words)).toBe(v.bip173.mainnetP2wpkh);
  });
  it('P2PKH of secret key 1', () => {
    const pub = getPublicKey('secp256k1', unhex(v.p2pkh.privateKey));
    expect(p2pkhAddress(pub, 'mainnet')).toBe(v.p2pkh.mainnetCompressed);
    expect(addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_TESTNET_P2PKH', 'secp256k1', pub)).toBe(v.p2pkh.testnetCompressed);
    expect(addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_REGTEST_P2PKH', 'secp256k1', pub)).toBe(v.p2pkh.testnetCompressed);
  });
  it('uncompressed input gives the same addresses as compressed', () => {
    const k = deriveFromSeed('secp256k1', seed, v.bip86[0].path);
    const unc = getPublicKey('secp256k1', k.privateKey!, false);
    expect(p2trAddress(unc)).toBe(v.bip86[0].address);
  });
});

describe('well-known accounts of "abandon … about"', () => {
  const v = loadVector<any>('bitcoin/address_vectors.json');
  const seed = mnemonicToSeed(v.mnemonic);
  for (const a of v.abandonAbout.accounts) {
    it(`${a.format} ${a.path}`, () => {
      const k = deriveFromSeed(a.curve as CurveId, seed, a.path);
      expect(addressFromPublicKey(a.format, a.curve, k.publicKey)).toBe(a.address);
    });
  }
});

describe('other chains (SUI, APTOS, XLM, DOGE)', () => {
  const v = loadVector<any>('chains/other_chain_vectors.json');
  it('Sui keytool vectors (mnemonic → default path → address)', () => {
    for (const c of v.sui.cases) {
      const k = deriveFromSeed('ed25519', mnemonicToSeed(c.mnemonic), v.sui.path);
      expect(Buffer.from(new Uint8Array([0, ...k.privateKey!])).toString('base64')).toBe(c.secretKey);
      expect(addressFromPublicKey('ADDRESS_FORMAT_SUI', 'ed25519', k.publicKey)).toBe(c.address);
    }
    expect(defaultPathFor('ADDRESS_FORMAT_SUI')).toBe(v.sui.path);
  });
  it('Aptos ts-sdk vectors', () => {
    const w = v.aptos.wallet;
    const k = deriveFromSeed('ed25519', mnemonicToSeed(w.mnemonic), w.path);
    expect(hex(k.privateKey!)).toBe(w.privateKey);
    expect(hex(k.publicKey)).toBe(w.publicKey);
    expect(addressFromPublicKey('ADDRESS_FORMAT_APTOS', 'ed25519', k.publicKey)).toBe(w.address);
    expect(addressFromPublicKey('ADDRESS_FORMAT_APTOS', 'ed25519', getPublicKey('ed25519', unhex(v.aptos.key.privateKey)))).toBe(v.aptos.key.address);
    expect(defaultPathFor('ADDRESS_FORMAT_APTOS')).toBe(w.path);
  });
  it('Stellar SEP-0005 vectors (incl. a BIP39 passphrase)', () => {
    for (const c of v.xlm.cases) {
      const seed = mnemonicToSeed(c.mnemonic, c.passphrase);
      for (const [path, address] of c.accounts) {
        const k = deriveFromSeed('ed25519', seed, path);
        expect(addressFromPublicKey('ADDRESS_FORMAT_XLM', 'ed25519', k.publicKey)).toBe(address);
      }
    }
  });
  it('XRP classic address (xrpl.js vector)', () => {
    const k = deriveFromSeed('secp256k1', mnemonicToSeed(v.xrp.mnemonic), v.xrp.path);
    expect(hex(k.publicKey)).toBe(v.xrp.publicKey);
    expect(addressFromPublicKey('ADDRESS_FORMAT_XRP', 'secp256k1', k.publicKey)).toBe(v.xrp.address);
  });
  it('Dogecoin mainnet vector; testnet uses version 0x71', () => {
    const k = deriveFromSeed('secp256k1', mnemonicToSeed(v.doge.mnemonic), v.doge.path);
    expect(addressFromPublicKey('ADDRESS_FORMAT_DOGE_MAINNET', 'secp256k1', k.publicKey)).toBe(v.doge.address);
    const t = addressFromPublicKey('ADDRESS_FORMAT_DOGE_TESTNET', 'secp256k1', k.publicKey);
    const b58c = createBase58check(sha256);
    const a = b58c.decode(t);
    const m = b58c.decode(v.doge.address);
    expect(a[0]).toBe(0x71);
    expect(m[0]).toBe(0x1e);
    expect(hex(a.slice(1))).toBe(hex(m.slice(1)));
    expect(t.startsWith('n')).toBe(true);
  });
});

describe('compressed / uncompressed formats', () => {
  it('hex of the SEC1 encodings, and the raw Ed25519 key', () => {
    const sk = unhex('11'.repeat(32));
    for (const c of ['secp256k1', 'p256'] as const) {
      expect(addressFromPublicKey('ADDRESS_FORMAT_COMPRESSED', c, getPublicKey(c, sk, false))).toBe(hex(getPublicKey(c, sk, true)));
      expect(addressFromPublicKey('ADDRESS_FORMAT_UNCOMPRESSED', c, getPublicKey(c, sk, true))).toBe(hex(getPublicKey(c, sk, false)));
    }
    const ed = getPublicKey('ed25519', sk);
    expect(addressFromPublicKey('ADDRESS_FORMAT_COMPRESSED', 'ed25519', ed)).toBe(hex(ed));
  });
});

describe('format table and errors', () => {
  it('has all 38 swagger address formats', () => {
    expect(Object.keys(ADDRESS_FORMATS)).toHaveLength(38);
    expect(defaultPathFor('ADDRESS_FORMAT_ETHEREUM')).toBe("m/44'/60'/0'/0/0");
    expect(defaultPathFor('ADDRESS_FORMAT_BITCOIN_TESTNET_P2TR')).toBe("m/86'/1'/0'/0/0");
    expect(defaultPathFor('ADDRESS_FORMAT_SOLANA')).toBe("m/44'/501'/0'/0'");
    expect(addressFormatInfo('ADDRESS_FORMAT_ETHEREUM').defaultHashFunction).toBe('HASH_FUNCTION_KECCAK256');
  });
  it('format that does not fit the curve → typed error naming the field', () => {
    const e = err(() => addressFromPublicKey('ADDRESS_FORMAT_ETHEREUM', 'ed25519', new Uint8Array(32), 'privateKeys[0].addressFormats[0]'));
    expect(e?.code).toBe('ADDRESS_FORMAT_CURVE_MISMATCH');
    expect(e?.field).toBe('privateKeys[0].addressFormats[0]');
    expect(err(() => assertFormatFitsCurve('ADDRESS_FORMAT_SOLANA', 'secp256k1'))?.code).toBe('ADDRESS_FORMAT_CURVE_MISMATCH');
    expect(err(() => assertFormatFitsCurve('ADDRESS_FORMAT_ETHEREUM', 'p256'))?.code).toBe('ADDRESS_FORMAT_CURVE_MISMATCH');
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_NOPE', 'secp256k1', new Uint8Array(33)))?.code).toBe('UNSUPPORTED_ADDRESS_FORMAT');
    expect(err(() => addressFromPublicKey('__proto__', 'secp256k1', new Uint8Array(33)))?.code).toBe('UNSUPPORTED_ADDRESS_FORMAT');
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_TON_V4R2', 'ed25519', new Uint8Array(32)))?.code).toBe('UNSUPPORTED_ADDRESS_FORMAT');
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_XLM', 'secp256k1', new Uint8Array(33)))?.code).toBe('ADDRESS_FORMAT_CURVE_MISMATCH');
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_DOGE_MAINNET', 'p256', new Uint8Array(33)))?.code).toBe('ADDRESS_FORMAT_CURVE_MISMATCH');
  });
  it('invalid public keys → INVALID_PUBLIC_KEY', () => {
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_ETHEREUM', 'secp256k1', new Uint8Array(33)))?.code).toBe('INVALID_PUBLIC_KEY');
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR', 'secp256k1', unhex('02' + '00'.repeat(32))))?.code).toBe('INVALID_PUBLIC_KEY');
    expect(err(() => addressFromPublicKey('ADDRESS_FORMAT_SOLANA', 'ed25519', new Uint8Array(31)))?.code).toBe('INVALID_PUBLIC_KEY');
  });
});
