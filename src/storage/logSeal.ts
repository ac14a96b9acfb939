/**
 * Sealing log entries that were appended "later" (SQLite, sqlite.ts appendLater): an activity's
 * first entry is fixed in its own transaction by the index it takes and by its row (the record's
 * canonical text and times), and is built, hashed and stored with its subtree nodes after that
 * commit, in order, by a thread (logworker.ts) or on the request thread when it is needed at once.
 * Pure code over the tlog modules: the same bytes whichever thread runs it, and the same bytes
 * the synchronous append (domain/activityLog.ts appendActivity) makes for that record.
 */
import { activityEntryText, entryTextOf, type EntryParts } from '../tlog/entry.js';
import { appendToFrontier, leafHashUtf8 } from '../tlog/merkle.js';
import { utf8 } from '../tlog/hash.js';
import { foldNodes } from './logNodes.js';
import type { LaterEntry } from './types.js';


/** A sealed entry: its row of log_entries (the entry's bytes and the nodes its append completed). */
export interface SealedEntry {
  index: number;
  activityId: string;
  entry: Uint8Array;
  nodes: Uint8Array;
  createdMs: number;
}

/**
 * The rows of `items` (consecutive indexes from `size`) appended to a tree of `size` leaves whose
 * frontier is `frontier`, and the frontier after them. Throws when the indexes do not follow on.
 */
export function sealEntries(size: number, frontier: Uint8Array, items: readonly LaterEntry[]): { rows: SealedEntry[]; frontier: Uint8Array } {
  const rows: SealedEntry[] = [];
  let f = frontier;
  for (const item of items) {
    const at = size + rows.length;
    if (item.index !== at) throw new Error(`log entry ${item.index} cannot be sealed after ${at} entries`);
    // the stored text is the record's canonical text: its digest is taken over it as it is
    const text = item.parts
      ? entryTextOf(at, item.parts, item.text, item.createdMs, item.updatedMs)
      : activityEntryText(at, JSON.parse(item.text) as Record<string, unknown>, item.createdMs, item.updatedMs, { text: item.text, memo: new Map() });
    const { made, frontier: next } = appendToFrontier(at, f, leafHashUtf8(text));
    f = next;
    rows.push({ index: at, activityId: item.activityId, entry: utf8(text), nodes: foldNodes(at, made), createdMs: item.updatedMs });
  }
  return { rows, frontier: f };
}

// Later entries travel to the sealing thread as one string (a message of one flat string costs the
// sender a copy; one of many small objects and strings costs it a walk of each): fields joined by
// U+0000, entries by U+0001. Neither can occur in them: the texts are canonical JSON, whose strings
// escape every control character, and the ids are the server's UUIDs.
const FIELD = '\u0000';
const ITEM = '\u0001';

export function encodeLater(items: readonly LaterEntry[]): string {
  return items.map((i) => {
    const head = `${i.index}${FIELD}${i.activityId}${FIELD}${i.createdMs}${FIELD}${i.updatedMs}${FIELD}${i.text}`;
    const p = i.parts;
    return p === undefined ? head
      : [head, p.activityId, p.fingerprint, p.organizationId, p.status, p.timestampMs, p.type, p.result, p.failure ?? '', p.intent, p.votes].join(FIELD);
  }).join(ITEM);
}

export function decodeLater(encoded: string): LaterEntry[] {
  return encoded.split(ITEM).map((one): LaterEntry => {
    const f = one.split(FIELD);
    const item: LaterEntry = { index: Number(f[0]), activityId: f[1]!, createdMs: Number(f[2]), updatedMs: Number(f[3]), text: f[4]! };
    if (f.length > 5) {
      item.parts = {
        activityId: f[5]!, fingerprint: f[6]!, organizationId: f[7]!, status: f[8]!, timestampMs: f[9]!, type: f[10]!,
        result: f[11]!, failure: f[12] === '' ? undefined : f[12]!, intent: f[13]!, votes: f[14]!,
      };
    }
    return item;
  });
}

/**
 * Sealed rows as they travel back: every entry's bytes and nodes in one buffer (moved to the
 * receiver, not copied), `ends` the end of each entry's then its nodes' bytes, the activity ids
 * joined by U+0000. decodeSealed gives rows whose bytes are views of that one buffer.
 */
export interface PackedRows { first: number; bytes: Uint8Array; ends: Uint32Array; activityIds: string; createdMs: Float64Array }

export function packSealed(rows: readonly SealedEntry[]): PackedRows {
  let total = 0;
  for (const r of rows) total += r.entry.length + r.nodes.length;
  const bytes = new Uint8Array(total);
  const ends = new Uint32Array(rows.length * 2);
  const createdMs = new Float64Array(rows.length);
  let at = 0;
  rows.forEach((r, i) => {
    bytes.set(r.entry, at); at += r.entry.length; ends[2 * i] = at;
    bytes.set(r.nodes, at); at += r.nodes.length; ends[2 * i + 1] = at;
    createdMs[i] = r.createdMs;
  });
  return { first: rows[0]?.index ?? 0, bytes, ends, activityIds: rows.map((r) => r.activityId).join(FIELD), createdMs };
}

export function unpackSealed(p: PackedRows): SealedEntry[] {
  const ids = p.activityIds.split(FIELD);
  const rows: SealedEntry[] = [];
  let at = 0;
  for (let i = 0; i < p.createdMs.length; i++) {
    const entryEnd = p.ends[2 * i]!;
    const nodesEnd = p.ends[2 * i + 1]!;
    rows.push({ index: p.first + i, activityId: ids[i]!, entry: p.bytes.subarray(at, entryEnd), nodes: p.bytes.subarray(entryEnd, nodesEnd), createdMs: p.createdMs[i]! });
    at = nodesEnd;
  }
  return rows;
}
