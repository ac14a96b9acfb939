// Fixed-base multiplication k·G, constant time in k: 43 signed base-64 digits, one mixed addition
// per window from the generated comb table (tables/*.ts, 43 windows × 32 affine multiples), no
// doublings. Every lookup reads the whole window; signs are applied with cmov. k < n (checked in
// the debug build); k = 0 gives infinity. Scratch in S_MULT (secret, wiped).
import { gComb } from './curve';
import { fe_neg } from './field';
import { AFF, pt_setInf } from './point';
import { FE, cmov40 } from './limbs';
import { S_MULT } from './layout';
import { DEBUG, verifyScBytes } from './debug';
import { ENTRY, NEGY, lookupAff, addDigit, zeroZIfInf } from './window';
import { comb6Digits } from './recode';

const KW: usize = S_MULT + 448; //       scalar as 12 little-endian words (48)
const KD: usize = S_MULT + 512; //       its 43 signed base-64 digits (i8)

/** r = k·G (Jacobian), k < n as 32 big-endian bytes. Constant time.
 *  k is recoded into 43 signed base-64 digits d_w ∈ [−31, 32]; window w adds d_w·64^w·G from the
 *  table (|d_w| looked up by a full scan, y negated by cmov for d_w < 0). The partial sum S before
 *  window w satisfies |S| < 0.51·64^w, so S ≢ ±d_w·64^w (mod n) for 0 < k < n: for w ≤ 41 no
 *  wrap-around is possible, and for the top window S ≡ D forces k = 2D − n with D ≥ 15.49·2^252,
 *  i.e. d = 16 and k > n. The sum is infinity only while every digit so far is 0 (tracked by inf).
 *  k = 0 gives infinity. */
export function mulG(cv: usize, r: usize, k: usize): void {
  if (DEBUG) verifyScBytes(cv, k);
  comb6Digits(KD, k, KW);
  let inf: u32 = 1;
  pt_setInf(cv, r);
  let table = gComb(cv);
  for (let w: u32 = 0; w < 43; w++) {
    let d = <i32>load<i8>(KD + <usize>w);
    let neg = <u32>d >> 31; //        digit < 0
    let mag = (<u32>d ^ (0 - neg)) + neg; // |d|
    lookupAff(ENTRY, table, 32, mag);
    fe_neg(cv, NEGY, ENTRY + FE);
    cmov40(ENTRY + FE, NEGY, neg);
    inf = addDigit(cv, r, mag, inf);
    table += 32 * AFF;
  }
  memory.fill(KW, 0, 48);
  memory.fill(KD, 0, 48);
  zeroZIfInf(r, inf); // k = 0
}
