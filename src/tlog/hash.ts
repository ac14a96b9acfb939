/**
 * The SHA-256 the log's pure modules use. @noble/hashes by default (pure JavaScript, so the
 * verifier runs unchanged in a browser); a host with a native SHA-256 of the same output installs
 * it with useSha256 (the server installs node:crypto's: an append hashes the record, the entry and
 * the tree's right edge, and the native one is several times faster on kilobyte inputs).
 *
 * Most of what the log hashes is text (canonical JSON): sha256Utf8 hashes a string's UTF-8 and
 * utf8 encodes one. By default they go through TextEncoder; a host may install versions that
 * encode natively (node:crypto hashes a string without a JavaScript copy of its bytes).
 */
import { sha256 as pureSha256 } from '@noble/hashes/sha2.js';

export type Sha256 = (data: Uint8Array) => Uint8Array;
/** SHA-256 of the UTF-8 bytes of a string. */
export type Sha256Utf8 = (text: string) => Uint8Array;

const enc = new TextEncoder();

let impl: Sha256 = pureSha256;
let utf8Impl = (text: string): Uint8Array => enc.encode(text);
let textImpl: Sha256Utf8 = (text) => impl(utf8Impl(text));

export const sha256: Sha256 = (data) => impl(data);
export const sha256Utf8: Sha256Utf8 = (text) => textImpl(text);
/** The UTF-8 bytes of a string. */
export const utf8 = (text: string): Uint8Array => utf8Impl(text);

/** Byte-wise equality (digests and hashes are public: no constant time needed). */
export const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Installs another SHA-256 implementation (and, optionally, a SHA-256 of text and a UTF-8
 * encoder); each must give the same bytes as the defaults (checked here on known values,
 * non-ASCII text included).
 */
export function useSha256(f: Sha256, text?: { sha256Utf8?: Sha256Utf8; utf8?: (text: string) => Uint8Array }): void {
  const probe = 'abc \u00e9\u20ac\u{1f511} "\\\u0000';
  const bytes = enc.encode(probe);
  const want = pureSha256(bytes);
  if (!equalBytes(f(bytes), want)) throw new Error('useSha256: the implementation does not compute SHA-256');
  if (text?.sha256Utf8 && !equalBytes(text.sha256Utf8(probe), want)) throw new Error('useSha256: sha256Utf8 does not compute SHA-256 of UTF-8');
  if (text?.utf8 && !equalBytes(text.utf8(probe), bytes)) throw new Error('useSha256: utf8 does not encode UTF-8');
  impl = f;
  if (text?.utf8) utf8Impl = text.utf8;
  textImpl = text?.sha256Utf8 ?? ((t) => impl(utf8Impl(t)));
}
