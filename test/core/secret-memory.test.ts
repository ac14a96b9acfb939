// Scan the core's linear memory after each secret operation for the secret it used, in the forms
// a 256-bit value can take in memory (big- and little-endian bytes, and 26/52-bit-free raw words).
import { describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { createCore, instantiate } from '../../src/core/node.js';

const N = { secp256k1: secp256k1.Point.CURVE().n, p256: p256.Point.CURVE().n } as const;
const be = (x: bigint) => hexToBytes(x.toString(16).padStart(64, '0'));
const le = (x: bigint) => be(x).reverse();
const mod = (a: bigint, n: bigint) => ((a % n) + n) % n;
function inv(a: bigint, n: bigint): bigint { let [r0, r1, s0, s1] = [mod(a, n), n, 1n, 0n]; while (r1) { const q = r0 / r1; [r0, r1] = [r1, r0 - q * r1]; [s0, s1] = [s1, s0 - q * s1]; } return mod(s0, n); }

function find(mem: Uint8Array, needle: Uint8Array): number {
  // needle is 32 bytes: look for its first 16 bytes (a partial copy is also a leak)
  const n = Buffer.from(needle.subarray(0, 16));
  return Buffer.from(mem.buffer, mem.byteOffset, mem.byteLength).indexOf(n);
}
function limbs29(x: bigint): Uint8Array {
  const b = new Uint8Array(36);
  const dv = new DataView(b.buffer);
  for (let i = 0; i < 9; i++) dv.setUint32(4 * i, Number((x >> BigInt(29 * i)) & 0x1fffffffn), true);
  return b;
}
let curN = 0n;
function secretsLeft(mem: Uint8Array, values: Record<string, bigint>): string[] {
  const out: string[] = [];
  for (const [name, v] of Object.entries(values)) {
    for (const [form, x] of [['limbs', v], ['mont limbs', mod(v * (1n << 261n), curN)]] as const) {
      const at = find(mem, limbs29(x));
      if (at >= 0 && x > (1n << 128n)) out.push(`${name} (${form}) at ${at}`);
    }
    if (find(mem, be(v)) >= 0) out.push(`${name} (big-endian) at ${find(mem, be(v))}`);
    if (find(mem, le(v)) >= 0) out.push(`${name} (little-endian) at ${find(mem, le(v))}`);
  }
  return out;
}

describe('wasm memory after secret operations', () => {
  for (const curve of ['secp256k1', 'p256'] as const) {
    // Guards: sign wipes the key, the nonce and its inverse from the core's linear memory.
    it(`${curve}: sign leaves neither the key nor the nonce in memory`, () => {
      const inst = instantiate();
      const core = createCore(inst);
      const mem = () => new Uint8Array((inst.exports.memory as WebAssembly.Memory).buffer);
      const n = N[curve]; curN = n;
      const d = BigInt('0x' + 'a5c3'.repeat(16)) % n;
      const digest = hexToBytes('7e'.repeat(32));
      const sig = core[curve].sign(digest, be(d));
      const r = BigInt('0x' + bytesToHex(sig.signature.subarray(0, 32)));
      const s = BigInt('0x' + bytesToHex(sig.signature.subarray(32)));
      const z = BigInt('0x' + bytesToHex(digest)) % n;
      const k = mod(inv(s, n) * (z + r * d), n);
      expect(secretsLeft(mem(), { d, 'n-d': n - d, k, 'n-k': n - k, 'k^-1': inv(k, n) })).toEqual([]);
    });
    // Guards: getPublicKey, isValidPrivateKey, ecdh and the BIP32 tweak leave no key, tweak, child key or shared secret behind.
    it(`${curve}: getPublicKey / isValidPrivateKey / ecdh / tweak leave no key in memory`, () => {
      const inst = instantiate();
      const core = createCore(inst);
      const mem = () => new Uint8Array((inst.exports.memory as WebAssembly.Memory).buffer);
      const n = N[curve]; curN = n;
      const d = BigInt('0x' + '3c5a'.repeat(16)) % n;
      const t = BigInt('0x' + '1f2e'.repeat(16)) % n;
      core[curve].getPublicKey(be(d));
      core[curve].isValidPrivateKey(be(d));
      const other = (curve === 'p256' ? p256 : secp256k1).getPublicKey(hexToBytes('11'.repeat(32)));
      const shared = core[curve].ecdh(be(d), other);
      const child = core[curve].privateKeyTweakAdd(be(d), be(t));
      expect(secretsLeft(mem(), {
        d, 'n-d': n - d, tweak: t, child: BigInt('0x' + bytesToHex(child)), shared: BigInt('0x' + bytesToHex(shared)),
      })).toEqual([]);
    });
    // Guards: the batch signing path wipes the key and every nonce as the single one does.
    it(`${curve}: signBatch leaves no key or nonce in memory`, () => {
      const inst = instantiate();
      const core = createCore(inst);
      const mem = () => new Uint8Array((inst.exports.memory as WebAssembly.Memory).buffer);
      const n = N[curve]; curN = n;
      const d = BigInt('0x' + '5a3c'.repeat(16)) % n;
      const digests = [hexToBytes('01'.repeat(32)), hexToBytes('02'.repeat(32)), hexToBytes('03'.repeat(32))];
      const sigs = core[curve].signBatch(digests, be(d));
      const vals: Record<string, bigint> = { d, 'n-d': n - d };
      sigs.forEach((sg, i) => {
        const r = BigInt('0x' + bytesToHex(sg.signature.subarray(0, 32)));
        const s = BigInt('0x' + bytesToHex(sg.signature.subarray(32)));
        const z = BigInt('0x' + bytesToHex(digests[i]!)) % n;
        const k = mod(inv(s, n) * (z + r * d), n);
        vals[`k${i}`] = k; vals[`n-k${i}`] = n - k; vals[`kinv${i}`] = inv(k, n);
      });
      expect(secretsLeft(mem(), vals)).toEqual([]);
    });
  }
});
