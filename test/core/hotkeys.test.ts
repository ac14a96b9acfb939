// Verification under hot keys: a key that verifies often gets a full fixed-window table
// (assembly/muldouble.ts mulDoubleHot_var) and is verified without doublings from then on. The same
// verdicts must come out as on the wNAF path: Wycheproof with every group's key hot, @noble/curves
// on random and edge-case inputs, and keys losing their table (slot reuse, cache eviction).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { core } from '../../src/core/node.js';
import {
  CURVES, NOBLE, PARAMS, Rng, bigToBytes, bytesToBig, hex, loadVector, sha256, splitSig, joinSig, unhex, ECDSA_FILES,
  ecdsaVerdictFailure, type Curve, type EcdsaFile,
} from './util.js';

const DEFAULT_POLICY = { hotAfter: 32, buildEvery: 512 };
/** Every key gets its table on its second verification. */
const EAGER = { hotAfter: 1, buildEvery: 0 };

afterAll(() => core.setVerifyCachePolicy(DEFAULT_POLICY));

describe('hot keys: Wycheproof with every group key hot', () => {
  beforeAll(() => core.setVerifyCachePolicy(EAGER));

  for (const { file, curve, format } of ECDSA_FILES) {
    it(`${file}: every verdict holds on the hot path`, () => {
      const cc = core[curve];
      const f = loadVector<EcdsaFile>('wycheproof/' + file);
      const failures: string[] = [];
      let hotGroups = 0;
      let checked = 0;
      for (const g of f.testGroups) {
        const pub = unhex(g.publicKey.uncompressed);
        // two verifications (any verdict) make a valid key hot under the eager policy
        cc.verify(new Uint8Array(64), new Uint8Array(32), pub, { format: 'compact' });
        cc.verify(new Uint8Array(64), new Uint8Array(32), pub, { format: 'compact' });
        if (!cc.isValidPublicKey(pub)) continue;
        expect(cc.verifyCacheState(pub)).toBe('hot');
        hotGroups++;
        for (const t of g.tests) {
          const failure = ecdsaVerdictFailure(t, () => cc.verify(unhex(t.sig), sha256(unhex(t.msg)), pub, { format }));
          if (failure) failures.push(failure);
          checked++;
        }
        expect(cc.verifyCacheState(pub)).toBe('hot');
      }
      expect(failures).toEqual([]);
      expect(hotGroups).toBeGreaterThan(50);
      expect(checked).toBeGreaterThan(200);
    });
  }
});

for (const curve of CURVES) {
  describe(`hot keys — ${curve}, against @noble/curves`, () => {
    const cc = core[curve];
    const noble = NOBLE[curve];
    const { n } = PARAMS[curve];
    beforeAll(() => core.setVerifyCachePolicy(EAGER));

    /** Verifies (sig, digest) under pub on the hot path and compares with noble (high-s accepted). */
    function same(sig: Uint8Array, digest: Uint8Array, pub: Uint8Array): boolean {
      const want = noble.verify(sig, digest, pub, { prehash: false, lowS: false, format: 'compact' });
      const got = cc.verify(sig, digest, pub, { format: 'compact' });
      expect(cc.verifyCacheState(pub)).toBe('hot');
      expect(got, `sig ${hex(sig)} digest ${hex(digest)} key ${hex(pub)}`).toBe(want);
      return got;
    }

    it('random keys: valid, high-s, tampered r / s / digest, boundary digests', () => {
      const rng = new Rng(curve === 'p256' ? 7001 : 7002);
      let valid = 0;
      for (let k = 0; k < 12; k++) {
        const sk = rng.privateKey(curve);
        const pub = noble.getPublicKey(sk, k % 2 === 0);
        cc.verify(new Uint8Array(64), new Uint8Array(32), pub);
        cc.verify(new Uint8Array(64), new Uint8Array(32), pub);
        for (let i = 0; i < 60; i++) {
          const digest = rng.bytes(32);
          if (i === 0) digest.fill(0); //                          u1 = 0
          if (i === 1) digest.fill(0xff); //                       e ≥ n
          if (i === 2) digest.set(bigToBytes(n)); //               e ≡ 0
          if (i === 3) digest.set(bigToBytes(n - 1n));
          const sig = noble.sign(digest, sk, { prehash: false, format: 'compact' });
          if (same(sig, digest, pub)) valid++;
          const { r, s } = splitSig(sig);
          same(joinSig(r, n - s), digest, pub); //                 high-s twin: valid
          same(joinSig(r, s === n - 1n ? 1n : s + 1n), digest, pub);
          same(joinSig(r === n - 1n ? 1n : r + 1n, s), digest, pub);
          const other = digest.slice();
          other[rng.int(32)]! ^= 1 << rng.int(8);
          same(sig, other, pub);
        }
      }
      expect(valid).toBe(12 * 60);
    });

    it('keys ±G, ±2G and signatures whose two scalars meet (doubling and cancelling additions)', () => {
      const rng = new Rng(curve === 'p256' ? 7003 : 7004);
      for (const d of [1n, 2n, n - 1n, n - 2n]) {
        const sk = bigToBytes(d);
        const pub = noble.getPublicKey(sk, true);
        cc.verify(new Uint8Array(64), new Uint8Array(32), pub);
        cc.verify(new Uint8Array(64), new Uint8Array(32), pub);
        for (let i = 0; i < 40; i++) {
          const digest = rng.bytes(32);
          same(noble.sign(digest, sk, { prehash: false, format: 'compact' }), digest, pub);
        }
        // Q = ±G or ±2G and u1 = ∓u2·d: the sum is infinity (or u1 = u2·d: a doubling), so choose
        // s and digest to make the scalars meet: with u2 = r/s and u1 = e/s, e = ∓r·d mod n.
        for (let i = 0; i < 20; i++) {
          const r = bytesToBig(rng.bytes(32)) % n || 1n;
          const s = bytesToBig(rng.bytes(32)) % n || 1n;
          for (const sign of [1n, -1n]) {
            const e = (((sign * r * d) % n) + n) % n;
            same(joinSig(r, s), bigToBytes(e), pub);
          }
        }
      }
    });
  });
}

