import { describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import * as curves from '../../src/crypto/curves.js';
import { CryptoError } from '../../src/encoding/errors.js';
import { code, hex, loadVector, unhex } from './helpers.js';

const noble = { secp256k1, p256 } as const;

describe('curve façade over the core', () => {
  it('API curve names', () => {
    expect(curves.curveFromApi('CURVE_SECP256K1')).toBe('secp256k1');
    expect(curves.curveFromApi('CURVE_P256')).toBe('p256');
    expect(curves.curveFromApi('CURVE_ED25519')).toBe('ed25519');
    expect(curves.curveToApi('p256')).toBe('CURVE_P256');
    const e = (() => {
      try {
        curves.curveFromApi('CURVE_X', 'privateKeys[0].curve');
      } catch (x) {
        return x as CryptoError;
      }
    })();
    expect(e?.code).toBe('UNSUPPORTED_CURVE');
    expect(e?.field).toBe('privateKeys[0].curve');
  });

  for (const c of ['secp256k1', 'p256'] as const) {
    it(`${c}: keys, sign/verify/recover, tweaks, ecdh agree with noble`, () => {
      for (let i = 0; i < 20; i++) {
        const sk = curves.generatePrivateKey(c);
        expect(hex(curves.getPublicKey(c, sk))).toBe(hex(noble[c].getPublicKey(sk, true)));
        expect(hex(curves.getPublicKey(c, sk, false))).toBe(hex(noble[c].getPublicKey(sk, false)));
        const d = globalThis.crypto.getRandomValues(new Uint8Array(32));
        const s = curves.signDigest(c, d, sk);
        expect(hex(s.signature)).toBe(hex(noble[c].sign(d, sk, { prehash: false })));
        expect(curves.verifyDigest(c, s.signature, d, curves.getPublicKey(c, sk))).toBe(true);
        expect(curves.verifyDigest(c, curves.compactToDer(s.signature), d, curves.getPublicKey(c, sk), { format: 'der' })).toBe(true);
        expect(hex(curves.recoverPublicKey(c, d, s.signature, s.recovery))).toBe(hex(noble[c].getPublicKey(sk, true)));
        const t = curves.generatePrivateKey(c);
        const sum = curves.privateKeyTweakAdd(c, sk, t);
        expect(hex(curves.publicKeyTweakAdd(c, curves.getPublicKey(c, sk), t))).toBe(hex(noble[c].getPublicKey(sum, true)));
        const other = curves.generatePrivateKey(c);
        expect(hex(curves.ecdh(c, sk, noble[c].getPublicKey(other, false)))).toBe(
          hex(noble[c].getSharedSecret(other, noble[c].getPublicKey(sk, true)).slice(1)),
        );
      }
    });
    it(`${c}: batch signing is byte-identical to single signing`, () => {
      const sk = curves.generatePrivateKey(c);
      const ds = Array.from({ length: 10 }, () => globalThis.crypto.getRandomValues(new Uint8Array(32)));
      const b = curves.signDigests(c, ds, sk);
      ds.forEach((d, i) => {
        expect(hex(b[i].signature)).toBe(hex(curves.signDigest(c, d, sk).signature));
        expect(b[i].recovery).toBe(curves.signDigest(c, d, sk).recovery);
      });
      expect(curves.signDigests(c, [], sk)).toEqual([]);
      expect(code(() => curves.signDigests(c, ds, [sk]))).toBe('INVALID_LENGTH');
    });
    it(`${c}: core errors become CryptoErrors with the same code`, () => {
      expect(code(() => curves.getPublicKey(c, new Uint8Array(32)))).toBe('INVALID_PRIVATE_KEY');
      expect(code(() => curves.signDigest(c, new Uint8Array(31), curves.generatePrivateKey(c)))).toBe('INVALID_DIGEST');
      expect(code(() => curves.convertPublicKey(c, new Uint8Array(33), true))).toBe('INVALID_PUBLIC_KEY');
      expect(curves.verifyDigest(c, new Uint8Array(64), new Uint8Array(32), new Uint8Array(33))).toBe(false);
    });
  }

  it('Ed25519 via noble', () => {
    const sk = curves.generatePrivateKey('ed25519');
    const pub = curves.getPublicKey('ed25519', sk);
    expect(hex(pub)).toBe(hex(ed25519.getPublicKey(sk)));
    const m = new TextEncoder().encode('msg');
    const sig = curves.signEd25519(m, sk);
    expect(ed25519.verify(sig, m, pub)).toBe(true);
    expect(curves.verifyEd25519(sig, m, pub)).toBe(true);
    expect(curves.verifyEd25519(sig, new Uint8Array(1), pub)).toBe(false);
    expect(code(() => curves.signEd25519(m, new Uint8Array(31)))).toBe('INVALID_PRIVATE_KEY');
    expect(code(() => curves.ecdh('ed25519' as any, sk, pub))).toBe('UNSUPPORTED_CURVE');
  });
});

describe('DER', () => {
  it('matches noble DER encoding and round trips, incl. short r/s', () => {
    for (let i = 0; i < 300; i++) {
      const sig = p256.sign(globalThis.crypto.getRandomValues(new Uint8Array(32)), p256.utils.randomSecretKey(), { prehash: false });
      const c = i % 3 === 0 ? new Uint8Array([...new Uint8Array(31), 1, ...sig.slice(32)]) : sig;
      const der = curves.compactToDer(c);
      expect(hex(der)).toBe(hex(p256.Signature.fromBytes(c, 'compact').toBytes('der')));
      expect(hex(curves.derToCompact(der))).toBe(hex(c));
    }
  });
  it('rejects malformed DER', () => {
    const good = curves.compactToDer(new Uint8Array(64).fill(0x7f));
    const bad = [new Uint8Array(0), good.slice(0, -1), Uint8Array.from([0x31, ...good.slice(1)]), Uint8Array.from([...good, 0])];
    const neg = good.slice();
    neg[4] = 0x80; // r becomes negative
    bad.push(neg);
    for (const b of bad) expect(code(() => curves.derToCompact(b))).toBe('INVALID_SIGNATURE');
  });
});

describe('Wycheproof ECDH P-256 (ecpoint) through the façade', () => {
  const w = loadVector<any>('wycheproof/ecdh_secp256r1_ecpoint_test.json');
  const tests = w.testGroups.flatMap((g: any) => g.tests);
  it(`${tests.length} cases`, () => {
    let valid = 0;
    for (const t of tests) {
      const priv = t.private.replace(/^(00)+/, '').padStart(64, '0');
      if (priv.length !== 64) continue;
      let out: string | undefined;
      try {
        out = hex(curves.ecdh('p256', unhex(priv), unhex(t.public)));
      } catch (e) {
        expect(e).toBeInstanceOf(CryptoError);
      }
      if (t.result === 'valid') {
        expect(out, `tcId ${t.tcId}`).toBe(t.shared);
        valid++;
      } else if (t.result === 'invalid') {
        expect(out, `tcId ${t.tcId}`).toBeUndefined();
      }
    }
    expect(valid).toBeGreaterThan(100);
  });
});
