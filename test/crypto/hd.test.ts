import { describe, expect, it } from 'vitest';
import { HDKey as ScureHDKey } from '@scure/bip32';
import * as scureBip39 from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { readFileSync } from 'node:fs';
import {
  HARDENED_OFFSET,
  deriveFromSeed,
  entropyToMnemonic,
  formatPath,
  generateMnemonic,
  masterKeyFromSeed,
  mnemonicToEntropy,
  mnemonicToSeed,
  parseExtendedKey,
  parsePath,
  toExtendedPrivateKey,
  toExtendedPublicKey,
  validateMnemonic,
  MNEMONIC_WORD_COUNTS,
} from '../../src/crypto/hd.js';
import { CryptoError } from '../../src/encoding/errors.js';
import { hex, loadVector, unhex } from './helpers.js';

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return e instanceof CryptoError ? e.code : `not a CryptoError: ${String(e)}`;
  }
  return undefined;
};

describe('BIP39 (trezor vectors, passphrase TREZOR)', () => {
  const v = loadVector<{ english: [string, string, string, string][] }>('bip39/trezor_vectors.json');
  it.each(v.english.map((t, i) => [i, ...t]))('vector %i', (_i, entropy, mnemonic, seed, xprv) => {
    expect(entropyToMnemonic(unhex(entropy as string))).toBe(mnemonic);
    expect(hex(mnemonicToEntropy(mnemonic as string))).toBe(entropy);
    expect(validateMnemonic(mnemonic as string)).toBe(true);
    const s = mnemonicToSeed(mnemonic as string, 'TREZOR');
    expect(hex(s)).toBe(seed);
    expect(toExtendedPrivateKey(masterKeyFromSeed('secp256k1', s))).toBe(xprv);
  });

  it('the bundled English wordlist is the canonical one', () => {
    const file = readFileSync(new URL('../vectors/bip39/english.txt', import.meta.url), 'utf8');
    expect(hex(sha256(new TextEncoder().encode(file)))).toBe('2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda');
    expect(file.trim().split('\n')).toEqual(wordlist);
  });

  it.each([...MNEMONIC_WORD_COUNTS])('generates valid %i-word mnemonics', (n) => {
    const m = generateMnemonic(n);
    expect(m.split(' ')).toHaveLength(n);
    expect(validateMnemonic(m)).toBe(true);
    expect(scureBip39.validateMnemonic(m, wordlist)).toBe(true);
  });

  it('seed agrees with @scure/bip39 (random mnemonics, unicode passphrases)', () => {
    for (const n of MNEMONIC_WORD_COUNTS) {
      const m = generateMnemonic(n);
      for (const pass of ['', 'TREZOR', 'pässwörd ✓', 'ｶﾀｶﾅ']) {
        expect(hex(mnemonicToSeed(m, pass))).toBe(hex(scureBip39.mnemonicToSeedSync(m, pass)));
      }
    }
  });

  it('rejects bad lengths, bad checksums, unknown words', () => {
    expect(code(() => generateMnemonic(13))).toBe('INVALID_MNEMONIC');
    expect(code(() => generateMnemonic(9))).toBe('INVALID_MNEMONIC');
    const ok = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
    expect(validateMnemonic(ok)).toBe(true);
    expect(validateMnemonic(ok.replace(/about$/, 'abandon'))).toBe(false); // checksum
    expect(validateMnemonic(ok.replace(/about$/, 'zzzz'))).toBe(false);
    expect(validateMnemonic('abandon abandon abandon')).toBe(false);
    expect(code(() => entropyToMnemonic(new Uint8Array(12)))).toBe("INVALID_MNEMONIC");
    expect(code(() => mnemonicToSeed(ok.replace(/about$/, 'abandon')))).toBe('INVALID_MNEMONIC');
  });
});

describe('BIP32 test vectors 1-4', () => {
  const v = loadVector<any>('bip32/bip32_vectors.json');
  for (const tv of v.valid) {
    it(tv.name, () => {
      const master = masterKeyFromSeed('secp256k1', unhex(tv.seed));
      for (const c of tv.chains) {
        const k = master.derive(c.path);
        expect(toExtendedPrivateKey(k)).toBe(c.xprv);
        expect(toExtendedPublicKey(k)).toBe(c.xpub);
        // round trip through parsing
        expect(toExtendedPrivateKey(parseExtendedKey(c.xprv))).toBe(c.xprv);
        expect(toExtendedPublicKey(parseExtendedKey(c.xpub))).toBe(c.xpub);
        // public derivation of the non-hardened tail matches
        const idx = parsePath(c.path);
        let j = idx.length;
        while (j > 0 && idx[j - 1] < HARDENED_OFFSET) j--;
        if (j < idx.length) {
          const base = master.derive(idx.slice(0, j)).neuter();
          expect(toExtendedPublicKey(base.derive(idx.slice(j)))).toBe(c.xpub);
        }
      }
    });
  }
  it('vector 5: invalid extended keys are rejected', () => {
    for (const t of v.invalid) expect(code(() => parseExtendedKey(t.key)), t.reason).toBe('INVALID_EXTENDED_KEY');
  });
});

