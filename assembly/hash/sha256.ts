// GENERATED from scripts/gen-sha256/sha256.tpl by `npm run gen:sha256`: edit the template, not this file.
// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) over linear memory.
//
// No allocation: every function works on caller-provided pointers plus static scratch
// reserved with memory.data. The compression function is fully unrolled (scripts/gen-sha256/
// build.mjs writes its 64 rounds from the FIPS 180-4 round definition, with the round constants
// and initial hash value computed from the cube and square roots of the first primes) and loads
// the big-endian message words with bswap. Input and output pointers may be unaligned.
//
// Context layouts (callers reserve the byte sizes given by the exported constants):
//   SHA-256 ctx (112 bytes): [0..32) state H0..H7 (native u32), [32..96) partial block,
//                            [96..100) bytes buffered (u32), [104..112) total bytes (u64)
//   HMAC ctx (224 bytes):    [0..112) inner SHA-256 ctx, [112..224) outer SHA-256 ctx
// A ctx may be copied byte-for-byte (e.g. to reuse an HMAC key schedule).
// Scratch that may hold key material is zeroed before each function returns.

export const SHA256_CTX_SIZE: u32 = 112;
export const HMAC_SHA256_CTX_SIZE: u32 = 224;

const ST: usize = 0;
const BUF: usize = 32;
const BUFLEN: usize = 96;
const TOTAL: usize = 104;

// static scratch: one SHA-256 ctx for the one-shot function, one HMAC ctx + a 64-byte pad
// block + a 32-byte inner digest for the one-shot HMAC.
const ONE_CTX: usize = memory.data(112, 8);
const HMAC_CTX: usize = memory.data(224, 8);
const PAD: usize = memory.data(64, 8);
const INNER: usize = memory.data(32, 8);

// @ts-ignore: decorator
@inline
function be32(p: usize, off: usize): u32 {
  return bswap<u32>(load<u32>(p + off));
}

