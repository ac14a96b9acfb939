// The log's SHA-256 (src/tlog/hash.ts): the pure default and the native one the server installs
// (src/crypto/nativeHash.ts, node:crypto hashing a string's UTF-8 itself) give the same entries and
// digests, non-ASCII text included; an installed implementation that is not SHA-256 of UTF-8 is refused.
import { describe, it, expect } from 'vitest';
import { createHash, hash } from 'node:crypto';
import { activityEntryBytes, digestOf } from '../../src/tlog/entry.js';
import { leafHashUtf8 } from '../../src/tlog/merkle.js';
import { sha256, useSha256 } from '../../src/tlog/hash.js';
import { nativeLogHashing, nativeSha256 } from '../../src/crypto/nativeHash.js';

const record = {
  id: '5a0c1d2e-0000-4000-8000-000000000001', organizationId: 'org \u00e9\u20ac', type: 'ACTIVITY_TYPE_CREATE_USER_TAG', status: 'ACTIVITY_STATUS_COMPLETED',
  fingerprint: 'sha256:00', timestampMs: '1', intent: { createUserTagIntent: { userTagName: 'tag \u{1f511} "\\ \u0000 \ud800', userIds: [] } },
  result: { createUserTagResult: { userTagId: 'x' } }, votes: [], z: 1.5e-7, a: -0,
};

describe('the log\'s hashing', () => {
  it('the native hashing gives the pure default\'s bytes (checked against node:crypto over the UTF-8 separately)', () => {
    const pure = { entry: activityEntryBytes(7, record, 1, 2), digest: digestOf(record), leaf: leafHashUtf8('caf\u00e9') };
    useSha256(...nativeLogHashing);
    expect(Buffer.from(activityEntryBytes(7, record, 1, 2))).toEqual(Buffer.from(pure.entry));
    expect(digestOf(record)).toBe(pure.digest);
    expect(Buffer.from(leafHashUtf8('caf\u00e9'))).toEqual(Buffer.from(pure.leaf));
    expect(Buffer.from(pure.leaf)).toEqual(createHash('sha256').update(Buffer.from([0])).update(Buffer.from('caf\u00e9', 'utf8')).digest());
    expect(Buffer.from(sha256(new Uint8Array([1, 2])))).toEqual(hash('sha256', Buffer.from([1, 2]), 'buffer'));
  });

  it('refuses an implementation that is not SHA-256 of UTF-8', () => {
    expect(() => useSha256((d) => nativeSha256(d).reverse())).toThrow(/does not compute SHA-256/);
    expect(() => useSha256(nativeSha256, { sha256Utf8: (t) => nativeSha256(Buffer.from(t, 'latin1')) })).toThrow(/sha256Utf8/);
    expect(() => useSha256(nativeSha256, { utf8: (t) => Buffer.from(t, 'utf16le') })).toThrow(/utf8/);
  });
});