describe('hot keys: losing the table', () => {
  it('a ninth hot key takes the oldest slot; a key evicted from the cache frees its slot; verdicts stay right', () => {
    core.setVerifyCachePolicy(EAGER);
    const curve: Curve = 'p256';
    const cc = core[curve];
    const noble = NOBLE[curve];
    const rng = new Rng(7005);
    const digest = rng.bytes(32);
    const keys = Array.from({ length: 80 }, () => rng.privateKey(curve));
    const pubs = keys.map((k) => noble.getPublicKey(k, true));
    const sigs = keys.map((k) => noble.sign(digest, k, { prehash: false, format: 'compact' }));
    const check = (i: number) => {
      expect(cc.verify(sigs[i]!, digest, pubs[i]!)).toBe(true);
      expect(cc.verify(sigs[(i + 1) % keys.length]!, digest, pubs[i]!)).toBe(false);
    };
    for (let i = 0; i < 9; i++) { check(i); check(i); }
    for (let i = 1; i < 9; i++) expect(cc.verifyCacheState(pubs[i]!)).toBe('hot');
    expect(cc.verifyCacheState(pubs[0]!)).toBe('cached'); // its slot went to key 8
    check(0); // correct without its table, and hot again (its turn in the round-robin)
    expect(cc.verifyCacheState(pubs[0]!)).toBe('hot');
    // 80 distinct keys, twice round, overflow the 64-slot cache: evicted keys give up their tables
    for (let round = 0; round < 2; round++) for (let i = 0; i < 80; i++) check(i);
    const states = pubs.map((p) => cc.verifyCacheState(p));
    expect(states.filter((x) => x !== 'none').length).toBe(64);
    expect(states.filter((x) => x === 'hot').length).toBeLessThanOrEqual(8);
    core.setVerifyCachePolicy(DEFAULT_POLICY);
  });

  it('a key in steady use stays cached (and hot) through a stream of one-off keys', () => {
    core.setVerifyCachePolicy(EAGER);
    const cc = core.p256;
    const noble = NOBLE.p256;
    const rng = new Rng(7007);
    const digest = rng.bytes(32);
    const steady = rng.privateKey('p256');
    const steadyPub = noble.getPublicKey(steady, true);
    const steadySig = noble.sign(digest, steady, { prehash: false, format: 'compact' });
    expect(cc.verify(steadySig, digest, steadyPub)).toBe(true);
    expect(cc.verify(steadySig, digest, steadyPub)).toBe(true);
    expect(cc.verifyCacheState(steadyPub)).toBe('hot');
    core.setVerifyCachePolicy(DEFAULT_POLICY); // one-off keys must not take the hot slots
    for (let i = 0; i < 300; i++) {
      const k = rng.privateKey('p256');
      const pub = noble.getPublicKey(k, true);
      expect(cc.verify(noble.sign(digest, k, { prehash: false, format: 'compact' }), digest, pub)).toBe(true);
      if (i % 10 === 0) expect(cc.verify(steadySig, digest, steadyPub)).toBe(true);
    }
    expect(cc.verifyCacheState(steadyPub)).toBe('hot');
  });

  it('default policy: a key turns hot only after 32 verifications', () => {
    core.setVerifyCachePolicy(DEFAULT_POLICY);
    const cc = core.secp256k1;
    const rng = new Rng(7006);
    const sk = rng.privateKey('secp256k1');
    const pub = NOBLE.secp256k1.getPublicKey(sk, true);
    const digest = rng.bytes(32);
    const sig = NOBLE.secp256k1.sign(digest, sk, { prehash: false, format: 'compact' });
    expect(cc.verifyCacheState(pub)).toBe('none');
    for (let i = 0; i < 31; i++) expect(cc.verify(sig, digest, pub)).toBe(true);
    expect(cc.verifyCacheState(pub)).toBe('cached');
    expect(cc.verify(sig, digest, pub)).toBe(true);
    expect(cc.verifyCacheState(pub)).toBe('hot');
  });
});
