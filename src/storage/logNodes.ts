/**
 * Where the log's subtree hashes are stored (both adapters): node (level, index), over leaves
 * [index·2^level, (index+1)·2^level), is completed by the append of entry (index+1)·2^level − 1,
 * together with the nodes of the levels below it that end there. So each entry row carries the
 * hashes its append completed, level 0 (its leaf hash) first, 32 bytes each (log_entries.nodes),
 * and an append writes one row.
 */
import { frontierPlaces, nodeHash } from '../tlog/merkle.js';
import type { LogHeadRow, LogNodeRow } from './types.js';

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

/**
 * The head of a log of `size` entries, the last appended at `updatedMs`, from its stored nodes
 * (`hashAt`: the node's 32 bytes, undefined when it is not stored): the frontier is the perfect
 * subtrees of the right edge, one per set bit of size, largest first, and the root folds them from
 * the right. What SQLite keeps instead of a head row (every node in it was stored by an append of
 * these entries); kmas migrate-store builds PostgreSQL's head rows with it. Throws when a node is missing.
 */
export function headFromNodes(organizationId: string, size: number, updatedMs: number, hashAt: (level: number, index: number) => Uint8Array | undefined): LogHeadRow {
  const hashes = frontierPlaces(size).map(({ level, index }) => {
    const h = hashAt(level, index);
    if (h?.length !== 32) throw new Error(`the log of ${organizationId} has no stored node (${level}, ${index}): its head cannot be derived`);
    return h;
  });
  let root = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) root = nodeHash(hashes[i]!, root);
  const frontier = new Uint8Array(hashes.length * 32);
  hashes.forEach((h, i) => frontier.set(h, i * 32));
  return { organizationId, size, frontier, root, updatedMs };
}
