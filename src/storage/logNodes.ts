/**
 * Where the log's subtree hashes are stored (both adapters): node (level, index), over leaves
 * [index·2^level, (index+1)·2^level), is completed by the append of entry (index+1)·2^level − 1,
 * together with the nodes of the levels below it that end there. So each entry row carries the
 * hashes its append completed, level 0 (its leaf hash) first, 32 bytes each (log_entries.nodes),
 * and an append writes one row.
 */
import type { LogNodeRow } from './types.js';

/** The entry whose row holds node (level, index), and the byte offset of its hash there. */
export function nodePlace(level: number, index: number): { entry: number; offset: number } {
  return { entry: (index + 1) * 2 ** level - 1, offset: level * 32 };
}

/** The nodes column of entry `entry`: the nodes its append completed, which must be levels 0…k ending at it. */
export function foldNodes(entry: number, nodes: readonly LogNodeRow[]): Uint8Array {
  const out = new Uint8Array(nodes.length * 32);
  nodes.forEach((n, i) => {
    const at = nodePlace(n.level, n.index);
    if (n.level !== i || at.entry !== entry || n.hash.length !== 32) throw new Error(`log node (${n.level}, ${n.index}) is not one that the append of entry ${entry} completes`);
    out.set(n.hash, at.offset);
  });
  return out;
}

/**
 * activities.log_indexes, where the indexes of an activity's entries are kept (instead of an index
 * of log_entries by activity, which cost each append a page of its own): decimal, comma-separated,
 * oldest first, '' for none.
 */
export const logIndexesFrom = (text: string | null | undefined): number[] => (text ? text.split(',').map(Number) : []);
