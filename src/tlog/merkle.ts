/**
 * RFC 6962 / RFC 9162 Merkle trees: leaf and node hashes, the tree head of a list, a frontier that
 * appends in O(log n), inclusion and consistency proofs built from stored subtree hashes, and
 * their verification. Pure functions over bytes (SHA-256 from @noble/hashes): no server, no Node
 * API, so the offline verifier and a browser run the same code.
 *
 * Subtrees: node (level, index) is the root of the perfect subtree over leaves
 * [index·2^level, (index+1)·2^level); level 0 holds the leaf hashes. Every range the RFC's
 * recursion visits is such a node or splits into one on its left (its start is aligned to the
 * largest power of two below its size), so a proof needs O(log n) nodes, plus O(log² n) for the
 * ragged right edge of a tree whose size is no power of two.
 */
import { equalBytes, sha256, sha256Utf8 } from './hash.js';

const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/** SHA-256(0x00 ‖ data). */
export const leafHash = (data: Uint8Array): Uint8Array => sha256(concat(LEAF, data));
/** leafHash of a text's UTF-8 (U+0000 is the byte 0x00, so the prefix is one more character). */
export const leafHashUtf8 = (text: string): Uint8Array => sha256Utf8(`\u0000${text}`);
/** SHA-256(0x01 ‖ left ‖ right). */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(concat(NODE, left, right));
/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

/** Whether n is a power of two, for any safe integer (a bitwise test sees only the low 32 bits). */
const isPowerOfTwo = (n: number): boolean => n > 0 && 2 ** Math.round(Math.log2(n)) === n;

/** The largest power of two smaller than n (n ≥ 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function checkSize(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer`);
}

/** The tree head (MTH) of a list of leaf hashes. */
export function rootOf(leaves: readonly Uint8Array[]): Uint8Array {
  const f = new Frontier();
  for (const l of leaves) f.append(l);
  return f.root();
}

/**
 * Where the frontier of a tree of `size` leaves is: its perfect subtrees of the right edge as
 * (level, index), largest first, one per set bit of size.
 */
export function frontierPlaces(size: number): { level: number; index: number }[] {
  checkSize(size, 'size');
  const out: { level: number; index: number }[] = [];
  let start = 0;
  for (let level = size > 0 ? Math.floor(Math.log2(size)) : -1; level >= 0; level--) {
    const width = 2 ** level;
    if (size - start >= width) {
      out.push({ level, index: start / width });
      start += width;
    }
  }
  if (start !== size) throw new Error(`frontierPlaces: the subtrees cover ${start} of ${size} leaves`);
  return out;
}

/** A completed perfect subtree, reported by Frontier.append so that a store can keep it. */
export interface Node { level: number; index: number; hash: Uint8Array }

/**
 * The right edge of a tree: the roots of its perfect subtrees, largest first (one per set bit of
 * the size). Appending merges equal neighbours: each merge completes one node, one per append on
 * average, O(log n) at most. (appendToFrontier is the same merge for one append on the bytes a log
 * head stores; this class keeps its nodes in place, which a long run of appends, such as a verifier
 * recomputing a tree, needs: built on appendToFrontier it took 1.6x as long for 10^5 appends.)
 */
export class Frontier {
  #size = 0;
  #nodes: Node[] = [];

  constructor(size = 0, nodes: readonly Node[] = []) {
    checkSize(size, 'size');
    this.#size = size;
    this.#nodes = nodes.map((n) => ({ ...n }));
  }

