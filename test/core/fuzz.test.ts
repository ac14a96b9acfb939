// Malformed input never throws from verify and never verifies; strict DER: no byte of a valid DER
// signature can change (or be added/removed) and still verify.
import { describe, it, expect } from 'vitest';
import { core } from '../../src/core/node.js';
import { CURVES, Rng, hex, splitSig, rsToDer } from './util.js';

for (const curve of CURVES) {
  const cc = core[curve];
  describe(`fuzz — ${curve}`, () => {
    it('verify on random garbage returns false and never throws (3,000 inputs)', () => {
      const rng = new Rng(curve === 'p256' ? 0xf0 : 0xf1);
      const key = rng.privateKey(curve);
      const pub = cc.getPublicKey(key);
      const digest = rng.bytes(32);
      const good = cc.sign(digest, key).signature;
      const bad: string[] = [];
      for (let i = 0; i < 3000; i++) {
        const sig = i % 3 === 0 ? rng.bytes(rng.int(80)) : i % 3 === 1 ? rng.bytes(64) : good;
        const p = i % 4 === 0 ? rng.bytes(rng.int(70)) : i % 4 === 1 ? new Uint8Array([2 + rng.int(2), ...rng.bytes(32)]) : pub;
        const d = i % 5 === 0 ? rng.bytes(rng.int(40)) : i % 5 === 1 ? rng.bytes(32) : digest;
        if (sig === good && p === pub && d === digest) continue;
        for (const opts of [undefined, { format: 'der' as const }, { format: 'compact' as const }, { lowS: true }]) {
          let r: unknown;
          try {
            r = cc.verify(sig, d, p, opts);
          } catch (e) {
            r = 'threw ' + String(e);
          }
          // a random compressed point may be valid, but a valid signature for it is out of reach
          if (r !== false) bad.push(`#${i} ${JSON.stringify(opts)}: ${String(r)}`);
        }
      }
      expect(bad.slice(0, 10)).toEqual([]);
      expect(cc.verify(good, digest, pub)).toBe(true);
    });

    it('strict DER: every single-byte change, truncation and extension of a valid DER signature fails', () => {
      const rng = new Rng(curve === 'p256' ? 0xde : 0xdf);
      const bad: string[] = [];
      let tried = 0;
      for (let k = 0; k < 20; k++) {
        const key = rng.privateKey(curve);
        const pub = cc.getPublicKey(key);
        const digest = rng.bytes(32);
        const { r, s } = splitSig(cc.sign(digest, key).signature);
        const der = rsToDer(r, s);
        expect(cc.verify(der, digest, pub, { format: 'der' })).toBe(true);
        for (let i = 0; i < der.length; i++) {
          for (const v of [der[i] ^ 0x01, der[i] ^ 0x80, 0x00, 0xff, (der[i] + 1) & 0xff]) {
            if (v === der[i]) continue;
            const m = Uint8Array.from(der);
            m[i] = v;
            tried++;
            if (cc.verify(m, digest, pub, { format: 'der' })) bad.push(`byte ${i} → ${v}: ${hex(m)}`);
          }
        }
        for (const m of [der.subarray(0, der.length - 1), new Uint8Array([...der, 0]), new Uint8Array([...der, 0x30, 0x00])]) {
          tried++;
          if (cc.verify(m, digest, pub, { format: 'der' })) bad.push(`length ${m.length}: ${hex(m)}`);
        }
        // BER long-form length for the sequence (0x81 nn) is not DER
        const ber = new Uint8Array([0x30, 0x81, der[1], ...der.subarray(2)]);
        tried++;
        if (cc.verify(ber, digest, pub, { format: 'der' })) bad.push(`BER length: ${hex(ber)}`);
      }
      expect(bad.slice(0, 10)).toEqual([]);
      expect(tried).toBeGreaterThan(1000);
    });
  });
}
