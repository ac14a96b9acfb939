// src/crypto/vault.ts: every use of key material over sealed values, checked against independent
// libraries (@noble/curves, @turnkey/crypto) and the well-known test mnemonic.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptExportBundle, encryptWalletToBundle, generateP256KeyPair } from '@turnkey/crypto';
import { CryptoError, Vault, type AtRestContext } from '../../src/crypto/index.js';

const wellKnown = JSON.parse(readFileSync(new URL('../vectors/ethereum/well_known.json', import.meta.url), 'utf8'));
const MNEMONIC: string = wellKnown.bip44Mnemonic.mnemonic;
const ACCOUNTS: { path: string; privateKey: string; address: string }[] = wellKnown.bip44Mnemonic.accounts;

const ctx = (recordId: string, kind = 'private_key'): AtRestContext => ({ kind, organizationId: 'org-1', recordId });
const ORG = 'org-1';

function newVault(): Vault {
  const v = new Vault(new Uint8Array(randomBytes(32)));
  v.createServerKey('bundleSigner');
  return v;
}

async function exportedKeyHex(v: Vault, sealed: Uint8Array, c: AtRestContext): Promise<string> {
  const kp = generateP256KeyPair();
  const bundle = v.exportKey(sealed, c, kp.publicKeyUncompressed, ORG);
  return decryptExportBundle({ exportBundle: bundle, embeddedKey: kp.privateKey, organizationId: ORG, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: v.signerPublicKey });
}

