// Small byte helpers shared inside src/crypto (no key material is ever formatted into messages).
import { CryptoError } from './errors.js';

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/;

/** Strict hex → bytes. Accepts an optional 0x/0X prefix only when `allowPrefix` (default true). */
export function hexToBytes(hex: string, field?: string, allowPrefix = true): Uint8Array {
  if (typeof hex !== 'string') throw new CryptoError('INVALID_HEX', 'expected a hex string', field);
  let h = hex;
  if (allowPrefix && (h.startsWith('0x') || h.startsWith('0X'))) h = h.slice(2);
  if (!HEX_RE.test(h)) throw new CryptoError('INVALID_HEX', 'not an even-length hex string', field);
  return Uint8Array.from(Buffer.from(h, 'hex'));
}

export function bytesToHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

/** Overwrite a buffer holding secret material. */
export function wipe(...bufs: (Uint8Array | undefined | null)[]): void {
  for (const b of bufs) if (b) b.fill(0);
}

export function u32be(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, false);
  return b;
}
