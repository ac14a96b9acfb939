// RFC 6962 Merkle trees (src/tlog/merkle.ts) against the certificate-transparency vectors
// (test/vectors/merkle, ATTRIBUTION.md): tree heads for sizes 1–8, audit paths and consistency
// proofs, each also mutated (wrong index, size, leaf or root; truncated, padded or altered paths;
// swapped roots) and refused. (A size that keeps the path's shape, such as 8 for 7, is bound by
// the root, not by the path: a checkpoint signs the two together.) Random trees compare the O(log n) frontier and the proofs built from
// stored nodes with the RFC's recursive definition written out plainly (reference.ts).
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import {
  EMPTY_ROOT, Frontier, appendToFrontier, consistencyProof, frontierPlaces, frontierRoot, inclusionProof, leafHash, leafHashUtf8, nodeHash, rootOf, verifyConsistency, verifyInclusion, type NodeReader,
} from '../../src/tlog/merkle.js';
import { mth } from './reference.js';

const V = JSON.parse(readFileSync(new URL('../vectors/merkle/rfc6962_ct_vectors.json', import.meta.url), 'utf8'));
const data: Uint8Array[] = V.leaves.map((l: { dataHex: string }) => hexToBytes(l.dataHex));
const leaves = data.map(leafHash);
const rootAt = (n: number) => hexToBytes(V.rootsByTreeSize[n - 1].rootHex);

/** Every node a frontier completes, kept as a store would keep it. */
function nodeStore(hashes: readonly Uint8Array[]): { reader: NodeReader; frontier: Frontier } {
  const nodes = new Map<string, Uint8Array>();
  const frontier = new Frontier();
  for (const h of hashes) for (const n of frontier.append(h)) nodes.set(`${n.level}/${n.index}`, n.hash);
  return {
    frontier,
    reader: (level, index) => {
      const h = nodes.get(`${level}/${index}`);
      if (!h) throw new Error(`no node ${level}/${index}`);
      return h;
    },
  };
}


const hex = (xs: readonly Uint8Array[]) => xs.map(bytesToHex);
const flip = (b: Uint8Array) => { const c = b.slice(); c[0]! ^= 1; return c; };

