// Stamp checks on worker threads (src/crypto/verifypool.ts) give exactly the answers of the
// in-thread check (src/crypto/stamp.ts verifyStamp), with @noble/curves signing the stamps.
import { describe, it, expect, afterEach } from 'vitest';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { StampVerifier } from '../../src/crypto/verifypool.js';
import { verifyStamp, type Stamp } from '../../src/crypto/stamp.js';

const verifiers: StampVerifier[] = [];
afterEach(async () => { for (const v of verifiers.splice(0)) await v.close(); });

const N = p256.Point.Fn.ORDER;

function cases(): { name: string; stamp: Stamp; body: Uint8Array; valid: boolean }[] {
  const sk = p256.utils.randomSecretKey();
  const pub = bytesToHex(p256.getPublicKey(sk, true));
  const body = new TextEncoder().encode(JSON.stringify({ organizationId: 'org', pad: 'x'.repeat(300) }));
  const sig = p256.sign(body, sk, { lowS: false });                 // compact r‖s over sha256(body)
  const der = (s: Uint8Array) => bytesToHex(p256.Signature.fromBytes(s, 'compact').toBytes('der'));
  const r = sig.slice(0, 32);
  const sBig = BigInt('0x' + bytesToHex(sig.slice(32)));
  const flipped = new Uint8Array(64);
  flipped.set(r);
  flipped.set(Buffer.from((N - sBig).toString(16).padStart(64, '0'), 'hex'), 32);
  const other = new Uint8Array(body); other[5] ^= 1;
  const st = (signature: string, publicKey = pub): Stamp => ({ publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature });
  const otherPub = bytesToHex(p256.getPublicKey(p256.utils.randomSecretKey(), true));
  return [
    { name: 'valid', stamp: st(der(sig)), body, valid: true },
    { name: 'other s (n − s) also valid (high-S accepted)', stamp: st(der(flipped)), body, valid: true },
    { name: 'body changed', stamp: st(der(sig)), body: other, valid: false },
    { name: 'another key', stamp: st(der(sig), otherPub), body, valid: false },
    { name: 'not a DER signature', stamp: st(bytesToHex(sig)), body, valid: false },
    { name: 'public key not on the curve', stamp: st(der(sig), '02' + 'ff'.repeat(32)), body, valid: false },
    { name: 'public key not compressed hex', stamp: st(der(sig), pub.slice(2)), body, valid: false },
  ];
}

describe('StampVerifier', () => {
  it('answers as verifyStamp, on a thread and on the calling thread', async () => {
    const v = new StampVerifier(2);
    verifiers.push(v);
    expect(v.threads).toBe(2);
    for (let round = 0; round < 3; round++) {
      for (const c of cases()) {
        expect(verifyStamp(c.stamp, c.body), c.name).toBe(c.valid);
        expect(await v.verify(c.stamp, c.body, true), `${c.name} (thread)`).toBe(c.valid);
        expect(await v.verify(c.stamp, c.body, false), `${c.name} (inline)`).toBe(c.valid);
      }
    }
  });

  it('secp256k1 and Ed25519 stamps go to the thread too, with the same answers', async () => {
    const v = new StampVerifier(1);
    verifiers.push(v);
    const body = new TextEncoder().encode(JSON.stringify({ organizationId: 'org', n: 1 }));
    const other = new Uint8Array(body); other[3] ^= 1;
    const k1 = secp256k1.utils.randomSecretKey();
    const k1Sig = bytesToHex(secp256k1.sign(body, k1, { format: 'der' }));
    const ed = ed25519.utils.randomSecretKey();
    const list: { stamp: Stamp; body: Uint8Array; valid: boolean }[] = [
      { stamp: { publicKey: bytesToHex(secp256k1.getPublicKey(k1, true)), scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1', signature: k1Sig }, body, valid: true },
      { stamp: { publicKey: bytesToHex(secp256k1.getPublicKey(k1, true)), scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1', signature: k1Sig }, body: other, valid: false },
      { stamp: { publicKey: bytesToHex(ed25519.getPublicKey(ed)), scheme: 'SIGNATURE_SCHEME_TK_API_ED25519', signature: bytesToHex(ed25519.sign(body, ed)) }, body, valid: true },
      { stamp: { publicKey: bytesToHex(ed25519.getPublicKey(ed)), scheme: 'SIGNATURE_SCHEME_TK_API_ED25519', signature: bytesToHex(ed25519.sign(body, ed)) }, body: other, valid: false },
    ];
    for (const c of list) {
      expect(verifyStamp(c.stamp, c.body)).toBe(c.valid);
      expect(await v.verify(c.stamp, c.body, true)).toBe(c.valid);
    }
  });

  it('one key stamping many times (its hot table on the thread) keeps every answer', async () => {
    const v = new StampVerifier(1);
    verifiers.push(v);
    const sk = p256.utils.randomSecretKey();
    const pub = bytesToHex(p256.getPublicKey(sk, true));
    const checks = Array.from({ length: 120 }, (_, i) => {
      const body = new TextEncoder().encode(JSON.stringify({ organizationId: 'org', i }));
      const signature = bytesToHex(p256.sign(body, sk, { format: 'der' }));
      const tampered = i % 3 === 0 ? new Uint8Array([...body.slice(0, -1), 0x20]) : body;
      return { stamp: { publicKey: pub, scheme: 'SIGNATURE_SCHEME_TK_API_P256' as const, signature }, body: tampered, valid: i % 3 !== 0 };
    });
    for (const c of checks) expect(await v.verify(c.stamp, c.body, true)).toBe(c.valid);
    expect((await Promise.all(checks.map((c) => v.verify(c.stamp, c.body, true))))).toEqual(checks.map((c) => c.valid));
  });

  it('many concurrent checks each get their own answer', async () => {
    const v = new StampVerifier(1);
    verifiers.push(v);
    const all = Array.from({ length: 20 }, cases).flat();
    const got = await Promise.all(all.map((c) => v.verify(c.stamp, c.body, true)));
    expect(got).toEqual(all.map((c) => c.valid));
  });

  it('without threads (closed, or none) checks on the calling thread', async () => {
    const v = new StampVerifier(1);
    await v.close();
    expect(v.threads).toBe(0);
    for (const c of cases()) expect(v.verify(c.stamp, c.body, true), c.name).toBe(c.valid);
  });
});
