// secp256k1 endomorphism (GLV): λ·(x, y) = (β·x, y) with λ³ ≡ 1 (mod n), β³ ≡ 1 (mod p).
// Splits a scalar k into k1 + k2·λ (mod n) with |k1|, |k2| ≲ 2^128 by rounding against a short
// lattice basis (c1 = round(k·b2/n), c2 = round(−k·b1/n) computed as (k·g) >> 384 with
// precomputed g = round(2^384·b/n)), halving the doublings of a verification.
// Variable time: used only on public scalars (verification, recovery).
import * as K1 from './tables/secp256k1';
import { sc_fromBytes, sc_toBytes, sc_mul, sc_add, sc_sub, sc_neg, sc_isHigh } from './scalar';
import { PUBLIC } from './layout';
import { isK1 } from './curve';
import { DEBUG } from './debug';

const PROD: usize = PUBLIC + 8448; //  16 words
const KW: usize = PUBLIC + 8512; //    8 words
const C1: usize = PUBLIC + 8576;
const C2: usize = PUBLIC + 8616;
const T: usize = PUBLIC + 8656;
const BYTES: usize = PUBLIC + 8800; // 32

export const FP_BETA: usize = K1.FP_BETA;

/** BYTES = round(KW · g / 2^384) as 32 big-endian bytes (g: 8 little-endian words). */
function mulShift384(g: usize): void {
  memory.fill(PROD, 0, 64);
  for (let i: usize = 0; i < 8; i++) {
    let ki = <u64>load<u32>(KW + 4 * i);
    let carry: u64 = 0;
    for (let j: usize = 0; j < 8; j++) {
      let t = <u64>load<u32>(PROD + 4 * (i + j)) + ki * <u64>load<u32>(g + 4 * j) + carry;
      store<u32>(PROD + 4 * (i + j), <u32>t);
      carry = t >> 32;
    }
    store<u32>(PROD + 4 * (i + 8), <u32>carry);
  }
  let c: u64 = <u64>(load<u32>(PROD + 44) >> 31);
  memory.fill(BYTES, 0, 32);
  for (let w: usize = 0; w < 4; w++) {
    c += <u64>load<u32>(PROD + 4 * (12 + w));
    store<u32>(BYTES + 28 - 4 * w, bswap<u32>(<u32>c));
    c >>= 32;
  }
  store<u32>(BYTES + 12, bswap<u32>(<u32>c));
}

/** k (32 bytes BE, < n) → |k1| at o1, |k2| at o2 (32 bytes BE each); returns bit 0 = k1 negated,
 *  bit 1 = k2 negated, so that k ≡ ±|k1| ± |k2|·λ (mod n). */
export function glvSplit_var(cv: usize, k: usize, o1: usize, o2: usize): u32 {
  if (DEBUG) assert(isK1(cv), 'GLV split on a curve other than secp256k1');
  for (let i: usize = 0; i < 8; i++) store<u32>(KW + 4 * i, bswap<u32>(load<u32>(k + 28 - 4 * i)));
  mulShift384(K1.GLV_G1);
  sc_fromBytes(cv, C1, BYTES);
  mulShift384(K1.GLV_G2);
  sc_fromBytes(cv, C2, BYTES);
  sc_mul(cv, C1, C1, K1.GLV_MB1_R); //   c1·(−b1)
  sc_mul(cv, C2, C2, K1.GLV_MB2_R); //   c2·(−b2)
  sc_add(cv, C2, C1, C2); //             k2
  sc_mul(cv, T, C2, K1.GLV_LAMBDA_R); // k2·λ
  sc_fromBytes(cv, C1, k);
  sc_sub(cv, C1, C1, T); //              k1 = k − k2·λ
  let flags: u32 = 0;
  if (sc_isHigh(cv, C1)) {
    sc_neg(cv, C1, C1);
    flags |= 1;
  }
  if (sc_isHigh(cv, C2)) {
    sc_neg(cv, C2, C2);
    flags |= 2;
  }
  sc_toBytes(o1, C1);
  sc_toBytes(o2, C2);
  return flags;
}