/** One 64-byte block into the state at st (8 native-endian u32). */
function compress(st: usize, p: usize): void {
  let a = load<u32>(st, 0);
  let b = load<u32>(st, 4);
  let c = load<u32>(st, 8);
  let d = load<u32>(st, 12);
  let e = load<u32>(st, 16);
  let f = load<u32>(st, 20);
  let g = load<u32>(st, 24);
  let h = load<u32>(st, 28);
  let w0 = be32(p, 0);
  let w1 = be32(p, 4);
  let w2 = be32(p, 8);
  let w3 = be32(p, 12);
  let w4 = be32(p, 16);
  let w5 = be32(p, 20);
  let w6 = be32(p, 24);
  let w7 = be32(p, 28);
  let w8 = be32(p, 32);
  let w9 = be32(p, 36);
  let w10 = be32(p, 40);
  let w11 = be32(p, 44);
  let w12 = be32(p, 48);
  let w13 = be32(p, 52);
  let w14 = be32(p, 56);
  let w15 = be32(p, 60);
  let t: u32;
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0x428a2f98 + w0;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0x71374491 + w1;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0xb5c0fbcf + w2;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0xe9b5dba5 + w3;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0x3956c25b + w4;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0x59f111f1 + w5;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0x923f82a4 + w6;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0xab1c5ed5 + w7;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0xd807aa98 + w8;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0x12835b01 + w9;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0x243185be + w10;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0x550c7dc3 + w11;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0x72be5d74 + w12;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0x80deb1fe + w13;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0x9bdc06a7 + w14;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0xc19bf174 + w15;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  w0 += (rotr<u32>(w14, 17) ^ rotr<u32>(w14, 19) ^ (w14 >>> 10)) + w9 + (rotr<u32>(w1, 7) ^ rotr<u32>(w1, 18) ^ (w1 >>> 3));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0xe49b69c1 + w0;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  w1 += (rotr<u32>(w15, 17) ^ rotr<u32>(w15, 19) ^ (w15 >>> 10)) + w10 + (rotr<u32>(w2, 7) ^ rotr<u32>(w2, 18) ^ (w2 >>> 3));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0xefbe4786 + w1;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  w2 += (rotr<u32>(w0, 17) ^ rotr<u32>(w0, 19) ^ (w0 >>> 10)) + w11 + (rotr<u32>(w3, 7) ^ rotr<u32>(w3, 18) ^ (w3 >>> 3));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0x0fc19dc6 + w2;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  w3 += (rotr<u32>(w1, 17) ^ rotr<u32>(w1, 19) ^ (w1 >>> 10)) + w12 + (rotr<u32>(w4, 7) ^ rotr<u32>(w4, 18) ^ (w4 >>> 3));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0x240ca1cc + w3;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  w4 += (rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10)) + w13 + (rotr<u32>(w5, 7) ^ rotr<u32>(w5, 18) ^ (w5 >>> 3));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0x2de92c6f + w4;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  w5 += (rotr<u32>(w3, 17) ^ rotr<u32>(w3, 19) ^ (w3 >>> 10)) + w14 + (rotr<u32>(w6, 7) ^ rotr<u32>(w6, 18) ^ (w6 >>> 3));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0x4a7484aa + w5;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  w6 += (rotr<u32>(w4, 17) ^ rotr<u32>(w4, 19) ^ (w4 >>> 10)) + w15 + (rotr<u32>(w7, 7) ^ rotr<u32>(w7, 18) ^ (w7 >>> 3));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0x5cb0a9dc + w6;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  w7 += (rotr<u32>(w5, 17) ^ rotr<u32>(w5, 19) ^ (w5 >>> 10)) + w0 + (rotr<u32>(w8, 7) ^ rotr<u32>(w8, 18) ^ (w8 >>> 3));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0x76f988da + w7;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  w8 += (rotr<u32>(w6, 17) ^ rotr<u32>(w6, 19) ^ (w6 >>> 10)) + w1 + (rotr<u32>(w9, 7) ^ rotr<u32>(w9, 18) ^ (w9 >>> 3));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0x983e5152 + w8;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  w9 += (rotr<u32>(w7, 17) ^ rotr<u32>(w7, 19) ^ (w7 >>> 10)) + w2 + (rotr<u32>(w10, 7) ^ rotr<u32>(w10, 18) ^ (w10 >>> 3));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0xa831c66d + w9;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  w10 += (rotr<u32>(w8, 17) ^ rotr<u32>(w8, 19) ^ (w8 >>> 10)) + w3 + (rotr<u32>(w11, 7) ^ rotr<u32>(w11, 18) ^ (w11 >>> 3));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0xb00327c8 + w10;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  w11 += (rotr<u32>(w9, 17) ^ rotr<u32>(w9, 19) ^ (w9 >>> 10)) + w4 + (rotr<u32>(w12, 7) ^ rotr<u32>(w12, 18) ^ (w12 >>> 3));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0xbf597fc7 + w11;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  w12 += (rotr<u32>(w10, 17) ^ rotr<u32>(w10, 19) ^ (w10 >>> 10)) + w5 + (rotr<u32>(w13, 7) ^ rotr<u32>(w13, 18) ^ (w13 >>> 3));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0xc6e00bf3 + w12;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  w13 += (rotr<u32>(w11, 17) ^ rotr<u32>(w11, 19) ^ (w11 >>> 10)) + w6 + (rotr<u32>(w14, 7) ^ rotr<u32>(w14, 18) ^ (w14 >>> 3));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0xd5a79147 + w13;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  w14 += (rotr<u32>(w12, 17) ^ rotr<u32>(w12, 19) ^ (w12 >>> 10)) + w7 + (rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0x06ca6351 + w14;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  w15 += (rotr<u32>(w13, 17) ^ rotr<u32>(w13, 19) ^ (w13 >>> 10)) + w8 + (rotr<u32>(w0, 7) ^ rotr<u32>(w0, 18) ^ (w0 >>> 3));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0x14292967 + w15;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  w0 += (rotr<u32>(w14, 17) ^ rotr<u32>(w14, 19) ^ (w14 >>> 10)) + w9 + (rotr<u32>(w1, 7) ^ rotr<u32>(w1, 18) ^ (w1 >>> 3));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0x27b70a85 + w0;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  w1 += (rotr<u32>(w15, 17) ^ rotr<u32>(w15, 19) ^ (w15 >>> 10)) + w10 + (rotr<u32>(w2, 7) ^ rotr<u32>(w2, 18) ^ (w2 >>> 3));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0x2e1b2138 + w1;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  w2 += (rotr<u32>(w0, 17) ^ rotr<u32>(w0, 19) ^ (w0 >>> 10)) + w11 + (rotr<u32>(w3, 7) ^ rotr<u32>(w3, 18) ^ (w3 >>> 3));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0x4d2c6dfc + w2;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  w3 += (rotr<u32>(w1, 17) ^ rotr<u32>(w1, 19) ^ (w1 >>> 10)) + w12 + (rotr<u32>(w4, 7) ^ rotr<u32>(w4, 18) ^ (w4 >>> 3));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0x53380d13 + w3;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  w4 += (rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10)) + w13 + (rotr<u32>(w5, 7) ^ rotr<u32>(w5, 18) ^ (w5 >>> 3));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0x650a7354 + w4;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  w5 += (rotr<u32>(w3, 17) ^ rotr<u32>(w3, 19) ^ (w3 >>> 10)) + w14 + (rotr<u32>(w6, 7) ^ rotr<u32>(w6, 18) ^ (w6 >>> 3));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0x766a0abb + w5;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  w6 += (rotr<u32>(w4, 17) ^ rotr<u32>(w4, 19) ^ (w4 >>> 10)) + w15 + (rotr<u32>(w7, 7) ^ rotr<u32>(w7, 18) ^ (w7 >>> 3));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0x81c2c92e + w6;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  w7 += (rotr<u32>(w5, 17) ^ rotr<u32>(w5, 19) ^ (w5 >>> 10)) + w0 + (rotr<u32>(w8, 7) ^ rotr<u32>(w8, 18) ^ (w8 >>> 3));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0x92722c85 + w7;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  w8 += (rotr<u32>(w6, 17) ^ rotr<u32>(w6, 19) ^ (w6 >>> 10)) + w1 + (rotr<u32>(w9, 7) ^ rotr<u32>(w9, 18) ^ (w9 >>> 3));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0xa2bfe8a1 + w8;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  w9 += (rotr<u32>(w7, 17) ^ rotr<u32>(w7, 19) ^ (w7 >>> 10)) + w2 + (rotr<u32>(w10, 7) ^ rotr<u32>(w10, 18) ^ (w10 >>> 3));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0xa81a664b + w9;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  w10 += (rotr<u32>(w8, 17) ^ rotr<u32>(w8, 19) ^ (w8 >>> 10)) + w3 + (rotr<u32>(w11, 7) ^ rotr<u32>(w11, 18) ^ (w11 >>> 3));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0xc24b8b70 + w10;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  w11 += (rotr<u32>(w9, 17) ^ rotr<u32>(w9, 19) ^ (w9 >>> 10)) + w4 + (rotr<u32>(w12, 7) ^ rotr<u32>(w12, 18) ^ (w12 >>> 3));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0xc76c51a3 + w11;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  w12 += (rotr<u32>(w10, 17) ^ rotr<u32>(w10, 19) ^ (w10 >>> 10)) + w5 + (rotr<u32>(w13, 7) ^ rotr<u32>(w13, 18) ^ (w13 >>> 3));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0xd192e819 + w12;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  w13 += (rotr<u32>(w11, 17) ^ rotr<u32>(w11, 19) ^ (w11 >>> 10)) + w6 + (rotr<u32>(w14, 7) ^ rotr<u32>(w14, 18) ^ (w14 >>> 3));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0xd6990624 + w13;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  w14 += (rotr<u32>(w12, 17) ^ rotr<u32>(w12, 19) ^ (w12 >>> 10)) + w7 + (rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0xf40e3585 + w14;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  w15 += (rotr<u32>(w13, 17) ^ rotr<u32>(w13, 19) ^ (w13 >>> 10)) + w8 + (rotr<u32>(w0, 7) ^ rotr<u32>(w0, 18) ^ (w0 >>> 3));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0x106aa070 + w15;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  w0 += (rotr<u32>(w14, 17) ^ rotr<u32>(w14, 19) ^ (w14 >>> 10)) + w9 + (rotr<u32>(w1, 7) ^ rotr<u32>(w1, 18) ^ (w1 >>> 3));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0x19a4c116 + w0;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  w1 += (rotr<u32>(w15, 17) ^ rotr<u32>(w15, 19) ^ (w15 >>> 10)) + w10 + (rotr<u32>(w2, 7) ^ rotr<u32>(w2, 18) ^ (w2 >>> 3));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0x1e376c08 + w1;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  w2 += (rotr<u32>(w0, 17) ^ rotr<u32>(w0, 19) ^ (w0 >>> 10)) + w11 + (rotr<u32>(w3, 7) ^ rotr<u32>(w3, 18) ^ (w3 >>> 3));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0x2748774c + w2;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  w3 += (rotr<u32>(w1, 17) ^ rotr<u32>(w1, 19) ^ (w1 >>> 10)) + w12 + (rotr<u32>(w4, 7) ^ rotr<u32>(w4, 18) ^ (w4 >>> 3));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0x34b0bcb5 + w3;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  w4 += (rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10)) + w13 + (rotr<u32>(w5, 7) ^ rotr<u32>(w5, 18) ^ (w5 >>> 3));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0x391c0cb3 + w4;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  w5 += (rotr<u32>(w3, 17) ^ rotr<u32>(w3, 19) ^ (w3 >>> 10)) + w14 + (rotr<u32>(w6, 7) ^ rotr<u32>(w6, 18) ^ (w6 >>> 3));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0x4ed8aa4a + w5;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  w6 += (rotr<u32>(w4, 17) ^ rotr<u32>(w4, 19) ^ (w4 >>> 10)) + w15 + (rotr<u32>(w7, 7) ^ rotr<u32>(w7, 18) ^ (w7 >>> 3));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0x5b9cca4f + w6;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  w7 += (rotr<u32>(w5, 17) ^ rotr<u32>(w5, 19) ^ (w5 >>> 10)) + w0 + (rotr<u32>(w8, 7) ^ rotr<u32>(w8, 18) ^ (w8 >>> 3));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0x682e6ff3 + w7;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));
  w8 += (rotr<u32>(w6, 17) ^ rotr<u32>(w6, 19) ^ (w6 >>> 10)) + w1 + (rotr<u32>(w9, 7) ^ rotr<u32>(w9, 18) ^ (w9 >>> 3));
  t = h + (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + 0x748f82ee + w8;
  d += t;
  h = t + (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
  w9 += (rotr<u32>(w7, 17) ^ rotr<u32>(w7, 19) ^ (w7 >>> 10)) + w2 + (rotr<u32>(w10, 7) ^ rotr<u32>(w10, 18) ^ (w10 >>> 3));
  t = g + (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + 0x78a5636f + w9;
  c += t;
  g = t + (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
  w10 += (rotr<u32>(w8, 17) ^ rotr<u32>(w8, 19) ^ (w8 >>> 10)) + w3 + (rotr<u32>(w11, 7) ^ rotr<u32>(w11, 18) ^ (w11 >>> 3));
  t = f + (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + 0x84c87814 + w10;
  b += t;
  f = t + (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
  w11 += (rotr<u32>(w9, 17) ^ rotr<u32>(w9, 19) ^ (w9 >>> 10)) + w4 + (rotr<u32>(w12, 7) ^ rotr<u32>(w12, 18) ^ (w12 >>> 3));
  t = e + (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + 0x8cc70208 + w11;
  a += t;
  e = t + (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
  w12 += (rotr<u32>(w10, 17) ^ rotr<u32>(w10, 19) ^ (w10 >>> 10)) + w5 + (rotr<u32>(w13, 7) ^ rotr<u32>(w13, 18) ^ (w13 >>> 3));
  t = d + (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + 0x90befffa + w12;
  h += t;
  d = t + (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
  w13 += (rotr<u32>(w11, 17) ^ rotr<u32>(w11, 19) ^ (w11 >>> 10)) + w6 + (rotr<u32>(w14, 7) ^ rotr<u32>(w14, 18) ^ (w14 >>> 3));
  t = c + (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + 0xa4506ceb + w13;
  g += t;
  c = t + (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
  w14 += (rotr<u32>(w12, 17) ^ rotr<u32>(w12, 19) ^ (w12 >>> 10)) + w7 + (rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3));
  t = b + (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + 0xbef9a3f7 + w14;
  f += t;
  b = t + (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
  w15 += (rotr<u32>(w13, 17) ^ rotr<u32>(w13, 19) ^ (w13 >>> 10)) + w8 + (rotr<u32>(w0, 7) ^ rotr<u32>(w0, 18) ^ (w0 >>> 3));
  t = a + (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + 0xc67178f2 + w15;
  e += t;
  a = t + (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));

  store<u32>(st, load<u32>(st, 0) + a, 0);
  store<u32>(st, load<u32>(st, 4) + b, 4);
  store<u32>(st, load<u32>(st, 8) + c, 8);
  store<u32>(st, load<u32>(st, 12) + d, 12);
  store<u32>(st, load<u32>(st, 16) + e, 16);
  store<u32>(st, load<u32>(st, 20) + f, 20);
  store<u32>(st, load<u32>(st, 24) + g, 24);
  store<u32>(st, load<u32>(st, 28) + h, 28);
}

/** Start a SHA-256 computation in ctx (SHA256_CTX_SIZE bytes). */
export function sha256Init(ctx: usize): void {
  store<u32>(ctx, 0x6a09e667, 0);
  store<u32>(ctx, 0xbb67ae85, 4);
  store<u32>(ctx, 0x3c6ef372, 8);
  store<u32>(ctx, 0xa54ff53a, 12);
  store<u32>(ctx, 0x510e527f, 16);
  store<u32>(ctx, 0x9b05688c, 20);
  store<u32>(ctx, 0x1f83d9ab, 24);
  store<u32>(ctx, 0x5be0cd19, 28);
  store<u32>(ctx + BUFLEN, 0);
  store<u64>(ctx + TOTAL, 0);
}

/** Absorb len bytes at ptr. */
export function sha256Update(ctx: usize, ptr: usize, len: u32): void {
  if (len == 0) return;
  store<u64>(ctx + TOTAL, load<u64>(ctx + TOTAL) + <u64>len);
  let n = load<u32>(ctx + BUFLEN);
  let rem = len;
  if (n != 0) {
    let take: u32 = 64 - n;
    if (take > rem) take = rem;
    memory.copy(ctx + BUF + <usize>n, ptr, <usize>take);
    n += take;
    ptr += <usize>take;
    rem -= take;
    if (n < 64) {
      store<u32>(ctx + BUFLEN, n);
      return;
    }
    compress(ctx + ST, ctx + BUF);
    n = 0;
  }
  while (rem >= 64) {
    compress(ctx + ST, ptr);
    ptr += 64;
    rem -= 64;
  }
  if (rem != 0) memory.copy(ctx + BUF, ptr, <usize>rem);
  store<u32>(ctx + BUFLEN, rem);
}

/** Finish: write the 32-byte digest to out. The ctx must be re-initialised before reuse. */
export function sha256Final(ctx: usize, out: usize): void {
  let n = <usize>load<u32>(ctx + BUFLEN);
  let buf = ctx + BUF;
  store<u8>(buf + n, 0x80);
  n++;
  if (n > 56) {
    memory.fill(buf + n, 0, 64 - n);
    compress(ctx + ST, buf);
    n = 0;
  }
  memory.fill(buf + n, 0, 56 - n);
  store<u64>(buf, bswap<u64>(load<u64>(ctx + TOTAL) << 3), 56);
  compress(ctx + ST, buf);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 0)), 0);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 4)), 4);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 8)), 8);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 12)), 12);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 16)), 16);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 20)), 20);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 24)), 24);
  store<u32>(out, bswap<u32>(load<u32>(ctx, 28)), 28);
  // the partial block may hold secret message bytes (RFC 6979 feeds keys through here)
  memory.fill(buf, 0, 64);
}

