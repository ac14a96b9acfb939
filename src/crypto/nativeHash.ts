/** Node's native SHA-256 (OpenSSL) as a plain Uint8Array: for hashing that is no secret's and runs per request (the log). */
import { hash } from 'node:crypto';

/** SHA-256 of bytes, or of a string's UTF-8 (encoded by node:crypto itself: no JavaScript copy of the bytes). */
export function nativeSha256(data: Uint8Array | string): Uint8Array {
  const b = hash('sha256', data, 'buffer');
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

/** A string's UTF-8 bytes (Buffer.from: faster than TextEncoder on the long, concatenated strings the log builds). */
export const nativeUtf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');

/** What the log's hashing installs (tlog/hash.ts useSha256). */
export const nativeLogHashing = [nativeSha256, { sha256Utf8: nativeSha256, utf8: nativeUtf8 }] as const;
