/**
 * The X-Stamp header: base64url of a JSON object {publicKey, scheme, signature}. A header that is
 * not one is a 401 in Turnkey's words; what was wrong goes to the log line. Verification is
 * crypto/stamp.ts's.
 */
import { TurnkeyMessage, unauthenticated } from '../errors.js';
import { SCHEME_CURVE, type Stamp, type StampScheme } from '../crypto/stamp.js';

const MAX_STAMP_HEADER = 4096;
const HEX = /^[0-9a-fA-F]*$/;

/** Decodes an X-Stamp header value: base64url (padding optional) of a JSON object. */
export function parseStamp(header: string): Stamp {
  const bad = (why: string) => unauthenticated(TurnkeyMessage.STAMP_MALFORMED, 'SIGNATURE_INVALID', `malformed X-Stamp header: ${why}`);
  if (header.length > MAX_STAMP_HEADER) throw bad('too long');
  const trimmed = header.trim();
  if (!/^[A-Za-z0-9_\-+/]+={0,2}$/.test(trimmed)) throw bad('not base64url');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8'));
  } catch {
    throw bad('not base64url-encoded JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw bad('not a JSON object');
  const o = parsed as Record<string, unknown>;
  const { publicKey, scheme, signature } = o;
  if (typeof publicKey !== 'string' || publicKey === '' || !HEX.test(publicKey)) throw bad('publicKey must be hex');
  if (typeof signature !== 'string' || signature === '' || !HEX.test(signature) || signature.length % 2 !== 0) {
    throw bad('signature must be hex');
  }
  // own members only: `in` would also take Object.prototype's (constructor, toString, __proto__)
  if (typeof scheme !== 'string' || !Object.hasOwn(SCHEME_CURVE, scheme)) {
    throw bad(`unsupported stamp scheme ${typeof scheme === 'string' ? JSON.stringify(scheme.slice(0, 64)) : ''}`.trim());
  }
  return { publicKey: publicKey.toLowerCase(), scheme: scheme as StampScheme, signature: signature.toLowerCase() };
}
