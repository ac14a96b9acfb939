import { describe, expect, it } from 'vitest';
import {
  decryptCredentialBundle as tkDecryptCredentialBundle,
  decryptExportBundle as tkDecryptExportBundle,
  encryptPrivateKeyToBundle,
  encryptWalletToBundle,
  generateP256KeyPair,
} from '@turnkey/crypto';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { base58 } from '@scure/base';
import {
  createCredentialBundle,
  createImportBundle,
  createPrivateKeyExportBundle,
  createWalletExportBundle,
  decryptCredentialBundle,
  decryptExportBundle,
  openEncryptedBundle,
  openImportedPrivateKey,
  openImportedWallet,
  signerPublicKeyHex,
  verifyEnvelope,
} from '../../src/crypto/bundles.js';
import { generateMnemonic } from '../../src/crypto/hd.js';
import { CryptoError } from '../../src/encoding/errors.js';
import { hex, loadVector, unhex } from './helpers.js';

const code = async (fn: () => unknown) => {
  try {
    await fn();
  } catch (e) {
    return e instanceof CryptoError ? e.code : `other: ${String(e)}`;
  }
  return undefined;
};

const signer = p256.utils.randomSecretKey();
const signerPub = signerPublicKeyHex(signer);
const ORG = 'f9a31c64-d604-42e4-9bef-a773096afad7';
const USER = '7d4a885d-4668-40c4-8f35-33301e11e7d5';

describe('wire-compat §4.7 vectors', () => {
  const v = loadVector<any>('turnkey/crypto_test_vectors.json');
  it('credential bundle decrypts to the known key', () => {
    const pt = decryptCredentialBundle(v.credentialBundle.bundle, unhex(v.credentialBundle.receiverPrivateKey));
    expect(hex(pt)).toBe(v.credentialBundle.plaintext);
  });
  it('the production-signed export bundle verifies and HPKE-opens to the mnemonic', () => {
    const b = v.exportBundle;
    const pt = decryptExportBundle(JSON.stringify(b.bundle), unhex(b.embeddedPrivateKey), b.organizationId, b.bundle.enclaveQuorumPublic);
    expect(new TextDecoder().decode(pt)).toBe(b.mnemonic);
  });
  it('and is rejected with another signer key or organization', async () => {
    const b = v.exportBundle;
    expect(await code(() => decryptExportBundle(JSON.stringify(b.bundle), unhex(b.embeddedPrivateKey), b.organizationId, signerPub))).toBe(
      'INVALID_BUNDLE',
    );
    expect(
      await code(() => decryptExportBundle(JSON.stringify(b.bundle), unhex(b.embeddedPrivateKey), 'other-org', b.bundle.enclaveQuorumPublic)),
    ).toBe('INVALID_BUNDLE');
    const tampered = { ...b.bundle, data: b.bundle.data.slice(0, -2) + '7e' };
    expect(await code(() => decryptExportBundle(JSON.stringify(tampered), unhex(b.embeddedPrivateKey), b.organizationId, b.bundle.enclaveQuorumPublic))).toBe(
      'INVALID_BUNDLE',
    );
  });
});

