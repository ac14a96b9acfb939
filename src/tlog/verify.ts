/**
 * Verifying an organization's activity log from the outside, without the database: what
 * `kmas log verify` runs, and what a browser can run (pure code over @noble / @scure, fetch only
 * through the LogSource a caller hands in; no Node API, no server module).
 *
 * - verifyEntries: a checkpoint (signed note) and the exported entries (kmas_list_log_entries
 *   pages): the signature, then every entry in order (its position, its bytes, its index), then
 *   the tree recomputed against the checkpoint's root. A mismatch is located: structurally when an
 *   entry is missing or malformed, else, given a LogSource, by bisection with consistency proofs
 *   (a prefix of m entries is genuine exactly when its recomputed root is consistent with the
 *   signed root: O(log n) proofs name the first entry that differs).
 * - compareActivities: the activities as the server serves them against their latest entries
 *   (recordDigest): an activity edited in the database, or removed, or never logged, is named.
 * - checkHistory: a checkpoint saved earlier against a newer one and the consistency proof between
 *   them: consistent, rewritten, or rolled back.
 */
import { base64 } from '@scure/base';
import { leafHash, rootOf, verifyConsistency, Frontier } from './merkle.js';
import { NoteError, openCheckpoint, parseVerifierKey, type Checkpoint, type Verifier } from './note.js';
import { digestOf, EntryError, parseEntry, type LogEntry } from './entry.js';
import { equalBytes } from './hash.js';

/** One entry as kmas_list_log_entries returns it. */
export interface ExportedEntry { index: string | number; activityId?: string; entry: string }

/** Where proofs come from when online (the server's kmas_* queries). */
export interface LogSource {
  /** The latest signed checkpoint (note text). */
  checkpoint(): Promise<string>;
  /** The consistency proof from oldSize to newSize. */
  consistency(oldSize: number, newSize: number): Promise<Uint8Array[]>;
  /** Entries [start, start+limit). */
  entries(start: number, limit: number): Promise<ExportedEntry[]>;
}

export interface Finding {
  /** what is wrong, for people */
  message: string;
  /** the first entry that does not match (its index), when it could be located */
  index?: number;
  /** the activity concerned, when known */
  activityId?: string;
}

export interface EntriesReport {
  ok: boolean;
  checkpoint?: Checkpoint;
  /** the entries checked (the checkpoint's size), parsed */
  entries: LogEntry[];
  problem?: Finding;
}

/** Reads a verifier: a note verifier key string, or {keyName, verifierKey} as /.well-known/kmas-log-key serves it. */
export function verifierFrom(text: string): Verifier {
  const t = text.trim();
  if (t.startsWith('{')) {
    const o = JSON.parse(t) as { verifierKey?: unknown };
    if (typeof o.verifierKey !== 'string') throw new Error('the key document has no verifierKey');
    return parseVerifierKey(o.verifierKey);
  }
  return parseVerifierKey(t);
}

/** Opens a checkpoint, or says why not (forged, altered, another key's, malformed). */
export function openOrExplain(note: string, verifier: Verifier): { checkpoint?: Checkpoint; problem?: Finding } {
  try {
    return { checkpoint: openCheckpoint(note, verifier) };
  } catch (e) {
    if (e instanceof NoteError) return { problem: { message: `the checkpoint does not verify with the log key ${verifier.name}: ${e.message}` } };
    throw e;
  }
}

const decode = (b64: string): Uint8Array | undefined => { try { return base64.decode(b64); } catch { return undefined; } };

/**
 * Checks exported entries against a signed checkpoint (see the file comment). `source`, when
 * given, lets a root mismatch be located by consistency proofs.
 */
