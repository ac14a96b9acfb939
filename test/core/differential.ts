// Differential suite against @noble/curves (imported by differential-*.test.ts; one file per curve
// so the two curves run in parallel workers).
import { describe, it, expect, beforeAll } from 'vitest';
import { createECDH } from 'node:crypto';
import { core, BUILD } from './build.js';
import { NOBLE, PARAMS, Rng, hex, bytesToBig, bigToBytes, splitSig, joinSig, rsToDer, type Curve } from './util.js';

/** Random cases per curve: all of them on the release build, a fifth on the debug build (its checks
 *  are the point there, and every published vector still runs on it in full). */
export const DIFF_N = BUILD === 'debug' ? 2_000 : 10_000;

export function differentialSuite(curve: Curve, seed: number): void {
  const noble = NOBLE[curve];
  const cc = core[curve];
  const { n } = PARAMS[curve];
  const keys: Uint8Array[] = [];
  const digests: Uint8Array[] = [];
  const pubC: string[] = [];
  const pubU: string[] = [];
  const sigs: Uint8Array[] = [];
  const recs: number[] = [];

  beforeAll(() => {
    const rng = new Rng(seed);
    for (let i = 0; i < DIFF_N; i++) {
      keys.push(rng.privateKey(curve));
      const dg = rng.bytes(32);
      // exercise digest reduction: every 97th digest is ≥ n, every 101st is all-ones, a few are 0
      if (i % 97 === 5) dg.set(bigToBytes(n + bytesToBig(dg.subarray(20)) ));
      if (i % 101 === 7) dg.fill(0xff);
      if (i % 1009 === 3) dg.fill(0);
      digests.push(dg);
    }
  });

  describe(`differential vs @noble/curves — ${curve} (${DIFF_N} random pairs, seed ${seed}, ${BUILD} build)`, () => {
    it('public keys: compressed and uncompressed identical (OpenSSL via node:crypto for all, noble for 1,000)', () => {
      const ossl = createECDH(curve === 'p256' ? 'prime256v1' : 'secp256k1');
      const bad: string[] = [];
      for (let i = 0; i < DIFF_N; i++) {
        ossl.setPrivateKey(keys[i]);
        const expC = ossl.getPublicKey('hex', 'compressed');
        const expU = ossl.getPublicKey('hex', 'uncompressed');
        if (i < 1000) {
          const P = noble.Point.BASE.multiply(bytesToBig(keys[i]));
          if (hex(P.toBytes(true)) !== expC || hex(P.toBytes(false)) !== expU) throw new Error('oracles disagree');
        }
        const gotC = hex(cc.getPublicKey(keys[i]));
        const gotU = hex(cc.getPublicKey(keys[i], false));
        if (gotC !== expC || gotU !== expU || hex(cc.getPublicKey(keys[i], true)) !== expC) bad.push(`#${i} (seed ${seed})`);
        pubC.push(expC);
        pubU.push(expU);
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('signatures and recovery ids identical (RFC 6979, low-s)', () => {
      const bad: string[] = [];
      for (let i = 0; i < DIFF_N; i++) {
        const exp = noble.sign(digests[i], keys[i], { prehash: false, format: 'recovered' });
        const got = cc.sign(digests[i], keys[i]);
        const expSig = hex(exp.subarray(1));
        if (hex(got.signature) !== expSig || got.recovery !== exp[0]) {
          bad.push(`#${i} digest ${hex(digests[i])}: expected ${expSig}/${exp[0]}, got ${hex(got.signature)}/${got.recovery}`);
        }
        sigs.push(got.signature);
        recs.push(got.recovery);
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('verify: genuine true; tampered digest/signature false; high-s only without lowS; DER form; noble agrees', () => {
      const rng = new Rng(seed ^ 0x7e57);
      const bad: string[] = [];
      for (let i = 0; i < DIFF_N; i++) {
        const pub = i % 2 ? Buffer.from(pubC[i], 'hex') : Buffer.from(pubU[i], 'hex');
        const sig = sigs[i];
        const dg = digests[i];
        const td = Uint8Array.from(dg);
        td[rng.int(32)] ^= 1 << rng.int(8);
        const ts = Uint8Array.from(sig);
        ts[rng.int(64)] ^= 1 << rng.int(8);
        const got = [cc.verify(sig, dg, pub), cc.verify(sig, td, pub), cc.verify(ts, dg, pub)];
        const exp = [true, false, false];
        if (i < 2000) {
          // high-s twin, strict mode and DER on a fifth of the pairs
          const { r, s } = splitSig(sig);
          const high = joinSig(r, n - s);
          got.push(
            cc.verify(high, dg, pub),
            cc.verify(high, dg, pub, { lowS: true }),
            cc.verify(sig, dg, pub, { lowS: true }),
            cc.verify(rsToDer(r, s), dg, pub, { format: 'der' }),
            cc.verify(rsToDer(r, n - s), dg, pub, { format: 'der' }),
          );
          exp.push(true, false, true, true, true);
          if (i < 250) {
            // oracle on a subset (noble's verify costs ~2 ms): same answers for the same inputs
            const o = { prehash: false, lowS: false } as const;
            exp[0] = noble.verify(sig, dg, pub, o);
            exp[1] = noble.verify(sig, td, pub, o);
            exp[2] = noble.verify(ts, dg, pub, o);
            exp[3] = noble.verify(high, dg, pub, o);
            exp[4] = noble.verify(high, dg, pub, { prehash: false, lowS: true });
          }
        }
        if (got.some((g, j) => g !== exp[j])) bad.push(`#${i}: expected ${exp}, got ${got}`);
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('recoverPublicKey returns the signer key (all pairs) and agrees with noble (subset)', () => {
      const bad: string[] = [];
      for (let i = 0; i < DIFF_N; i++) {
        const gotC = hex(cc.recoverPublicKey(digests[i], sigs[i], recs[i]));
        const gotU = i % 10 === 0 ? hex(cc.recoverPublicKey(digests[i], sigs[i], recs[i], false)) : pubU[i];
        if (gotC !== pubC[i] || gotU !== pubU[i]) bad.push(`#${i}`);
        if (i < 250) {
          const rec = new Uint8Array(65);
          rec[0] = recs[i];
          rec.set(sigs[i], 1);
          const o = hex(noble.recoverPublicKey(rec, digests[i], { prehash: false }));
          if (o !== gotC) bad.push(`#${i} noble ${o}`);
          // the other recovery id gives a different key (or is refused)
          let other: string | null = null;
          try { other = hex(cc.recoverPublicKey(digests[i], sigs[i], recs[i] ^ 1)); } catch { other = null; }
          if (other === gotC) bad.push(`#${i} wrong recovery id recovered the same key`);
        }
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('ECDH agrees with OpenSSL (1,000 pairs) and noble (250 pairs) and is symmetric', () => {
      const ossl = createECDH(curve === 'p256' ? 'prime256v1' : 'secp256k1');
      const bad: string[] = [];
      for (let i = 0; i + 1 < 2000; i += 2) {
        const a = keys[i], b = keys[i + 1];
        const pubB = Buffer.from(i % 4 ? pubC[i + 1] : pubU[i + 1], 'hex');
        const pubA = Buffer.from(pubC[i], 'hex');
        ossl.setPrivateKey(a);
        const exp = ossl.computeSecret(pubB).toString('hex');
        if (i < 500 && hex(noble.getSharedSecret(a, pubB).subarray(1)) !== exp) throw new Error('oracles disagree');
        const got1 = hex(cc.ecdh(a, pubB));
        const got2 = hex(cc.ecdh(b, pubA));
        if (got1 !== exp || got2 !== exp) bad.push(`#${i}: expected ${exp}, got ${got1} / ${got2}`);
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('lowS:false and extraEntropy signatures agree with noble (500 pairs)', () => {
      const rng = new Rng(seed ^ 0xe7);
      const bad: string[] = [];
      for (let i = 0; i < 500; i++) {
        const raw = cc.sign(digests[i], keys[i], { lowS: false });
        const expRaw = noble.sign(digests[i], keys[i], { prehash: false, lowS: false, format: 'recovered' });
        if (hex(raw.signature) !== hex(expRaw.subarray(1)) || raw.recovery !== expRaw[0]) bad.push(`#${i} lowS:false`);
        const ent = rng.bytes(32);
        const he = cc.sign(digests[i], keys[i], { extraEntropy: ent });
        const expHe = noble.sign(digests[i], keys[i], { prehash: false, extraEntropy: ent, format: 'recovered' });
        if (hex(he.signature) !== hex(expHe.subarray(1)) || he.recovery !== expHe[0]) bad.push(`#${i} extraEntropy`);
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('tweak-add agrees with BigInt math and with getPublicKey (1,000 pairs)', () => {
      const rng = new Rng(seed ^ 0x7a);
      const bad: string[] = [];
      for (let i = 0; i < 1000; i++) {
        const t = i % 50 === 0 ? bigToBytes(n - bytesToBig(keys[i]) + 1n) : rng.privateKey(curve);
        const sum = (bytesToBig(keys[i]) + bytesToBig(t)) % n;
        const exp = bigToBytes(sum);
        const got = cc.privateKeyTweakAdd(keys[i], t);
        if (hex(got) !== hex(exp)) bad.push(`#${i} private`);
        const P = noble.Point.BASE.multiply(sum);
        const pub = Buffer.from(i % 2 ? pubC[i] : pubU[i], 'hex');
        if (hex(cc.publicKeyTweakAdd(pub, t)) !== hex(P.toBytes(true))) bad.push(`#${i} public compressed`);
        if (hex(cc.publicKeyTweakAdd(pub, t, false)) !== hex(P.toBytes(false))) bad.push(`#${i} public uncompressed`);
      }
      expect(bad.slice(0, 10)).toEqual([]);
    });

    it('convertPublicKey and isValid* agree with noble', () => {
      for (let i = 0; i < 1000; i++) {
        const c = Buffer.from(pubC[i], 'hex');
        const u = Buffer.from(pubU[i], 'hex');
        expect(hex(cc.convertPublicKey(c, false))).toBe(pubU[i]);
        expect(hex(cc.convertPublicKey(u, true))).toBe(pubC[i]);
        expect(hex(cc.convertPublicKey(c, true))).toBe(pubC[i]);
        expect(cc.isValidPublicKey(c) && cc.isValidPublicKey(u)).toBe(true);
        expect(cc.isValidPrivateKey(keys[i])).toBe(true);
      }
    });
  });
}