describe('Vault', () => {
  it('new private keys: sealed blob hides the key; export gives the key of the returned public key', async () => {
    const v = newVault();
    for (const [curve, lib] of [['secp256k1', secp256k1], ['p256', p256]] as const) {
      const made = v.newPrivateKey(curve, ctx(`k-${curve}`));
      const sk = await exportedKeyHex(v, made.sealed, ctx(`k-${curve}`));
      expect(bytesToHex(lib.getPublicKey(hexToBytes(sk), true))).toBe(bytesToHex(made.publicKey));
      expect(Buffer.from(made.sealed).includes(Buffer.from(sk, 'hex'))).toBe(false);
    }
    const ed = v.newPrivateKey('ed25519', ctx('k-ed'));
    const seed = await exportedKeyHex(v, ed.sealed, ctx('k-ed'));
    expect(bytesToHex(ed25519.getPublicKey(hexToBytes(seed)))).toBe(bytesToHex(ed.publicKey));
  });

  it('signPayload matches noble signing with the same key (RFC 6979) and verifies', async () => {
    const v = newVault();
    const made = v.newPrivateKey('secp256k1', ctx('s'));
    const sk = hexToBytes(await exportedKeyHex(v, made.sealed, ctx('s')));
    const digest = new Uint8Array(randomBytes(32));
    const sig = v.signPayload(made.sealed, ctx('s'), 'secp256k1', { payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const ref = secp256k1.sign(digest, sk, { prehash: false, format: 'recovered' });
    expect(sig.r + sig.s).toBe(bytesToHex(ref.slice(1)));
    expect(Number(sig.v)).toBe(ref[0]);
    const many = v.signPayloads(made.sealed, ctx('s'), 'secp256k1', [bytesToHex(digest), bytesToHex(digest)], 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP');
    expect(many).toEqual([sig, sig]);
  });

  it('a sealed value opens only under its own master key and record context', () => {
    const v = newVault();
    const made = v.newPrivateKey('p256', ctx('a'));
    const req = { payload: 'ab'.repeat(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' };
    expect(v.canOpen(made.sealed, ctx('a'))).toBe(true);
    expect(v.canOpen(made.sealed, ctx('b'))).toBe(false);
    expect(v.canOpen(made.sealed, { ...ctx('a'), organizationId: 'org-2' })).toBe(false);
    const other = newVault();
    expect(other.canOpen(made.sealed, ctx('a'))).toBe(false);
    try {
      other.signPayload(made.sealed, ctx('a'), 'p256', req);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(CryptoError);
      expect((e as CryptoError).code).toBe('DECRYPTION_FAILED');
      expect((e as CryptoError).field).toBeUndefined(); // the server's fault → 500, not the caller's
    }
    const tampered = made.sealed.slice();
    tampered[tampered.length - 1]! ^= 1;
    expect(v.canOpen(tampered, ctx('a'))).toBe(false);
  });

  it('wallets: the test mnemonic imported through @turnkey/crypto derives the known accounts; export gives it back', async () => {
    const v = newVault();
    const init = v.initImport(ctx('t', 'import_target'), ORG, 'user-1');
    const encryptedBundle = await encryptWalletToBundle({ mnemonic: MNEMONIC, importBundle: init.importBundle, userId: 'user-1', organizationId: ORG, dangerouslyOverrideSignerPublicKey: v.signerPublicKey });
    // the target opens only under its own context
    expect(() => v.importWallet(init.sealed, ctx('other', 'import_target'), encryptedBundle, ctx('w', 'wallet_mnemonic'))).toThrow(CryptoError);
    const w = v.importWallet(init.sealed, ctx('t', 'import_target'), encryptedBundle, ctx('w', 'wallet_mnemonic'));
    expect(Buffer.from(w.sealedMnemonic).includes(Buffer.from('test test'))).toBe(false);
    const accts = v.deriveAccounts(w.sealedMnemonic, ctx('w', 'wallet_mnemonic'), ACCOUNTS.map((a, i) => ({
      curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: a.path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM', ctx: ctx(`acct-${i}`, 'wallet_account_key'),
    })));
    expect(accts.map((a) => a.address)).toEqual(ACCOUNTS.map((a) => a.address));
    for (const [i, a] of accts.entries()) {
      expect(`0x${await exportedKeyHex(v, a.sealed, ctx(`acct-${i}`, 'wallet_account_key'))}`).toBe(ACCOUNTS[i]!.privateKey);
    }
    const kp = generateP256KeyPair();
    const bundle = v.exportWallet(w.sealedMnemonic, ctx('w', 'wallet_mnemonic'), kp.publicKeyUncompressed, ORG);
    expect(await decryptExportBundle({ exportBundle: bundle, embeddedKey: kp.privateKey, organizationId: ORG, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: v.signerPublicKey })).toBe(MNEMONIC);
    // validation names the field before anything is derived
    expect(() => v.deriveAccounts(w.sealedMnemonic, ctx('w', 'wallet_mnemonic'), [
      { curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_ETHEREUM', ctx: ctx('x') },
    ])).toThrow(/ETHEREUM|CURVE/);
  });

  it('a new wallet has a fresh 12..24-word mnemonic; signing a transaction needs secp256k1', async () => {
    const v = newVault();
    for (const words of [12, 15, 18, 21, 24]) {
      const w = v.newWallet(words, ctx(`w${words}`, 'wallet_mnemonic'));
      const kp = generateP256KeyPair();
      const m = await decryptExportBundle({ exportBundle: v.exportWallet(w.sealedMnemonic, ctx(`w${words}`, 'wallet_mnemonic'), kp.publicKeyUncompressed, ORG), embeddedKey: kp.privateKey, organizationId: ORG, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: v.signerPublicKey });
      expect(m.split(' ')).toHaveLength(words);
    }
    const p = v.newPrivateKey('p256', ctx('p'));
    expect(() => v.signEthereumTransaction(p.sealed, ctx('p'), 'p256', '02c0')).toThrow(/SECP256K1/);
  });

  it('useServerKey refuses a server key that does not match its public key, its master key or its kind', () => {
    const v = new Vault(new Uint8Array(randomBytes(32)));
    const s = v.createServerKey('bundleSigner');
    const again = new Vault(new Uint8Array(32).fill(0));
    expect(() => again.useServerKey('bundleSigner', s.sealed, s.publicKey)).toThrow(CryptoError);
    const same = new Vault(new Uint8Array(32).fill(0));
    const s2 = same.createServerKey('bundleSigner');
    expect(() => same.useServerKey('bundleSigner', s2.sealed, s.publicKey)).toThrow(CryptoError);
    expect(() => same.useServerKey('webhookSigner', s2.sealed, s2.publicKey)).toThrow(CryptoError);
    same.useServerKey('bundleSigner', s2.sealed, s2.publicKey);
    expect(same.signerPublicKey).toBe(s2.publicKey);
  });

  it('the webhook signer signs Ed25519 that noble verifies under its published public key', () => {
    const v = new Vault(new Uint8Array(randomBytes(32)));
    expect(v.webhookPublicKey).toBeUndefined();
    expect(() => v.signWebhook(new Uint8Array(3))).toThrow(CryptoError);
    const w = v.createServerKey('webhookSigner');
    expect(w.publicKey).toMatch(/^[0-9a-f]{64}$/);
    expect(v.webhookPublicKey).toBe(w.publicKey);
    const msg = new TextEncoder().encode('v1.ed25519.kid.1.event.{}');
    const sig = v.signWebhook(msg);
    expect(ed25519.verify(sig, msg, Buffer.from(w.publicKey, 'hex'))).toBe(true);
    const reopened = new Vault(new Uint8Array(32).fill(7));
    expect(() => reopened.useServerKey('webhookSigner', w.sealed, w.publicKey)).toThrow(CryptoError);
  });
});
