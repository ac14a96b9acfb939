/**
 * The verifiable activity log on the server side: appending an activity's entry inside the
 * transaction that stores (or changes) the activity, reading proofs from the stored subtree
 * hashes, and signing checkpoints with the log key. The tree arithmetic and the entry bytes are
 * the pure modules src/tlog/merkle.ts and src/tlog/entry.ts (the offline verifier uses the same).
 *
 * Storage (repository `log`): the entries, each with the hashes of the perfect subtrees its append
 * completed (what a proof reads: O(log n) nodes for an inclusion proof; storage/logNodes.ts); a
 * head per organization with the size and the frontier (the right edge's subtree hashes), so an
 * append reads one row (none on SQLite when it wrote the head last) and writes the entry and the
 * head, never recomputing the tree. Appends of one organization are serialized by
 * log.takeHead (the head's row lock on PostgreSQL), and log_entries' primary key
 * (organization_id, idx) refuses a second entry at one index whatever happens.
 */
import { appendToFrontier, consistencyProof, EMPTY_ROOT, frontierRoot, inclusionProof, leafHashUtf8, subtreeRoot, type NodeReader } from '../tlog/merkle.js';
import { invalidArgument } from '../errors.js';
import { activityEntryText, canonicalRecord, entryParts, type CanonicalRecord } from '../tlog/entry.js';
import { utf8 } from '../tlog/hash.js';
import { checkpointText, signNoteWith, verifierKey } from '../tlog/note.js';
import type { Db, LogCheckpointRow, LogHeadRow, Tx } from '../storage/types.js';

export { canonicalRecord, type CanonicalRecord };

/**
 * Appends the entry of an activity record (as served, after this change) to its organization's
 * log, in the caller's transaction: any failure here throws and the activity's transaction rolls
 * back (nothing is acknowledged that is not in the log). Returns the entry's index. `canonical`
 * is canonicalRecord(record), when the caller made it already (the engine stores its text).
 * `first`: the entry of a new activity whose row stores canonical.text as its record, which the
 * engine may seal after the commit (Tx.log.appendLater, storage/logLater.ts); every other entry,
 * and every entry before it, is sealed here.
 */
export async function appendActivity(tx: Tx, record: Record<string, unknown>, createdMs: number, updatedMs: number, canonical?: CanonicalRecord, first = false): Promise<number> {
  const organizationId = String(record.organizationId);
  // An activity's first entry, where the engine can seal it after the commit (SQLite's thread):
  // only its index is taken here; its bytes are those of the row this transaction stores.
  if (first && canonical && tx.log.appendLater) {
    return await tx.log.appendLater({ organizationId, activityId: String(record.id), text: canonical.text, createdMs, updatedMs, parts: entryParts(record, canonical.memo) });
  }
  let head = await tx.log.takeHead(organizationId);
  if (head?.later?.length) head = await tx.log.seal(organizationId);
  const size = head?.size ?? 0;
  const text = activityEntryText(size, record, createdMs, updatedMs, canonical);
  const { made, frontier } = appendToFrontier(size, head && size > 0 ? head.frontier : EMPTY, leafHashUtf8(text));
  // The root is hashed when first read: PostgreSQL stores it in the head's row; SQLite keeps the
  // head in memory for the next append, which reads its size and frontier only.
  let root: Uint8Array | undefined;
  const next: LogHeadRow = {
    organizationId, size: size + 1, frontier, updatedMs,
    get root() { return root ??= frontierRoot(frontier); },
  };
  await tx.log.append({ organizationId, index: size, activityId: String(record.id), entry: utf8(text), createdMs: updatedMs }, made, next);
  return size;
}

const EMPTY = new Uint8Array(0);

/**
 * Runs a proof builder of merkle.ts over the stored nodes: the nodes a proof reads depend only on
 * its sizes and indexes, so a first dry run lists them, one read fetches them, a second run builds
 * the proof. Throws when a node the tree should have is missing (a damaged store).
 */
export async function withNodes<T>(tx: Tx, organizationId: string, build: (node: NodeReader) => T): Promise<T> {
  const wanted = new Map<string, { level: number; index: number }>();
  build((level, index) => { wanted.set(`${level}/${index}`, { level, index }); return EMPTY_ROOT; });
  const found = new Map<string, Uint8Array>();
  for (const n of await tx.log.nodes(organizationId, [...wanted.values()])) found.set(`${n.level}/${n.index}`, n.hash);
  return build((level, index) => {
    const h = found.get(`${level}/${index}`);
    if (!h) throw new Error(`the log of ${organizationId} has no stored node (${level}, ${index})`);
    return h;
  });
}

export const inclusionProofOf = (tx: Tx, organizationId: string, index: number, size: number): Promise<Uint8Array[]> =>
  withNodes(tx, organizationId, (node) => inclusionProof(index, size, node));

