/**
 * The entries of the verifiable activity log: what one leaf of an organization's Merkle tree
 * holds, as canonical bytes. Pure code (no Node API): the server, the offline verifier and a
 * browser build and read entries with it.
 *
 * An entry is a JSON object serialized by the JSON Canonicalization Scheme (RFC 8785, "JCS"):
 * no whitespace, object members sorted by their names' UTF-16 code units, numbers in ECMAScript
 * form (what JSON.stringify writes for a finite number), strings with only `"`, `\` and the
 * control characters below U+0020 escaped (\b \t \n \f \r, else \u00xx in lowercase hex), then
 * UTF-8. One documented difference: RFC 8785 refuses strings with unpaired surrogates; here they
 * are written as JSON.stringify writes them (\udxxx), so a request body that carries one (JSON
 * allows it) is still logged, and the bytes are still one canonical form. Object members whose
 * value is undefined are left out and an object with a toJSON method is written as what it returns
 * (as JSON.stringify does), so a record and JSON.parse of its JSON text canonicalize to the same
 * bytes.
 *
 * Members of an entry (ENTRY_VERSION 1):
 *   v              1
 *   index          the leaf's position in the organization's tree (0, 1, 2, …)
 *   organizationId the organization whose log this is
 *   activityId     the activity
 *   type, status   the activity's type and its status after this change
 *   fingerprint    "sha256:<hex>" of the request body's bytes (the activity's fingerprint)
 *   timestampMs    the request's timestampMs (decimal string, as the activity carries it)
 *   intent         the activity's intent, whole
 *   resultDigest   "sha256:<hex>" of JCS(activity.result)
 *   failureDigest  "sha256:<hex>" of JCS(activity.failure), or null when it has none
 *   votes          [{id, selection, userId}] of the votes cast so far, in order
 *   recordDigest   "sha256:<hex>" of JCS(the whole activity object as served by get_activity)
 *   createdMs      when the activity was created
 *   updatedMs      when this change was made (the activity's updatedMs after it)
 */
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256Utf8, utf8 } from './hash.js';

export const ENTRY_VERSION = 1;

// ignoreBOM: a byte order mark stays in the text (and fails the parse) instead of being dropped unseen
const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Member names as JSON strings: the same few names come back in every record (bounded: past the limit, quoted each time). */
const quotedNames = new Map<string, string>();
const quoted = (name: string): string => {
  let q = quotedNames.get(name);
  if (q === undefined) {
    q = JSON.stringify(name);
    if (quotedNames.size < 4096) quotedNames.set(name, q);
  }
  return q;
};
/** UTF-16 code unit order (what Array.prototype.sort does for strings without a comparator, RFC 8785 §3.2.3). */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The RFC 8785 text of a JSON value (see the file comment for the one difference). `memo` holds
 * the texts of objects already serialized in this call's context (the record's result inside the
 * record itself): an object found there is not walked again.
 */
export function canonicalJson(value: unknown, memo?: Map<object, string>): string {
  switch (typeof value) {
    case 'string': return JSON.stringify(value);
    case 'boolean': return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('JSON has no NaN or Infinity');
      // ECMAScript Number::toString is RFC 8785's number form (and -0 is written 0).
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      // what JSON.stringify serializes for an object with toJSON (a Date: its ISO text)
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return canonicalJson((value as { toJSON: () => unknown }).toJSON(), memo);
      if (memo !== undefined) {
        const known = memo.get(value);
        if (known !== undefined) return known;
      }
      let text: string;
      if (Array.isArray(value)) {
        text = '[';
        for (let i = 0; i < value.length; i++) {
          const v: unknown = value[i];
          text += (i === 0 ? '' : ',') + canonicalJson(v === undefined ? null : v, memo);
        }
        text += ']';
      } else {
        const o = value as Record<string, unknown>;
        const names = Object.keys(o);
        // sorted by UTF-16 code units, as RFC 8785 §3.2.3 asks (often already so)
        for (let i = 1; i < names.length; i++) {
          if (names[i - 1]! > names[i]!) { names.sort(byCodeUnits); break; }
        }
        text = '{';
        let first = true;
        for (const k of names) {
          const v = o[k];
          if (v === undefined) continue;
          text += (first ? '' : ',') + quoted(k) + ':' + canonicalJson(v, memo);
          first = false;
        }
        text += '}';
      }
      if (memo !== undefined) memo.set(value, text);
      return text;
    }
    default: throw new TypeError(`a ${typeof value} is not a JSON value`);
  }
}