describe('export bundles → @turnkey/crypto decryptExportBundle', () => {
  it('wallet (mnemonic), uncompressed target key', async () => {
    const kp = generateP256KeyPair();
    const mnemonic = generateMnemonic(24);
    const bundle = createWalletExportBundle({ mnemonic, targetPublicKey: kp.publicKeyUncompressed, organizationId: ORG, signerPrivateKey: signer });
    const env = JSON.parse(bundle);
    expect(Object.keys(env)).toEqual(['version', 'data', 'dataSignature', 'enclaveQuorumPublic']);
    expect(env.version).toBe('v1.0.0');
    expect(env.enclaveQuorumPublic).toBe(hex(p256.getPublicKey(signer, false)));
    const data = JSON.parse(Buffer.from(env.data, 'hex').toString('utf8'));
    expect(Object.keys(data)).toEqual(['encappedPublic', 'ciphertext', 'organizationId']);
    // the signature is DER P-256 over SHA-256(data bytes), checked independently
    expect(p256.verify(unhex(env.dataSignature), sha256(unhex(env.data)), unhex(env.enclaveQuorumPublic), { prehash: false, format: 'der' })).toBe(true);
    const out = await tkDecryptExportBundle({
      exportBundle: bundle,
      embeddedKey: kp.privateKey,
      organizationId: ORG,
      returnMnemonic: true,
      dangerouslyOverrideSignerPublicKey: signerPub,
    });
    expect(out).toBe(mnemonic);
  });
  it('private key (hex) and Ed25519 key (SOLANA format), compressed target key', async () => {
    const kp = generateP256KeyPair();
    const sk = globalThis.crypto.getRandomValues(new Uint8Array(32));
    const bundle = createPrivateKeyExportBundle({ privateKey: sk, targetPublicKey: kp.publicKey, organizationId: ORG, signerPrivateKey: signer });
    const args = { exportBundle: bundle, embeddedKey: kp.privateKey, organizationId: ORG, dangerouslyOverrideSignerPublicKey: signerPub };
    expect(await tkDecryptExportBundle({ ...args, returnMnemonic: false })).toBe(hex(sk));
    const sol = await tkDecryptExportBundle({ ...args, returnMnemonic: false, keyFormat: 'SOLANA' });
    expect(hex(base58.decode(sol))).toBe(hex(sk) + hex(ed25519.getPublicKey(sk)));
  });
  it('the client rejects it without the override', async () => {
    const kp = generateP256KeyPair();
    const bundle = createPrivateKeyExportBundle({ privateKey: new Uint8Array(32).fill(1), targetPublicKey: kp.publicKeyUncompressed, organizationId: ORG, signerPrivateKey: signer });
    await expect(tkDecryptExportBundle({ exportBundle: bundle, embeddedKey: kp.privateKey, organizationId: ORG, returnMnemonic: false })).rejects.toThrow();
  });
  it('bad target keys are a typed error naming targetPublicKey', async () => {
    for (const t of ['zz', '04' + '00'.repeat(64), hex(new Uint8Array(33)), '']) {
      try {
        createPrivateKeyExportBundle({ privateKey: new Uint8Array(32).fill(1), targetPublicKey: t, organizationId: ORG, signerPrivateKey: signer });
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(CryptoError);
        expect((e as CryptoError).code).toBe('INVALID_PUBLIC_KEY');
        expect((e as CryptoError).field).toBe('targetPublicKey');
      }
    }
  });
});

