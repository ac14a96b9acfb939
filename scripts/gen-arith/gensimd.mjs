// prints the SIMD column code: pairs P_k (k even) = sum extmul_low(A_i, B_{k-i}) + A_{k+1}*Z
const L = 9;
const s = [];
for (let i = 0; i < L; i++) s.push(`  let A${i} = v128.load32_splat(a + ${4 * i});`);
for (let j = 0; j < L; j++) s.push(`  let B${j} = v128.load(b, ${4 * j});`);
s.push(`  let Z = v128.shuffle<i32>(i32x4.splat(0), B0, 0, 4, 0, 0);`);
for (let k = 0; k <= 16; k += 2) {
  const t = [];
  for (let i = 0; i < L; i++) { const j = k - i; if (j >= 0 && j < L) t.push(`i64x2.extmul_low_i32x4_u(A${i}, B${j})`); }
  if (k + 1 < L) t.push(`i64x2.extmul_low_i32x4_u(A${k + 1}, Z)`);
  s.push(`  let P${k} = ${t[0]};`);
  for (let q = 1; q < t.length; q++) s.push(`  P${k} = i64x2.add(P${k}, ${t[q]});`);
}
for (let k = 0; k <= 16; k += 2) {
  s.push(`  let c${k} = i64x2.extract_lane(P${k}, 0);`);
  if (k < 16) s.push(`  let c${k + 1} = i64x2.extract_lane(P${k}, 1);`);
}
console.log(s.join('\n'));
