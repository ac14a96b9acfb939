// The curve as an explicit parameter: one constants block per curve (pointers to its generated
// constants and tables, tables/*.ts). Every function that needs a curve constant takes the block
// as its first argument `cv`, handed down from the exported entry point (index.ts maps the ABI's
// curve id to a block with curveOf), so no call can run with another curve's state and nothing
// is switched globally. The two curves share every line of code except the constants and the
// field reduction (chosen by isK1(cv)). The curve is public: branching on it is constant time.
import * as K1 from './tables/secp256k1';
import * as P256 from './tables/p256';

export const CURVE_SECP256K1: u32 = 0;
export const CURVE_P256: u32 = 1;

// block layout: u32 words
const O_ID: usize = 0; //         curve id (0 = secp256k1: a = 0, plain form; 1 = P-256: a = −3, Montgomery form)
const O_FP_P: usize = 4;
const O_FP_BIAS: usize = 8;
const O_FP_ONE: usize = 12;
const O_FP_B: usize = 16;
const O_FP_R2: usize = 20;
const O_FP_R3: usize = 24;
const O_FP_P30: usize = 28;
const O_FP_PINV30: usize = 32;
const O_SC_N: usize = 36;
const O_SC_MU: usize = 40;
const O_SC_R2: usize = 44;
const O_SC_R3: usize = 48;
const O_SC_ONE: usize = 52;
const O_SC_HALF: usize = 56;
const O_SC_N30: usize = 60;
const O_SC_NINV30: usize = 64;
const O_G_COMB: usize = 68;
const O_G_WNAF: usize = 72;
const O_G128_WNAF: usize = 76;
const O_MAGIC: usize = 80; //      checked by the debug build (verifyCurve)
export const CURVE_MAGIC: u32 = 0x6b6d6173;

export const SECP256K1: usize = memory.data<u32>([
  CURVE_SECP256K1, <u32>K1.FP_P, <u32>K1.FP_BIAS, <u32>K1.FP_ONE, <u32>K1.FP_B, <u32>K1.FP_R2, <u32>K1.FP_R3,
  <u32>K1.FP_P30, <u32>K1.FP_PINV30, <u32>K1.SC_N, <u32>K1.SC_MU, <u32>K1.SC_R2, <u32>K1.SC_R3, <u32>K1.SC_ONE,
  <u32>K1.SC_HALF, <u32>K1.SC_N30, <u32>K1.SC_NINV30, <u32>K1.G_COMB, <u32>K1.G_WNAF, <u32>K1.G128_WNAF, CURVE_MAGIC,
], 16);
export const P256_CURVE: usize = memory.data<u32>([
  CURVE_P256, <u32>P256.FP_P, <u32>P256.FP_BIAS, <u32>P256.FP_ONE, <u32>P256.FP_B, <u32>P256.FP_R2, <u32>P256.FP_R3,
  <u32>P256.FP_P30, <u32>P256.FP_PINV30, <u32>P256.SC_N, <u32>P256.SC_MU, <u32>P256.SC_R2, <u32>P256.SC_R3,
  <u32>P256.SC_ONE, <u32>P256.SC_HALF, <u32>P256.SC_N30, <u32>P256.SC_NINV30, <u32>P256.G_COMB, <u32>P256.G_WNAF,
  <u32>P256.G128_WNAF, CURVE_MAGIC,
], 16);

/** The constants block of the ABI's curve id, or 0 for an unknown id. */
export function curveOf(id: u32): usize {
  if (id == CURVE_SECP256K1) return SECP256K1;
  if (id == CURVE_P256) return P256_CURVE;
  return 0;
}

// @ts-ignore: decorator
@inline export function curveId(cv: usize): u32 { return load<u32>(cv, O_ID); }
/** secp256k1 (a = 0, plain form) rather than P-256 (a = −3, Montgomery form). A comparison with
 *  the block's address (a constant), not a load: it sits in every field operation. */
// @ts-ignore: decorator
@inline export function isK1(cv: usize): bool { return cv == SECP256K1; }
// @ts-ignore: decorator
@inline export function curveMagic(cv: usize): u32 { return load<u32>(cv, O_MAGIC); }
// @ts-ignore: decorator
@inline export function fpP(cv: usize): usize { return <usize>load<u32>(cv, O_FP_P); }
// @ts-ignore: decorator
@inline export function fpBias(cv: usize): usize { return <usize>load<u32>(cv, O_FP_BIAS); }
// @ts-ignore: decorator
@inline export function fpOne(cv: usize): usize { return <usize>load<u32>(cv, O_FP_ONE); }
// @ts-ignore: decorator
@inline export function fpB(cv: usize): usize { return <usize>load<u32>(cv, O_FP_B); }
// @ts-ignore: decorator
@inline export function fpR2(cv: usize): usize { return <usize>load<u32>(cv, O_FP_R2); }
// @ts-ignore: decorator
@inline export function fpR3(cv: usize): usize { return <usize>load<u32>(cv, O_FP_R3); }
// @ts-ignore: decorator
@inline export function fpP30(cv: usize): usize { return <usize>load<u32>(cv, O_FP_P30); }
// @ts-ignore: decorator
@inline export function fpPinv30(cv: usize): usize { return <usize>load<u32>(cv, O_FP_PINV30); }
// @ts-ignore: decorator
@inline export function scN(cv: usize): usize { return <usize>load<u32>(cv, O_SC_N); }
// @ts-ignore: decorator
@inline export function scMu(cv: usize): usize { return <usize>load<u32>(cv, O_SC_MU); }
// @ts-ignore: decorator
@inline export function scR2(cv: usize): usize { return <usize>load<u32>(cv, O_SC_R2); }
// @ts-ignore: decorator
@inline export function scR3(cv: usize): usize { return <usize>load<u32>(cv, O_SC_R3); }
// @ts-ignore: decorator
@inline export function scOne(cv: usize): usize { return <usize>load<u32>(cv, O_SC_ONE); }
// @ts-ignore: decorator
@inline export function scHalf(cv: usize): usize { return <usize>load<u32>(cv, O_SC_HALF); }
// @ts-ignore: decorator
@inline export function scN30(cv: usize): usize { return <usize>load<u32>(cv, O_SC_N30); }
// @ts-ignore: decorator
@inline export function scNinv30(cv: usize): usize { return <usize>load<u32>(cv, O_SC_NINV30); }
/** the fixed-base comb table (43 windows × 32 affine multiples). */
// @ts-ignore: decorator
@inline export function gComb(cv: usize): usize { return <usize>load<u32>(cv, O_G_COMB); }
/** 64 affine odd multiples of G (wNAF window 8). */
// @ts-ignore: decorator
@inline export function gWnaf(cv: usize): usize { return <usize>load<u32>(cv, O_G_WNAF); }
/** 64 affine odd multiples of 2^128·G. */
// @ts-ignore: decorator
@inline export function g128Wnaf(cv: usize): usize { return <usize>load<u32>(cv, O_G128_WNAF); }
