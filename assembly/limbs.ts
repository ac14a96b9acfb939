// 9 x 29-bit limb vectors (stored as u32 in 40-byte slots, the 10th word is padding and zero).
// Shared by the field (mod p) and scalar (mod n) layers. All functions here are constant time.
import { S_FIELD } from './layout';

export const M: i64 = 0x1fffffff;
export const M24: i64 = 0xffffff;
/** Byte size of one element slot. */
export const FE: usize = 40;

const WORDS: usize = S_FIELD + 960; // 10 little-endian u32 words (+ zero pad) for byte conversion

/** 32 big-endian bytes → limbs (value < 2^256; not reduced). */
export function limbsFromBytes(r: usize, p: usize): void {
  for (let i: usize = 0; i < 8; i++) store<u32>(WORDS + 4 * i, bswap<u32>(load<u32>(p + 28 - 4 * i)));
  store<u64>(WORDS + 32, 0);
  for (let j: u32 = 0; j < 9; j++) {
    let bit = 29 * j;
    store<u32>(r + 4 * <usize>j, <u32>((load<u64>(WORDS + 4 * <usize>(bit >> 5)) >> <u64>(bit & 31)) & <u64>M));
  }
  store<u32>(r, 0, 36);
  store<u64>(WORDS, 0);
  store<u64>(WORDS, 0, 8);
  store<u64>(WORDS, 0, 16);
  store<u64>(WORDS, 0, 24);
}

/** Normalised limbs (value < 2^256) → 32 big-endian bytes. */
export function limbsToBytes(p: usize, a: usize): void {
  let acc: u64 = 0;
  let nb: u32 = 0;
  let w: usize = 0;
  for (let i: usize = 0; i < 9; i++) {
    acc |= <u64>load<u32>(a + 4 * i) << <u64>nb;
    nb += 29;
    while (nb >= 32 && w < 8) {
      store<u32>(p + 28 - 4 * w, bswap<u32>(<u32>acc));
      acc >>= 32;
      nb -= 32;
      w++;
    }
  }
  if (w < 8) store<u32>(p + 28 - 4 * w, bswap<u32>(<u32>acc));
}

/** 1 if normalised a < normalised m, else 0 (constant time). */
export function limbsLess(a: usize, m: usize): u32 {
  let t: i64 = 0;
  for (let i: usize = 0; i < 9; i++) {
    t = (t >> 29) + <i64>load<u32>(a + 4 * i) - <i64>load<u32>(m + 4 * i);
  }
  return <u32>(<u64>t >> 63);
}

/** r = a − m if a ≥ m else a (a, m normalised, constant time). Returns 1 if m was subtracted. */
export function limbsCondSub(r: usize, a: usize, m: usize): u32 {
  let t: i64 = 0;
  let s0: i64, s1: i64, s2: i64, s3: i64, s4: i64, s5: i64, s6: i64, s7: i64;
  t = <i64>load<u32>(a, 0) - <i64>load<u32>(m, 0); s0 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 4) - <i64>load<u32>(m, 4); s1 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 8) - <i64>load<u32>(m, 8); s2 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 12) - <i64>load<u32>(m, 12); s3 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 16) - <i64>load<u32>(m, 16); s4 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 20) - <i64>load<u32>(m, 20); s5 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 24) - <i64>load<u32>(m, 24); s6 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 28) - <i64>load<u32>(m, 28); s7 = t & M;
  t = (t >> 29) + <i64>load<u32>(a, 32) - <i64>load<u32>(m, 32);
  let keep = <u32>(t >> 63); // all ones if a < m
  let take = ~keep;
  store<u32>(r, (load<u32>(a, 0) & keep) | (<u32>s0 & take), 0);
  store<u32>(r, (load<u32>(a, 4) & keep) | (<u32>s1 & take), 4);
  store<u32>(r, (load<u32>(a, 8) & keep) | (<u32>s2 & take), 8);
  store<u32>(r, (load<u32>(a, 12) & keep) | (<u32>s3 & take), 12);
  store<u32>(r, (load<u32>(a, 16) & keep) | (<u32>s4 & take), 16);
  store<u32>(r, (load<u32>(a, 20) & keep) | (<u32>s5 & take), 20);
  store<u32>(r, (load<u32>(a, 24) & keep) | (<u32>s6 & take), 24);
  store<u32>(r, (load<u32>(a, 28) & keep) | (<u32>s7 & take), 28);
  store<u32>(r, (load<u32>(a, 32) & keep) | (<u32>t & take), 32);
  store<u32>(r, 0, 36);
  return take & 1;
}

/** 1 if all limbs are zero (normalised input), constant time. */
export function limbsIsZero(a: usize): u32 {
  let x = load<u64>(a, 0) | load<u64>(a, 8) | load<u64>(a, 16) | load<u64>(a, 24) | <u64>load<u32>(a, 32);
  return <u32>(((x | (0 - x)) >> 63) ^ 1);
}

/** r = a if flag == 1, unchanged if flag == 0 (40-byte slot, constant time). */
// @ts-ignore: decorator
@inline
export function cmov40(r: usize, a: usize, flag: u32): void {
  let m: u64 = 0 - <u64>flag;
  store<u64>(r, load<u64>(r, 0) ^ ((load<u64>(r, 0) ^ load<u64>(a, 0)) & m), 0);
  store<u64>(r, load<u64>(r, 8) ^ ((load<u64>(r, 8) ^ load<u64>(a, 8)) & m), 8);
  store<u64>(r, load<u64>(r, 16) ^ ((load<u64>(r, 16) ^ load<u64>(a, 16)) & m), 16);
  store<u64>(r, load<u64>(r, 24) ^ ((load<u64>(r, 24) ^ load<u64>(a, 24)) & m), 24);
  store<u64>(r, load<u64>(r, 32) ^ ((load<u64>(r, 32) ^ load<u64>(a, 32)) & m), 32);
}

// @ts-ignore: decorator
@inline
export function copy40(r: usize, a: usize): void {
  store<u64>(r, load<u64>(a, 0), 0);
  store<u64>(r, load<u64>(a, 8), 8);
  store<u64>(r, load<u64>(a, 16), 16);
  store<u64>(r, load<u64>(a, 24), 24);
  store<u64>(r, load<u64>(a, 32), 32);
}

/** 1 if x == y (u32 values < 2^31), constant time. */
// @ts-ignore: decorator
@inline
export function eqMask(x: u32, y: u32): u32 {
  return ((x ^ y) - 1) >> 31;
}
