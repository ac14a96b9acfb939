// RFC 6979 deterministic signatures: RFC 6979 A.2.5 (P-256) and noble-curves' secp256k1 vectors.
import { describe, it, expect } from 'vitest';
import { secp256k1 as nobleK1 } from '@noble/curves/secp256k1.js';
import { core } from './build.js';
import { loadVector, unhex, hex, sha256, bytesToBig, bigToBytes, PARAMS, expectCoreError } from './util.js';

describe('RFC 6979 A.2.5 — P-256 with SHA-256', () => {
  const v = loadVector<any>('rfc6979/p256_sha256_rfc6979.json');
  const d = unhex(v.privateKey);

  it('public key from the private key', () => {
    expect(hex(core.p256.getPublicKey(d, false))).toBe(v.publicKey.uncompressed);
    const y = BigInt('0x' + v.publicKey.y);
    expect(hex(core.p256.getPublicKey(d))).toBe((y & 1n ? '03' : '02') + v.publicKey.x);
    expect(hex(core.p256.getPublicKey(d, true))).toBe((y & 1n ? '03' : '02') + v.publicKey.x);
  });

  for (const t of v.tests) {
    it(`"${t.message}": exact r‖s with lowS:false, normalised s by default, verifies`, () => {
      const digest = core.sha256(new TextEncoder().encode(t.message));
      expect(hex(digest)).toBe(t.msgHash);
      const raw = core.p256.sign(digest, d, { lowS: false });
      expect(hex(raw.signature)).toBe(t.r + t.s);
      expect([0, 1, 2, 3]).toContain(raw.recovery);

      const n = PARAMS.p256.n;
      const s = BigInt('0x' + t.s);
      const lowS = s > n >> 1n ? n - s : s;
      const def = core.p256.sign(digest, d);
      expect(hex(def.signature)).toBe(t.r + hex(bigToBytes(lowS)));
      // flipping s flips the parity of R's y, hence the recovery bit
      if (lowS !== s) expect(def.recovery).toBe(raw.recovery ^ 1);
      else expect(def.recovery).toBe(raw.recovery);

      const pub = unhex(v.publicKey.uncompressed);
      expect(core.p256.verify(raw.signature, digest, pub)).toBe(true);
      expect(core.p256.verify(def.signature, digest, pub)).toBe(true);
      expect(hex(core.p256.recoverPublicKey(digest, raw.signature, raw.recovery, false))).toBe(v.publicKey.uncompressed);
    });
  }
});

describe('secp256k1 RFC 6979 vectors (noble-curves ecdsa.json)', () => {
  const v = loadVector<any>('rfc6979/secp256k1_ecdsa_noble.json');

  it(`all ${v.valid.length} valid vectors sign exactly, verify and recover`, () => {
    const failures: string[] = [];
    for (const t of v.valid) {
      const d = unhex(t.d);
      const m = unhex(t.m);
      const got = core.secp256k1.sign(m, d);
      if (hex(got.signature) !== t.signature) {
        failures.push(`d#${failures.length} m=${t.m}: expected ${t.signature}, got ${hex(got.signature)}`);
        continue;
      }
      const pub = core.secp256k1.getPublicKey(d);
      if (!core.secp256k1.verify(got.signature, m, pub)) failures.push(`m=${t.m}: own signature does not verify`);
      if (hex(core.secp256k1.recoverPublicKey(m, got.signature, got.recovery)) !== hex(pub)) failures.push(`m=${t.m}: recovery mismatch`);
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(v.valid.length).toBe(2019);
  });

  it('extraEntropy (RFC 6979 §3.6 additional data) vectors', () => {
    const ents = [
      '0000000000000000000000000000000000000000000000000000000000000000',
      '0000000000000000000000000000000000000000000000000000000000000001',
      '6e723d3fd94ed5d2b6bdd4f123364b0f3ca52af829988a63f8afe91d29db1c33',
      'fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141',
      'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
    ];
    const keys = ['extraEntropy0', 'extraEntropy1', 'extraEntropyRand', 'extraEntropyN', 'extraEntropyMax'];
    expect(v.extraEntropy.length).toBe(5);
    for (const t of v.extraEntropy) {
      const d = unhex(t.d);
      const m = unhex(t.m);
      expect(hex(core.secp256k1.sign(m, d).signature)).toBe(t.signature);
      keys.forEach((k, i) => {
        expect(hex(core.secp256k1.sign(m, d, { extraEntropy: unhex(ents[i]) }).signature), k).toBe(t[k]);
      });
    }
  });

  it('invalid.sign: bad private keys are refused', () => {
    expect(v.invalid.sign.length).toBeGreaterThan(0);
    for (const t of v.invalid.sign) {
      expectCoreError(() => core.secp256k1.sign(unhex(t.m), unhex(t.d)), 'INVALID_PRIVATE_KEY');
      expect(core.secp256k1.isValidPrivateKey(unhex(t.d))).toBe(false);
    }
  });

  it('invalid.verify: bad points, zero r/s and strict high-s are refused', () => {
    expect(v.invalid.verify.length).toBeGreaterThan(0);
    for (const t of v.invalid.verify) {
      const Q = unhex(t.Q);
      const m = unhex(t.m);
      const sig = unhex(t.signature);
      expect(core.secp256k1.verify(sig, m, Q, { lowS: true }), t.description).toBe(false);
      if (!t.strict) expect(core.secp256k1.verify(sig, m, Q), t.description).toBe(false);
      if (t.exception === 'Expected Point') {
        expect(core.secp256k1.isValidPublicKey(Q), t.description).toBe(false);
        expectCoreError(() => core.secp256k1.convertPublicKey(Q, true), ['INVALID_PUBLIC_KEY', 'INVALID_LENGTH']);
      }
      if (t.strict) {
        // the same signature is a valid high-s signature when high-s is allowed (oracle: noble, lowS:false)
        const oracle = nobleK1.verify(sig, m, Q, { prehash: false, lowS: false });
        expect(oracle).toBe(true);
        expect(core.secp256k1.verify(sig, m, Q)).toBe(oracle);
      }
    }
  });
});

describe('secp256k1 RFC 6979 nonces (noble-curves rfc6979.json)', () => {
  it('the r of sign(SHA-256(message)) is x(k0·G) mod n for the published nonce k0', () => {
    const v = loadVector<any[]>('rfc6979/secp256k1_rfc6979_nonces_noble.json');
    expect(v.length).toBe(10);
    const G = nobleK1.Point.BASE;
    for (const t of v) {
      const digest = sha256(new TextEncoder().encode(t.message));
      const k0 = BigInt('0x' + t.k0);
      const r = G.multiply(k0).toAffine().x % PARAMS.secp256k1.n;
      const sig = core.secp256k1.sign(digest, unhex(t.d.padStart(64, '0')), { lowS: false });
      expect(bytesToBig(sig.signature.subarray(0, 32)), t.message).toBe(r);
    }
  });
});
