// Writes assembly/hash/sha256.ts from sha256.tpl beside this file: the 64 unrolled rounds of the
// SHA-256 compression function and the initial hash value. Constants are computed here, not
// copied: K[i] = the first 32 bits of the fractional part of the cube root of the i-th prime,
// H0[i] = those of the square root (FIPS 180-4 §4.2.2, §5.3.3).
// Usage: node scripts/gen-sha256/build.mjs [outDir] (default assembly/hash/).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] ?? join(here, '..', '..', 'assembly', 'hash');

function primes(count) {
  const out = [];
  for (let n = 2; out.length < count; n++) if (out.every((p) => n % p !== 0)) out.push(n);
  return out;
}
/** floor(x^(1/k)) for a BigInt x ≥ 0 (Newton's method from above). */
function iroot(x, k) {
  if (x < 2n) return x;
  let r = 1n << BigInt(Math.ceil(x.toString(2).length / Number(k)) + 1);
  for (;;) {
    const next = ((k - 1n) * r + x / r ** (k - 1n)) / k;
    if (next >= r) return r;
    r = next;
  }
}
const frac32 = (p, k) => iroot(BigInt(p) << (32n * k), k) & 0xffffffffn; // first 32 bits of frac(p^(1/k))
const hex = (v) => '0x' + v.toString(16).padStart(8, '0');
const K = primes(64).map((p) => frac32(p, 3n));
const H0 = primes(8).map((p) => frac32(p, 2n));

const S1 = (x) => `(rotr<u32>(${x}, 6) ^ rotr<u32>(${x}, 11) ^ rotr<u32>(${x}, 25))`;
const S0 = (x) => `(rotr<u32>(${x}, 2) ^ rotr<u32>(${x}, 13) ^ rotr<u32>(${x}, 22))`;
const s1 = (x) => `(rotr<u32>(${x}, 17) ^ rotr<u32>(${x}, 19) ^ (${x} >>> 10))`;
const s0 = (x) => `(rotr<u32>(${x}, 7) ^ rotr<u32>(${x}, 18) ^ (${x} >>> 3))`;
const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const rounds = [];
for (let i = 0; i < 64; i++) {
  // the working variables rotate instead of moving: in round i, A..H are names[(j − i) mod 8]
  const [A, B, C, D, E, F, G, H] = names.map((_, j) => names[(j - (i % 8) + 8) % 8]);
  const j = i % 16;
  const w = (d) => `w${(j + d) % 16}`;
  if (i >= 16) rounds.push(`  w${j} += ${s1(w(14))} + ${w(9)} + ${s0(w(1))};`);
  rounds.push(`  t = ${H} + ${S1(E)} + (${G} ^ (${E} & (${F} ^ ${G}))) + ${hex(K[i])} + w${j};`);
  rounds.push(`  ${D} += t;`);
  rounds.push(`  ${H} = t + ${S0(A)} + ((${A} & ${B}) | (${C} & (${A} | ${B})));`);
}
const init = H0.map((h, i) => `  store<u32>(ctx, ${hex(h)}, ${4 * i});`);

const out = readFileSync(join(here, 'sha256.tpl'), 'utf8')
  .replace('@@ROUNDS@@', rounds.join('\n'))
  .replace('@@INIT@@', init.join('\n'));
writeFileSync(join(outDir, 'sha256.ts'), out);
