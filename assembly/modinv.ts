// Constant-time modular inversion by Bernstein–Yang "safegcd" divsteps (the algorithm of
// https://gcd.cr.yp.to, in the 30-bit-limb formulation popularised by libsecp256k1): 20 rounds of
// 30 branch-free divsteps (600 ≥ 590 needed for 256-bit moduli), each round applying the 2x2
// transition matrix to (d, e) mod m and to (f, g). Works for any odd modulus m < 2^256; the
// modulus is given as 9 x 30-bit limbs with its inverse mod 2^30. Inputs/outputs are 9 x 29-bit
// normalised limbs (value < m). The running time does not depend on the input value.
import { M as M29 } from './limbs';
import { S_INV } from './layout';

const M30: i32 = 0x3fffffff;
const D: usize = S_INV + 0; //   9 x i32 each
const E: usize = S_INV + 48;
const F: usize = S_INV + 96;
const G: usize = S_INV + 144;

let tu: i32 = 0, tv: i32 = 0, tq: i32 = 0, tr: i32 = 0;

function divsteps30(zeta: i32, f0: u32, g0: u32): i32 {
  let u: u32 = 1, v: u32 = 0, q: u32 = 0, r: u32 = 1;
  let f = f0, g = g0;
  for (let i = 0; i < 30; i++) {
    let c1 = <u32>(zeta >> 31);
    let c2 = 0 - (g & 1);
    let x = (f ^ c1) - c1;
    let y = (u ^ c1) - c1;
    let z = (v ^ c1) - c1;
    g += x & c2;
    q += y & c2;
    r += z & c2;
    c1 &= c2;
    zeta = (zeta ^ <i32>c1) - 1;
    f += g & c1;
    u += q & c1;
    v += r & c1;
    g >>= 1;
    u <<= 1;
    v <<= 1;
  }
  tu = <i32>u;
  tv = <i32>v;
  tq = <i32>q;
  tr = <i32>r;
  return zeta;
}

function updateDE(m: usize, minv: u32): void {
  let u = <i64>tu, v = <i64>tv, q = <i64>tq, r = <i64>tr;
  let sd = load<i32>(D, 32) >> 31;
  let se = load<i32>(E, 32) >> 31;
  let md = (tu & sd) + (tv & se);
  let me = (tq & sd) + (tr & se);
  let di = <i64>load<i32>(D, 0);
  let ei = <i64>load<i32>(E, 0);
  let cd = u * di + v * ei;
  let ce = q * di + r * ei;
  md -= <i32>((minv * <u32>cd + <u32>md) & <u32>M30);
  me -= <i32>((minv * <u32>ce + <u32>me) & <u32>M30);
  let mdl = <i64>md, mel = <i64>me;
  let mi = <i64>load<i32>(m, 0);
  cd = (cd + mi * mdl) >> 30;
  ce = (ce + mi * mel) >> 30;
  di = <i64>load<i32>(D, 4); ei = <i64>load<i32>(E, 4); mi = <i64>load<i32>(m, 4);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 0); store<i32>(E, <i32>ce & M30, 0); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 8); ei = <i64>load<i32>(E, 8); mi = <i64>load<i32>(m, 8);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 4); store<i32>(E, <i32>ce & M30, 4); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 12); ei = <i64>load<i32>(E, 12); mi = <i64>load<i32>(m, 12);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 8); store<i32>(E, <i32>ce & M30, 8); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 16); ei = <i64>load<i32>(E, 16); mi = <i64>load<i32>(m, 16);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 12); store<i32>(E, <i32>ce & M30, 12); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 20); ei = <i64>load<i32>(E, 20); mi = <i64>load<i32>(m, 20);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 16); store<i32>(E, <i32>ce & M30, 16); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 24); ei = <i64>load<i32>(E, 24); mi = <i64>load<i32>(m, 24);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 20); store<i32>(E, <i32>ce & M30, 20); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 28); ei = <i64>load<i32>(E, 28); mi = <i64>load<i32>(m, 28);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 24); store<i32>(E, <i32>ce & M30, 24); cd >>= 30; ce >>= 30;
  di = <i64>load<i32>(D, 32); ei = <i64>load<i32>(E, 32); mi = <i64>load<i32>(m, 32);
  cd += u * di + v * ei + mi * mdl; ce += q * di + r * ei + mi * mel;
  store<i32>(D, <i32>cd & M30, 28); store<i32>(E, <i32>ce & M30, 28); cd >>= 30; ce >>= 30;
  store<i32>(D, <i32>cd, 32);
  store<i32>(E, <i32>ce, 32);
}

