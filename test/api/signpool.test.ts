// The signing threads (SIGN_WORKERS, src/crypto/signpool.ts): the same results and the same
// errors as the Vault on the calling thread, through the pool directly and through the API, and
// a signature made before the transaction is never used once its key is gone. Workers run the
// built script (dist/src/crypto/signworker.js, produced by `npm run build:ts`, which `npm test`
// runs first).
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { serializeTransaction } from 'viem';
import { CryptoError, generatePrivateKey, Vault, type CurveId } from '../../src/crypto/index.js';
import type { SignJob } from '../../src/crypto/signjob.js';
import { startTestServer, submitBody, type TestServer } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

const vaults: Vault[] = [];
const servers: TestServer[] = [];
afterAll(async () => {
  for (const v of vaults) v.close();
  for (const s of servers) await s.stop();
});

const hex = (n: number) => randomBytes(n).toString('hex');
const ctx = { kind: 'private_key', organizationId: 'org', recordId: 'key' };
// An unsigned EIP-1559 transaction, serialized by viem.
const UNSIGNED_1559 = serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 0, to: `0x${'11'.repeat(20)}`, value: 1n, gas: 21000n, maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n }).slice(2);

async function pooled(threads: number): Promise<Vault> {
  const v = new Vault(new Uint8Array(randomBytes(32)));
  vaults.push(v);
  const pool = v.useWorkers(threads)!;
  expect(pool.size, 'dist/src/crypto/signworker.js missing: run `npm run build:ts`').toBe(threads);
  expect(await pool.whenReady()).toBe(threads);
  return v;
}

/** The job's outcome on a signing thread and on this thread: both values, or both errors as {code, field}. */
async function both(v: Vault, sealed: Uint8Array, job: SignJob, c = ctx) {
  const outcome = (f: () => unknown) => { try { return { value: f() }; } catch (e) { return { error: e }; } };
  const here = outcome(() => v.sign(sealed, c, job));
  let there: { value?: unknown; error?: unknown };
  try { there = { value: await v.signOffThread(sealed, c, job) }; } catch (e) { there = { error: e }; }
  const shape = (o: { value?: unknown; error?: unknown }) => (o.error instanceof CryptoError ? { code: o.error.code, field: o.error.field, message: o.error.message } : o);
  return { here: shape(here), there: shape(there) };
}

