// Constant-time evidence for the signing core, dudect-style: for each secret operation, many
// timed calls with the secret drawn from one of two classes in random order, then Welch's t-test
// on the two timing distributions. |t| ≥ 4.5 means the timings tell the classes apart (a leak to
// find); the control test (random vs random) shows what the harness itself produces.
//
//   npm run bench:ct                          (= build, then node dist/bench/ct.js)
//   CT_N=20000 CT_OPS=sign,ecdh node dist/bench/ct.js     (fewer measurements, some operations)
//
// Tests per operation and curve: "fixed" (one fixed random secret vs fresh random secrets),
// "low" (the low-weight secrets 1 and 2^255 vs random) and "control" (random vs random).
// Every measurement's inputs are prepared before timing starts in one buffer inside the wasm
// memory (records of identical layout; the classes differ only in the secret bytes), copied into
// the core's input region with copyWithin (no allocation, same work for both classes), and only
// the exported call is timed. The raw ABI is called directly, not through src/core/api.ts.
// Writes bench/results/ct-<date>.json and ct-latest.md. Measured here, never asserted in tests.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { core, instantiate } from '../src/core/node.js';
import { packageRoot } from '../src/paths.js';

type CurveName = 'secp256k1' | 'p256';
type TestName = 'fixed' | 'low' | 'control';

interface Abi {
  memory: WebAssembly.Memory;
  ioIn(): number;
  sign(curve: number, flags: number, extraLen: number): number;
  signBatch(curve: number, count: number, oneKey: number): number;
  getPublicKey(curve: number, compressed: number): number;
  ecdh(curve: number, pubLen: number): number;
  privateKeyTweakAdd(curve: number): number;
  publicKeyTweakAdd(curve: number, pubLen: number, compressed: number): number;
}

const N = Number(process.env.CT_N ?? 100_000);
const WARMUP = 2_000;
const REC = 384; // bytes per measurement record
const BATCH = 4;
const ORDER: Record<CurveName, Uint8Array> = {
  secp256k1: hexBytes('fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141'),
  p256: hexBytes('ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551'),
};
const CURVE_ID: Record<CurveName, number> = { secp256k1: 0, p256: 1 };

function hexBytes(h: string): Uint8Array {
  return new Uint8Array(Buffer.from(h, 'hex'));
}
function less(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}
/** A uniformly random scalar in [1, n). */
function randomScalar(curve: CurveName): Uint8Array {
  for (;;) {
    const k = new Uint8Array(randomBytes(32));
    if (less(k, ORDER[curve]) && k.some((b) => b !== 0)) return k;
  }
}
const ONE = hexBytes('00'.repeat(31) + '01');
const TOP = hexBytes('80' + '00'.repeat(31)); // 2^255 (< n on both curves)

/** One operation: where its secret and other inputs go in a record, which parts of the record are
 *  copied where in IN, and the call. */
interface Op {
  name: string;
  /** fills everything but the secret (public inputs, random or fixed; same distribution in both classes) */
  fill(rec: Uint8Array, curve: CurveName, fixed: { peer: Uint8Array }): void;
  secretAt: number; // offset of the 32-byte secret in the record
  segments: Array<[recOffset: number, inOffset: number, len: number]>;
  call(x: Abi, curve: number): number;
}

const OPS: Op[] = [
  {
    name: 'sign',
    fill: (rec) => rec.set(randomBytes(32), 0), // digest
    secretAt: 32, // key
    segments: [[0, 0, 64]],
    call: (x, c) => x.sign(c, 1, 0),
  },
  {
    name: `signBatch ×${BATCH}`,
    fill: (rec) => rec.set(randomBytes(32 * BATCH), 0), // digests
    secretAt: 32 * BATCH, // the one key
    segments: [[0, 0, 32 * BATCH], [32 * BATCH, 8192, 32]],
    call: (x, c) => x.signBatch(c, BATCH, 1),
  },
  {
    name: 'getPublicKey',
    fill: () => {},
    secretAt: 32,
    segments: [[0, 0, 64]],
    call: (x, c) => x.getPublicKey(c, 1),
  },
  {
    name: 'ecdh',
    fill: (rec, _c, f) => rec.set(f.peer, 256), // one fixed peer key (public)
    secretAt: 32,
    segments: [[0, 0, 289]],
    call: (x, c) => x.ecdh(c, 33),
  },
  {
    name: 'privateKeyTweakAdd (BIP32)',
    fill: (rec, curve) => rec.set(randomScalar(curve), 96), // tweak I_L, random in both classes
    secretAt: 32, // parent key
    segments: [[0, 0, 128]],
    call: (x, c) => x.privateKeyTweakAdd(c),
  },
  {
    name: 'publicKeyTweakAdd (BIP32)',
    fill: (rec, _c, f) => rec.set(f.peer, 256), // one fixed parent public key
    secretAt: 96, // tweak I_L
    segments: [[0, 0, 289]],
    call: (x, c) => x.publicKeyTweakAdd(c, 33, 1),
  },
];

interface Result {
  curve: CurveName;
  op: string;
  test: TestName;
  n: [number, number];
  medianUs: [number, number];
  t: number; // Welch's t over all measurements
  tCropped: number; // over the measurements below the 90th percentile (scheduler noise removed)
  failures: number;
}

function welch(times: Float64Array, cls: Uint8Array, limit: number): { t: number; n: [number, number] } {
  const n = [0, 0], mean = [0, 0], m2 = [0, 0];
  for (let i = 0; i < times.length; i++) {
    const v = times[i]!;
    if (v > limit) continue;
    const c = cls[i]!;
    n[c]!++;
    const d = v - mean[c]!;
    mean[c]! += d / n[c]!;
    m2[c]! += d * (v - mean[c]!);
  }
  const var0 = m2[0]! / (n[0]! - 1), var1 = m2[1]! / (n[1]! - 1);
  const t = (mean[0]! - mean[1]!) / Math.sqrt(var0 / n[0]! + var1 / n[1]!);
  return { t, n: [n[0]!, n[1]!] };
}