/** UTF-8 bytes of canonicalJson(value). */
export const canonicalBytes = (value: unknown): Uint8Array => utf8(canonicalJson(value));

const hex = bytesToHex;

/** "sha256:<hex>" of JCS(value). */
export const digestOf = (value: unknown, memo?: Map<object, string>): string => `sha256:${hex(sha256Utf8(canonicalJson(value, memo)))}`;

export interface LogVote { id: string; selection: string; userId: string }

export interface LogEntry {
  v: number;
  index: number;
  organizationId: string;
  activityId: string;
  type: string;
  status: string;
  fingerprint: string;
  timestampMs: string;
  intent: unknown;
  resultDigest: string;
  failureDigest: string | null;
  votes: LogVote[];
  recordDigest: string;
  createdMs: number;
  updatedMs: number;
}

/** The entry an activity record (the v1Activity object as served) makes at `index`. */
export function entryOf(index: number, record: Record<string, unknown>, createdMs: number, updatedMs: number): LogEntry {
  const votes = Array.isArray(record.votes) ? (record.votes as Record<string, unknown>[]) : [];
  // the result (and the failure) are serialized once: the record's text reuses theirs
  const memo = new Map<object, string>();
  return {
    v: ENTRY_VERSION,
    index,
    organizationId: String(record.organizationId),
    activityId: String(record.id),
    type: String(record.type),
    status: String(record.status),
    fingerprint: String(record.fingerprint),
    timestampMs: String(record.timestampMs),
    intent: record.intent ?? null,
    resultDigest: digestOf(record.result ?? null, memo),
    failureDigest: record.failure === undefined ? null : digestOf(record.failure, memo),
    votes: votes.map((v) => ({ id: String(v.id), selection: String(v.selection), userId: String(v.userId) })),
    recordDigest: digestOf(record, memo),
    createdMs,
    updatedMs,
  };
}

/** The canonical bytes of an entry (what the leaf hash is taken over). */
export const entryBytes = (e: LogEntry): Uint8Array => canonicalBytes(e);

/**
 * An activity record's canonical text (RFC 8785, as above) with the texts of the objects inside
 * it (its result, its intent), so that the entry built from it serializes nothing twice. The
 * server stores and serves this text as the activity's JSON: one serialization for the row, the
 * reply and the log.
 */
export interface CanonicalRecord { text: string; memo: Map<object, string> }

export function canonicalRecord(record: Record<string, unknown>): CanonicalRecord {
  const memo = new Map<object, string>();
  return { text: canonicalJson(record, memo), memo };
}

/**
 * What an entry takes from its activity record, as JSON texts ready to be put together (all but
 * the index, the times and the record's digest): plain strings, so it can be made where the
 * record is and the entry built elsewhere (another thread: storage/logSeal.ts) without parsing
 * the record again. `memo` is canonicalRecord(record).memo: the texts of the result, the failure
 * and the intent made with the record's.
 */
export interface EntryParts {
  /** the JSON strings of activityId, fingerprint, organizationId, status, timestampMs and type */
  activityId: string; fingerprint: string; organizationId: string; status: string; timestampMs: string; type: string;
  /** canonical texts of the result (null when none), the failure (undefined when none) and the intent */
  result: string; failure: string | undefined; intent: string;
  /** the votes member's text */
  votes: string;
}

export function entryParts(record: Record<string, unknown>, memo: Map<object, string> = new Map()): EntryParts {
  const s = (x: unknown): string => JSON.stringify(String(x));
  const votes = Array.isArray(record.votes) ? (record.votes as Record<string, unknown>[]) : [];
  let votesText = '[';
  for (let i = 0; i < votes.length; i++) {
    const v = votes[i]!;
    votesText += `${i === 0 ? '' : ','}{"id":${s(v.id)},"selection":${s(v.selection)},"userId":${s(v.userId)}}`;
  }
  votesText += ']';
  return {
    activityId: s(record.id), fingerprint: s(record.fingerprint), organizationId: s(record.organizationId), status: s(record.status),
    timestampMs: s(record.timestampMs), type: s(record.type),
    result: canonicalJson(record.result ?? null, memo),
    failure: record.failure === undefined ? undefined : canonicalJson(record.failure, memo),
    intent: canonicalJson(record.intent ?? null, memo),
    votes: votesText,
  };
}

