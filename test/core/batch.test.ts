// signBatch must be byte-identical to sign() for every element.
import { describe, it, expect } from 'vitest';
import { core } from './build.js';
import { CURVES, Rng, hex, bigToBytes, PARAMS, expectCoreError } from './util.js';

const SIZES = [1, 2, 3, 100, 257, 1000];

for (const curve of CURVES) {
  const cc = core[curve];
  describe(`signBatch — ${curve}`, () => {
    for (const size of SIZES) {
      it(`one key for all, ${size} digests`, () => {
        const rng = new Rng(size * 31 + (curve === 'p256' ? 1 : 0));
        const key = rng.privateKey(curve);
        const digests = Array.from({ length: size }, () => rng.bytes(32));
        const batch = cc.signBatch(digests, key);
        expect(batch.length).toBe(size);
        digests.forEach((dg, i) => {
          const single = cc.sign(dg, key);
          expect(hex(batch[i].signature), `#${i}`).toBe(hex(single.signature));
          expect(batch[i].recovery, `#${i}`).toBe(single.recovery);
        });
      });

      it(`one key per digest, ${size} digests`, () => {
        const rng = new Rng(size * 37 + (curve === 'p256' ? 1 : 0));
        const keys = Array.from({ length: size }, () => rng.privateKey(curve));
        const digests = Array.from({ length: size }, () => rng.bytes(32));
        const batch = cc.signBatch(digests, keys);
        expect(batch.length).toBe(size);
        digests.forEach((dg, i) => {
          const single = cc.sign(dg, keys[i]);
          expect(hex(batch[i].signature), `#${i}`).toBe(hex(single.signature));
          expect(batch[i].recovery, `#${i}`).toBe(single.recovery);
        });
      });
    }

    it('repeated and edge digests inside one batch (0, n, all-ones, duplicates)', () => {
      const rng = new Rng(99);
      const key = rng.privateKey(curve);
      const d = rng.bytes(32);
      const digests = [d, new Uint8Array(32), bigToBytes(PARAMS[curve].n), new Uint8Array(32).fill(0xff), d, Uint8Array.from(d)];
      const batch = cc.signBatch(digests, key);
      digests.forEach((dg, i) => expect(hex(batch[i].signature)).toBe(hex(cc.sign(dg, key).signature)));
      expect(hex(batch[1].signature)).toBe(hex(batch[2].signature)); // digest n ≡ 0 (mod n)
    });

    it('mixed keys including 1 and n−1', () => {
      const rng = new Rng(5);
      const keys = [bigToBytes(1n), bigToBytes(PARAMS[curve].n - 1n), rng.privateKey(curve)];
      const digests = keys.map(() => rng.bytes(32));
      const batch = cc.signBatch(digests, keys);
      digests.forEach((dg, i) => expect(hex(batch[i].signature)).toBe(hex(cc.sign(dg, keys[i]).signature)));
    });

    it('refuses a bad key or digest anywhere in the batch', () => {
      const rng = new Rng(6);
      const keys = Array.from({ length: 5 }, () => rng.privateKey(curve));
      const digests = keys.map(() => rng.bytes(32));
      const badKeys = keys.slice();
      badKeys[3] = new Uint8Array(32);
      expectCoreError(() => cc.signBatch(digests, badKeys), 'INVALID_PRIVATE_KEY');
      expectCoreError(() => cc.signBatch(digests, bigToBytes(PARAMS[curve].n)), 'INVALID_PRIVATE_KEY');
      const badDigests = digests.slice();
      badDigests[2] = new Uint8Array(31);
      expectCoreError(() => cc.signBatch(badDigests, keys), ['INVALID_DIGEST', 'INVALID_LENGTH']);
      expectCoreError(() => cc.signBatch(digests, keys.slice(0, 4)), ['INVALID_LENGTH', 'INVALID_PRIVATE_KEY']);
      // state is not poisoned: a good batch still matches singles afterwards
      const ok = cc.signBatch(digests, keys);
      digests.forEach((dg, i) => expect(hex(ok[i].signature)).toBe(hex(cc.sign(dg, keys[i]).signature)));
    });
  });
}
