// P-256 stamp checks on worker threads (src/http/verifypool.ts) give exactly the answers of the
// in-thread check (src/http/stamp.ts verifyStamp), with @noble/curves signing the stamps.
import { describe, it, expect, afterEach } from 'vitest';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { StampVerifier } from '../../src/http/verifypool.js';
import { verifyStamp, type Stamp } from '../../src/http/stamp.js';

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