/**
 * The entry's text (its UTF-8 is entryBytes(entryOf(index, record, createdMs, updatedMs))) from
 * the record's parts and its canonical text `recordText` (which recordDigest is taken over): the
 * members in their canonical order (the names of version 1 sorted as RFC 8785 sorts them).
 * test/tlog/entry.test.ts holds it to entryOf's bytes.
 */
export function entryTextOf(index: number, p: EntryParts, recordText: string, createdMs: number, updatedMs: number): string {
  const digest = (text: string): string => `"sha256:${hex(sha256Utf8(text))}"`;
  // activityId < createdMs < failureDigest < fingerprint < index < intent < organizationId < recordDigest
  // < resultDigest < status < timestampMs < type < updatedMs < v < votes (UTF-16 code unit order)
  return `{"activityId":${p.activityId},"createdMs":${canonicalJson(createdMs)},"failureDigest":${p.failure === undefined ? 'null' : digest(p.failure)}`
    + `,"fingerprint":${p.fingerprint},"index":${canonicalJson(index)},"intent":${p.intent}`
    + `,"organizationId":${p.organizationId},"recordDigest":${digest(recordText)},"resultDigest":${digest(p.result)},"status":${p.status}`
    + `,"timestampMs":${p.timestampMs},"type":${p.type},"updatedMs":${canonicalJson(updatedMs)},"v":${ENTRY_VERSION},"votes":${p.votes}}`;
}

/**
 * The text of entryBytes(entryOf(index, record, createdMs, updatedMs)), built without the
 * intermediate object: entryTextOf over entryParts, the texts of the record's result and intent
 * being the ones its canonical text already made (`canonical`, which must be
 * canonicalRecord(record) of the record as it is now). What an append runs (the leaf hash is taken
 * over the text: merkle.ts leafHashUtf8).
 */
export function activityEntryText(index: number, record: Record<string, unknown>, createdMs: number, updatedMs: number, canonical: CanonicalRecord = canonicalRecord(record)): string {
  return entryTextOf(index, entryParts(record, canonical.memo), canonical.text, createdMs, updatedMs);
}

/** The bytes of activityEntryText. */
export const activityEntryBytes = (index: number, record: Record<string, unknown>, createdMs: number, updatedMs: number): Uint8Array =>
  utf8(activityEntryText(index, record, createdMs, updatedMs));

export class EntryError extends Error {}

/**
 * Reads an entry's bytes: UTF-8 JSON, in canonical form (re-serializing gives the same bytes),
 * with every member of version 1 of the right type. Throws EntryError saying what is wrong.
 */
export function parseEntry(bytes: Uint8Array): LogEntry {
  let text: string;
  let value: unknown;
  try { text = dec.decode(bytes); value = JSON.parse(text); } catch { throw new EntryError('the entry is not UTF-8 JSON'); }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new EntryError('the entry is not a JSON object');
  if (canonicalJson(value) !== text) throw new EntryError('the entry is not in canonical (RFC 8785) form');
  const e = value as Record<string, unknown>;
  const isInt = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  const strings = ['organizationId', 'activityId', 'type', 'status', 'fingerprint', 'timestampMs', 'resultDigest', 'recordDigest'];
  if (e.v !== ENTRY_VERSION) throw new EntryError(`unknown entry version ${String(e.v)}`);
  for (const k of ['index', 'createdMs', 'updatedMs']) if (!isInt(e[k])) throw new EntryError(`the entry's ${k} is not a non-negative integer`);
  for (const k of strings) if (typeof e[k] !== 'string') throw new EntryError(`the entry's ${k} is not a string`);
  if (e.failureDigest !== null && typeof e.failureDigest !== 'string') throw new EntryError('the entry\'s failureDigest is not a string or null');
  if (!Array.isArray(e.votes)) throw new EntryError('the entry\'s votes is not an array');
  if (!('intent' in e)) throw new EntryError('the entry has no intent');
  return e as unknown as LogEntry;
}
