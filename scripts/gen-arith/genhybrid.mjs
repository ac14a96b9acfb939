// prints the column products of a 9x29-bit multiplication split between SIMD and scalar code:
// column pairs P_k = (c_k, c_{k+1}) for even k < SPLIT with the SIMD 32x32→64 multiply (as
// the former all-SIMD generator), the columns c_SPLIT..c_16 with scalar i64 multiplies. The two kinds of multiply
// go to different execution ports (the SIMD one needs two shuffles each), so a mix of them
// finishes sooner than either alone (fe_mul with SPLIT = 8: ≈ 36 ns against ≈ 39 all SIMD on
// secp256k1, ≈ 33 against ≈ 36.5 on P-256; 4, 6, 10, 12 measured no better than 8; 18 is the
// all-SIMD form). Usage: node genhybrid.mjs SPLIT (even, 2..18)
const L = 9;
const split = Number(process.argv[2] ?? 8);
const s = [];
const pairs = [];
for (let k = 0; k < split; k += 2) pairs.push(k);
const needA = new Set(), needB = new Set();
const terms = {};
for (const k of pairs) {
  const t = [];
  for (let i = 0; i < L; i++) { const j = k - i; if (j >= 0 && j < L) { t.push([i, `B${j}`]); needA.add(i); needB.add(j); } }
  if (k + 1 < L) { t.push([k + 1, 'Z']); needA.add(k + 1); needB.add(0); }
  terms[k] = t;
}
for (const i of [...needA].sort((x, y) => x - y)) s.push(`  let A${i} = v128.load32_splat(a + ${4 * i});`);
for (const j of [...needB].sort((x, y) => x - y)) s.push(`  let B${j} = v128.load(b, ${4 * j});`);
if (pairs.some((k) => k + 1 < L)) s.push(`  let Z = v128.shuffle<i32>(i32x4.splat(0), B0, 0, 4, 0, 0);`);
const simdOps = [], extracts = [];
for (const k of pairs) {
  const t = terms[k].map(([i, b]) => `i64x2.extmul_low_i32x4_u(A${i}, ${b})`);
  simdOps.push(`  let P${k} = ${t[0]};`);
  for (let q = 1; q < t.length; q++) simdOps.push(`  P${k} = i64x2.add(P${k}, ${t[q]});`);
}
for (const k of pairs) {
  extracts.push(`  let c${k} = i64x2.extract_lane(P${k}, 0);`);
  if (k < 16) extracts.push(`  let c${k + 1} = i64x2.extract_lane(P${k}, 1);`);
}
const needa = new Set(), needb = new Set();
const cols = [];
for (let k = split; k < 2 * L - 1; k++) {
  const t = [];
  for (let i = 0; i < L; i++) { const j = k - i; if (j >= 0 && j < L) { t.push(`a${i} * b${j}`); needa.add(i); needb.add(j); } }
  cols.push(`  let c${k} = ${t.join(' + ')};`);
}
for (const i of [...needa].sort((x, y) => x - y)) s.push(`  let a${i} = <i64>load<u32>(a, ${4 * i});`);
for (const j of [...needb].sort((x, y) => x - y)) s.push(`  let b${j} = <i64>load<u32>(b, ${4 * j});`);
s.push(...simdOps, ...extracts, ...cols); // (alternating them in the source measured no better)
console.log(s.join('\n'));
