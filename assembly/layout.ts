// Static memory layout of the core. Nothing is allocated at run time: every buffer below is
// reserved once in the data segment.
//
// I/O region (the only memory the host touches): the host copies inputs into IN at the fixed
// offsets below, calls an exported function, and reads the results from OUT.

export const IO_SIZE: usize = 32768;
export const IN: usize = memory.data(<i32>IO_SIZE, 16);
export const OUT: usize = memory.data(<i32>IO_SIZE, 16);

// single-operation input slots (byte offsets into IN)
export const IN_DIGEST: usize = 0; //  32: message digest
export const IN_KEY: usize = 32; //    32: private key
export const IN_TWEAK: usize = 96; //  32: BIP32 tweak
export const IN_SIG: usize = 128; //   64: r ‖ s
export const IN_PUB: usize = 256; //   33 or 65: SEC1 public key
export const IN_EXTRA: usize = 512; // up to EXTRA_MAX: RFC 6979 §3.6 extra data k'
export const EXTRA_MAX: u32 = 1024;
// single-operation output slots (byte offsets into OUT)
export const OUT_SIG: usize = 0; //    64: r ‖ s
export const OUT_REC: usize = 64; //    1: recovery id
export const OUT_PUB: usize = 128; //  33 or 65: SEC1 public key
export const OUT_SECRET: usize = 256; // 32: ECDH x-coordinate or tweaked private key

// batch signing
export const BATCH_MAX: u32 = 256;
export const IN_B_DIGESTS: usize = 0; //      32 * N
export const IN_B_KEYS: usize = 8192; //      32 * N (or 32 with one key for all)
export const OUT_B_SIGS: usize = 0; //        64 * N
export const OUT_B_RECS: usize = 16384; //    N

// Secret scratch: every temporary that can hold key-, nonce- or secret-point-derived data
// lives here and the region is zeroed before each exported secret operation returns.
export const SECRET_SCRATCH_SIZE: usize = 8192;
export const SECRET: usize = memory.data(<i32>SECRET_SCRATCH_SIZE, 16);
// Per-item state of a batch signature (k, R, prefix products...), zeroed after each batch.
export const BATCH_STRIDE: usize = 512;
export const BATCH_SCRATCH: usize = memory.data(<i32>(BATCH_STRIDE * <usize>BATCH_MAX), 16);
// Public scratch (tables derived from public points, wNAF digits): not wiped.
export const PUBLIC: usize = memory.data(16384, 16);

// status codes returned by every exported function (0 = ok)
export const OK: u32 = 0;
export const E_PRIVATE_KEY: u32 = 1;
export const E_PUBLIC_KEY: u32 = 2;
export const E_DIGEST: u32 = 3;
export const E_SIGNATURE: u32 = 4;
export const E_RECOVERY_ID: u32 = 5;
export const E_TWEAK: u32 = 6;
export const E_LENGTH: u32 = 7;
export const E_SIGN_FAILED: u32 = 8;
export const E_CURVE: u32 = 9;
export const E_ARGUMENT: u32 = 10;

// secret scratch sub-blocks (offsets into SECRET), one per module so nested calls never collide
export const S_FIELD: usize = SECRET + 0; //     1024
export const S_POINT: usize = SECRET + 2048; //  1536
export const S_MULT: usize = SECRET + 3584; //   1024
export const S_ECDSA: usize = SECRET + 4608; //  2048
export const S_HMAC: usize = SECRET + 6656; //   1024 (3 HMAC ctx of 224 bytes + 32-byte buffers)
export const S_INV: usize = SECRET + 7680; //    512 (safegcd state)

// ECDSA-layer scratch, offsets into S_ECDSA (secret, wiped): shared by sign.ts, ecverify.ts,
// keycache.ts and keys.ts, which never run nested.
export const EC_D: usize = S_ECDSA + 0; //      private key scalar
export const EC_E: usize = S_ECDSA + 40; //     digest scalar
export const EC_K: usize = S_ECDSA + 80; //     nonce scalar
export const EC_RS: usize = S_ECDSA + 120; //   r
export const EC_SS: usize = S_ECDSA + 160; //   s
export const EC_W1: usize = S_ECDSA + 200;
export const EC_W2: usize = S_ECDSA + 240;
export const EC_W3: usize = S_ECDSA + 280;
export const EC_PJ: usize = S_ECDSA + 320; //   Jacobian point (120)
export const EC_PA: usize = S_ECDSA + 448; //   affine point (80)
export const EC_QA: usize = S_ECDSA + 528; // affine point: a decoded public key (decodePoint_var's output)
export const EC_KB: usize = S_ECDSA + 608; //   32 bytes
export const EC_XB: usize = S_ECDSA + 640; //   32 bytes
export const EC_EB: usize = S_ECDSA + 672; //   32 bytes
export const EC_UB1: usize = S_ECDSA + 704; //  32 bytes
export const EC_UB2: usize = S_ECDSA + 736; //  32 bytes
export const EC_FX: usize = S_ECDSA + 768; //   field element
export const EC_FT: usize = S_ECDSA + 808; //   field element
export const EC_NB: usize = S_ECDSA + 848; //   32 bytes (n)
