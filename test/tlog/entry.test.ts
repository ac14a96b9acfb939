// Log entries (src/tlog/entry.ts): RFC 8785 canonical JSON, checked against the RFC's own rules
// (its §3.2.3 member-sorting example, ECMAScript number forms), and an entry's round trip.
import { describe, it, expect } from 'vitest';
import { activityEntryBytes, activityEntryText, canonicalJson, canonicalRecord, entryBytes, entryOf, EntryError, parseEntry } from '../../src/tlog/entry.js';

describe('RFC 8785 canonical JSON', () => {
  it('sorts members by UTF-16 code units (the RFC\'s §3.2.3 example order), recursively, without whitespace', () => {
    const o = { '\u20ac': 'Euro Sign', '\r': 'Carriage Return', '\ufb33': 'Hebrew Letter Dalet With Dagesh', '1': 'One', '\ud83d\ude00': 'Emoji: Grinning Face', '\u0080': 'Control', '\u00f6': 'Latin Small Letter O With Diaeresis' };
    const keys = Object.keys(JSON.parse(canonicalJson(o)) as object);
    // JSON.parse puts the integer-like key first in any case; the text's order is what counts
    const text = canonicalJson(o);
    const order = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'].map((k) => text.indexOf(JSON.stringify(k)));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(keys).toHaveLength(7);
    expect(canonicalJson({ b: [3, { d: 1, c: null }], a: true })).toBe('{"a":true,"b":[3,{"c":null,"d":1}]}');
  });

  it('writes numbers in ECMAScript form, escapes only what it must, leaves out undefined members', () => {
    expect(canonicalJson([1e21, 1e-7, 0.000001, -0, 333333333.3333333, 1e300, 4.5])).toBe('[1e+21,1e-7,0.000001,0,333333333.3333333,1e+300,4.5]');
    expect(canonicalJson('\u0000\b\t\n\f\r\u001f"\\/\u007f\u00e9')).toBe('"\\u0000\\b\\t\\n\\f\\r\\u001f\\"\\\\/\u007f\u00e9"');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(() => canonicalJson(Number.NaN)).toThrow();
    expect(() => canonicalJson(() => 1)).toThrow();
  });
});

describe('log entries', () => {
  const record = {
    id: 'a1', organizationId: 'o1', status: 'ACTIVITY_STATUS_FAILED', type: 'ACTIVITY_TYPE_X', timestampMs: '17', intent: { xIntent: { z: 1, a: 'é' } },
    result: {}, failure: { code: 3, message: 'no' }, votes: [{ id: 'v1', selection: 'VOTE_SELECTION_APPROVED', userId: 'u1', user: {} }], fingerprint: 'sha256:00',
  };

  it('an entry is canonical bytes that parse back to it; a changed byte or a non-canonical form is refused', () => {
    const e = entryOf(4, record, 10, 11);
    const bytes = entryBytes(e);
    expect(parseEntry(bytes)).toEqual(e);
    expect(e.failureDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(e.votes).toEqual([{ id: 'v1', selection: 'VOTE_SELECTION_APPROVED', userId: 'u1' }]);
    // the record digest does not depend on member order, only on content
    expect(entryOf(4, { ...Object.fromEntries(Object.entries(record).reverse()) }, 10, 11)).toEqual(e);
    expect(entryOf(4, { ...record, intent: { xIntent: { z: 2, a: 'é' } } }, 10, 11).recordDigest).not.toBe(e.recordDigest);
    const spaced = new TextEncoder().encode(JSON.stringify(e, null, 1));
    expect(() => parseEntry(spaced)).toThrow(EntryError);
    const bad = bytes.slice(); bad[bad.length - 2] ^= 1;
    expect(() => parseEntry(bad)).toThrow(EntryError);
  });

  it('activityEntryBytes (what an append runs) writes the bytes of entryBytes(entryOf(...))', () => {
    const shared = { k: ['\u2028', 1.5e-9, { '\ud800': true }] };
    const records: Record<string, unknown>[] = [
      record,
      { ...record, failure: undefined, result: { r: { sig: 'ab', n: [1, 2, 3] }, activity: { type: 'T' } }, votes: [] },
      { id: 'x', organizationId: 'o', type: 't', status: 's', fingerprint: 'f', timestampMs: '0' },
      { ...record, intent: null, votes: undefined, extra: { b: 1, a: [null, false, '\u0000"\\'] } },
      { ...record, intent: shared, result: { again: shared }, votes: [{ id: 1, selection: 'A', userId: 'é' }, { id: 'v2', selection: 'B', userId: 'u\n' }] },
    ];
    for (const r of records) {
      for (const [index, created, updated] of [[0, 0, 0], [4, 10, 11], [2 ** 40, 1_700_000_000_000, 1_700_000_000_001]] as const) {
        const want = entryBytes(entryOf(index, r, created, updated));
        expect(Buffer.from(activityEntryBytes(index, r, created, updated)).toString('utf8')).toBe(Buffer.from(want).toString('utf8'));
        expect(parseEntry(activityEntryBytes(index, r, created, updated))).toEqual(entryOf(index, r, created, updated));
        // the engine hands over the record's canonical text it stores: the same entry
        expect(activityEntryText(index, r, created, updated, canonicalRecord(r))).toBe(Buffer.from(want).toString('utf8'));
      }
    }
  });

  it('a record\'s canonical text (what the server stores and serves) is JSON of the same value, and canonical again once parsed', () => {
    const when = new Date(1_700_000_000_123);
    const records: Record<string, unknown>[] = [
      record,
      { z: undefined, b: [undefined, -0, 1e21, 'x'], a: { when, n: null }, c: { toJSON: () => ({ y: 1, x: 2 }) } },
    ];
    for (const r of records) {
      const { text } = canonicalRecord(r);
      expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(r)));
      expect(canonicalJson(JSON.parse(text))).toBe(text);
    }
    expect(canonicalJson({ when })).toBe(`{"when":"${when.toISOString()}"}`);
  });
});