describe('RFC 6962 vectors', () => {
  it('the empty tree and the tree heads of sizes 1–8', () => {
    expect(bytesToHex(EMPTY_ROOT)).toBe(V.emptyTreeRoot);
    expect(bytesToHex(rootOf([]))).toBe(V.emptyTreeRoot);
    const f = new Frontier();
    for (let n = 1; n <= 8; n++) {
      f.append(leaves[n - 1]!);
      expect(bytesToHex(f.root()), `size ${n}`).toBe(V.rootsByTreeSize[n - 1].rootHex);
      expect(bytesToHex(rootOf(leaves.slice(0, n)))).toBe(V.rootsByTreeSize[n - 1].rootHex);
    }
  });

  it('inclusion proofs: built from stored nodes as published, verified, and every mutation refused', () => {
    for (const c of V.inclusion as { leafIndex: number; treeSize: number; auditPathHex: string[] }[]) {
      const { reader } = nodeStore(leaves.slice(0, c.treeSize));
      const path = inclusionProof(c.leafIndex, c.treeSize, reader);
      expect(hex(path)).toEqual(c.auditPathHex);
      const root = rootAt(c.treeSize);
      const leaf = leaves[c.leafIndex]!;
      expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, path, root)).toBe(true);
      // wrong index, size, leaf, root
      expect(verifyInclusion(leaf, c.leafIndex ^ 1, c.treeSize, path, root)).toBe(false);
      expect(verifyInclusion(leaf, c.leafIndex, c.treeSize * 2, path, root)).toBe(false);
      expect(verifyInclusion(leaf, c.treeSize, c.treeSize, path, root)).toBe(false);
      expect(verifyInclusion(leafHash(new Uint8Array([9])), c.leafIndex, c.treeSize, path, root)).toBe(false);
      expect(verifyInclusion(data[c.leafIndex]!.length === 32 ? flip(leaf) : data[c.leafIndex]!, c.leafIndex, c.treeSize, path, root)).toBe(false); // the data, not its leaf hash
      expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, path, flip(root))).toBe(false);
      // truncated, padded, altered, reordered paths
      expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, path.slice(0, -1), root)).toBe(false);
      expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, [...path, leaf], root)).toBe(false);
      expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, [leaf, ...path], root)).toBe(false);
      for (let i = 0; i < path.length; i++) {
        expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, path.map((p, j) => (j === i ? flip(p) : p)), root)).toBe(false);
      }
      if (path.length > 1) expect(verifyInclusion(leaf, c.leafIndex, c.treeSize, [...path].reverse(), root)).toBe(false);
    }
  });

  it('consistency proofs: built from stored nodes as published, verified, and every mutation refused', () => {
    for (const c of V.consistency as { oldSize: number; newSize: number; proofHex: string[] }[]) {
      const { reader } = nodeStore(leaves.slice(0, c.newSize));
      const proof = consistencyProof(c.oldSize, c.newSize, reader);
      expect(hex(proof)).toEqual(c.proofHex);
      const [a, b] = [rootAt(c.oldSize), rootAt(c.newSize)];
      expect(verifyConsistency(c.oldSize, c.newSize, a, b, proof)).toBe(true);
      if (c.oldSize === c.newSize) continue;
      // swapped roots, wrong sizes, altered roots
      expect(verifyConsistency(c.oldSize, c.newSize, b, a, proof)).toBe(false);
      expect(verifyConsistency(c.newSize, c.oldSize, a, b, proof)).toBe(false);
      expect(verifyConsistency(c.oldSize + 1, c.newSize, a, b, proof)).toBe(false);
      expect(verifyConsistency(c.oldSize, c.newSize * 2, a, b, proof)).toBe(false);
      expect(verifyConsistency(c.oldSize, c.newSize, flip(a), b, proof)).toBe(false);
      expect(verifyConsistency(c.oldSize, c.newSize, a, flip(b), proof)).toBe(false);
      // truncated, padded, altered proofs
      expect(verifyConsistency(c.oldSize, c.newSize, a, b, proof.slice(0, -1))).toBe(false);
      expect(verifyConsistency(c.oldSize, c.newSize, a, b, [...proof, a])).toBe(false);
      expect(verifyConsistency(c.oldSize, c.newSize, a, b, [])).toBe(false);
      for (let i = 0; i < proof.length; i++) {
        expect(verifyConsistency(c.oldSize, c.newSize, a, b, proof.map((p, j) => (j === i ? flip(p) : p)))).toBe(false);
      }
    }
  });
});