describe('SignPool through Vault.signOffThread', () => {
  it('a Vault without threads has no off-thread path', () => {
    const v = new Vault(new Uint8Array(randomBytes(32)));
    expect(v.signOffThread(v.seal(generatePrivateKey('secp256k1'), ctx), ctx, { op: 'payload', curve: 'secp256k1', request: { payload: hex(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' } })).toBeUndefined();
  });

  it.each(['secp256k1', 'p256', 'ed25519'] as CurveId[])('%s: sign_raw_payload and batches of every size give what the calling thread gives', async (curve) => {
    const v = await pooled(2);
    const sealed = v.seal(generatePrivateKey(curve), ctx);
    const hashFunction = curve === 'ed25519' ? 'HASH_FUNCTION_NOT_APPLICABLE' : 'HASH_FUNCTION_SHA256';
    const r = await both(v, sealed, { op: 'payload', curve, request: { payload: 'hello kmas', encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction } });
    expect(r.there).toEqual(r.here);
    expect((r.here as { value: { r: string } }).value.r).toMatch(/^[0-9a-f]{64}$/);
    for (const n of [1, 15, 16, 17, 100, 333]) {
      const payloads = Array.from({ length: n }, () => hex(40));
      const b = await both(v, sealed, { op: 'payloads', curve, payloads, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction });
      expect(b.there).toEqual(b.here);
      expect((b.here as { value: unknown[] }).value).toHaveLength(n);
    }
  });

  it('sign_transaction gives the same signed transaction; a P-256 key is refused the same way', async () => {
    const v = await pooled(1);
    const k1 = v.seal(generatePrivateKey('secp256k1'), ctx);
    const t = await both(v, k1, { op: 'transaction', curve: 'secp256k1', unsignedTransaction: UNSIGNED_1559 });
    expect(t.there).toEqual(t.here);
    expect((t.here as { value: string }).value).toMatch(/^02f8/);
    const p = await both(v, v.seal(generatePrivateKey('p256'), ctx), { op: 'transaction', curve: 'p256', unsignedTransaction: UNSIGNED_1559 });
    expect(p.there).toEqual(p.here);
    expect(p.here).toMatchObject({ code: 'UNSUPPORTED_COMBINATION' });
  });

  it('errors are the calling thread\'s: a bad payload deep in a split batch names its index in the whole batch; a wrong context cannot open the key', async () => {
    const v = await pooled(2);
    const sealed = v.seal(generatePrivateKey('secp256k1'), ctx);
    const payloads = Array.from({ length: 300 }, () => hex(32));
    payloads[217] = 'zz';
    const b = await both(v, sealed, { op: 'payloads', curve: 'secp256k1', payloads, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(b.there).toEqual(b.here);
    expect(b.here).toMatchObject({ field: 'payloads[217]' });
    const wrong = await both(v, sealed, { op: 'payload', curve: 'secp256k1', request: { payload: hex(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' } }, { ...ctx, recordId: 'other' });
    expect(wrong.there).toEqual(wrong.here);
    expect(wrong.here).toMatchObject({ code: 'DECRYPTION_FAILED' });
  });

  it('a closed pool refuses (SIGN_FAILED) instead of hanging', async () => {
    const v = await pooled(1);
    const pool = v.pool!;
    const sealed = v.seal(generatePrivateKey('secp256k1'), ctx);
    pool.close();
    await expect(pool.run(sealed, ctx, { op: 'payload', curve: 'secp256k1', request: { payload: hex(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' } }))
      .rejects.toMatchObject({ code: 'SIGN_FAILED' });
  });
});

describe('signing through the API with and without signing threads', () => {
  it('signWorkers 1 and 0 give byte-identical signatures (RFC 6979) for sign_raw_payload, sign_raw_payloads and sign_transaction', async () => {
    const server = async (signWorkers: number) => {
      const ts = await startTestServer({ signWorkers });
      servers.push(ts);
      return ts;
    };
    const [a, b] = await Promise.all([server(1), server(0)]);
    // The same key in both: imported from one mnemonic.
    const words = 'test test test test test test test test test test test junk';
    const addresses: string[] = [];
    for (const ts of [a, b]) {
      const { encryptWalletToBundle } = await import('@turnkey/crypto');
      const init = await ts.sdk.initImportWallet({ userId: ts.rootUserId });
      const bundle = await encryptWalletToBundle({ mnemonic: words, importBundle: init.importBundle, userId: ts.rootUserId, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey! });
      const w = await ts.sdk.importWallet({ userId: ts.rootUserId, walletName: 'w', encryptedBundle: bundle, accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] });
      addresses.push(w.addresses[0]!);
    }
    expect(addresses[0]).toBe(addresses[1]);
    const signWith = addresses[0]!;
    const payloads = Array.from({ length: 120 }, () => hex(32));
    const run = async (ts: TestServer) => ({
      one: await ts.sdk.signRawPayload({ signWith, payload: payloads[0]!, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }),
      many: await ts.sdk.signRawPayloads({ signWith, payloads, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }),
      tx: await ts.sdk.signTransaction({ signWith, unsignedTransaction: UNSIGNED_1559, type: 'TRANSACTION_TYPE_ETHEREUM' }),
    });
    const [ra, rb] = [await run(a), await run(b)];
    expect({ r: ra.one.r, s: ra.one.s, v: ra.one.v }).toEqual({ r: rb.one.r, s: rb.one.s, v: rb.one.v });
    expect(ra.many.signatures).toEqual(rb.many.signatures);
    expect(ra.tx.signedTransaction).toBe(rb.tx.signedTransaction);
    // and they are right: every batch signature recovers the account's key
    const pub = (await a.sdk.getWalletAccount({ walletId: (await a.sdk.getWallets()).wallets[0]!.walletId, address: signWith })).account.publicKey!;
    ra.many.signatures!.forEach((s, i) => {
      const rec = secp256k1.Signature.fromBytes(hexToBytes(s.r! + s.s!)).addRecoveryBit(Number(s.v)).recoverPublicKey(hexToBytes(payloads[i]!));
      expect(bytesToHex(rec.toBytes(true))).toBe(pub);
    });
  });

  it('a signature made before the transaction is not used once its key is deleted: no sign activity completes after the delete', async () => {
    const ts = await startTestServer({ signWorkers: 1 });
    servers.push(ts);
    const k = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'doomed', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    const id = k.privateKeys[0]!.privateKeyId!;
    // sign_raw_payloads signs before its transaction when requests overlap (sign_raw_payload, one signature, signs inside it)
    const sign = () => ts.sdk.signRawPayloads({ signWith: id, payloads: [hex(32), hex(32)], encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' })
      .then(() => 'signed', (e: unknown) => String((e as Error).message));
    const before = Array.from({ length: 20 }, sign);
    const del = ts.sdk.deletePrivateKeys({ privateKeyIds: [id], deleteWithoutExport: true });
    const after = Array.from({ length: 20 }, sign);
    const outcomes = await Promise.all([...before, ...after]);
    await del;
    expect(outcomes.every((o) => o === 'signed' || /not|no private key/i.test(o))).toBe(true);
    // Activities newest first: every completed signature was committed before the delete.
    const { activities } = await ts.sdk.getActivities({ paginationOptions: { limit: '100' } });
    const order = activities.map((x) => x.type);
    const delAt = order.indexOf('ACTIVITY_TYPE_DELETE_PRIVATE_KEYS');
    expect(delAt).toBeGreaterThanOrEqual(0);
    const newer = activities.slice(0, delAt).filter((x) => x.type === 'ACTIVITY_TYPE_SIGN_RAW_PAYLOADS' && x.status === 'ACTIVITY_STATUS_COMPLETED');
    expect(newer).toEqual([]);
    // and a sign after the delete is refused
    expect(await sign()).not.toBe('signed');
  });

  it('on the signing-thread path a bad stamp is still a 401 (also with a bad body or timestamp) and stores nothing', async () => {
    const ts = await startTestServer({ signWorkers: 1 });
    servers.push(ts);
    const k = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'stamped', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    const id = k.privateKeys[0]!.privateKeyId!;
    const before = (await ts.sdk.getActivities({ paginationOptions: { limit: '100' } })).activities.length;
    const body = (ms = Date.now()) => submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', ts.orgId,
      { signWith: id, payloads: [hex(32), hex(32)], encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' }, String(ms));
    const path = SUBMIT('sign_raw_payloads');
    // Every request is sent at once, so the server sees them together and takes the thread path.
    const kinds = Array.from({ length: 48 }, (_, i) => (['good', 'forged', 'forged-json', 'forged-old'] as const)[i % 4]);
    const replies = await Promise.all(kinds.map((kind) => {
      if (kind === 'good') return ts.raw(path, body());
      if (kind === 'forged') { const b = body(); return ts.raw(path, b, { stampedBody: `${b} ` }); }
      if (kind === 'forged-json') return ts.raw(path, '{"organizationId": ', { stampedBody: '{}' });
      return ts.raw(path, body(Date.now() - 3_600_000), { stampedBody: 'other bytes' });
    }));
    replies.forEach((r, i) => {
      if (kinds[i] === 'good') {
        expect(r.status).toBe(200);
        expect(r.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      } else {
        expect(r.status, `${kinds[i]}: ${r.text}`).toBe(401);
        expect(r.text).toMatch(/SIGNATURE_INVALID|does not verify/);
      }
    });
    const after = (await ts.sdk.getActivities({ paginationOptions: { limit: '100' } })).activities.length;
    expect(after - before).toBe(kinds.filter((x) => x === 'good').length);
  });
});