describe('import bundles ← @turnkey/crypto encryptWalletToBundle / encryptPrivateKeyToBundle', () => {
  it('wallet', async () => {
    const target = createImportBundle({ organizationId: ORG, userId: USER, signerPrivateKey: signer });
    const env = JSON.parse(target.importBundle);
    expect(Object.keys(JSON.parse(Buffer.from(env.data, 'hex').toString()))).toEqual(['targetPublic', 'organizationId', 'userId']);
    expect(verifyEnvelope(target.importBundle, signerPub).targetPublic).toBe(hex(target.targetPublicKey));
    const mnemonic = generateMnemonic(12);
    const encryptedBundle = await encryptWalletToBundle({
      mnemonic,
      importBundle: target.importBundle,
      userId: USER,
      organizationId: ORG,
      dangerouslyOverrideSignerPublicKey: signerPub,
    });
    expect(openImportedWallet(encryptedBundle, target.targetPrivateKey)).toEqual({ mnemonic });
  });
  it('wallet with a passphrase line, and extra whitespace normalised', async () => {
    const target = createImportBundle({ organizationId: ORG, userId: USER, signerPrivateKey: signer });
    const mnemonic = generateMnemonic(15);
    const args = { importBundle: target.importBundle, userId: USER, organizationId: ORG, dangerouslyOverrideSignerPublicKey: signerPub };
    const eb = await encryptWalletToBundle({ ...args, mnemonic: `  ${mnemonic.replace(/ /g, '  ')} \nmy passphrase` });
    expect(openImportedWallet(eb, target.targetPrivateKey)).toEqual({ mnemonic, passphrase: 'my passphrase' });
    // and the export side carries it the same way
    const kp = generateP256KeyPair();
    const bundle = createWalletExportBundle({ mnemonic, passphrase: 'my passphrase', targetPublicKey: kp.publicKeyUncompressed, organizationId: ORG, signerPrivateKey: signer });
    const out = await tkDecryptExportBundle({ exportBundle: bundle, embeddedKey: kp.privateKey, organizationId: ORG, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: signerPub });
    expect(out).toBe(`${mnemonic}\nmy passphrase`);
  });
  it('private keys: HEXADECIMAL (secp256k1) and SOLANA (Ed25519)', async () => {
    const target = createImportBundle({ organizationId: ORG, userId: USER, signerPrivateKey: signer });
    const k = p256.utils.randomSecretKey();
    const eb = await encryptPrivateKeyToBundle({
      privateKey: '0x' + hex(k),
      keyFormat: 'HEXADECIMAL',
      importBundle: target.importBundle,
      userId: USER,
      organizationId: ORG,
      dangerouslyOverrideSignerPublicKey: signerPub,
    });
    expect(hex(openImportedPrivateKey(eb, target.targetPrivateKey, 'secp256k1'))).toBe(hex(k));
    const seed = ed25519.utils.randomSecretKey();
    const solSecret = base58.encode(new Uint8Array([...seed, ...ed25519.getPublicKey(seed)]));
    const eb2 = await encryptPrivateKeyToBundle({
      privateKey: solSecret,
      keyFormat: 'SOLANA',
      importBundle: target.importBundle,
      userId: USER,
      organizationId: ORG,
      dangerouslyOverrideSignerPublicKey: signerPub,
    });
    expect(hex(openImportedPrivateKey(eb2, target.targetPrivateKey, 'ed25519'))).toBe(hex(seed));
  });
  it('the client refuses a bundle for another user; we refuse bundles we cannot open', async () => {
    const target = createImportBundle({ organizationId: ORG, userId: USER, signerPrivateKey: signer });
    await expect(
      encryptWalletToBundle({ mnemonic: generateMnemonic(), importBundle: target.importBundle, userId: 'someone-else', organizationId: ORG, dangerouslyOverrideSignerPublicKey: signerPub }),
    ).rejects.toThrow();
    const other = createImportBundle({ organizationId: ORG, userId: USER, signerPrivateKey: signer });
    const eb = await encryptWalletToBundle({ mnemonic: generateMnemonic(), importBundle: other.importBundle, userId: USER, organizationId: ORG, dangerouslyOverrideSignerPublicKey: signerPub });
    expect(await code(() => openImportedWallet(eb, target.targetPrivateKey))).toBe('DECRYPTION_FAILED');
    expect(await code(() => openEncryptedBundle('not json', target.targetPrivateKey))).toBe('INVALID_BUNDLE');
    expect(await code(() => openEncryptedBundle('{"encappedPublic":"04","ciphertext":"00"}', target.targetPrivateKey))).toBe('INVALID_BUNDLE');
    expect(await code(() => openEncryptedBundle('{"ciphertext":"00"}', target.targetPrivateKey))).toBe('INVALID_BUNDLE');
    const good = JSON.parse(eb);
    expect(await code(() => openEncryptedBundle(JSON.stringify({ ...good, ciphertext: 'xyz' }), target.targetPrivateKey))).toBe('INVALID_BUNDLE');
    expect(await code(() => openEncryptedBundle(JSON.stringify({ ...good, ciphertext: good.ciphertext.slice(0, 20) }), other.targetPrivateKey))).toBe(
      'DECRYPTION_FAILED',
    );
    expect(hex(openEncryptedBundle(eb, other.targetPrivateKey)).length).toBeGreaterThan(0);
    expect(await code(() => verifyEnvelope(other.importBundle.replace(/"data":"[0-9a-f]{2}/, '"data":"zz'), signerPub))).toBe('INVALID_BUNDLE');
    expect(await code(() => verifyEnvelope('[]', signerPub))).toBe('INVALID_BUNDLE');
  });
  it('invalid payloads: non-mnemonic text, wrong key length / out of range', async () => {
    const target = createImportBundle({ organizationId: ORG, userId: USER, signerPrivateKey: signer });
    const args = { importBundle: target.importBundle, userId: USER, organizationId: ORG, dangerouslyOverrideSignerPublicKey: signerPub };
    const eb = await encryptWalletToBundle({ ...args, mnemonic: 'not a mnemonic at all' });
    expect(await code(() => openImportedWallet(eb, target.targetPrivateKey))).toBe('INVALID_MNEMONIC');
    const short = await encryptPrivateKeyToBundle({ ...args, privateKey: 'aa'.repeat(31), keyFormat: 'HEXADECIMAL' });
    expect(await code(() => openImportedPrivateKey(short, target.targetPrivateKey, 'secp256k1'))).toBe('INVALID_PRIVATE_KEY');
    const n = 'ffffffffffffffffffffffffffffffffbaaedce6af48a03bbfd25e8cd0364141';
    const big = await encryptPrivateKeyToBundle({ ...args, privateKey: n, keyFormat: 'HEXADECIMAL' });
    expect(await code(() => openImportedPrivateKey(big, target.targetPrivateKey, 'secp256k1'))).toBe('INVALID_PRIVATE_KEY');
  });
});

describe('credential bundles → @turnkey/crypto decryptCredentialBundle', () => {
  it('uncompressed and compressed target keys', () => {
    for (const compressed of [false, true]) {
      const kp = generateP256KeyPair();
      const apiKey = p256.utils.randomSecretKey();
      const bundle = createCredentialBundle(apiKey, compressed ? kp.publicKey : kp.publicKeyUncompressed);
      expect(tkDecryptCredentialBundle(bundle, kp.privateKey)).toBe(hex(apiKey));
      expect(hex(decryptCredentialBundle(bundle, unhex(kp.privateKey)))).toBe(hex(apiKey));
    }
  });
});
