// Batch signing: N digests with one key or a key per digest, byte-identical to ecdsaSign.
// Per item: RFC 6979 nonce k_i and R_i = k_i·G (constant time, Jacobian). Then the two
// inversions every signature needs are shared across the batch with Montgomery's trick:
//   one field inversion for all Z_i (affine x_i, y_i of R_i),
//   one scalar inversion for all k_i (s_i = k_i⁻¹(e_i + r_i·d_i)),
// each costing 3 multiplications per item instead of an inversion. Items whose first RFC 6979
// candidate is unusable (k ∉ [1, n), r = 0 or s = 0; probability ~2^-128 each) are redone with the
// single-signature path, which continues the same DRBG sequence.
import { ecdsaSign, finishSigFrom } from './sign';
import { drbgInit, drbgNext } from './rfc6979';
import { loadPrivateKey } from './keys';
import { sc_fromBytes, sc_toBytes, sc_isZero, sc_mul, sc_add, sc_toMont, sc_invMont, sc_copy } from './scalar';
import { fe_mul, fe_inv, fe_setOne, fe_toBytes, fe_isOdd } from './field';
import { pt_toAffineWithInv } from './point';
import { mulG } from './mulg';
import { FE, copy40 } from './limbs';
import * as L from './layout';
import { S_ECDSA } from './layout';
import { scOne } from './curve';

let errIndex: u32 = 0;
export function batchErrorIndex(): u32 {
  return errIndex;
}

// per-item block (BATCH_STRIDE bytes)
const I_K: usize = 0; //      k (Montgomery form after step 1)
const I_E: usize = 40; //     e
const I_D: usize = 80; //     d (key-per-digest mode)
const I_R: usize = 120; //    R_i Jacobian (120)
const I_FP: usize = 240; //   field prefix product
const I_SP: usize = 280; //   scalar prefix product
const I_RS: usize = 320; //   r
const I_KB: usize = 360; //   k bytes (32)
const I_AFF: usize = 400; //  affine R (80)
const I_REC: usize = 480; //  recovery id (u32)
const I_SKIP: usize = 484; // 1 = redo with the single path

const ACC: usize = S_ECDSA + 1024; // 40
const INV: usize = S_ECDSA + 1064; // 40
const ZI: usize = S_ECDSA + 1104; //  40
const EB: usize = S_ECDSA + 1144; //  32
const XB: usize = S_ECDSA + 1176; //  32
const D1: usize = S_ECDSA + 1216; //  40 (one-key mode)
const T1: usize = S_ECDSA + 1256; //  40
const T2: usize = S_ECDSA + 1296; //  40

// @ts-ignore: decorator
@inline
function item(i: u32): usize {
  return L.BATCH_SCRATCH + L.BATCH_STRIDE * <usize>i;
}

export function signBatchImpl(cv: usize, count: u32, oneKey: bool): u32 {
  // 1. keys, digests, nonces, R_i = k_i·G
  if (oneKey && !loadPrivateKey(cv, D1, L.IN + L.IN_B_KEYS)) {
    errIndex = 0;
    return L.E_PRIVATE_KEY;
  }
  for (let i: u32 = 0; i < count; i++) {
    let it = item(i);
    let key = L.IN + L.IN_B_KEYS + (oneKey ? 0 : 32 * <usize>i);
    if (!oneKey && !loadPrivateKey(cv, it + I_D, key)) {
      errIndex = i;
      return L.E_PRIVATE_KEY;
    }
    sc_fromBytes(cv, it + I_E, L.IN + L.IN_B_DIGESTS + 32 * <usize>i);
    sc_toBytes(EB, it + I_E);
    drbgInit(key, EB, 0, 0);
    drbgNext(it + I_KB);
    let over = sc_fromBytes(cv, it + I_K, it + I_KB);
    let skip = over | sc_isZero(it + I_K);
    store<u32>(it + I_SKIP, skip);
    if (skip) continue;
    mulG(cv, it + I_R, it + I_KB);
  }
  // 2. one field inversion for all Z_i
  fe_setOne(cv, ACC);
  for (let i: u32 = 0; i < count; i++) {
    let it = item(i);
    if (load<u32>(it + I_SKIP)) continue;
    copy40(it + I_FP, ACC);
    fe_mul(cv, ACC, ACC, it + I_R + 2 * FE);
  }
  fe_inv(cv, INV, ACC);
  for (let i = <i32>count - 1; i >= 0; i--) {
    let it = item(<u32>i);
    if (load<u32>(it + I_SKIP)) continue;
    fe_mul(cv, ZI, INV, it + I_FP); //          1/Z_i
    fe_mul(cv, INV, INV, it + I_R + 2 * FE);
    pt_toAffineWithInv(cv, it + I_AFF, it + I_R, ZI);
    fe_toBytes(cv, XB, it + I_AFF);
    let xOver = sc_fromBytes(cv, it + I_RS, XB);
    store<u32>(it + I_REC, fe_isOdd(cv, it + I_AFF + FE) | (xOver << 1));
    if (sc_isZero(it + I_RS)) store<u32>(it + I_SKIP, 1);
  }
  // 3. one scalar inversion for all k_i (Montgomery form)
  sc_copy(ACC, scOne(cv));
  for (let i: u32 = 0; i < count; i++) {
    let it = item(i);
    if (load<u32>(it + I_SKIP)) continue;
    sc_toMont(cv, it + I_K, it + I_K);
    sc_copy(it + I_SP, ACC);
    sc_mul(cv, ACC, ACC, it + I_K);
  }
  sc_invMont(cv, INV, ACC);
  for (let i = <i32>count - 1; i >= 0; i--) {
    let it = item(<u32>i);
    let idx = <usize>i;
    if (load<u32>(it + I_SKIP)) continue;
    sc_mul(cv, ZI, INV, it + I_SP); //          k_i⁻¹·R
    sc_mul(cv, INV, INV, it + I_K);
    // s = k⁻¹ (e + r·d)
    sc_toMont(cv, T1, it + I_RS);
    sc_mul(cv, T1, T1, oneKey ? D1 : it + I_D);
    sc_add(cv, T1, T1, it + I_E);
    sc_mul(cv, T2, ZI, T1);
    if (sc_isZero(T2)) {
      store<u32>(it + I_SKIP, 1);
      continue;
    }
    finishSigFrom(cv, it + I_RS, T2, L.OUT + L.OUT_B_SIGS + 64 * idx, L.OUT + L.OUT_B_RECS + idx, load<u32>(it + I_REC), true);
  }
  // 4. the (practically never taken) retry path
  for (let i: u32 = 0; i < count; i++) {
    let it = item(i);
    if (!load<u32>(it + I_SKIP)) continue;
    let key = L.IN + L.IN_B_KEYS + (oneKey ? 0 : 32 * <usize>i);
    let st = ecdsaSign(cv, L.IN + L.IN_B_DIGESTS + 32 * <usize>i, key, 0, 0, true,
      L.OUT + L.OUT_B_SIGS + 64 * <usize>i, L.OUT + L.OUT_B_RECS + <usize>i);
    if (st != L.OK) {
      errIndex = i;
      return st;
    }
  }
  return L.OK;
}