function updateFG(): void {
  let u = <i64>tu, v = <i64>tv, q = <i64>tq, r = <i64>tr;
  let fi = <i64>load<i32>(F, 0);
  let gi = <i64>load<i32>(G, 0);
  let cf = (u * fi + v * gi) >> 30;
  let cg = (q * fi + r * gi) >> 30;
  fi = <i64>load<i32>(F, 4); gi = <i64>load<i32>(G, 4);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 0); store<i32>(G, <i32>cg & M30, 0); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 8); gi = <i64>load<i32>(G, 8);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 4); store<i32>(G, <i32>cg & M30, 4); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 12); gi = <i64>load<i32>(G, 12);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 8); store<i32>(G, <i32>cg & M30, 8); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 16); gi = <i64>load<i32>(G, 16);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 12); store<i32>(G, <i32>cg & M30, 12); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 20); gi = <i64>load<i32>(G, 20);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 16); store<i32>(G, <i32>cg & M30, 16); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 24); gi = <i64>load<i32>(G, 24);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 20); store<i32>(G, <i32>cg & M30, 20); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 28); gi = <i64>load<i32>(G, 28);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 24); store<i32>(G, <i32>cg & M30, 24); cf >>= 30; cg >>= 30;
  fi = <i64>load<i32>(F, 32); gi = <i64>load<i32>(G, 32);
  cf += u * fi + v * gi; cg += q * fi + r * gi;
  store<i32>(F, <i32>cf & M30, 28); store<i32>(G, <i32>cg & M30, 28); cf >>= 30; cg >>= 30;
  store<i32>(F, <i32>cf, 32);
  store<i32>(G, <i32>cg, 32);
}

/** 29-bit limbs (normalised) → 30-bit limbs at dst. */
function to30(dst: usize, a: usize): void {
  let acc: u64 = 0;
  let nb: u32 = 0;
  let j: usize = 0;
  for (let i: usize = 0; i < 9; i++) {
    acc |= <u64>load<u32>(a + 4 * i) << <u64>nb;
    nb += 29;
    if (nb >= 30) {
      store<i32>(dst + 4 * j, <i32>(<u32>acc & <u32>M30));
      acc >>= 30;
      nb -= 30;
      j++;
    }
  }
  for (; j < 9; j++) {
    store<i32>(dst + 4 * j, <i32>(<u32>acc & <u32>M30));
    acc >>= 30;
  }
}

/** 30-bit limbs (normalised, non-negative) → 29-bit limbs at dst. */
function to29(dst: usize, a: usize): void {
  let acc: u64 = 0;
  let nb: u32 = 0;
  let j: usize = 0;
  for (let i: usize = 0; i < 9; i++) {
    acc |= <u64>load<u32>(a + 4 * i) << <u64>nb;
    nb += 30;
    while (nb >= 29 && j < 9) {
      store<u32>(dst + 4 * j, <u32>acc & <u32>M29);
      acc >>= 29;
      nb -= 29;
      j++;
    }
  }
  store<u32>(dst, 0, 36);
}

/** r = a⁻¹ mod m (0 ↦ 0). a: normalised 29-bit limbs with value < m; m30: modulus as 30-bit limbs;
 *  minv: m⁻¹ mod 2^30. Constant time. */
export function modinv(r: usize, a: usize, m30: usize, minv: u32): void {
  memory.fill(D, 0, 36);
  memory.fill(E, 0, 36);
  store<i32>(E, 1);
  memory.copy(F, m30, 36);
  to30(G, a);
  let zeta: i32 = -1;
  for (let i = 0; i < 20; i++) {
    zeta = divsteps30(zeta, load<u32>(F), load<u32>(G));
    updateDE(m30, minv);
    updateFG();
  }
  // normalise d from (−2m, m) to [0, m), negating if f = −1
  let sign = load<i32>(F, 32) >> 31;
  normalize(m30, sign);
  to29(r, D);
  tu = 0;
  tv = 0;
  tq = 0;
  tr = 0;
}

function normalize(m: usize, sign: i32): void {
  let condAdd = load<i32>(D, 32) >> 31;
  for (let i: usize = 0; i < 9; i++) {
    let x = load<i32>(D + 4 * i) + (load<i32>(m + 4 * i) & condAdd);
    store<i32>(D + 4 * i, (x ^ sign) - sign);
  }
  carry30();
  condAdd = load<i32>(D, 32) >> 31;
  for (let i: usize = 0; i < 9; i++) {
    store<i32>(D + 4 * i, load<i32>(D + 4 * i) + (load<i32>(m + 4 * i) & condAdd));
  }
  carry30();
}

function carry30(): void {
  for (let i: usize = 0; i < 8; i++) {
    let x = load<i32>(D + 4 * i);
    store<i32>(D + 4 * (i + 1), load<i32>(D + 4 * (i + 1)) + (x >> 30));
    store<i32>(D + 4 * i, x & M30);
  }
}
