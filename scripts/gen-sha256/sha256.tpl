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
@@ROUNDS@@

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
@@INIT@@
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
