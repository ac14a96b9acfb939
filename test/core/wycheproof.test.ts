// Project Wycheproof ECDSA (secp256k1, P-256; SHA-256; DER and P1363) and P-256 ECDH vectors.
import { describe, it, expect } from 'vitest';
import { secp256k1 as nobleK1 } from '@noble/curves/secp256k1.js';
import { core } from './build.js';
import {
  loadVector, unhex, hex, sha256, derToRS, PARAMS, expectCoreError, ECDSA_FILES, ecdsaVerdictFailure, type EcdsaFile, type EcdsaTest,
} from './util.js';

function cases(file: string): { pub: Uint8Array; t: EcdsaTest }[] {
  const f = loadVector<EcdsaFile>('wycheproof/' + file);
  const out: { pub: Uint8Array; t: EcdsaTest }[] = [];
  for (const g of f.testGroups) {
    expect(g.sha).toBe('SHA-256');
    const pub = unhex(g.publicKey.uncompressed);
    for (const t of g.tests) out.push({ pub, t });
  }
  expect(out.length).toBe(f.numberOfTests);
  return out;
}

/** s of a well-formed signature in either encoding, or null. */
function sOf(sig: Uint8Array, format: 'der' | 'compact'): bigint | null {
  if (format === 'compact') return sig.length === 64 ? BigInt('0x' + hex(sig.subarray(32))) : null;
  const rs = derToRS(sig);
  return rs ? rs.s : null;
}

