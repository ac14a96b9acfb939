// The opt-in signing worker pool (SIGN_WORKERS): byte-identical to the core's batch path on the
// request thread, and through the API. Workers run the built script (dist/src/crypto/signworker.js,
// produced by `npm run build:ts`, which `npm test` runs first).
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { SignPool } from '../../src/crypto/signpool.js';
import { generatePrivateKey, signDigests } from '../../src/crypto/index.js';
import { startTestServer, type TestServer } from '../server/harness.js';

const pools: SignPool[] = [];
let ts: TestServer | undefined;
afterAll(async () => { for (const p of pools) p.close(); await ts?.stop(); });

describe('SignPool', () => {
  it('has its workers (the built worker script exists) and they start', async () => {
    const pool = new SignPool(2);
    pools.push(pool);
    expect(pool.size, 'dist/src/crypto/signworker.js missing: run `npm run build:ts`').toBe(2);
    expect(await pool.whenReady()).toBe(2);
  });

  it.each([['secp256k1', secp256k1], ['p256', p256]] as const)('%s: same signatures as the request-thread batch path, every size', async (curve, lib) => {
    const pool = new SignPool(2);
    pools.push(pool);
    await pool.whenReady();
    const sk = generatePrivateKey(curve);
    const pub = lib.getPublicKey(sk, true);
    for (const n of [1, 7, 8, 9, 100, 333]) {
      const digests = Array.from({ length: n }, () => new Uint8Array(randomBytes(32)));
      const a = pool.signDigests(curve, digests, sk);
      const b = signDigests(curve, digests, sk);
      expect(a.map((s) => bytesToHex(s.signature) + s.recovery)).toEqual(b.map((s) => bytesToHex(s.signature) + s.recovery));
      a.forEach((s, i) => expect(lib.verify(s.signature, digests[i]!, pub, { prehash: false })).toBe(true));
    }
    // bad input is refused like the core's (no worker involved)
    expect(() => pool.signDigests(curve, [new Uint8Array(31)], sk)).toThrow();
  });

  it('a closed pool signs on the calling thread', async () => {
    const pool = new SignPool(1);
    await pool.whenReady();
    pool.close();
    const sk = generatePrivateKey('secp256k1');
    const digests = Array.from({ length: 20 }, () => new Uint8Array(randomBytes(32)));
    expect(pool.signDigests('secp256k1', digests, sk).map((s) => bytesToHex(s.signature))).toEqual(signDigests('secp256k1', digests, sk).map((s) => bytesToHex(s.signature)));
  });
});

describe('sign_raw_payloads with SIGN_WORKERS', () => {
  it('a server started with signWorkers: 1 signs batches correctly (every signature verifies, v recovers the key)', async () => {
    ts = await startTestServer({ signWorkers: 1 });
    const k = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'pooled', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    const id = k.privateKeys[0]!.privateKeyId!;
    const pub = (await ts.sdk.getPrivateKey({ privateKeyId: id })).privateKey.publicKey;
    await new Promise((r) => setTimeout(r, 500)); // let the worker load its core
    const payloads = Array.from({ length: 200 }, () => randomBytes(32).toString('hex'));
    const out = await ts.sdk.signRawPayloads({ signWith: id, payloads, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(out.signatures).toHaveLength(200);
    out.signatures!.forEach((s, i) => {
      const compact = hexToBytes(s.r! + s.s!);
      expect(secp256k1.verify(compact, hexToBytes(payloads[i]!), hexToBytes(pub), { prehash: false })).toBe(true);
      const rec = secp256k1.Signature.fromBytes(compact).addRecoveryBit(Number(s.v)).recoverPublicKey(hexToBytes(payloads[i]!));
      expect(bytesToHex(rec.toBytes(true))).toBe(pub);
    });
  });
});
