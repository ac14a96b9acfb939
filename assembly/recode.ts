// Scalar recodings: a 32-byte big-endian scalar as 12 little-endian words, as 43 signed base-64
// digits (comb6Digits, constant time: used for secret scalars by mulg.ts), as wNAF digits
// (wnaf_var, variable time: public scalars only), or split at bit 128 (split128).
import { PUBLIC } from './layout';
import { DEBUG } from './debug';

export const SCW: usize = PUBLIC + 4736; //          scalar as 12 little-endian words

// @ts-ignore: decorator
@inline
export function nibble(k: usize, w: u32): u32 {
  let b = <u32>load<u8>(k + 31 - <usize>(w >> 1));
  return (w & 1) != 0 ? b >> 4 : b & 15;
}

/** The 32-byte big-endian scalar k as 12 little-endian u32 words at w (the top four zero). */
// @ts-ignore: decorator
@inline
export function scalarWords(w: usize, k: usize): void {
  for (let i: usize = 0; i < 8; i++) store<u32>(w + 4 * i, bswap<u32>(load<u32>(k + 28 - 4 * i)));
  store<u64>(w + 32, 0);
  store<u64>(w + 40, 0);
}

/** The 32-byte big-endian scalar k (< n) as 43 signed base-64 digits in [−31, 32], least
 *  significant first (i8 at out), using `words` (48 bytes) as scratch. Branch-free: mulG
 *  recodes secret scalars with it (into secret scratch), verification public ones. */
export function comb6Digits(out: usize, k: usize, words: usize): void {
  scalarWords(words, k);
  let carry: u32 = 0;
  for (let w: u32 = 0; w < 43; w++) {
    let pos = 6 * w;
    let v = (<u32>(load<u64>(words + 4 * <usize>(pos >> 5)) >> <u64>(pos & 31)) & 63) + carry;
    carry = (v + 31) >> 6; //  v ≥ 33 → digit v − 64 (negative), carry 1
    store<i8>(out + <usize>w, <i8>(<i32>v - <i32>(carry << 6)));
  }
  if (DEBUG) {
    assert(carry == 0, 'comb digits: carry out of the top window (scalar ≥ 2^257?)');
    for (let w: usize = 0; w < 43; w++) {
      let d = <i32>load<i8>(out + w);
      assert(d >= -31 && d <= 32, 'comb digit out of [−31, 32]');
    }
  }
}

/** wNAF digits (window w ≤ 15) of the 32-byte big-endian scalar k into out (i16[260]); returns the
 *  number of digits. */
export function wnaf_var(out: usize, k: usize, w: u32): i32 {
  scalarWords(SCW, k);
  memory.fill(out, 0, 520);
  let carry: u32 = 0;
  let bit: u32 = 0;
  let last: i32 = -1;
  const len: u32 = 257;
  while (bit < len) {
    // skip to the next bit that differs from the carry (a run of them costs one step per word)
    let x = load<u32>(SCW + 4 * <usize>(bit >> 5));
    if (carry) x = ~x;
    x >>= bit & 31;
    if (x == 0) {
      bit = (bit | 31) + 1;
      continue;
    }
    bit += ctz<u32>(x);
    if (bit >= len) break;
    let now = w;
    if (now > len - bit) now = len - bit;
    let word = <i32>(<u32>(load<u64>(SCW + 4 * <usize>(bit >> 5)) >> <u64>(bit & 31)) & ((1 << now) - 1)) + <i32>carry;
    carry = (<u32>word >> (w - 1)) & 1;
    word -= <i32>(carry << w);
    store<i16>(out + 2 * <usize>bit, <i16>word);
    last = <i32>bit;
    bit += now;
  }
  if (DEBUG) {
    assert(w >= 2 && w <= 15, 'wNAF window out of [2, 15]');
    for (let i: usize = 0; i < 260; i++) {
      let d = <i32>load<i16>(out + 2 * i);
      assert(d == 0 || ((d & 1) != 0 && d < (1 << (w - 1)) && d > -(1 << (w - 1))), 'wNAF digit not odd or beyond the window');
    }
  }
  return last + 1;
}

/** out = the 32-byte scalar at k split at bit 128: out = low half, out + 32 = high half (both 32-byte BE). */
export function split128(out: usize, k: usize): void {
  memory.fill(out, 0, 64);
  memory.copy(out + 16, k + 16, 16);
  memory.copy(out + 48, k, 16);
}