/** SHA-256 of len bytes at inPtr → 32 bytes at outPtr (out may overlap in). */
export function sha256(inPtr: usize, len: u32, outPtr: usize): void {
  sha256Init(ONE_CTX);
  sha256Update(ONE_CTX, inPtr, len);
  sha256Final(ONE_CTX, outPtr);
  memory.fill(ONE_CTX, 0, 112);
}

/** Start HMAC-SHA256 with the given key in ctx (HMAC_SHA256_CTX_SIZE bytes). */
export function hmacSha256Init(ctx: usize, keyPtr: usize, keyLen: u32): void {
  memory.fill(PAD, 0, 64);
  if (keyLen > 64) {
    sha256(keyPtr, keyLen, PAD);
  } else {
    memory.copy(PAD, keyPtr, <usize>keyLen);
  }
  for (let i: usize = 0; i < 64; i += 8) store<u64>(PAD + i, load<u64>(PAD + i) ^ 0x3636363636363636);
  sha256Init(ctx);
  sha256Update(ctx, PAD, 64);
  // 0x36 ^ 0x5c = 0x6a
  for (let i: usize = 0; i < 64; i += 8) store<u64>(PAD + i, load<u64>(PAD + i) ^ 0x6a6a6a6a6a6a6a6a);
  sha256Init(ctx + 112);
  sha256Update(ctx + 112, PAD, 64);
  memory.fill(PAD, 0, 64);
}

/** Absorb message bytes into an HMAC ctx. */
export function hmacSha256Update(ctx: usize, ptr: usize, len: u32): void {
  sha256Update(ctx, ptr, len);
}

/** Finish HMAC: 32-byte tag to out. The ctx must be re-initialised (or re-copied) before reuse. */
export function hmacSha256Final(ctx: usize, out: usize): void {
  sha256Final(ctx, INNER);
  sha256Update(ctx + 112, INNER, 32);
  sha256Final(ctx + 112, out);
  memory.fill(INNER, 0, 32);
}

/** HMAC-SHA256(key, msg) → 32 bytes at outPtr (out may overlap the inputs). */
export function hmacSha256(keyPtr: usize, keyLen: u32, msgPtr: usize, msgLen: u32, outPtr: usize): void {
  hmacSha256Init(HMAC_CTX, keyPtr, keyLen);
  sha256Update(HMAC_CTX, msgPtr, msgLen);
  hmacSha256Final(HMAC_CTX, outPtr);
  memory.fill(HMAC_CTX, 0, 224);
}
