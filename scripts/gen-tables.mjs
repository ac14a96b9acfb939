#!/usr/bin/env node
// Generates the per-curve constants and precomputed base-point tables of the wasm core
// (assembly/tables/secp256k1.ts, assembly/tables/p256.ts) with plain BigInt arithmetic.
// The internal field representation is 9 limbs of 29 bits (stored as u32, padded to 10 words
// = 40 bytes per element); P-256 field elements are kept in Montgomery form with R = 2^261,
// secp256k1 field elements in plain form. Scalars use Montgomery form (R = 2^261) for both.
// Run with `npm run gen:tables`; the output is checked in.
import { writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const LIMBS = 9;
const BITS = 29n;
const MASK = (1n << BITS) - 1n;
const RBITS = 261n; // Montgomery radix 2^(9*29)
const COMB_BITS = 6; // signed 6-bit windows of the fixed-base comb
const COMB_WINDOWS = 43; // ceil(256 / 6)
const COMB_ENTRIES = 32; // |digit| = 1..32 (digit 0 = no addition, negative digits negate y)
const WNAF_G_WINDOW = 8; // verify: odd multiples 1G..(2^(w-1)-1)G
const WNAF_G_ENTRIES = 1 << (WNAF_G_WINDOW - 2);

const CURVES = {
  secp256k1: {
    p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn,
    n: 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
    a: 0n,
    b: 7n,
    gx: 0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798n,
    gy: 0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8n,
    mont: false,
    glv: {
      lambda: 0x5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72n,
      beta: 0x7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501een,
      a1: 0x3086d221a7d46bcde86c90e49284eb15n,
      b1: -0xe4437ed6010e88286f547fa90abfe4c3n,
      a2: 0x114ca50f7a8e2f3f657c1108d9d44cfd8n,
      b2: 0x3086d221a7d46bcde86c90e49284eb15n,
    },
  },
  p256: {
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
    a: 0xffffffff00000001000000000000000000000000fffffffffffffffffffffffcn,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
    gx: 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
    gy: 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
    mont: true,
  },
};

const mod = (a, m) => ((a % m) + m) % m;
function pow(b, e, m) {
  let r = 1n;
  b = mod(b, m);
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}
const inv = (a, m) => pow(a, m - 2n, m); // p and n are prime
function invPow2(a, bits) {
  // inverse of odd a modulo 2^bits (Newton iteration x ← x(2 − ax))
  const m = 1n << bits;
  let x = 1n;
  for (let i = 0; i < 8; i++) x = mod(x * (2n - a * x), m);
  if (mod(a * x, m) !== 1n) throw new Error('no inverse');
  return x;
}

function limbs(x) {
  const out = [];
  for (let i = 0; i < LIMBS; i++) {
    out.push(Number(x & MASK));
    x >>= BITS;
  }
  if (x !== 0n) throw new Error('value does not fit 9x29 limbs');
  out.push(0); // pad to 40 bytes
  return out;
}
function limbs30(x) {
  // 9 x 30-bit limbs for the safegcd inversion (signed30 form, all limbs non-negative here)
  const out = [];
  for (let i = 0; i < 9; i++) {
    out.push(Number(x & ((1n << 30n) - 1n)));
    x >>= 30n;
  }
  if (x !== 0n) throw new Error('value does not fit 9x30 limbs');
  out.push(0);
  return out;
}

function makeCurve(c) {
  const { p, n } = c;
  const R = 1n << RBITS;
  const toF = (x) => (c.mont ? mod(x * R, p) : mod(x, p));
  const add = (P, Q) => {
    if (P === null) return Q;
    if (Q === null) return P;
    if (P[0] === Q[0]) {
      if (mod(P[1] + Q[1], p) === 0n) return null;
      const l = mod((3n * P[0] * P[0] + c.a) * inv(2n * P[1], p), p);
      const x = mod(l * l - 2n * P[0], p);
      return [x, mod(l * (P[0] - x) - P[1], p)];
    }
    const l = mod((Q[1] - P[1]) * inv(Q[0] - P[0], p), p);
    const x = mod(l * l - P[0] - Q[0], p);
    return [x, mod(l * (P[0] - x) - P[1], p)];
  };
  const mul = (k, P) => {
    let r = null;
    let q = P;
    while (k > 0n) {
      if (k & 1n) r = add(r, q);
      q = add(q, q);
      k >>= 1n;
    }
    return r;
  };
  const G = [c.gx, c.gy];
  if (mod(G[1] * G[1] - (G[0] ** 3n + c.a * G[0] + c.b), p) !== 0n) throw new Error('G not on curve');
  if (mul(n, G) !== null) throw new Error('bad order');
  const pt = (P) => [...limbs(toF(P[0])), ...limbs(toF(P[1]))];

  const comb = [];
  let base = G; // 16^w G
  for (let w = 0; w < COMB_WINDOWS; w++) {
    let acc = null;
    for (let d = 1; d <= COMB_ENTRIES; d++) {
      acc = add(acc, base);
      comb.push(...pt(acc));
    }
    for (let d = COMB_ENTRIES + 1; d <= 1 << COMB_BITS; d++) acc = add(acc, base);
    base = acc; // 64 * base
  }
  const oddMultiples = (P) => {
    const out = [];
    const P2 = add(P, P);
    let odd = P;
    for (let j = 0; j < WNAF_G_ENTRIES; j++) {
      out.push(...pt(odd));
      odd = add(odd, P2);
    }
    return out;
  };
  const wnaf = oddMultiples(G);
  const wnaf128 = oddMultiples(mul(1n << 128n, G));
  const mu = mod(-invPow2(n, BITS), 1n << BITS);
  let glv = {};
  if (c.glv) {
    // secp256k1 endomorphism: λ·(x, y) = (β·x, y); lattice basis (a1, b1), (a2, b2) of
    // {(u, v) : u + v·λ ≡ 0 mod n} used to split a scalar into two ~128-bit halves.
    const { lambda, beta, a1, b1, a2, b2 } = c.glv;
    const LG = mul(lambda, G);
    if (LG[0] !== mod(beta * G[0], p) || LG[1] !== G[1]) throw new Error('bad endomorphism');
    if (mod(a1 + b1 * lambda, n) !== 0n || mod(a2 + b2 * lambda, n) !== 0n) throw new Error('bad lattice');
    const words = (x) => Array.from({ length: 8 }, (_, i) => Number((x >> BigInt(32 * i)) & 0xffffffffn));
    const g1 = (b2 * (1n << 384n) + n / 2n) / n; // round(2^384 · b2 / n)
    const g2 = (-b1 * (1n << 384n) + n / 2n) / n; // round(2^384 · (−b1) / n)
    glv = {
      GLV_LAMBDA_R: limbs(mod(lambda * R, n)),
      GLV_MB1_R: limbs(mod(-b1 * R, n)),
      GLV_MB2_R: limbs(mod(-b2 * R, n)),
      GLV_G1: words(g1),
      GLV_G2: words(g2),
      FP_BETA: limbs(beta),
    };
  } // −n⁻¹ mod 2^29 (n odd)
  return {
    FP_P: limbs(p),
    FP_BIAS: limbs(4n * p),
    FP_ONE: limbs(toF(1n)),
    FP_B: limbs(toF(c.b)),
    FP_R2: limbs(c.mont ? mod(R * R, p) : 1n),
    FP_R3: limbs(c.mont ? mod(R * R * R, p) : 1n),
    FP_P30: limbs30(p),
    FP_PINV30: [Number(invPow2(p, 30n)), 0, 0, 0],
    SC_N: limbs(n),
    SC_R3: limbs(mod(R * R * R, n)),
    SC_N30: limbs30(n),
    SC_NINV30: [Number(invPow2(n, 30n)), 0, 0, 0],
    SC_MU: [Number(mu), 0, 0, 0],
    SC_R2: limbs(mod(R * R, n)),
    SC_ONE: limbs(mod(R, n)),
    SC_HALF: limbs(n >> 1n),
    G_COMB: comb,
    G_WNAF: wnaf,
    G128_WNAF: wnaf128,
    ...glv,
  };
}

const here = dirname(fileURLToPath(import.meta.url));
// Optional argument: another output folder (the freshness test writes to a temp dir).
const outDir = process.argv[2] ?? join(here, '..', 'assembly', 'tables');
mkdirSync(outDir, { recursive: true });
for (const [name, c] of Object.entries(CURVES)) {
  const t = makeCurve(c);
  const lines = [
    `// GENERATED by scripts/gen-tables.mjs (npm run gen:tables) — do not edit by hand.`,
    `// ${name}: field/scalar constants in the core's 9x29-bit limb form (40 bytes per element)`,
    `// and precomputed affine multiples of the base point G.`,
    `// G_COMB: ${COMB_WINDOWS} windows x ${COMB_ENTRIES} entries, entry (w, d) = d * 64^w * G, 80 bytes each (x, y).`,
    `// G_WNAF: odd multiples (2j+1) * G, j = 0..${WNAF_G_ENTRIES - 1} (wNAF window ${WNAF_G_WINDOW}); G128_WNAF: the same for 2^128 * G.`,
    '',
  ];
  for (const [k, v] of Object.entries(t)) {
    const chunks = [];
    for (let i = 0; i < v.length; i += 20) chunks.push('  ' + v.slice(i, i + 20).join(', ') + ',');
    lines.push(`export const ${k}: usize = memory.data<u32>([\n${chunks.join('\n')}\n], 16);`);
  }
  writeFileSync(join(outDir, `${name}.ts`), lines.join('\n') + '\n');
  console.log(`wrote ${join(outDir, `${name}.ts`)}`);
}