describe('Wycheproof ECDSA verification', () => {
  for (const { file, curve, format } of ECDSA_FILES) {
    it(`${file}: every verdict holds (default mode accepts high-s)`, () => {
      const cc = core[curve];
      const failures: string[] = [];
      let checked = 0;
      for (const { pub, t } of cases(file)) {
        const failure = ecdsaVerdictFailure(t, () => cc.verify(unhex(t.sig), sha256(unhex(t.msg)), pub, { format }));
        if (failure) failures.push(failure);
        checked++;
      }
      expect(failures).toEqual([]);
      expect(checked).toBeGreaterThan(200);
    });

    it(`${file}: with lowS:true, valid cases hold exactly when s <= n/2`, () => {
      const cc = core[curve];
      const half = PARAMS[curve].n >> 1n;
      const failures: string[] = [];
      let highS = 0;
      for (const { pub, t } of cases(file)) {
        if (t.result !== 'valid') continue;
        const sig = unhex(t.sig);
        const s = sOf(sig, format);
        expect(s, `tcId ${t.tcId} should parse`).not.toBeNull();
        const expected = s! <= half;
        if (!expected) highS++;
        const got = cc.verify(sig, sha256(unhex(t.msg)), pub, { format, lowS: true });
        if (got !== expected) failures.push(`tcId ${t.tcId}: expected ${expected}, got ${got}`);
      }
      expect(failures).toEqual([]);
      expect(highS).toBeGreaterThan(0); // the files do contain high-s valid signatures
    });
  }

  it('ecdsa_secp256k1_sha256_bitcoin_test.json: every verdict holds in strict low-s mode', () => {
    const failures: string[] = [];
    for (const { pub, t } of cases('ecdsa_secp256k1_sha256_bitcoin_test.json')) {
      let got: boolean | string;
      try {
        got = core.secp256k1.verify(unhex(t.sig), sha256(unhex(t.msg)), pub, { format: 'der', lowS: true });
      } catch (e) {
        got = 'threw ' + String(e);
      }
      if (t.result === 'acceptable' ? typeof got !== 'boolean' : got !== (t.result === 'valid')) {
        failures.push(`tcId ${t.tcId} (${t.comment}) [${t.flags}]: expected ${t.result}, got ${got}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('ecdsa_secp256k1_sha256_bitcoin_test.json: without lowS, high-s cases follow the oracle and the rest hold', () => {
    const half = PARAMS.secp256k1.n >> 1n;
    const failures: string[] = [];
    let highS = 0, flipped = 0;
    for (const { pub, t } of cases('ecdsa_secp256k1_sha256_bitcoin_test.json')) {
      const sig = unhex(t.sig);
      const digest = sha256(unhex(t.msg));
      const got = core.secp256k1.verify(sig, digest, pub, { format: 'der' });
      let expected = t.result === 'valid';
      const rs = derToRS(sig);
      if (rs && rs.s > half) {
        // high-s: Bitcoin calls it invalid, plain ECDSA decides on the maths (oracle: noble, lowS:false)
        highS++;
        expected = nobleK1.verify(sig, digest, pub, { prehash: false, lowS: false, format: 'der' });
        if (expected && t.result === 'invalid') flipped++;
      } else if (t.result === 'acceptable') continue;
      if (got !== expected) failures.push(`tcId ${t.tcId} (${t.comment}) [${t.flags}]: expected ${expected}, got ${got}`);
    }
    expect(failures).toEqual([]);
    expect(highS).toBeGreaterThan(0);
    expect(flipped).toBeGreaterThan(0);
  });
});

interface EcdhTest { tcId: number; comment: string; flags: string[]; public: string; private: string; shared: string; result: string }

function privateTo32(h: string): Uint8Array {
  let s = h.replace(/^(00)+/, '');
  if (s.length > 64) throw new Error('private key longer than 32 bytes');
  return unhex(s.padStart(64, '0'));
}

describe('Wycheproof ECDH secp256r1 (SEC1 points)', () => {
  it('ecdh_secp256r1_ecpoint_test.json: shared x for valid, refusal for invalid', () => {
    const f = loadVector<{ numberOfTests: number; testGroups: { curve: string; tests: EcdhTest[] }[] }>('wycheproof/ecdh_secp256r1_ecpoint_test.json');
    const failures: string[] = [];
    let valid = 0, invalid = 0, total = 0;
    for (const g of f.testGroups) {
      expect(g.curve).toBe('secp256r1');
      for (const t of g.tests) {
        total++;
        const priv = privateTo32(t.private);
        const pub = unhex(t.public);
        let got: string;
        try {
          got = hex(core.p256.ecdh(priv, pub));
        } catch (e: any) {
          got = 'error:' + (e?.code ?? String(e));
        }
        if (t.result === 'valid') {
          valid++;
          if (got !== t.shared) failures.push(`tcId ${t.tcId} (${t.comment}): expected ${t.shared}, got ${got}`);
        } else if (t.result === 'invalid') {
          invalid++;
          // a public key of impossible length may be reported as INVALID_LENGTH instead
          const ok = got === 'error:INVALID_PUBLIC_KEY' || (pub.length !== 33 && pub.length !== 65 && got === 'error:INVALID_LENGTH');
          if (!ok) failures.push(`tcId ${t.tcId} (${t.comment}): expected INVALID_PUBLIC_KEY, got ${got}`);
        } else if (got !== t.shared && !got.startsWith('error:INVALID_PUBLIC_KEY')) {
          failures.push(`tcId ${t.tcId} (${t.comment}) acceptable: got ${got}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(total).toBe(f.numberOfTests);
    expect(valid).toBeGreaterThan(300);
    expect(invalid).toBeGreaterThan(20);
  });

  it('invalid ecpoint publics are also refused by isValidPublicKey / convertPublicKey', () => {
    const f = loadVector<{ testGroups: { tests: EcdhTest[] }[] }>('wycheproof/ecdh_secp256r1_ecpoint_test.json');
    for (const g of f.testGroups) {
      for (const t of g.tests) {
        if (t.result !== 'invalid') continue;
        const pub = unhex(t.public);
        expect(core.p256.isValidPublicKey(pub), `tcId ${t.tcId}`).toBe(false);
        expectCoreError(() => core.p256.convertPublicKey(pub, true), pub.length === 33 || pub.length === 65 ? 'INVALID_PUBLIC_KEY' : ['INVALID_PUBLIC_KEY', 'INVALID_LENGTH']);
      }
    }
  });
});

describe('Wycheproof ECDH secp256r1 (SubjectPublicKeyInfo)', () => {
  // A strict host-side reader accepts only the named-curve P-256 SPKI forms and hands the SEC1 point
  // to the core; every other encoding (explicit parameters, wrong curve, bad ASN.1) is refused.
  const PREFIX_U = '3059301306072a8648ce3d020106082a8648ce3d030107034200';
  const PREFIX_C = '3039301306072a8648ce3d020106082a8648ce3d030107032200';
  function pointFromSpki(h: string): Uint8Array | null {
    if (h.startsWith(PREFIX_U) && h.length === PREFIX_U.length + 130) return unhex(h.slice(PREFIX_U.length));
    if (h.startsWith(PREFIX_C) && h.length === PREFIX_C.length + 66) return unhex(h.slice(PREFIX_C.length));
    return null;
  }

  it('ecdh_secp256r1_test.json: valid cases give the shared x, invalid points are refused', () => {
    const f = loadVector<{ numberOfTests: number; testGroups: { curve: string; tests: EcdhTest[] }[] }>('wycheproof/ecdh_secp256r1_test.json');
    const failures: string[] = [];
    let total = 0, viaCore = 0, refusedByReader = 0;
    for (const g of f.testGroups) {
      expect(g.curve).toBe('secp256r1');
      for (const t of g.tests) {
        total++;
        const pt = pointFromSpki(t.public);
        if (!pt) {
          refusedByReader++;
          if (t.result === 'valid') failures.push(`tcId ${t.tcId}: valid case not in named-curve form`);
          continue;
        }
        viaCore++;
        let got: string;
        try {
          got = hex(core.p256.ecdh(privateTo32(t.private), pt));
        } catch (e: any) {
          got = 'error:' + (e?.code ?? String(e));
        }
        if (t.result === 'valid' && got !== t.shared) failures.push(`tcId ${t.tcId} (${t.comment}): expected ${t.shared}, got ${got}`);
        if (t.result === 'invalid' && got !== 'error:INVALID_PUBLIC_KEY') failures.push(`tcId ${t.tcId} (${t.comment}) [${t.flags}]: expected INVALID_PUBLIC_KEY, got ${got}`);
        if (t.result === 'acceptable' && got !== t.shared && got !== 'error:INVALID_PUBLIC_KEY') failures.push(`tcId ${t.tcId} acceptable: got ${got}`);
      }
    }
    expect(failures).toEqual([]);
    expect(total).toBe(f.numberOfTests);
    expect(viaCore).toBeGreaterThan(350);
    expect(refusedByReader).toBeGreaterThan(0);
  });
});
