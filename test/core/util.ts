// Shared helpers for the core tests (not a test file itself).
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { CoreError } from '../../src/core/node.js';

export const VECTORS = fileURLToPath(new URL('../vectors/', import.meta.url));
export function loadVector<T = any>(rel: string): T {
  return JSON.parse(readFileSync(VECTORS + rel, 'utf8')) as T;
}

export const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
export function unhex(s: string): Uint8Array {
  if (s.length % 2) throw new Error('odd hex');
  return new Uint8Array(Buffer.from(s, 'hex'));
}
export const sha256 = (b: Uint8Array): Uint8Array => new Uint8Array(createHash('sha256').update(b).digest());

export function bytesToBig(b: Uint8Array): bigint {
  return b.length === 0 ? 0n : BigInt('0x' + hex(b));
}
export function bigToBytes(x: bigint, len = 32): Uint8Array {
  if (x < 0n) throw new Error('negative');
  const s = x.toString(16).padStart(len * 2, '0');
  if (s.length > len * 2) throw new Error('too large');
  return unhex(s);
}

export type Curve = 'secp256k1' | 'p256';
export const NOBLE = { secp256k1, p256 } as const;
export const CURVES: Curve[] = ['secp256k1', 'p256'];
/** Curve constants (facts from SEC 2 / FIPS 186), cross-checked against noble below. */
export const PARAMS: Record<Curve, { p: bigint; n: bigint }> = {
  secp256k1: {
    p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn,
    n: 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
  },
  p256: {
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
  },
};
for (const c of CURVES) {
  if (NOBLE[c].Point.Fp.ORDER !== PARAMS[c].p || NOBLE[c].Point.Fn.ORDER !== PARAMS[c].n) {
    throw new Error('curve constants disagree with @noble/curves for ' + c);
  }
}

/** Deterministic PRNG (sfc32) so failures reproduce from the seed. */
export class Rng {
  private a: number; private b: number; private c: number; private d: number;
  constructor(seed: number) {
    this.a = 0x9e3779b9; this.b = 0x243f6a88; this.c = 0xb7e15162; this.d = seed >>> 0;
    for (let i = 0; i < 20; i++) this.u32();
  }
  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.u32();
      out[i] = v & 0xff;
      if (i + 1 < n) out[i + 1] = (v >>> 8) & 0xff;
      if (i + 2 < n) out[i + 2] = (v >>> 16) & 0xff;
      if (i + 3 < n) out[i + 3] = v >>> 24;
    }
    return out;
  }
  int(max: number): number { return this.u32() % max; }
  /** A valid private key in [1, n). */
  privateKey(curve: Curve): Uint8Array {
    for (;;) {
      const k = this.bytes(32);
      const x = bytesToBig(k);
      if (x > 0n && x < PARAMS[curve].n) return k;
    }
  }
}

/** Assert fn throws a CoreError whose code is one of `codes`. */
export function expectCoreError(fn: () => unknown, codes: string | string[]): void {
  const allowed = Array.isArray(codes) ? codes : [codes];
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, 'expected a CoreError ' + allowed.join('|')).toBeInstanceOf(CoreError);
  expect(allowed).toContain((thrown as CoreError).code);
}

/** Minimal strict DER ECDSA-Sig-Value parser for vectors the file calls valid (test side only). */
export function derToRS(der: Uint8Array): { r: bigint; s: bigint } | null {
  let i = 0;
  const byte = () => (i < der.length ? der[i++] : -1);
  if (byte() !== 0x30) return null;
  const total = byte();
  if (total < 0 || total > 0x7f || total !== der.length - 2) return null;
  const int = (): bigint | null => {
    if (byte() !== 0x02) return null;
    const len = byte();
    if (len <= 0 || len > 0x7f || i + len > der.length) return null;
    const v = der.subarray(i, i + len);
    i += len;
    if (v[0] & 0x80) return null;
    if (len > 1 && v[0] === 0 && !(v[1] & 0x80)) return null;
    return bytesToBig(v);
  };
  const r = int();
  const s = int();
  if (r === null || s === null || i !== der.length) return null;
  return { r, s };
}

export function rsToDer(r: bigint, s: bigint): Uint8Array {
  const enc = (x: bigint) => {
    let h = x.toString(16);
    if (h.length % 2) h = '0' + h;
    if (parseInt(h.slice(0, 2), 16) & 0x80) h = '00' + h;
    return [0x02, h.length / 2, ...unhex(h)];
  };
  const body = [...enc(r), ...enc(s)];
  return new Uint8Array([0x30, body.length, ...body]);
}

export function splitSig(sig: Uint8Array): { r: bigint; s: bigint } {
  return { r: bytesToBig(sig.subarray(0, 32)), s: bytesToBig(sig.subarray(32, 64)) };
}
export function joinSig(r: bigint, s: bigint): Uint8Array {
  const out = new Uint8Array(64);
  out.set(bigToBytes(r), 0);
  out.set(bigToBytes(s), 32);
  return out;
}

// ---- Wycheproof ECDSA (wycheproof.test.ts, hotkeys.test.ts) ----

export interface EcdsaTest { tcId: number; comment: string; flags: string[]; msg: string; sig: string; result: 'valid' | 'invalid' | 'acceptable' }
export interface EcdsaFile { numberOfTests: number; testGroups: { publicKey: { uncompressed: string }; sha: string; tests: EcdsaTest[] }[] }

/** The ECDSA files over SHA-256 in test/vectors/wycheproof, with their curve and signature encoding. */
export const ECDSA_FILES: { file: string; curve: Curve; format: 'der' | 'compact' }[] = [
  { file: 'ecdsa_secp256k1_sha256_test.json', curve: 'secp256k1', format: 'der' },
  { file: 'ecdsa_secp256k1_sha256_p1363_test.json', curve: 'secp256k1', format: 'compact' },
  { file: 'ecdsa_secp256r1_sha256_test.json', curve: 'p256', format: 'der' },
  { file: 'ecdsa_secp256r1_sha256_p1363_test.json', curve: 'p256', format: 'compact' },
];

/**
 * Runs one verification of test t and judges it: undefined when the verdict is right (valid →
 * true, invalid → false, acceptable → either, never a throw), else a line saying what went wrong.
 */
export function ecdsaVerdictFailure(t: EcdsaTest, verify: () => boolean): string | undefined {
  let got: boolean | string;
  try {
    got = verify();
  } catch (e) {
    got = 'threw ' + String(e);
  }
  if (t.result === 'acceptable') return typeof got === 'boolean' ? undefined : `tcId ${t.tcId} (${t.comment}): ${got}`;
  return got === (t.result === 'valid') ? undefined : `tcId ${t.tcId} (${t.comment}) [${t.flags}]: expected ${t.result}, got ${got}`;
}
