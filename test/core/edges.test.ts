// Edge inputs: boundary keys, boundary digests, invalid points and malformed arguments.
import { describe, it, expect } from 'vitest';
import { CoreError } from '../../src/core/node.js';
import { core } from './build.js';
import { CURVES, NOBLE, PARAMS, Rng, hex, unhex, bigToBytes, bytesToBig, expectCoreError, joinSig, rsToDer } from './util.js';

const KEY_CODES = ['INVALID_PRIVATE_KEY'];
const KEY_LEN_CODES = ['INVALID_PRIVATE_KEY', 'INVALID_LENGTH'];
const PUB_CODES = ['INVALID_PUBLIC_KEY'];
const PUB_LEN_CODES = ['INVALID_PUBLIC_KEY', 'INVALID_LENGTH'];
const DIGEST_LEN_CODES = ['INVALID_DIGEST', 'INVALID_LENGTH'];

for (const curve of CURVES) {
  const cc = core[curve];
  const noble = NOBLE[curve];
  const { n, p } = PARAMS[curve];
  const rng = new Rng(curve === 'p256' ? 256 : 1);
  const digest = rng.bytes(32);
  const goodKey = rng.privateKey(curve);
  const goodPub = cc.getPublicKey(goodKey);

  describe(`edges — ${curve}`, () => {
    it('names itself', () => {
      expect(cc.name).toBe(curve);
    });

    it('keys 1, 2 and n−1 work and match noble', () => {
      for (const k of [1n, 2n, n - 1n, n >> 1n, (n >> 1n) + 1n]) {
        const key = bigToBytes(k);
        expect(cc.isValidPrivateKey(key)).toBe(true);
        const P = noble.Point.BASE.multiply(k);
        expect(hex(cc.getPublicKey(key))).toBe(hex(P.toBytes(true)));
        expect(hex(cc.getPublicKey(key, false))).toBe(hex(P.toBytes(false)));
        const exp = noble.sign(digest, key, { prehash: false, format: 'recovered' });
        const got = cc.sign(digest, key);
        expect(hex(got.signature)).toBe(hex(exp.subarray(1)));
        expect(got.recovery).toBe(exp[0]);
        expect(cc.verify(got.signature, digest, P.toBytes(true))).toBe(true);
      }
      // (n−1)·G = −G: same x as G, opposite y parity
      const g = cc.getPublicKey(bigToBytes(1n));
      const ng = cc.getPublicKey(bigToBytes(n - 1n));
      expect(hex(ng.subarray(1))).toBe(hex(g.subarray(1)));
      expect(ng[0] ^ g[0]).toBe(1);
    });

    it('keys 0, n, n+1, 2^256−1 are refused everywhere with INVALID_PRIVATE_KEY', () => {
      for (const k of [0n, n, n + 1n, (1n << 256n) - 1n]) {
        const key = bigToBytes(k);
        expect(cc.isValidPrivateKey(key)).toBe(false);
        expectCoreError(() => cc.sign(digest, key), KEY_CODES);
        expectCoreError(() => cc.getPublicKey(key), KEY_CODES);
        expectCoreError(() => cc.getPublicKey(key, false), KEY_CODES);
        expectCoreError(() => cc.ecdh(key, goodPub), KEY_CODES);
        expectCoreError(() => cc.signBatch([digest], key), KEY_CODES);
        expectCoreError(() => cc.privateKeyTweakAdd(key, bigToBytes(1n)), KEY_CODES);
      }
    });

    it('private keys of the wrong length are refused', () => {
      for (const len of [0, 1, 31, 33, 64]) {
        const key = new Uint8Array(len).fill(1);
        expect(cc.isValidPrivateKey(key)).toBe(false);
        expectCoreError(() => cc.sign(digest, key), KEY_LEN_CODES);
        expectCoreError(() => cc.getPublicKey(key), KEY_LEN_CODES);
        expectCoreError(() => cc.ecdh(key, goodPub), KEY_LEN_CODES);
      }
    });

    it('digest 0 and digests ≥ n sign like noble; digest n ≡ digest 0', () => {
      const zero = new Uint8Array(32);
      const cases = [zero, bigToBytes(1n), bigToBytes(n - 1n), bigToBytes(n), bigToBytes(n + 1n), new Uint8Array(32).fill(0xff), bigToBytes(p - 1n)];
      for (const dg of cases) {
        const exp = noble.sign(dg, goodKey, { prehash: false, format: 'recovered' });
        const got = cc.sign(dg, goodKey);
        expect(hex(got.signature), hex(dg)).toBe(hex(exp.subarray(1)));
        expect(got.recovery).toBe(exp[0]);
        expect(cc.verify(got.signature, dg, goodPub)).toBe(true);
        expect(hex(cc.recoverPublicKey(dg, got.signature, got.recovery))).toBe(hex(goodPub));
      }
      expect(hex(cc.sign(bigToBytes(n), goodKey).signature)).toBe(hex(cc.sign(zero, goodKey).signature));
      expect(hex(cc.sign(bigToBytes(n + 1n), goodKey).signature)).toBe(hex(cc.sign(bigToBytes(1n), goodKey).signature));
    });

    it('digests of the wrong length are refused by sign, false for verify', () => {
      const sig = cc.sign(digest, goodKey).signature;
      for (const len of [0, 20, 31, 33, 64]) {
        const dg = new Uint8Array(len).fill(3);
        expectCoreError(() => cc.sign(dg, goodKey), DIGEST_LEN_CODES);
        expect(cc.verify(sig, dg, goodPub)).toBe(false);
      }
    });

    it('signatures with r or s out of range, and malformed signatures, do not verify', () => {
      const sig = cc.sign(digest, goodKey).signature;
      const r = bytesToBig(sig.subarray(0, 32));
      const s = bytesToBig(sig.subarray(32));
      const top = 1n << 256n;
      const bad = [
        joinSig(0n, s), joinSig(r, 0n), joinSig(n, s), joinSig(r, n), joinSig(0n, 0n),
        new Uint8Array(64).fill(0xff), new Uint8Array(0), sig.subarray(0, 63), new Uint8Array([...sig, 0]),
      ];
      // r + n and s + n alias r and s modulo n; they must not be reduced silently
      if (r + n < top) bad.push(joinSig(r + n, s));
      if (s + n < top) bad.push(joinSig(r, s + n));
      for (const b of bad) expect(cc.verify(b, digest, goodPub), hex(b)).toBe(false);
      expect(cc.verify(unhex('3006020101020101'), digest, goodPub, { format: 'der' })).toBe(false);
      expect(cc.verify(new Uint8Array(0), digest, goodPub, { format: 'der' })).toBe(false);
      expect(cc.verify(sig, digest, goodPub, { format: 'der' })).toBe(false);
    });

    it('verify: a 64-byte signature that is also strict DER needs format (no silent guess)', () => {
      // r and s of 29 bytes each encode to exactly 64 bytes of DER. Such a signature is valid for
      // the key recovered from it (Q = r⁻¹(s·R − e·G), computed by @noble/curves).
      let r = 0x1f00000000000000000000000000000000000000000000000000000001n;
      while (true) {
        try { noble.Point.fromHex('02' + hex(bigToBytes(r))); break; } catch { r++; }
      }
      const s = 0x2e0000000000000000000000000000000000000000000000000000000fn;
      const compact = joinSig(r, s);
      const sigObj = noble.Signature.fromBytes(compact, 'compact').addRecoveryBit(0);
      const pub = sigObj.recoverPublicKey(digest).toBytes(true);
      expect(noble.verify(compact, digest, pub, { prehash: false, lowS: false })).toBe(true);
      const der = rsToDer(r, s);
      expect(der.length).toBe(64);
      expect(cc.verify(der, digest, pub, { format: 'der' })).toBe(true);
      expect(cc.verify(compact, digest, pub, { format: 'compact' })).toBe(true);
      expect(cc.verify(compact, digest, pub)).toBe(true); // r‖s padded with zeros: not DER
      expect(() => cc.verify(der, digest, pub)).toThrow(CoreError);
      try { cc.verify(der, digest, pub); } catch (e) { expect((e as CoreError).code).toBe('AMBIGUOUS_SIGNATURE'); }
    });

    describe('invalid points', () => {
      const G = noble.Point.BASE.toAffine();
      const off = new Uint8Array([0x04, ...bigToBytes(G.x), ...bigToBytes((G.y + 1n) % p)]);
      // smallest x ≥ 1 with no point on the curve (x^3 + a x + b not a square)
      let noX = 1n;
      while (true) {
        try { noble.Point.fromBytes(new Uint8Array([2, ...bigToBytes(noX)])); noX++; } catch { break; }
      }
      const invalid: Record<string, Uint8Array> = {
        'off-curve (y+1)': off,
        'infinity as one zero byte': new Uint8Array([0]),
        'infinity as 04‖0‖0': (() => { const a = new Uint8Array(65); a[0] = 4; return a; })(),
        'compressed x = p': new Uint8Array([0x02, ...bigToBytes(p)]),
        'compressed x = p + 1 (≥ p, would alias 1)': new Uint8Array([0x03, ...bigToBytes(p + 1n)]),
        'uncompressed x = p + Gx (≥ p)': (() => {
          const xx = G.x + p;
          return xx < 1n << 256n ? new Uint8Array([0x04, ...bigToBytes(xx), ...bigToBytes(G.y)]) : off;
        })(),
        'uncompressed y = p + Gy (≥ p)': (() => {
          const yy = G.y + p;
          return yy < 1n << 256n ? new Uint8Array([0x04, ...bigToBytes(G.x), ...bigToBytes(yy)]) : off;
        })(),
        'compressed x not on curve': new Uint8Array([0x02, ...bigToBytes(noX)]),
        'bad prefix 05 (65 bytes)': new Uint8Array([0x05, ...goodPub.subarray(1), ...new Uint8Array(32)]),
        'hybrid prefix 06': new Uint8Array([0x06, ...cc.convertPublicKey(goodPub, false).subarray(1)]),
        'hybrid prefix 07': new Uint8Array([0x07, ...cc.convertPublicKey(goodPub, false).subarray(1)]),
        'prefix 04 with 33 bytes': new Uint8Array([0x04, ...goodPub.subarray(1)]),
        'prefix 02 with 65 bytes': new Uint8Array([0x02, ...cc.convertPublicKey(goodPub, false).subarray(1)]),
        'prefix 00 with 33 bytes': new Uint8Array([0x00, ...goodPub.subarray(1)]),
      };
      const wrongLength: Record<string, Uint8Array> = {
        'empty': new Uint8Array(0),
        '32 bytes (x only)': goodPub.subarray(1),
        '64 bytes (x‖y, no prefix)': cc.convertPublicKey(goodPub, false).subarray(1),
        '34 bytes': new Uint8Array([...goodPub, 0]),
        '66 bytes': new Uint8Array([...cc.convertPublicKey(goodPub, false), 0]),
      };

      it('sanity: the noble oracle rejects every invalid point too', () => {
        for (const [name, pt] of Object.entries({ ...invalid, ...wrongLength })) {
          expect(() => noble.Point.fromBytes(pt).assertValidity(), name).toThrow();
        }
      });

      for (const [name, pt] of Object.entries(invalid)) {
        it(`refuses ${name}`, () => {
          const sig = cc.sign(digest, goodKey).signature;
          expect(cc.isValidPublicKey(pt)).toBe(false);
          expect(cc.verify(sig, digest, pt)).toBe(false);
          expectCoreError(() => cc.convertPublicKey(pt, true), PUB_CODES);
          expectCoreError(() => cc.convertPublicKey(pt, false), PUB_CODES);
          expectCoreError(() => cc.ecdh(goodKey, pt), PUB_CODES);
          expectCoreError(() => cc.publicKeyTweakAdd(pt, bigToBytes(1n)), PUB_CODES);
        });
      }
      for (const [name, pt] of Object.entries(wrongLength)) {
        it(`refuses a public key of the wrong length: ${name}`, () => {
          const sig = cc.sign(digest, goodKey).signature;
          expect(cc.isValidPublicKey(pt)).toBe(false);
          expect(cc.verify(sig, digest, pt)).toBe(false);
          expectCoreError(() => cc.convertPublicKey(pt, true), PUB_LEN_CODES);
          expectCoreError(() => cc.ecdh(goodKey, pt), PUB_LEN_CODES);
        });
      }
    });

    it('recoverPublicKey refuses bad recovery ids and signatures', () => {
      const { signature, recovery } = cc.sign(digest, goodKey);
      for (const v of [-1, 4, 5, 27, 1.5]) {
        expectCoreError(() => cc.recoverPublicKey(digest, signature, v), ['INVALID_RECOVERY_ID']);
      }
      const r = bytesToBig(signature.subarray(0, 32));
      const s = bytesToBig(signature.subarray(32));
      for (const bad of [joinSig(0n, s), joinSig(r, 0n), joinSig(n, s), joinSig(r, n)]) {
        expectCoreError(() => cc.recoverPublicKey(digest, bad, recovery), ['INVALID_SIGNATURE']);
      }
      expectCoreError(() => cc.recoverPublicKey(digest, signature.subarray(0, 63), recovery), ['INVALID_SIGNATURE', 'INVALID_LENGTH']);
      // recovery 2/3 need r + n < p; r ≥ p − n makes them impossible
      expectCoreError(() => cc.recoverPublicKey(digest, signature, recovery | 2), ['INVALID_SIGNATURE', 'INVALID_RECOVERY_ID']);
    });

    it('tweaks: t ≥ n and results 0 / infinity are refused with INVALID_TWEAK; t = 0 is identity', () => {
      const k = bytesToBig(goodKey);
      expectCoreError(() => cc.privateKeyTweakAdd(goodKey, bigToBytes(n)), 'INVALID_TWEAK');
      expectCoreError(() => cc.privateKeyTweakAdd(goodKey, new Uint8Array(32).fill(0xff)), 'INVALID_TWEAK');
      expectCoreError(() => cc.privateKeyTweakAdd(goodKey, bigToBytes(n - k)), 'INVALID_TWEAK');
      expectCoreError(() => cc.publicKeyTweakAdd(goodPub, bigToBytes(n)), 'INVALID_TWEAK');
      expectCoreError(() => cc.publicKeyTweakAdd(goodPub, bigToBytes(n - k)), 'INVALID_TWEAK');
      expect(hex(cc.privateKeyTweakAdd(goodKey, new Uint8Array(32)))).toBe(hex(goodKey));
      expect(hex(cc.publicKeyTweakAdd(goodPub, new Uint8Array(32)))).toBe(hex(goodPub));
      expect(hex(cc.privateKeyTweakAdd(goodKey, bigToBytes(n - k + 5n)))).toBe(hex(bigToBytes(5n)));
      // t·G = Q: the addition is a doubling (handled by the complete masked addition)
      expect(hex(cc.publicKeyTweakAdd(goodPub, goodKey))).toBe(hex(noble.Point.BASE.multiply((2n * k) % n).toBytes(true)));
    });

    it('errors carry a code and never the key bytes', () => {
      const secret = bigToBytes(n + 12345n);
      try {
        cc.sign(digest, secret);
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(CoreError);
        expect(e).toBeInstanceOf(Error);
        const text = String((e as Error).message) + String((e as Error).stack ?? '');
        expect(text.toLowerCase()).not.toContain(hex(secret));
        expect(text).not.toContain(hex(secret).slice(8, 40));
      }
    });

    it('inputs are not modified and outputs are independent copies', () => {
      const key = Uint8Array.from(goodKey);
      const dg = Uint8Array.from(digest);
      const a = cc.sign(dg, key);
      const b = cc.sign(rng.bytes(32), key);
      expect(hex(key)).toBe(hex(goodKey));
      expect(hex(dg)).toBe(hex(digest));
      expect(hex(a.signature)).not.toBe(hex(b.signature));
      expect(hex(a.signature)).toBe(hex(cc.sign(digest, goodKey).signature));
    });
  });
}
