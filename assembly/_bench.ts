// TEMPORARY micro-benchmark entry (not part of the build; deleted before delivery)
export * from './index';
import { selectCurve } from './curve';
import { fe_mul, fe_sqr, fe_inv, fe_add, fe_sub } from './field';
import { sc_mul, sc_invMont } from './scalar';
import { mulG_ct, mul_ct } from './mult';
import { pt_dbl, pt_madd, pt_toAffine } from './point';
import { drbgInit, drbgNext } from './ecdsa';
import { PUBLIC } from './layout';
const A: usize = PUBLIC + 14400;
export function bFeMul(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) fe_mul(A, A, A + 40); }
export function bFeSqr(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) fe_sqr(A, A); }
export function bFeAdd(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) fe_sub(A, A, A + 40); }
export function bFeInv(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) fe_inv(A, A); }
export function bScMul(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) sc_mul(A, A, A + 40); }
export function bScInv(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) sc_invMont(A, A); }
export function bMulG(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) mulG_ct(A + 200, A + 120); }
export function bDbl(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) pt_dbl(A + 200, A + 200); }
export function bMadd(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) pt_madd(A + 200, A + 200, A); }
export function bDrbg(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) { drbgInit(A, A + 32, 0, 0); drbgNext(A + 64); } }
import { fe_mul_simd } from './field';
export function bFeMulSimd(c: u32, n: u32): void { selectCurve(c); for (let i: u32 = 0; i < n; i++) fe_mul_simd(A, A, A + 40); }
export function checkSimd(c: u32): u32 {
  selectCurve(c);
  let bad: u32 = 0;
  for (let i: u32 = 0; i < 1000; i++) {
    fe_mul(A + 80, A, A + 40);
    fe_mul_simd(A + 120, A, A + 40);
    for (let j: usize = 0; j < 40; j += 4) if (load<u32>(A + 80 + j) != load<u32>(A + 120 + j)) bad++;
    fe_mul(A + 40, A + 80, A);
    fe_add(A, A, A + 40);
  }
  return bad;
}
export function seed(): void { for (let j: usize = 0; j < 36; j += 4) { store<u32>(A + j, 0x1234567 * <u32>(j + 1) & 0x1fffffff); store<u32>(A + 40 + j, 0x7654321 * <u32>(j + 3) & 0x1fffffff); } }