export async function verifyEntries(exported: readonly ExportedEntry[], note: string, verifier: Verifier, source?: Pick<LogSource, 'consistency'>): Promise<EntriesReport> {
  const opened = openOrExplain(note, verifier);
  if (!opened.checkpoint) return { ok: false, entries: [], problem: opened.problem! };
  const cp = opened.checkpoint;
  const organizationId = cp.origin.slice(cp.origin.lastIndexOf('/') + 1);
  const entries: LogEntry[] = [];
  const leaves: Uint8Array[] = [];
  const fail = (problem: Finding): EntriesReport => ({ ok: false, checkpoint: cp, entries, problem });
  // an index given twice: one of the two is not the log's, whichever the checkpoint covers
  const seen = new Set<number>();
  for (const x of exported) {
    const n = Number(x.index);
    if (seen.has(n)) return fail({ index: n, activityId: x.activityId, message: `entry ${String(x.index)} is given twice: the export was altered` });
    seen.add(n);
  }
  for (let i = 0; i < cp.size; i++) {
    const x = exported[i];
    if (x === undefined) return fail({ index: i, message: `the checkpoint covers ${cp.size} entries but only ${exported.length} were given: entry ${i} is missing` });
    if (Number(x.index) !== i) {
      return fail({ index: i, activityId: x.activityId, message: `entry ${i} is missing: the entry at its place says it is entry ${String(x.index)} (a deleted row?)` });
    }
    const bytes = decode(x.entry);
    if (!bytes) return fail({ index: i, activityId: x.activityId, message: `entry ${i}'s bytes are not base64` });
    let e: LogEntry;
    try { e = parseEntry(bytes); } catch (err) {
      if (!(err instanceof EntryError)) throw err;
      return fail({ index: i, activityId: x.activityId, message: `entry ${i} is damaged: ${err.message}` });
    }
    if (e.index !== i) return fail({ index: i, activityId: e.activityId, message: `entry ${i}'s bytes name index ${e.index}` });
    if (e.organizationId !== organizationId) return fail({ index: i, activityId: e.activityId, message: `entry ${i} belongs to organization ${e.organizationId}, not ${organizationId} (the checkpoint's)` });
    entries.push(e);
    leaves.push(leafHash(bytes));
  }
  const root = rootOf(leaves);
  if (equalBytes(root, cp.root)) return { ok: true, checkpoint: cp, entries };
  const message = `the ${cp.size} entries do not make the checkpoint's root: the log was altered`;
  if (!source) return fail({ message: `${message} (give the server, --url, to locate the first altered entry)` });
  const { first, proven } = await locate(leaves, root, cp, source);
  if (!proven) {
    return fail({
      index: first, activityId: entries[first]?.activityId,
      message: `${message}: entries 0 to ${first - 1} are as signed, and the first that differs is entry ${first} (activity ${entries[first]?.activityId}) or one after it; the server's own tree agrees with the altered entries, so its proofs cannot say which`,
    });
  }
  return fail({ index: first, activityId: entries[first]?.activityId, message: `${message}: entry ${first} (activity ${entries[first]?.activityId}) is the first that differs from what was signed` });
}

/**
 * The first index whose entry differs from the signed tree: the smallest m such that the prefix
 * of m+1 entries is not consistent with the signed root. Prefix genuineness is monotone, so a
 * binary search over m with one consistency proof per step finds it. A proof that verifies
 * proves its prefix genuine; one that does not proves nothing by itself: a wrong proof can only
 * move the answer earlier, never hide the mismatch. So `proven` says whether the answer's own
 * prefix was shown altered: false when a failing proof instead matches the tree of the given
 * entries (the server's stored tree was rewritten with them), and the first altered entry is then
 * `first` or one after it.
 */
async function locate(leaves: readonly Uint8Array[], ownRoot: Uint8Array, cp: Checkpoint, source: Pick<LogSource, 'consistency'>): Promise<{ first: number; proven: boolean }> {
  const prefixRoots = (() => {
    // roots of every prefix, in one pass (O(n log n) hashing at worst, each append O(log n) amortized)
    const f = new Frontier();
    const out: Uint8Array[] = [];
    for (const l of leaves) { f.append(l); out.push(f.root()); }
    return out;
  })();
  let proven = true;
  const genuine = async (m: number): Promise<boolean> => {
    if (m === 0) return true;
    if (m === cp.size) return equalBytes(prefixRoots[m - 1]!, cp.root);
    let proof: Uint8Array[];
    try { proof = await source.consistency(m, cp.size); } catch { proven = false; return false; }
    if (verifyConsistency(m, cp.size, prefixRoots[m - 1]!, cp.root, proof)) return true;
    // a proof of the given entries' tree, not of the signed one: it shows nothing about prefix m
    if (verifyConsistency(m, cp.size, prefixRoots[m - 1]!, ownRoot, proof)) proven = false;
    return false;
  };
  // largest m with a genuine prefix of m entries: entries [0, m) are as signed, entry m is not
  let lo = 0; let hi = cp.size; // genuine(lo) holds, genuine(hi) does not
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await genuine(mid)) lo = mid; else hi = mid;
  }
  return { first: lo, proven };
}


