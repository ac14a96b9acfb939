// Quick differential smoke check of the wasm core against @noble/curves (the full suites live
// in the other test/core files).
import { describe, it, expect } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { core, CoreError } from '../../src/core/node.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const CURVES = [['secp256k1', secp256k1], ['p256', p256]] as const;

describe.each(CURVES)('core smoke: %s', (name, noble) => {
  const c = core[name];
  it('getPublicKey, sign, verify, recover, ecdh agree with noble', () => {
    for (let i = 0; i < 50; i++) {
      const sk = noble.utils.randomSecretKey();
      const dg = randomBytes(32);
      expect(hex(c.getPublicKey(sk))).toBe(hex(noble.getPublicKey(sk)));
      expect(hex(c.getPublicKey(sk, false))).toBe(hex(noble.getPublicKey(sk, false)));
      const s = c.sign(dg, sk);
      const sn = noble.sign(dg, sk, { prehash: false, format: 'recovered' });
      expect(hex(s.signature)).toBe(hex(sn.subarray(1)));
      expect(s.recovery).toBe(sn[0]);
      const pk = c.getPublicKey(sk);
      expect(c.verify(s.signature, dg, pk)).toBe(true);
      dg[3] ^= 0x10;
      expect(c.verify(s.signature, dg, pk)).toBe(false);
      dg[3] ^= 0x10;
      expect(hex(c.recoverPublicKey(dg, s.signature, s.recovery))).toBe(hex(pk));
      const other = noble.utils.randomSecretKey();
      expect(hex(c.ecdh(sk, noble.getPublicKey(other)))).toBe(hex(noble.getSharedSecret(sk, noble.getPublicKey(other)).subarray(1)));
    }
  });
  it('batch equals single', () => {
    const keys = Array.from({ length: 20 }, () => noble.utils.randomSecretKey());
    const dgs = keys.map(() => randomBytes(32));
    const b = c.signBatch(dgs, keys);
    b.forEach((s, i) => expect(hex(s.signature)).toBe(hex(c.sign(dgs[i]!, keys[i]!).signature)));
  });
  it('rejects bad keys with typed errors', () => {
    expect(() => c.getPublicKey(new Uint8Array(32))).toThrow(CoreError);
    expect(() => c.sign(new Uint8Array(31), new Uint8Array(32).fill(1))).toThrow(/digest/);
  });
});

describe('core hashes smoke', () => {
  it('sha256 / hmac match node:crypto', () => {
    const d = randomBytes(1000);
    const k = randomBytes(100);
    expect(hex(core.sha256(d))).toBe(createHash('sha256').update(d).digest('hex'));
    expect(hex(core.hmacSha256(k, d))).toBe(createHmac('sha256', k).update(d).digest('hex'));
  });
});
