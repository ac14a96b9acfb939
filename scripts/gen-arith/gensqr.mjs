// SIMD squaring columns: pairs P_k (k even) = sum_{i<k/2} extmul(D_i, B_{k-i}) + extmul(A_{k/2}, S_{k/2})
// D_i = splat(2 a_i), B_j = (a_j, a_{j+1}), S_m = (a_m, 2 a_{m+1}), A_m = splat(a_m)
const L = 9;
const s = [];
for (let j = 0; j < L; j++) s.push(`  let B${j} = v128.load(a, ${4 * j});`);
for (let i = 0; i < 8; i++) s.push(`  let D${i} = v128.load32_splat(a + ${4 * i}); D${i} = i32x4.shl(D${i}, 1);`);
for (let m = 0; m < L; m++) {
  s.push(`  let S${m} = v128.shuffle<i32>(B${m}, i32x4.shl(B${m}, 1), 0, 5, 0, 0);`);
  s.push(`  let A${m} = v128.load32_splat(a + ${4 * m});`);
}
for (let k = 0; k <= 16; k += 2) {
  const t = [];
  for (let i = Math.max(0, k - 8); i < k / 2; i++) t.push(`i64x2.extmul_low_i32x4_u(D${i}, B${k - i})`);
  t.push(`i64x2.extmul_low_i32x4_u(A${k / 2}, S${k / 2})`);
  let e = t[0];
  for (let q = 1; q < t.length; q++) e = `i64x2.add(${e}, ${t[q]})`;
  s.push(`  let P${k} = ${e};`);
}
for (let k = 0; k <= 16; k += 2) {
  s.push(`  let c${k} = i64x2.extract_lane(P${k}, 0);`);
  if (k < 16) s.push(`  let c${k + 1} = i64x2.extract_lane(P${k}, 1);`);
}
console.log(s.join('\n'));
