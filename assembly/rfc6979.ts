// RFC 6979 deterministic nonces: the HMAC-SHA256 DRBG of §3.2 (with the extra data k' of §3.6
// appended to the seed as @noble/curves does). Constant time: the state lives in S_HMAC (secret,
// wiped); the HMAC key schedule of each K is computed once and cloned, and the one for K = 0 is
// a cached public constant.
import { hmacSha256Init, hmacSha256Update, hmacSha256Final } from './hash/sha256';
import { S_HMAC } from './layout';

// RFC 6979 HMAC-DRBG state. CTXK holds the HMAC key schedule (inner/outer midstates) of the
// current K, cloned for every HMAC under that K instead of re-deriving it.
// RFC 6979 HMAC-DRBG state. CTXK holds the HMAC key schedule (inner/outer midstates) of the
// current K, cloned for every HMAC under that K instead of re-deriving it.
const RK: usize = S_HMAC + 0; //      K (32)
const RV: usize = S_HMAC + 32; //     V (32)
const RB: usize = S_HMAC + 64; //     1-byte separator
const CTX: usize = S_HMAC + 128; //   working HMAC ctx (224)
const CTXK: usize = S_HMAC + 384; //  HMAC ctx keyed with K (224)
const ZERO_KEY_CTX: usize = memory.data(224, 16); // HMAC ctx for K = 0^32 (public constant)
let zeroCtxReady = false;
let drbgFresh = true;

/** K ← HMAC_K(V ‖ sep ‖ x ‖ h ‖ extra), then re-key CTXK */
function drbgReseed(sep: u8, x: usize, h: usize, extra: usize, extraLen: u32): void {
  store<u8>(RB, sep);
  memory.copy(CTX, CTXK, 224);
  hmacSha256Update(CTX, RV, 32);
  hmacSha256Update(CTX, RB, 1);
  if (x != 0) {
    hmacSha256Update(CTX, x, 32);
    hmacSha256Update(CTX, h, 32);
    if (extraLen != 0) hmacSha256Update(CTX, extra, extraLen);
  }
  hmacSha256Final(CTX, RK);
  hmacSha256Init(CTXK, RK, 32);
}

/** V ← HMAC_K(V) */
function drbgStep(): void {
  memory.copy(CTX, CTXK, 224);
  hmacSha256Update(CTX, RV, 32);
  hmacSha256Final(CTX, RV);
}

/** RFC 6979 §3.2 steps b–f for private key bytes x and bits2octets(h1) = h. */
export function drbgInit(x: usize, h: usize, extra: usize, extraLen: u32): void {
  memory.fill(RV, 1, 32);
  memory.fill(RK, 0, 32);
  if (!zeroCtxReady) {
    hmacSha256Init(ZERO_KEY_CTX, RK, 32);
    zeroCtxReady = true;
  }
  memory.copy(CTXK, ZERO_KEY_CTX, 224);
  drbgReseed(0, x, h, extra, extraLen);
  drbgStep();
  drbgReseed(1, x, h, extra, extraLen);
  drbgStep();
  drbgFresh = true;
}

/** Next candidate T (32 bytes) into out (§3.2 step h, including the retry update). */
export function drbgNext(out: usize): void {
  if (!drbgFresh) {
    drbgReseed(0, 0, 0, 0, 0);
    drbgStep();
  }
  drbgFresh = false;
  drbgStep();
  memory.copy(out, RV, 32);
}