  get size(): number { return this.#size; }
  /** The perfect subtrees of the right edge, largest first. */
  get nodes(): readonly Node[] { return this.#nodes; }

  /** Appends a leaf hash; returns every node it completed (the leaf itself first). */
  append(leaf: Uint8Array): Node[] {
    const made: Node[] = [{ level: 0, index: this.#size, hash: leaf }];
    let cur: Node = made[0]!;
    while (this.#nodes.length > 0 && this.#nodes[this.#nodes.length - 1]!.level === cur.level) {
      const left = this.#nodes.pop()!;
      cur = { level: cur.level + 1, index: left.index / 2, hash: nodeHash(left.hash, cur.hash) };
      made.push(cur);
    }
    this.#nodes.push(cur);
    this.#size++;
    return made;
  }

  /** The tree head of the leaves appended so far. */
  root(): Uint8Array {
    if (this.#nodes.length === 0) return EMPTY_ROOT;
    let h = this.#nodes[this.#nodes.length - 1]!.hash;
    for (let i = this.#nodes.length - 2; i >= 0; i--) h = nodeHash(this.#nodes[i]!.hash, h);
    return h;
  }
}

/**
 * One append to a tree held as its size and its frontier's hashes concatenated (largest subtree
 * first, 32 bytes each: what a log head stores): the nodes the append completes (the leaf first;
 * one per trailing 1 bit of size, merged with the frontier's smallest subtrees) and the new
 * frontier, concatenated. The old bytes are not changed (a head is shared until it is replaced).
 */
export function appendToFrontier(size: number, frontier: Uint8Array, leaf: Uint8Array): { made: Node[]; frontier: Uint8Array } {
  checkSize(size, 'size');
  let count = 0;
  for (let s = size; s > 0; s = Math.floor(s / 2)) count += s % 2;
  if (frontier.length !== count * 32) throw new Error(`the frontier is ${frontier.length} bytes; a tree of ${size} leaves has ${count * 32}`);
  const made: Node[] = [{ level: 0, index: size, hash: leaf }];
  let cur = leaf;
  let keep = count;
  for (let level = 0, s = size; s % 2 === 1; level++, s = Math.floor(s / 2)) {
    keep--;
    cur = nodeHash(frontier.subarray(keep * 32, keep * 32 + 32), cur);
    made.push({ level: level + 1, index: Math.floor(s / 2), hash: cur });
  }
  const next = new Uint8Array(keep * 32 + 32);
  next.set(frontier.subarray(0, keep * 32));
  next.set(cur, keep * 32);
  return { made, frontier: next };
}

/** The tree head of a tree given by its frontier's concatenated hashes (largest subtree first). */
export function frontierRoot(frontier: Uint8Array): Uint8Array {
  if (frontier.length % 32 !== 0) throw new Error('a frontier is 32-byte hashes');
  if (frontier.length === 0) return EMPTY_ROOT;
  let at = frontier.length - 32;
  let h = frontier.subarray(at, at + 32);
  while (at > 0) { at -= 32; h = nodeHash(frontier.subarray(at, at + 32), h); }
  return h;
}

/** Reads the hash of a completed perfect subtree (level, index). */
export type NodeReader = (level: number, index: number) => Uint8Array;

/** MTH of leaves [start, end): a stored node when the range is one, else composed from its parts. */
export function subtreeRoot(start: number, end: number, node: NodeReader): Uint8Array {
  const n = end - start;
  if (n <= 0) throw new RangeError('an empty range has no subtree root');
  if (isPowerOfTwo(n) && start % n === 0) return node(Math.log2(n), start / n);
  const k = split(n);
  return nodeHash(subtreeRoot(start, start + k, node), subtreeRoot(start + k, end, node));
}

/** The audit path of leaf `index` in the tree of `size` leaves (RFC 6962 PATH), leaf side first. */
export function inclusionProof(index: number, size: number, node: NodeReader): Uint8Array[] {
  checkSize(size, 'size');
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const path: Uint8Array[] = [];
  const walk = (m: number, start: number, end: number): void => {
    if (end - start === 1) return;
    const k = split(end - start);
    if (m < k) { walk(m, start, start + k); path.push(subtreeRoot(start + k, end, node)); } else { walk(m - k, start + k, end); path.push(subtreeRoot(start, start + k, node)); }
  };
  walk(index, 0, size);
  return path;
}

/** The consistency proof from the tree of `oldSize` to the tree of `newSize` (RFC 6962 PROOF). */
export function consistencyProof(oldSize: number, newSize: number, node: NodeReader): Uint8Array[] {
  checkSize(oldSize, 'old size');
  checkSize(newSize, 'new size');
  if (oldSize > newSize) throw new RangeError(`a tree of ${oldSize} is not a prefix of one of ${newSize}`);
  if (oldSize === 0 || oldSize === newSize) return [];
  const proof: Uint8Array[] = [];
  const sub = (m: number, start: number, end: number, whole: boolean): void => {
    const n = end - start;
    if (m === n) { if (!whole) proof.push(subtreeRoot(start, end, node)); return; }
    const k = split(n);
    if (m <= k) { sub(m, start, start + k, whole); proof.push(subtreeRoot(start + k, end, node)); } else { sub(m - k, start + k, end, false); proof.push(subtreeRoot(start, start + k, node)); }
  };
  sub(oldSize, 0, newSize, true);
  return proof;
}


/** Whether `path` proves leaf hash `leaf` at `index` in the tree of `size` with root `root` (RFC 9162 §2.1.3.2). */
export function verifyInclusion(leaf: Uint8Array, index: number, size: number, path: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (p.length !== 32) return false;
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalBytes(r, root);
}

/** Whether `proof` shows the tree of `oldSize` (root `oldRoot`) is a prefix of the tree of `newSize` (root `newRoot`) (RFC 9162 §2.1.4.2). */
export function verifyConsistency(oldSize: number, newSize: number, oldRoot: Uint8Array, newRoot: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 0 || oldSize > newSize) return false;
  if (oldSize === newSize) return proof.length === 0 && equalBytes(oldRoot, newRoot);
  if (oldSize === 0) return proof.length === 0;
  if (proof.length === 0 || proof.some((p) => p.length !== 32)) return false;
  const path = [...proof];
  // when the old size is a power of two, the old root is the proof's implicit first node
  if (isPowerOfTwo(oldSize)) path.unshift(oldRoot);
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (fn % 2 === 1) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalBytes(fr, oldRoot) && equalBytes(sr, newRoot);
}
