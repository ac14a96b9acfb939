/**
 * The SHA-256 the log's pure modules use. @noble/hashes by default (pure JavaScript, so the
 * verifier runs unchanged in a browser); a host with a native SHA-256 of the same output installs
 * it with useSha256 (the server installs node:crypto's: an append hashes the record, the entry and
 * the tree's right edge, and the native one is several times faster on kilobyte inputs).
 */
import { sha256 as pureSha256 } from '@noble/hashes/sha2.js';

export type Sha256 = (data: Uint8Array) => Uint8Array;

let impl: Sha256 = pureSha256;

export const sha256: Sha256 = (data) => impl(data);

/** Installs another SHA-256 implementation; it must give the same digests (checked here on a known value). */
export function useSha256(f: Sha256): void {
  const probe = new TextEncoder().encode('abc');
  const want = pureSha256(probe);
  const got = f(probe);
  if (got.length !== 32 || got.some((b, i) => b !== want[i])) throw new Error('useSha256: the implementation does not compute SHA-256');
  impl = f;
}