/**
 * The activities as served (get_activity / list_activities records) against the log's entries:
 * every activity's latest entry must carry its recordDigest; every activity the log names must be
 * among them. Returns the first disagreement, or undefined.
 */
export function compareActivities(entries: readonly LogEntry[], activities: readonly Record<string, unknown>[]): Finding | undefined {
  const latest = new Map<string, LogEntry>();
  for (const e of entries) latest.set(e.activityId, e);
  const served = new Map(activities.map((a) => [String(a.id), a]));
  for (const a of activities) {
    const e = latest.get(String(a.id));
    if (!e) return { activityId: String(a.id), message: `activity ${String(a.id)} is not in the log` };
    if (digestOf(a) !== e.recordDigest) {
      return { index: e.index, activityId: e.activityId, message: `activity ${e.activityId} differs from its log entry ${e.index} (status ${e.status} logged, ${String(a.status)} served): the stored activity was altered` };
    }
  }
  for (const e of latest.values()) {
    if (!served.has(e.activityId)) return { index: e.index, activityId: e.activityId, message: `activity ${e.activityId} (log entry ${e.index}) is missing from the activities: it was deleted` };
  }
  return undefined;
}

export type History = 'consistent' | 'rewritten' | 'rolled-back' | 'unverifiable';

/**
 * A checkpoint saved earlier against the server's latest and the consistency proof between them:
 * 'consistent' (the newer log extends the saved one), 'rolled-back' (the server's log is shorter
 * than one it signed before), 'rewritten' (its history no longer contains the saved one), or
 * 'unverifiable' (a checkpoint does not verify with the key, or they name different logs).
 */
export async function checkHistory(savedNote: string, verifier: Verifier, source: Pick<LogSource, 'checkpoint' | 'consistency'>): Promise<{ history: History; message: string; saved?: Checkpoint; latest?: Checkpoint; latestNote?: string }> {
  const saved = openOrExplain(savedNote, verifier);
  if (!saved.checkpoint) return { history: 'unverifiable', message: `the saved ${saved.problem!.message}` };
  const latestNote = await source.checkpoint();
  const latest = openOrExplain(latestNote, verifier);
  if (!latest.checkpoint) return { history: 'unverifiable', message: `the server's ${latest.problem!.message}`, saved: saved.checkpoint };
  const [a, b] = [saved.checkpoint, latest.checkpoint];
  const both = { saved: a, latest: b, latestNote };
  if (a.origin !== b.origin) return { history: 'unverifiable', message: `the checkpoints name different logs (${a.origin}, ${b.origin})`, ...both };
  if (b.size < a.size) {
    return { history: 'rolled-back', message: `ROLLED BACK: the server's log has ${b.size} entries, but it signed ${a.size} before (a restored backup or deleted entries)`, ...both };
  }
  let proof: Uint8Array[];
  try { proof = await source.consistency(a.size, b.size); } catch (e) {
    return { history: 'rewritten', message: `REWRITTEN: the server gives no consistency proof from ${a.size} to ${b.size} (${e instanceof Error ? e.message : String(e)})`, ...both };
  }
  if (verifyConsistency(a.size, b.size, a.root, b.root, proof)) {
    return { history: 'consistent', message: `consistent: the log of ${b.size} entries extends the saved one of ${a.size}`, ...both };
  }
  return { history: 'rewritten', message: `REWRITTEN: the log of ${b.size} entries does not contain the saved one of ${a.size} (its history was changed)`, ...both };
}
