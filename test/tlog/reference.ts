// RFC 6962 §2.1's Merkle Tree Hash straight from its definition (recursive, no stored nodes): the
// independent truth the log's trees, proofs and upgrades are held to in the tests.
import { sha256 } from '@noble/hashes/sha2.js';
import { nodeHash } from '../../src/tlog/merkle.js';

/** MTH(D[n]): the empty string's hash for no leaves, the leaf hash for one, else split at the largest power of two below n. */
export function mth(d: readonly Uint8Array[]): Uint8Array {
  if (d.length === 0) return sha256(new Uint8Array(0));
  if (d.length === 1) return d[0]!;
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return nodeHash(mth(d.slice(0, k)), mth(d.slice(k)));
}