function median(times: Float64Array, cls: Uint8Array, c: number): number {
  const v = times.filter((_, i) => cls[i] === c).sort();
  return v[v.length >> 1]! * 1000;
}

function measure(x: Abi, curve: CurveName, op: Op, test: TestName, base: number): Result {
  const id = CURVE_ID[curve];
  const fixedSecret = randomScalar(curve);
  const fixed = { peer: core[curve].getPublicKey(randomScalar(curve), true) };
  const cls = new Uint8Array(randomBytes(N)).map((b) => b & 1);
  // all records, prepared before any timing
  let mem = new Uint8Array(x.memory.buffer);
  const rec = new Uint8Array(REC);
  for (let i = 0; i < N + WARMUP; i++) {
    rec.fill(0);
    op.fill(rec, curve, fixed);
    let secret: Uint8Array;
    const c = i < WARMUP ? i & 1 : cls[i - WARMUP]!;
    if (c === 1 || test === 'control') secret = randomScalar(curve);
    else if (test === 'fixed') secret = fixedSecret;
    else secret = randomBytes(1)[0]! & 1 ? ONE : TOP;
    rec.set(secret, op.secretAt);
    mem.set(rec, base + REC * i);
  }
  mem = new Uint8Array(x.memory.buffer);
  const inPtr = x.ioIn();
  const times = new Float64Array(N);
  const segs = op.segments;
  let failures = 0;
  for (let i = 0; i < N + WARMUP; i++) {
    const r = base + REC * i;
    for (let s = 0; s < segs.length; s++) {
      const [ro, io, len] = segs[s]!;
      mem.copyWithin(inPtr + io, r + ro, r + ro + len);
    }
    const t0 = performance.now();
    const st = op.call(x, id);
    const t1 = performance.now();
    if (st !== 0) failures++;
    if (i >= WARMUP) times[i - WARMUP] = t1 - t0;
  }
  const sorted = Float64Array.from(times).sort();
  const p90 = sorted[Math.floor(sorted.length * 0.9)]!;
  const all = welch(times, cls, Infinity);
  const cropped = welch(times, cls, p90);
  return {
    curve, op: op.name, test, n: all.n, medianUs: [median(times, cls, 0), median(times, cls, 1)],
    t: all.t, tCropped: cropped.t, failures,
  };
}

const fmt = (t: number) => Math.abs(t).toFixed(2);

export async function run(): Promise<Result[]> {
  const x = instantiate().exports as unknown as Abi;
  // room for the records after the core's own static memory (which it never grows)
  const base = x.memory.buffer.byteLength;
  x.memory.grow(Math.ceil((REC * (N + WARMUP)) / 65536));
  const only = process.env.CT_OPS?.split(',');
  const ops = OPS.filter((o) => !only || only.some((w) => o.name.startsWith(w)));
  const results: Result[] = [];
  const started = Date.now();
  for (const curve of ['secp256k1', 'p256'] as CurveName[]) {
    for (const op of ops) {
      for (const test of ['fixed', 'low', 'control'] as TestName[]) {
        const r = measure(x, curve, op, test, base);
        results.push(r);
        console.log(
          `${curve.padEnd(9)} ${op.name.padEnd(27)} ${test.padEnd(7)} |t| ${fmt(r.t).padStart(6)}  ` +
            `(< p90: ${fmt(r.tCropped).padStart(6)})  median ${r.medianUs[0].toFixed(1)} / ${r.medianUs[1].toFixed(1)} µs` +
            (r.failures ? `  ${r.failures} FAILED CALLS` : ''),
        );
      }
    }
  }
  const worst = Math.max(...results.filter((r) => r.test !== 'control').map((r) => Math.max(Math.abs(r.t), Math.abs(r.tCropped))));
  const lines = [
    `# Constant-time measurement (dudect-style Welch t-test), ${new Date().toISOString()}`,
    '',
    `${N.toLocaleString('en-US')} measurements per row in random class order (after ${WARMUP} warm-up calls), ` +
      `${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${((Date.now() - started) / 1000).toFixed(0)} s. ` +
      '|t| ≥ 4.5 would mean the classes are distinguishable.',
    '',
    '| curve | operation | fixed vs random: \\|t\\| (all / < p90) | low-weight vs random | control (random vs random) | median µs |',
    '|---|---|--:|--:|--:|--:|',
  ];
  for (const curve of ['secp256k1', 'p256'] as CurveName[]) {
    for (const op of ops) {
      const get = (t: TestName) => results.find((r) => r.curve === curve && r.op === op.name && r.test === t)!;
      const cell = (t: TestName) => `${fmt(get(t).t)} / ${fmt(get(t).tCropped)}`;
      lines.push(`| ${curve} | ${op.name} | ${cell('fixed')} | ${cell('low')} | ${cell('control')} | ${get('control').medianUs[1].toFixed(1)} |`);
    }
  }
  lines.push('', `Largest |t| outside the control rows: ${worst.toFixed(2)} (${worst >= 4.5 ? 'LEAK: investigate' : 'below 4.5'}).`);
  const md = lines.join('\n') + '\n';
  console.log('\n' + md);
  const dir = join(packageRoot(), 'bench', 'results');
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `ct-${new Date().toISOString().slice(0, 10)}.json`), JSON.stringify({ n: N, results }, null, 2));
  writeFileSync(join(dir, 'ct-latest.md'), md);
  if (results.some((r) => r.failures)) process.exitCode = 1;
  return results;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  run().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}
