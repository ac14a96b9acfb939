// import_wallet makes its key material before the write transaction, as create_wallet does
// (docs/server.md, "The request pipeline": nothing slow runs inside a transaction), and what it
// makes is the right key: accounts against an independent SLIP-10, one import per target under
// concurrent requests. Method for the first: test/server/writeprobe.ts counts open write callbacks of
// the SQLite unit of work around the Vault's calls.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { encryptWalletToBundle } from '@turnkey/crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { mnemonicToSeedSync } from '@scure/bip39';
import { startTestServer, submitBody, uniqueName, onSqlite, type TestServer } from '../server/harness.js';
import { probeKeyMaking } from '../server/writeprobe.js';

let ts: TestServer;
const calls = probeKeyMaking(['deriveAccounts', 'importWallet']);

beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(async () => { await ts?.stop(); });

const MN = 'test test test test test test test test test test test junk';

async function bundle(mnemonic = MN): Promise<string> {
  const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
  return await encryptWalletToBundle({
    mnemonic, importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey!,
  });
}
const importWith = (encryptedBundle: string, accounts: object[], walletName = uniqueName('imp')) =>
  ts.raw('/public/v1/submit/import_wallet', submitBody('ACTIVITY_TYPE_IMPORT_WALLET', ts.orgId, { userId: ts.rootUserId, walletName, encryptedBundle, accounts }));

describe.runIf(onSqlite)('import_wallet and the write transaction', () => {
  // Guards: import_wallet's PBKDF2 + BIP32 run in derive(), not while the write transaction is open.
  it('derives the imported wallet\'s accounts (PBKDF2 + BIP32) with no write open, as create_wallet does', async () => {
    const encryptedBundle = await bundle();
    const accounts = Array.from({ length: 40 }, (_, i) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: `m/44'/60'/0'/0/${i}`, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }));
    calls.length = 0;
    const r = await importWith(encryptedBundle, accounts);
    expect(r.status, r.text).toBe(200);
    const derive = calls.filter((c) => c.what === 'deriveAccounts');
    expect(derive.length).toBeGreaterThan(0);
    const inside = derive.filter((c) => c.insideWrite);
    expect(inside.map((c) => `${c.what} inside the write transaction (${c.ms.toFixed(1)} ms)`)).toEqual([]);
  });
});

describe('import targets under concurrent imports', () => {
  // Guards: derive() before the transaction does not let one target import twice; the requests whose plan went stale are refused.
  it('one target imports once even under concurrent requests with different bodies', async () => {
    const encryptedBundle = await bundle();
    const rs = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      importWith(encryptedBundle, [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }], uniqueName(`race-${i}`))));
    expect(rs.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
    for (const r of rs.filter((x) => x.status !== 200)) expect(r.json).toMatchObject({ code: 9, message: expect.stringContaining('no pending import') });
  });
});

// An independent SLIP-10 (https://github.com/satoshilabs/slips/blob/master/slip-0010.md) on noble.
function slip10(curve: 'p256' | 'ed25519', seed: Uint8Array, path: string): Uint8Array {
  const te = new TextEncoder();
  let I = hmac(sha512, te.encode(curve === 'p256' ? 'Nist256p1 seed' : 'ed25519 seed'), seed);
  const n = p256.Point.CURVE().n;
  const num = (b: Uint8Array) => BigInt('0x' + bytesToHex(b));
  while (curve === 'p256' && (num(I.slice(0, 32)) === 0n || num(I.slice(0, 32)) >= n)) I = hmac(sha512, te.encode('Nist256p1 seed'), I);
  let k = I.slice(0, 32), c = I.slice(32);
  for (const part of path.split('/').slice(1)) {
    const hard = /['hH]$/.test(part);
    const i = (Number.parseInt(part, 10) + (hard ? 2 ** 31 : 0)) >>> 0;
    const ser = new Uint8Array(4); new DataView(ser.buffer).setUint32(0, i);
    const data = hard ? new Uint8Array([0, ...k, ...ser]) : new Uint8Array([...p256.getPublicKey(k, true), ...ser]);
    let J = hmac(sha512, c, data);
    if (curve === 'ed25519') { k = J.slice(0, 32); c = J.slice(32); continue; }
    for (;;) {
      const il = num(J.slice(0, 32)); const child = (il + num(k)) % n;
      if (il < n && child !== 0n) { k = Uint8Array.from(child.toString(16).padStart(64, '0').match(/../g)!.map((x) => parseInt(x, 16))); c = J.slice(32); break; }
      J = hmac(sha512, c, new Uint8Array([1, ...J.slice(32), ...ser]));
    }
  }
  return curve === 'p256' ? p256.getPublicKey(k, true) : ed25519.getPublicKey(k);
}

describe('derivation of imported accounts against an independent SLIP-10', () => {
  // Guards: the accounts derive() plans for an import are the right keys for P-256 (hardened and not) and Ed25519.
  it('P-256 (hardened and unhardened) and Ed25519 accounts of an imported wallet', async () => {
    const paths = { p256: ["m/44'/60'/0'/0/0", 'm/0/1/2', "m/1'/2'/3"], ed25519: ["m/44'/501'/0'/0'", "m/0'/1'/2'/3'"] };
    const accounts = [
      ...paths.p256.map((path) => ({ curve: 'CURVE_P256', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_COMPRESSED' })),
      ...paths.ed25519.map((path) => ({ curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_COMPRESSED' })),
    ];
    const r = await importWith(await bundle(), accounts);
    expect(r.status, r.text).toBe(200);
    const seed = mnemonicToSeedSync(MN);
    const expected = [...paths.p256.map((p) => bytesToHex(slip10('p256', seed, p))), ...paths.ed25519.map((p) => bytesToHex(slip10('ed25519', seed, p)))];
    expect(r.json.activity.result.importWalletResult.addresses).toEqual(expected);
  });
});