describe('random trees against the RFC\'s definition', () => {
  it('frontierPlaces: where the frontier that appends build is, for every size up to 1,100 and sizes near powers of two up to 2^53', () => {
    // the definition: one subtree per set bit of size, largest first, each starting where the larger ones end
    const byBits = (size: number) => {
      const out: { level: number; index: number }[] = [];
      let start = 0;
      for (let level = 53; level >= 0; level--) {
        const width = 2 ** level;
        if (Math.floor(size / width) % 2 === 1) { out.push({ level, index: start / width }); start += width; }
      }
      return out;
    };
    const f = new Frontier();
    const seen: Uint8Array[] = [];
    for (let size = 0; size <= 1100; size++) {
      expect(frontierPlaces(size), String(size)).toEqual(f.nodes.map((n) => ({ level: n.level, index: n.index })));
      // and each frontier node's hash is the root of the leaves it covers
      for (const n of f.nodes) expect(bytesToHex(n.hash)).toBe(bytesToHex(mth(seen.slice(n.index * 2 ** n.level, (n.index + 1) * 2 ** n.level))));
      expect(frontierPlaces(size)).toEqual(byBits(size));
      seen.push(leafHash(new Uint8Array([size & 0xff])));
      f.append(seen[size]!);
    }
    for (let k = 1; k <= 53; k++) for (const size of [2 ** k - 1, 2 ** k, 2 ** k + 1, 2 ** k + 2 ** (k - 1)]) {
      if (size <= Number.MAX_SAFE_INTEGER) expect(frontierPlaces(size), String(size)).toEqual(byBits(size));
    }
    expect(() => frontierPlaces(-1)).toThrow(RangeError);
  });

  it('frontier roots, inclusion and consistency proofs for every index and size up to 70, and sampled up to 2,000 leaves', () => {
    const all = Array.from({ length: 2000 }, (_, i) => leafHash(sha256(new Uint8Array([i & 0xff, i >> 8]))));
    const { reader, frontier } = nodeStore(all);
    expect(bytesToHex(frontier.root())).toBe(bytesToHex(mth(all)));
    const check = (m: number, n: number) => {
      const root = mth(all.slice(0, n));
      if (m < n) {
        const path = inclusionProof(m, n, reader);
        expect(verifyInclusion(all[m]!, m, n, path, root), `inclusion ${m} of ${n}`).toBe(true);
        expect(verifyInclusion(all[m]!, m, n, path, mth(all.slice(0, n + 1))), `inclusion ${m} of ${n} against a larger root`).toBe(false);
      }
      if (m >= 1 && m <= n) {
        const proof = consistencyProof(m, n, reader);
        const old = mth(all.slice(0, m));
        expect(verifyConsistency(m, n, old, root, proof), `consistency ${m} → ${n}`).toBe(true);
        if (m < n) expect(verifyConsistency(m, n, mth([...all.slice(0, m - 1), all[1999]!]), root, proof), `a rewritten prefix ${m} → ${n}`).toBe(false);
      }
    };
    for (let n = 1; n <= 70; n++) for (let m = 0; m <= n; m++) check(m, n);
    let seed = 7;
    const rnd = (k: number) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % k; };
    for (let t = 0; t < 150; t++) { const n = 1 + rnd(2000); check(rnd(n + 1), n); }
  });

  it('appendToFrontier (the append on a stored head) completes each node as the definition builds it and keeps the tree head of the list', () => {
    const all = Array.from({ length: 300 }, (_, i) => leafHash(new Uint8Array([i, i >> 8, 2])));
    let edge: Uint8Array = new Uint8Array(0);
    const completed = new Set<string>();
    all.forEach((h, i) => {
      const got = appendToFrontier(i, edge, h);
      // the leaf first, then one node per level it completes: node (level, index) is the root of its leaves
      got.made.forEach((n, k) => {
        expect([n.level, n.index]).toEqual([k, Math.floor(i / 2 ** k)]);
        expect(bytesToHex(n.hash), `node ${n.level}/${n.index}`).toBe(bytesToHex(mth(all.slice(n.index * 2 ** n.level, (n.index + 1) * 2 ** n.level))));
        completed.add(`${n.level}/${n.index}`);
      });
      expect((i + 1) % 2 ** (got.made.length - 1)).toBe(0);
      edge = got.frontier;
      expect(bytesToHex(frontierRoot(edge)), `size ${i + 1}`).toBe(bytesToHex(mth(all.slice(0, i + 1))));
    });
    // every perfect subtree of 300 leaves was completed exactly once: 300 + 150 + 75 + 37 + 18 + 9 + 4 + 2 + 1
    expect(completed.size).toBe(596);
    expect(bytesToHex(frontierRoot(new Uint8Array(0)))).toBe(bytesToHex(EMPTY_ROOT));
    // a frontier that does not fit the size (one hash too few or too many) is refused
    expect(() => appendToFrontier(300, edge.subarray(32), all[0]!)).toThrow(/frontier/);
    expect(() => appendToFrontier(299, edge, all[0]!)).toThrow(/frontier/);
  });

  it('leafHashUtf8 is leafHash of the text\'s UTF-8, non-ASCII and NUL included', () => {
    for (const text of ['', '{"a":1}', 'caf\u00e9 \u20ac \u{1f511} \u0000 "q"']) {
      expect(bytesToHex(leafHashUtf8(text))).toBe(bytesToHex(leafHash(new TextEncoder().encode(text))));
    }
  });

  it('a frontier rebuilt from its stored right edge continues the same tree', () => {
    const all = Array.from({ length: 300 }, (_, i) => leafHash(new Uint8Array([i, i >> 8, 1])));
    const a = new Frontier();
    all.slice(0, 123).forEach((h) => a.append(h));
    const b = new Frontier(a.size, a.nodes);
    all.slice(123).forEach((h) => { a.append(h); b.append(h); });
    expect(bytesToHex(b.root())).toBe(bytesToHex(a.root()));
    expect(bytesToHex(b.root())).toBe(bytesToHex(mth(all)));
  });
});
