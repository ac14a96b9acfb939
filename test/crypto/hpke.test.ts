import { describe, expect, it } from 'vitest';
import { hpkeDecrypt, hpkeEncrypt, formatHpkeBuf, generateP256KeyPair } from '@turnkey/crypto';
import { p256 } from '@noble/curves/nist.js';
import {
  aes256GcmOpen,
  aes256GcmSeal,
  decap,
  deriveKeyPair,
  encap,
  keySchedule,
  setupBaseR,
  setupBaseS,
  turnkeyOpen,
  turnkeySeal,
} from '../../src/crypto/hpke.js';
import { code, hex, loadVector, unhex } from './helpers.js';

describe('RFC 9180 base mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM', () => {
  const [v] = loadVector<any[]>('hpke/rfc9180_base_p256_sha256_aes256gcm.json');
  const info = unhex(v.info);

  it('DeriveKeyPair', () => {
    const r = deriveKeyPair(unhex(v.ikmR));
    expect(hex(r.privateKey)).toBe(v.skRm);
    expect(hex(r.publicKey)).toBe(v.pkRm);
    const e = deriveKeyPair(unhex(v.ikmE));
    expect(hex(e.privateKey)).toBe(v.skEm);
    expect(hex(e.publicKey)).toBe(v.pkEm);
  });

  it('Encap / Decap and key schedule', () => {
    const { sharedSecret, enc } = encap(unhex(v.pkRm), unhex(v.skEm));
    expect(hex(enc)).toBe(v.enc);
    expect(hex(sharedSecret)).toBe(v.shared_secret);
    expect(hex(decap(unhex(v.enc), unhex(v.skRm)))).toBe(v.shared_secret);
    const ks = keySchedule(sharedSecret, info);
    expect(hex(ks.keyScheduleContext)).toBe(v.key_schedule_context);
    expect(hex(ks.secret)).toBe(v.secret);
    expect(hex(ks.key)).toBe(v.key);
    expect(hex(ks.baseNonce)).toBe(v.base_nonce);
    expect(hex(ks.exporterSecret)).toBe(v.exporter_secret);
  });

  it(`all ${v.encryptions.length} encryptions in sequence (seal and open)`, () => {
    expect(v.encryptions).toHaveLength(257);
    const { enc, context: s } = setupBaseS(unhex(v.pkRm), info, unhex(v.skEm));
    expect(hex(enc)).toBe(v.enc);
    const r = setupBaseR(enc, unhex(v.skRm), info);
    for (const e of v.encryptions) {
      expect(hex(s.seal(unhex(e.pt), unhex(e.aad)))).toBe(e.ct);
      expect(hex(r.open(unhex(e.ct), unhex(e.aad)))).toBe(e.pt);
    }
    expect(s.sequenceNumber).toBe(257);
  });

  it('exports', () => {
    const r = setupBaseR(unhex(v.enc), unhex(v.skRm), info);
    for (const x of v.exports) expect(hex(r.export(unhex(x.exporter_context), x.L))).toBe(x.exported_value);
  });

  it('open rejects a modified ciphertext, aad, or the wrong sequence', () => {
    const e = v.encryptions[0];
    const ct = unhex(e.ct);
    ct[3] ^= 1;
    expect(code(() => setupBaseR(unhex(v.enc), unhex(v.skRm), info).open(ct, unhex(e.aad)))).toBe('DECRYPTION_FAILED');
    expect(code(() => setupBaseR(unhex(v.enc), unhex(v.skRm), info).open(unhex(e.ct), unhex('00')))).toBe('DECRYPTION_FAILED');
    expect(code(() => setupBaseR(unhex(v.enc), unhex(v.skRm), info).open(unhex(v.encryptions[1].ct), unhex(v.encryptions[1].aad)))).toBe(
      'DECRYPTION_FAILED',
    );
  });

  it('bad encapsulated keys are INVALID_PUBLIC_KEY', () => {
    expect(code(() => decap(new Uint8Array(65), unhex(v.skRm)))).toBe('INVALID_PUBLIC_KEY');
    const off = unhex(v.enc);
    off[64] ^= 1;
    expect(code(() => decap(off, unhex(v.skRm)))).toBe('INVALID_PUBLIC_KEY');
  });
});

describe('AES-256-GCM', () => {
  it('round trip and tamper detection', () => {
    const k = new Uint8Array(32).fill(7);
    const n = new Uint8Array(12).fill(9);
    const ct = aes256GcmSeal(k, n, new TextEncoder().encode('hello'), new Uint8Array([1]));
    expect(new TextDecoder().decode(aes256GcmOpen(k, n, ct, new Uint8Array([1])))).toBe('hello');
    expect(code(() => aes256GcmOpen(k, n, ct, new Uint8Array([2])))).toBe('DECRYPTION_FAILED');
    expect(code(() => aes256GcmOpen(k, n, ct.slice(0, 10), new Uint8Array([1])))).toBe('DECRYPTION_FAILED');
    expect(code(() => aes256GcmSeal(k.slice(1), n, ct, ct))).toBe('INVALID_LENGTH');
  });
});

describe('Turnkey flavour vs @turnkey/crypto', () => {
  it('our seal → their hpkeDecrypt (uncompressed and compressed receiver key)', () => {
    for (const compressed of [false, true]) {
      const kp = generateP256KeyPair();
      const pt = globalThis.crypto.getRandomValues(new Uint8Array(77));
      const target = unhex(compressed ? kp.publicKey : kp.publicKeyUncompressed);
      const { encappedPublic, ciphertext } = turnkeySeal(pt, target);
      expect(encappedPublic).toHaveLength(65);
      expect(ciphertext).toHaveLength(77 + 16);
      const out = hpkeDecrypt({ ciphertextBuf: ciphertext, encappedKeyBuf: encappedPublic, receiverPriv: kp.privateKey });
      expect(hex(out)).toBe(hex(pt));
    }
  });
  it('their hpkeEncrypt → our open', () => {
    const sk = p256.utils.randomSecretKey();
    const pkU = p256.getPublicKey(sk, false);
    const pt = new TextEncoder().encode('leaf lady until indicate praise final route toast cake minimum insect unknown');
    const sealed = JSON.parse(formatHpkeBuf(hpkeEncrypt({ plainTextBuf: pt, targetKeyBuf: pkU })));
    expect(new TextDecoder().decode(turnkeyOpen(unhex(sealed.encappedPublic), unhex(sealed.ciphertext), sk))).toBe(
      'leaf lady until indicate praise final route toast cake minimum insect unknown',
    );
    // a different receiver key cannot open it
    expect(code(() => turnkeyOpen(unhex(sealed.encappedPublic), unhex(sealed.ciphertext), p256.utils.randomSecretKey()))).toBe(
      'DECRYPTION_FAILED',
    );
  });
});
