// Log lines of key-material operations (imports good and bad, exports, signing) carry no key material
// (test/server/logs.test.ts covers stamps, bodies and API keys; this one the keys the server holds).
import { describe, it, expect, afterAll } from 'vitest';
import { encryptPrivateKeyToBundle, encryptWalletToBundle, generateP256KeyPair, decryptExportBundle } from '@turnkey/crypto';
import { captureLogLines, startTestServer, submitBody, type TestServer } from './harness.js';

let ts: TestServer | undefined;
afterAll(async () => { await ts?.stop(); });
const MN = 'legal winner thank year wave sausage worth useful legal winner thank yellow';
const BAD = 'legal winner thank year wave sausage worth useful legal winner thank thank';
const KEY = '4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318';
const eth = (path: string) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });

describe('log lines of key operations', () => {
  // Guards: no mnemonic, passphrase, imported or exported private key reaches a log line, on success or failure.
  it('hold no mnemonic, private key or exported plaintext', async () => {
    const { lines, restore } = captureLogLines();
    const seen: string[] = [MN, BAD, KEY, 'sausage worth', 'legal winner'];
    try {
      ts = await startTestServer({ logLevel: 'debug' });
      const s = ts; const signer = s.server.bootstrap.signerPublicKey!;
      const sub = (p: string, t: string, params: object) => s.raw(`/public/v1/submit/${p}`, submitBody(t, s.orgId, params));
      for (const m of [MN, BAD, `${MN}\nhunter2-passphrase`]) {
        const init = await s.sdk.initImportWallet({ userId: s.rootUserId });
        const eb = await encryptWalletToBundle({ mnemonic: m, importBundle: init.importBundle, userId: s.rootUserId, organizationId: s.orgId, dangerouslyOverrideSignerPublicKey: signer });
        await sub('import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: s.rootUserId, walletName: 'w' + Math.random(), encryptedBundle: eb, accounts: [eth("m/44'/60'/0'/0/0")] });
        await sub('import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: s.rootUserId, walletName: 'w' + Math.random(), encryptedBundle: eb, accounts: [eth("m/44'/60'/0'/0/0")] });
      }
      seen.push('hunter2-passphrase');
      for (const [k, c] of [[KEY, 'CURVE_SECP256K1'], ['ff'.repeat(32), 'CURVE_SECP256K1'], [KEY, 'CURVE_ED25519']]) {
        const init = await s.sdk.initImportPrivateKey({ userId: s.rootUserId });
        const eb = await encryptPrivateKeyToBundle({ privateKey: k!, keyFormat: 'HEXADECIMAL', importBundle: init.importBundle, userId: s.rootUserId, organizationId: s.orgId, dangerouslyOverrideSignerPublicKey: signer });
        await sub('import_private_key', 'ACTIVITY_TYPE_IMPORT_PRIVATE_KEY', { userId: s.rootUserId, privateKeyName: 'k' + Math.random(), encryptedBundle: eb, curve: c, addressFormats: [] });
      }
      const w: any = await s.sdk.createWallet({ walletName: 'gen', accounts: [eth("m/44'/60'/0'/0/0")] } as any);
      const kp = generateP256KeyPair();
      const ex: any = await s.sdk.exportWallet({ walletId: w.walletId, targetPublicKey: kp.publicKeyUncompressed } as any);
      const gen = await decryptExportBundle({ exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: s.orgId, returnMnemonic: true, dangerouslyOverrideSignerPublicKey: signer });
      seen.push(gen, gen.split(' ').slice(0, 3).join(' '));
      const exa: any = await s.sdk.exportWalletAccount({ address: w.addresses[0], targetPublicKey: kp.publicKeyUncompressed } as any);
      const acctKey = await decryptExportBundle({ exportBundle: exa.exportBundle, embeddedKey: kp.privateKey, organizationId: s.orgId, returnMnemonic: false, dangerouslyOverrideSignerPublicKey: signer });
      seen.push(acctKey);
      await sub('sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { signWith: w.addresses[0], payload: 'zz', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
      await sub('export_wallet', 'ACTIVITY_TYPE_EXPORT_WALLET', { walletId: w.walletId, targetPublicKey: '04' + '11'.repeat(64) });
    } finally {
      restore();
    }
    const text = lines.join('');
    expect(text.length).toBeGreaterThan(0);
    for (const x of seen) {
      expect(text.includes(x), `log holds ${x.slice(0, 12)}…`).toBe(false);
      expect(text.toLowerCase().includes(x.toLowerCase()), `log holds ${x.slice(0, 12)}… (any case)`).toBe(false);
    }
  });
});