export const consistencyProofOf = (tx: Tx, organizationId: string, oldSize: number, newSize: number): Promise<Uint8Array[]> =>
  withNodes(tx, organizationId, (node) => consistencyProof(oldSize, newSize, node));

/** How long a checkpoint stays the latest while the tree grows (ms): at most one signature per organization per this. */
export const CHECKPOINT_INTERVAL_MS = 2000;

/**
 * Signs checkpoints: C2SP tlog-checkpoint notes whose origin names the server (its root
 * organization) and the organization, signed by the log key (kept sealed in the Vault).
 */
export class LogSigner {
  /** The key name in signature lines: kmas/<root organization id>. */
  readonly keyName: string;
  readonly publicKey: Uint8Array;

  constructor(rootOrganizationId: string, publicKeyHex: string, private readonly sign: (message: Uint8Array) => Uint8Array) {
    this.keyName = `kmas/${rootOrganizationId}`;
    this.publicKey = Uint8Array.from(Buffer.from(publicKeyHex, 'hex'));
  }

  /** The note verifier key (<name>+<hash>+<base64 key>) a client checks checkpoints with. */
  get verifierKey(): string { return verifierKey(this.keyName, this.publicKey); }

  /** The origin line of an organization's log: kmas/<root organization id>/<organization id>. */
  origin(organizationId: string): string { return `${this.keyName}/${organizationId}`; }

  note(organizationId: string, size: number, root: Uint8Array): string {
    return signNoteWith(checkpointText({ origin: this.origin(organizationId), size, root, extensions: [] }), this.keyName, this.publicKey, this.sign);
  }
}

const emptyHead = (organizationId: string): LogHeadRow => ({ organizationId, size: 0, frontier: new Uint8Array(0), root: EMPTY_ROOT, updatedMs: 0 });

/**
 * The latest checkpoint of an organization's log, signed now when the stored one is older than
 * CHECKPOINT_INTERVAL_MS and the tree has grown since (or there is none yet). Old checkpoints are
 * kept (log_checkpoints). The signature is made outside the transaction that stores it.
 */
export async function latestCheckpoint(db: Db, signer: LogSigner, organizationId: string, nowMs: number): Promise<LogCheckpointRow> {
  const { head, last } = await db.read(async (tx) => ({ head: await tx.log.head(organizationId) ?? emptyHead(organizationId), last: await tx.log.checkpoint(organizationId) }));
  if (last && (last.size === head.size || nowMs - last.createdMs < CHECKPOINT_INTERVAL_MS)) return last;
  const row: LogCheckpointRow = { organizationId, size: head.size, root: head.root, note: signer.note(organizationId, head.size, head.root), createdMs: nowMs };
  await db.write(async (tx) => { await tx.log.insertCheckpoint(row); });
  // another node may have kept one at this size first: that one is the checkpoint
  return await db.read(async (tx) => await tx.log.checkpoint(organizationId, head.size)) ?? row;
}

/** What the log's queries and the webhook dispatcher use: the signer, and checkpoints on demand. */
export class TransparencyLog {
  constructor(private readonly db: Db, readonly signer: LogSigner) {}

  /**
   * Seals what the organization's log holds unsealed (SQLite's later entries, Db.settleLog), so
   * the reads after it see every committed entry: the log's queries call it first. The webhook
   * dispatcher does not: the checkpoint it adds is the latest, which need not cover the entry yet.
   */
  async settle(organizationId: string): Promise<void> { await this.db.settleLog?.(organizationId); }

  /**
   * The latest checkpoint (latestCheckpoint), or the one at `size`: the stored one, else signed now
   * from the stored nodes (and kept). A size beyond the log is bad input (400).
   */
  async checkpoint(organizationId: string, size?: number): Promise<LogCheckpointRow> {
    const nowMs = Date.now();
    if (size === undefined) return await latestCheckpoint(this.db, this.signer, organizationId, nowMs);
    const found = await this.db.read(async (tx) => {
      const stored = await tx.log.checkpoint(organizationId, size);
      if (stored) return stored;
      const have = (await tx.log.head(organizationId))?.size ?? 0;
      if (size > have) throw invalidArgument(`treeSize ${size} is larger than the log, which has ${have} entries`, [{ field: 'treeSize', description: `must be at most ${have}` }]);
      return size === 0 ? EMPTY_ROOT : await withNodes(tx, organizationId, (node) => subtreeRoot(0, size, node));
    });
    if (!(found instanceof Uint8Array)) return found;
    const row: LogCheckpointRow = { organizationId, size, root: found, note: this.signer.note(organizationId, size, found), createdMs: nowMs };
    await this.db.write(async (tx) => { await tx.log.insertCheckpoint(row); });
    return await this.db.read(async (tx) => await tx.log.checkpoint(organizationId, size)) ?? row;
  }
}