describe('SLIP-10 vectors', () => {
  const v = loadVector<any>('slip10/slip10_vectors.json');
  for (const tv of v.vectors) {
    it(tv.name, () => {
      for (const c of tv.chains) {
        const k = deriveFromSeed(tv.curve === 'nist256p1' ? 'p256' : tv.curve, unhex(tv.seed), c.path);
        expect(hex(k.chainCode)).toBe(c.chainCode);
        expect(hex(k.privateKey!)).toBe(c.privateKey);
        expect(hex(k.serializedPublicKey)).toBe(c.publicKey);
        expect(k.parentFingerprint.toString(16).padStart(8, '0')).toBe(c.parentFingerprint);
      }
    });
  }
  it('P-256 public derivation agrees with private derivation (incl. the retry vector path)', () => {
    const tv = v.vectors.find((x: any) => x.name === 'derivation retry for nist256p1');
    const m = masterKeyFromSeed('p256', unhex(tv.seed));
    const parent = m.derive("m/28578'");
    expect(hex(parent.neuter().deriveChild(33941).publicKey)).toBe(tv.chains[2].publicKey);
  });
  it('Ed25519 refuses non-hardened steps', () => {
    expect(code(() => deriveFromSeed('ed25519', unhex('000102030405060708090a0b0c0d0e0f'), "m/0'/1"))).toBe('INVALID_PATH');
  });
});

describe('ethers mnemonics (derived nodes)', () => {
  const v = loadVector<any[]>('bip39/ethers_mnemonics_en.json');
  const dec = (h: string) => new TextDecoder().decode(unhex(h));
  for (const t of v) {
    it(t.name, () => {
      const seed = mnemonicToSeed(dec(t.phrase), dec(t.password));
      expect('0x' + hex(seed)).toBe(t.seed);
      expect('0x' + hex(mnemonicToEntropy(dec(t.phrase)))).toBe(t.entropy);
      const master = masterKeyFromSeed('secp256k1', seed);
      for (const n of t.nodes) {
        const k = master.derive(n.path);
        expect('0x' + hex(k.chainCode)).toBe(n.chainCode);
        expect('0x' + hex(k.privateKey!)).toBe(n.privateKey);
        expect('0x' + hex(k.publicKey)).toBe(n.publicKey);
        expect(k.depth).toBe(n.depth);
        expect(k.index).toBe(n.index);
        expect('0x' + k.parentFingerprint.toString(16).padStart(8, '0')).toBe(n.parentFingerprint);
        expect('0x' + k.fingerprint.toString(16).padStart(8, '0')).toBe(n.fingerprint);
        expect(toExtendedPrivateKey(k)).toBe(n.xpriv);
        expect(toExtendedPublicKey(k)).toBe(n.xpub);
      }
    });
  }
});

describe('differential vs @scure/bip32 (secp256k1) and noble (P-256 / Ed25519 keys)', () => {
  const rnd = (n: number) => globalThis.crypto.getRandomValues(new Uint8Array(n));
  const randomPath = () => {
    const d = 1 + Math.floor(Math.random() * 6);
    const idx: number[] = [];
    for (let i = 0; i < d; i++) {
      const v = Math.random() < 0.5 ? Math.floor(Math.random() * 2 ** 31) : Math.floor(Math.random() * 10);
      idx.push(Math.random() < 0.5 ? v + HARDENED_OFFSET : v);
    }
    return formatPath(idx);
  };
  it('200 random seeds and paths', () => {
    for (let i = 0; i < 200; i++) {
      const seed = rnd([16, 32, 64][i % 3]);
      const path = randomPath();
      const ours = deriveFromSeed('secp256k1', seed, path);
      const theirs = ScureHDKey.fromMasterSeed(seed).derive(path);
      expect(hex(ours.privateKey!)).toBe(hex(theirs.privateKey!));
      expect(hex(ours.chainCode)).toBe(hex(theirs.chainCode!));
      expect(toExtendedPublicKey(ours)).toBe(theirs.publicExtendedKey);
    }
  });
  it('derived public keys match noble for P-256 and Ed25519', () => {
    for (let i = 0; i < 30; i++) {
      const seed = rnd(64);
      const p = deriveFromSeed('p256', seed, "m/44'/0'/0'/0/" + i);
      expect(hex(p.publicKey)).toBe(hex(p256.getPublicKey(p.privateKey!, true)));
      const e = deriveFromSeed('ed25519', seed, `m/44'/501'/${i}'/0'`);
      expect(hex(e.publicKey)).toBe(hex(ed25519.getPublicKey(e.privateKey!)));
      const s = deriveFromSeed('secp256k1', seed, "m/44'/60'/0'/0/" + i);
      expect(hex(s.publicKey)).toBe(hex(secp256k1.getPublicKey(s.privateKey!, true)));
    }
  });
});

describe('path parsing', () => {
  it('parses hardened markers and bounds', () => {
    expect(parsePath('m')).toEqual([]);
    expect(parsePath("m/44'/60'/0'/0/0")).toEqual([44 + HARDENED_OFFSET, 60 + HARDENED_OFFSET, HARDENED_OFFSET, 0, 0]);
    expect(parsePath('m/44h/60H/0')).toEqual([44 + HARDENED_OFFSET, 60 + HARDENED_OFFSET, 0]);
    expect(parsePath("m/2147483647'")).toEqual([0xffffffff]);
    expect(formatPath(parsePath("m/44'/60'/0'/0/0"))).toBe("m/44'/60'/0'/0/0");
  });
  it.each(['', 'M/0', 'm/', 'm//0', 'm/-1', 'm/2147483648', "m/2147483648'", 'm/01', 'm/1x', "m/1''", 'n/0', ' m/0', 'm/0 '])(
    'rejects %j',
    (p) => expect(code(() => parsePath(p))).toBe('INVALID_PATH'),
  );
  it('rejects depth > 255', () => {
    expect(code(() => parsePath('m' + '/0'.repeat(256)))).toBe('INVALID_PATH');
    expect(parsePath('m' + '/0'.repeat(255))).toHaveLength(255);
  });
  it('rejects bad seeds', () => {
    expect(code(() => masterKeyFromSeed('secp256k1', new Uint8Array(15)))).toBe('INVALID_SEED');
    expect(code(() => masterKeyFromSeed('secp256k1', new Uint8Array(65)))).toBe('INVALID_SEED');
  });
});
