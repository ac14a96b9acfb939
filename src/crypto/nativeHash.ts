/** Node's native SHA-256 (OpenSSL) as a plain Uint8Array: for hashing that is no secret's and runs per request (the log). */
import { hash } from 'node:crypto';

export function nativeSha256(data: Uint8Array): Uint8Array {
  const b = hash('sha256', data, 'buffer');
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}
