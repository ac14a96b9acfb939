// The selected curve: pointers to its generated constants and tables. Every exported entry
// point selects the curve first; all layers below read these globals, so the two curves share
// every line of code except the constants and the field reduction (chosen by IS_K1).
import * as K1 from './tables/secp256k1';
import * as P256 from './tables/p256';

export const CURVE_SECP256K1: u32 = 0;
export const CURVE_P256: u32 = 1;

/** true: secp256k1 (a = 0, plain form, p = 2^256 − 2^32 − 977); false: P-256 (a = −3, Montgomery form). */
export let IS_K1: bool = true;
export let FP_P: usize = K1.FP_P;
export let FP_BIAS: usize = K1.FP_BIAS;
export let FP_ONE: usize = K1.FP_ONE;
export let FP_B: usize = K1.FP_B;
export let FP_R2: usize = K1.FP_R2;
export let SC_N: usize = K1.SC_N;
export let SC_MU: usize = K1.SC_MU;
export let SC_R2: usize = K1.SC_R2;
export let SC_ONE: usize = K1.SC_ONE;
export let SC_HALF: usize = K1.SC_HALF;
export let G_COMB: usize = K1.G_COMB;
export let G_WNAF: usize = K1.G_WNAF;
export let G128_WNAF: usize = K1.G128_WNAF;
export let SC_NINV30: usize = K1.SC_NINV30;
export let SC_N30: usize = K1.SC_N30;
export let SC_R3: usize = K1.SC_R3;
export let FP_PINV30: usize = K1.FP_PINV30;
export let FP_P30: usize = K1.FP_P30;
export let FP_R3: usize = K1.FP_R3;

export function selectCurve(id: u32): bool {
  if (id == CURVE_SECP256K1) {
    IS_K1 = true;
    FP_P = K1.FP_P;
    FP_BIAS = K1.FP_BIAS;
    FP_ONE = K1.FP_ONE;
    FP_B = K1.FP_B;
    FP_R2 = K1.FP_R2;
    SC_N = K1.SC_N;
    SC_MU = K1.SC_MU;
    SC_R2 = K1.SC_R2;
    SC_ONE = K1.SC_ONE;
    SC_HALF = K1.SC_HALF;
    G_COMB = K1.G_COMB;
    G_WNAF = K1.G_WNAF;
    G128_WNAF = K1.G128_WNAF;
    SC_NINV30 = K1.SC_NINV30;
    SC_N30 = K1.SC_N30;
    SC_R3 = K1.SC_R3;
    FP_PINV30 = K1.FP_PINV30;
    FP_P30 = K1.FP_P30;
    FP_R3 = K1.FP_R3;
    return true;
  }
  if (id == CURVE_P256) {
    IS_K1 = false;
    FP_P = P256.FP_P;
    FP_BIAS = P256.FP_BIAS;
    FP_ONE = P256.FP_ONE;
    FP_B = P256.FP_B;
    FP_R2 = P256.FP_R2;
    SC_N = P256.SC_N;
    SC_MU = P256.SC_MU;
    SC_R2 = P256.SC_R2;
    SC_ONE = P256.SC_ONE;
    SC_HALF = P256.SC_HALF;
    G_COMB = P256.G_COMB;
    G_WNAF = P256.G_WNAF;
    G128_WNAF = P256.G128_WNAF;
    SC_NINV30 = P256.SC_NINV30;
    SC_N30 = P256.SC_N30;
    SC_R3 = P256.SC_R3;
    FP_PINV30 = P256.FP_PINV30;
    FP_P30 = P256.FP_P30;
    FP_R3 = P256.FP_R3;
    return true;
  }
  return false;
}
