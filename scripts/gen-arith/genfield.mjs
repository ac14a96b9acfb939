// throwaway: prints the unrolled 9x29 column products / reductions for assembly/field.ts
const L = 9;
const out = [];
const loadA = (v, p) => Array.from({ length: L }, (_, i) => `  let ${v}${i} = <i64>load<u32>(${p}, ${4 * i});`).join('\n');
function mulCols() {
  const s = [loadA('a', 'a'), loadA('b', 'b')];
  for (let k = 0; k < 2 * L - 1; k++) {
    const t = [];
    for (let i = 0; i < L; i++) { const j = k - i; if (j >= 0 && j < L) t.push(`a${i} * b${j}`); }
    s.push(`  let c${k} = ${t.join(' + ')};`);
  }
  return s.join('\n');
}
function sqrCols() {
  const s = [loadA('a', 'a')];
  for (let i = 0; i < L; i++) s.push(`  let d${i} = a${i} << 1;`);
  for (let k = 0; k < 2 * L - 1; k++) {
    const t = [];
    for (let i = 0; i < L; i++) { const j = k - i; if (j > i && j < L) t.push(`d${i} * a${j}`); }
    if (k % 2 === 0) t.push(`a${k / 2} * a${k / 2}`);
    s.push(`  let c${k} = ${t.join(' + ')};`);
  }
  return s.join('\n');
}
// secp256k1: fold columns 9..16 (2^261 = 2^37 + 31264 mod p) then carry
function redK1() {
  // Split every high column into its 29-bit low part l_k and high part h_k = c_k >> 29 (no serial
  // carry chain) and fold them down with 2^261 ≡ 2^37 + 31264. l_{k+1} and h_k have the same
  // weight 2^(29(k+1)), so they are summed first and folded once: m_j = l_{j+9} + h_{j+8}
  // (m_0 = l_9, m_8 = h_16) goes to column j times 31264 and to column j + 1 shifted by 8 — nine
  // multiplications instead of seventeen. Bounds: c_k < 2^62.8 (fused products, k ≤ 3), so
  // h_k < 2^33.8 and m_j < 2^34, m_j·31264 < 2^49 and m_j << 8 < 2^42: every column stays
  // < 2^62.8 + 2^50 < 2^63. m_8 << 8 has weight 2^269 ≡ 2^8·(2^37 + 31264): column 0 gets
  // (m_8 << 8)·31264 (< 2^22+8+15) and column 1 gets m_8 << 16.
  const s = [];
  for (let k = 9; k <= 16; k++) s.push(`    let l${k} = c${k} & M; let h${k} = c${k} >> 29;`);
  s.push(`    let m0 = l9;`);
  for (let j = 1; j <= 7; j++) s.push(`    let m${j} = l${j + 9} + h${j + 8};`);
  s.push(`    let m8 = h16;`);
  for (let j = 0; j <= 8; j++) s.push(`    c${j} += m${j} * 31264;` + (j < 8 ? ` c${j + 1} += m${j} << 8;` : ''));
  s.push(`    c0 += (m8 << 8) * 31264; c1 += m8 << 16;`);
  s.push(`    carryStoreK1(r, c0, c1, c2, c3, c4, c5, c6, c7, c8);`);
  return s.join('\n');
}
// the same reductions with the fused linear terms of the *Lin cores (field.tpl) added to the
// columns of weight 2^0..2^232 of the result first (secp256k1: c0..c8 before the fold; P-256:
// c9..c17, which the Montgomery steps turn into the result without reading them), then
// linStoreK1 / linStoreP256 instead of the plain carry-and-store
const linAdds = (first) => [
  `    if (kc != 0) {`,
  `      let q = fpBias(cv);`,
  ...Array.from({ length: L }, (_, i) => `      c${first + i} += linTerm(q, c, d, ${4 * i}, kc, kd);`),
  `    }`,
];
function redK1Lin() {
  return [...linAdds(0), redK1().replace('carryStoreK1(r, ', 'linStoreK1(cv, r, kc, ')].join('\n');
}
function redP256Lin() {
  const [decl, ...rest] = redP256().split('\n');
  return [decl, ...linAdds(9), ...rest].join('\n').replace('carryStoreMont(r, ', 'linStoreP256(cv, r, kc, ');
}
// fe_sqrN keeps the limbs in locals a0..a8 from one squaring to the next: the squaring columns
// without their loads, and the reductions ending in a carry into a0..a8 instead of a store
function sqrColsReg() {
  return sqrCols().split('\n').slice(L).join('\n');
}
const carryRegs = (first, fold) => {
  const c = (i) => `c${first + i}`;
  const s = [];
  for (let i = 0; i < L - 1; i++) s.push(`      ${c(i + 1)} += ${c(i)} >> 29; ${c(i)} &= M;`);
  if (fold) {
    s.push(`      let top = ${c(8)} >> 24; ${c(8)} &= M24; ${c(0)} += top * 977; ${c(1)} += top << 3;`);
    s.push(`      ${c(1)} += ${c(0)} >> 29; ${c(0)} &= M; ${c(2)} += ${c(1)} >> 29; ${c(1)} &= M;`);
  }
  s.push('      ' + Array.from({ length: L }, (_, i) => `a${i} = ${c(i)};`).join(' '));
  return s.join('\n');
};
function redK1Reg() {
  return redK1().split('\n').filter((l) => !l.includes('carryStoreK1(')).map((l) => '  ' + l).join('\n') + '\n' + carryRegs(0, true);
}
function redP256Reg() {
  return redP256().split('\n').filter((l) => !l.includes('carryStoreMont(')).map((l) => '  ' + l).join('\n') + '\n' + carryRegs(9, false);
}
function redP256() {
  const s = [`    let c17: i64 = 0; let m: i64;`];
  for (let i = 0; i < L; i++) {
    s.push(`    m = c${i} & M; c${i + 1} += c${i} >> 29; c${i + 3} += m << 9; c${i + 6} += m << 18; c${i + 7} -= m << 21; c${i + 8} += m << 24;`);
  }
  s.push(`    carryStoreMont(r, c9, c10, c11, c12, c13, c14, c15, c16, c17);`);
  return s.join('\n');
}
function redScalar() {
  const s = [`  let c17: i64 = 0; let m: i64;`];
  for (let i = 0; i < L; i++) {
    const t = [`m = ((c${i} & M) * mu) & M;`, `c${i} += m * n0;`, `c${i + 1} += c${i} >> 29;`];
    for (let j = 1; j < L; j++) t.push(`c${i + j} += m * n${j};`);
    s.push('  ' + t.join(' '));
  }
  s.push(`  scCarryStore(cv, r, c9, c10, c11, c12, c13, c14, c15, c16, c17);`);
  return s.join('\n');
}
const what = process.argv[2];
console.log({ mulCols, sqrCols, sqrColsReg, redK1, redP256, redK1Lin, redP256Lin, redK1Reg, redP256Reg, redScalar }[what]());
