/**
 * verify_otp's verification tokens and the client signatures that spend them (wire-compat §4.6):
 * - a token is a standard ES256 JWT (header {"typ":"JWT","alg":"ES256"}, signature r‖s over
 *   SHA-256(header.payload)) by the bundle signer, with claims id, verification_type, contact,
 *   organization_id, public_key and exp (milliseconds, as a string); @turnkey/crypto
 *   verifyOtpVerificationToken checks it with `signerPublicKey` as its override;
 * - a client signature proves the holder of the token's public_key agreed to one use of it:
 *   ECDSA P-256 over SHA-256 of the UTF-8 `message`, which names the token and the use
 *   ({"login":{"publicKey"},"tokenId","type":"USAGE_TYPE_LOGIN"}, or a signup with
 *   "USAGE_TYPE_SIGNUP"); the signature is hex, r‖s (as @turnkey/core sends it) or DER.
 * Each token is usable once (Store.verificationTokens).
 */
import { invalidArgument } from '../errors.js';
import { hexToBytes, utf8 } from '../encoding/bytes.js';
import { sha256, verifyDigest } from '../crypto/curves.js';
import { cryptoCall } from '../domain/keys.js';
import type { Vault } from '../crypto/index.js';
import type { Tx } from '../storage/types.js';

export interface VerificationClaims {
  id: string;
  verification_type: string;
  contact: string;
  organization_id: string;
  public_key: string;
  /** milliseconds since the epoch, as a string */
  exp: string;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

export async function issueVerificationToken(tx: Tx, vault: Vault, claims: VerificationClaims, expiresMs: number): Promise<string> {
  const signingInput = `${b64(JSON.stringify({ typ: 'JWT', alg: 'ES256' }))}.${b64(JSON.stringify(claims))}`;
  const signature = cryptoCall(() => vault.signVerificationToken(signingInput));
  await tx.verificationTokens.insert(claims.id, claims.organization_id, expiresMs);
  return `${signingInput}.${Buffer.from(signature).toString('base64url')}`;
}

const badToken = (description: string) => invalidArgument(`invalid verification token: ${description}`, [{ field: 'verificationToken', description }]);

/** A JSON object (not null, not an array): what a token's header and claims and a client signature's message must be. */
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Checks a token's signature, claims and expiry (not whether it was used: see spend). */
export function readVerificationToken(vault: Vault, token: string, nowMs: number): VerificationClaims {
  const parts = token.split('.');
  if (parts.length !== 3) throw badToken('not a compact JWT');
  let header: unknown;
  let claims: unknown;
  try {
    header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    throw badToken('not a JWT');
  }
  if (!isObject(header) || !isObject(claims)) throw badToken('its header and claims must be JSON objects');
  if (header.alg !== 'ES256') throw badToken('alg must be ES256');
  const signer = hexToBytes(vault.signerPublicKey);
  const ok = verifyDigest('p256', new Uint8Array(Buffer.from(parts[2]!, 'base64url')), sha256(utf8(`${parts[0]}.${parts[1]}`)), signer, { lowS: false, format: 'compact' });
  if (!ok) throw badToken('the signature is not this server\'s');
  for (const k of ['id', 'verification_type', 'contact', 'organization_id', 'exp'] as const) {
    if (typeof claims[k] !== 'string' || claims[k] === '') throw badToken(`claim ${k} is missing`);
  }
  if (!(Number(claims.exp) > nowMs)) throw badToken('it has expired');
  return { ...claims, public_key: typeof claims.public_key === 'string' ? claims.public_key : '' } as unknown as VerificationClaims;
}

export interface ClientSignature { publicKey: string; scheme: string; message: string; signature: string }

/**
 * Checks that `cs` is the token key's signature over a message for this use: `usage` is
 * USAGE_TYPE_LOGIN or USAGE_TYPE_SIGNUP, `expect` checks the message's use-specific part. A token
 * bound to a public key (verify_otp V2, or V1 with publicKey) needs that signature: whoever else
 * holds the token cannot spend it (the swagger: clientSignature is "only required if a public key
 * was provided during the verification step"); a token bound to none may go without.
 */
export function checkClientSignature(cs: ClientSignature | undefined, claims: VerificationClaims, usage: string, expect: (message: Record<string, unknown>) => string | undefined): void {
  if (!cs) {
    if (claims.public_key === '') return;
    throw invalidArgument('clientSignature is required: the verification token is bound to a public key, whose signature must approve this use',
      [{ field: 'clientSignature', description: 'is required when the verification token is bound to a public key' }]);
  }
  const bad = (description: string) => invalidArgument(`invalid client signature: ${description}`, [{ field: 'clientSignature', description }]);
  if (cs.scheme !== 'CLIENT_SIGNATURE_SCHEME_API_P256') throw bad('scheme must be CLIENT_SIGNATURE_SCHEME_API_P256');
  if (claims.public_key === '' || cs.publicKey.toLowerCase() !== claims.public_key.toLowerCase()) throw bad('publicKey must be the verification token\'s public_key');
  let message: unknown;
  try {
    message = JSON.parse(cs.message);
  } catch {
    throw bad('message is not JSON');
  }
  if (!isObject(message)) throw bad('message must be a JSON object');
  if (message.type !== usage || message.tokenId !== claims.id) throw bad(`message must be for ${usage} of this verification token`);
  const mismatch = expect(message);
  if (mismatch) throw bad(mismatch);
  let sig: Uint8Array;
  let pub: Uint8Array;
  try {
    sig = hexToBytes(cs.signature);
    pub = hexToBytes(cs.publicKey);
  } catch {
    throw bad('signature and publicKey must be hex');
  }
  const digest = sha256(utf8(cs.message));
  const ok = sig.length === 64
    ? verifyDigest('p256', sig, digest, pub, { lowS: false, format: 'compact' })
    : verifyDigest('p256', sig, digest, pub, { lowS: false, format: 'der' });
  if (!ok) throw bad('the signature does not verify with publicKey');
}

/** Uses the token up; refuses one already used. */
export async function spendVerificationToken(tx: Tx, claims: VerificationClaims, nowMs: number): Promise<void> {
  if (!await tx.verificationTokens.use(claims.id, nowMs)) throw badToken('it was already used');
}
