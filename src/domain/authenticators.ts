/**
 * Passkeys (WebAuthn authenticators): registration from an attestation (create_authenticators,
 * and the authenticators of create_users / create_sub_organization), and X-Stamp-Webauthn
 * verification (wire-compat §1.2).
 *
 * Registration checks, for each attestation: clientDataJSON is of type webauthn.create, carries
 * the request's `challenge` and, when the organization sets FEATURE_NAME_WEBAUTHN_ORIGINS, one of
 * its origins; the authenticator data shows user presence and the attested credential, whose id
 * is the one given and whose key is a P-256 ES256 key; its RP ID hash is the SHA-256 of the
 * origin's host or of a parent domain of it (that RP ID is kept); the attestation statement is
 * `none`, `packed` (self-attestation or a certificate's signature) or `fido-u2f`, and verifies.
 * Certificate chains are not followed to a trust root (no FIDO metadata here).
 *
 * A stamp verifies when clientDataJSON is of type webauthn.get with the challenge
 * base64url(ascii hex SHA-256(body)), the authenticator data carries the registered RP ID hash and
 * user presence, the signature counter (when the authenticator keeps one) went up, and the DER
 * signature over authenticatorData ‖ SHA-256(clientDataJSON) verifies under the registered key.
 */
import { X509Certificate, verify as nodeVerify } from 'node:crypto';
import { decodeAttestationObject, decodeCredentialPublicKey, parseAuthenticatorData } from '@simplewebauthn/server/helpers';
import { invalidArgument, TurnkeyMessage, unauthenticated } from '../errors.js';
import { bytesToHex, concatBytes, equalBytes, utf8 } from '../encoding/bytes.js';
import { convertPublicKey, derToCompact, isValidPublicKey, sha256, verifyDigest } from '../crypto/curves.js';
import type { AuthenticatorRow, Tx } from '../storage/types.js';
import { MAX_NAME, type Validator } from './validate.js';

export const WEBAUTHN_ORIGINS_FEATURE = 'FEATURE_NAME_WEBAUTHN_ORIGINS';
export const TRANSPORTS = ['AUTHENTICATOR_TRANSPORT_BLE', 'AUTHENTICATOR_TRANSPORT_INTERNAL', 'AUTHENTICATOR_TRANSPORT_NFC', 'AUTHENTICATOR_TRANSPORT_USB', 'AUTHENTICATOR_TRANSPORT_HYBRID'] as const;
const B64URL = /^[A-Za-z0-9_-]*={0,2}$/;

export interface AuthenticatorParams {
  authenticatorName: string;
  challenge: string;
  attestation: { credentialId: string; clientDataJson: string; attestationObject: string; transports: string[] };
}

/**
 * Reads authenticator parameters (v1AuthenticatorParamsV2) at `field`. An attestation object that
 * cannot be read (not a CBOR attestation object of the WebAuthn shape) is malformed input, refused
 * here; what it attests is checked at registration.
 */
export function readAuthenticatorParams(v: Validator, list: unknown[] | undefined, field: string): AuthenticatorParams[] {
  const out: AuthenticatorParams[] = [];
  (list ?? []).forEach((item, i) => {
    const f = `${field}[${i}]`;
    const o = v.object(item, f);
    if (!o) return;
    const authenticatorName = v.string(o, 'authenticatorName', `${f}.authenticatorName`, { required: true, max: MAX_NAME });
    const challenge = v.string(o, 'challenge', `${f}.challenge`, { required: true, max: 1024 });
    const a = o.attestation === undefined ? (v.fail(`${f}.attestation`, 'is required'), undefined) : v.object(o.attestation, `${f}.attestation`);
    if (!a) return;
    const b64 = { required: true, max: 64 * 1024, pattern: B64URL, patternDesc: 'must be base64url' };
    const credentialId = v.string(a, 'credentialId', `${f}.attestation.credentialId`, { ...b64, max: 1400 });
    const clientDataJson = v.string(a, 'clientDataJson', `${f}.attestation.clientDataJson`, b64);
    const attestationObject = v.string(a, 'attestationObject', `${f}.attestation.attestationObject`, b64);
    const transports = v.stringArray(a, 'transports', `${f}.attestation.transports`, { max: TRANSPORTS.length }) ?? [];
    transports.forEach((t, j) => {
      if (!(TRANSPORTS as readonly string[]).includes(t)) v.fail(`${f}.attestation.transports[${j}]`, `must be one of ${TRANSPORTS.join(', ')}`);
    });
    if (attestationObject) {
      const att = readAttestationObject(attestationObject);
      if (typeof att === 'string') v.fail(`${f}.attestation.attestationObject`, att);
    }
    if (!authenticatorName || challenge === undefined || !credentialId || !clientDataJson || !attestationObject) return;
    out.push({ authenticatorName, challenge, attestation: { credentialId, clientDataJson, attestationObject, transports } });
  });
  return out;
}

/** The origins the organization allows for passkeys (FEATURE_NAME_WEBAUTHN_ORIGINS, comma- or space-separated); empty: any. */
export async function allowedOrigins(tx: Tx, organizationId: string): Promise<string[]> {
  const v = await tx.features.get(organizationId, WEBAUTHN_ORIGINS_FEATURE);
  return v ? v.split(/[\s,]+/).filter((x) => x !== '') : [];
}

const b64 = (s: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(s, 'base64url'));

function clientData(json: Uint8Array, field: string): { type?: unknown; challenge?: unknown; origin?: unknown } {
  try {
    const d = JSON.parse(Buffer.from(json).toString('utf8')) as unknown;
    if (d && typeof d === 'object') return d as { type?: unknown; challenge?: unknown; origin?: unknown };
  } catch { /* below */ }
  throw invalidArgument(`${field}: clientDataJson is not JSON`, [{ field, description: 'clientDataJson must be base64url of a JSON object' }]);
}

/** The RP ID among the origin's host and its parent domains whose SHA-256 is rpIdHash. */
function rpIdFor(origin: string, rpIdHash: Uint8Array): string | undefined {
  let host: string;
  try { host = new URL(origin).hostname; } catch { return undefined; }
  const labels = host.split('.');
  for (let i = 0; i < labels.length; i++) {
    const candidate = labels.slice(i).join('.');
    if (equalBytes(sha256(utf8(candidate)), rpIdHash)) return candidate;
  }
  return undefined;
}

/** The attested credential public key as a COSE key (a CBOR map); undefined when it is none (another CBOR value, or not CBOR). */
function coseKey(cose: Uint8Array): Map<unknown, unknown> | undefined {
  let m: unknown;
  try { m = decodeCredentialPublicKey(new Uint8Array(cose)); } catch { return undefined; }
  return m instanceof Map ? m as Map<unknown, unknown> : undefined;
}

interface AttestationObject {
  fmt: unknown;
  attStmt: Map<string, unknown>;
  authData: Uint8Array;
  parsed: ReturnType<typeof parseAuthenticatorData>;
  /** the attested credential's public key, if the authenticator data carries one */
  cose: Map<unknown, unknown> | undefined;
}

/**
 * An attestation object (base64url) read: a CBOR map whose attStmt is a map and whose authData
 * parses, with a COSE key (a CBOR map) when it attests a credential; else why it is none.
 */
function readAttestationObject(b64url: string): AttestationObject | string {
  const notOne = 'attestationObject is not a CBOR attestation object';
  let fmt: unknown; let attStmt: Map<string, unknown>; let authData: Uint8Array;
  try {
    const att = decodeAttestationObject(b64(b64url)) as unknown;
    if (!(att instanceof Map)) return notOne;
    fmt = att.get('fmt');
    // the statement is a map (empty for "none"); any other CBOR value is not an attestation statement
    const statement: unknown = att.get('attStmt') ?? new Map();
    const data: unknown = att.get('authData');
    if (!(statement instanceof Map) || !(data instanceof Uint8Array)) return notOne;
    attStmt = statement as Map<string, unknown>;
    authData = data;
  } catch {
    return notOne;
  }
  let parsed: ReturnType<typeof parseAuthenticatorData>;
  try { parsed = parseAuthenticatorData(new Uint8Array(authData)); } catch { return 'authenticator data cannot be parsed'; }
  const cose = parsed.credentialPublicKey ? coseKey(parsed.credentialPublicKey) : undefined;
  if (parsed.credentialPublicKey && !cose) return `${notOne}: the credential public key is not a COSE key`;
  return { fmt, attStmt, authData, parsed, cose };
}

/** COSE EC2 P-256 ES256 key → uncompressed SEC1 point; undefined for any other key. */
function es256Key(m: Map<unknown, unknown>): Uint8Array | undefined {
  const x = m.get(-2);
  const y = m.get(-3);
  if (m.get(1) !== 2 || m.get(3) !== -7 || m.get(-1) !== 1 || !(x instanceof Uint8Array) || !(y instanceof Uint8Array) || x.length !== 32 || y.length !== 32) return undefined;
  const point = new Uint8Array(65);
  point[0] = 4;
  point.set(x, 1);
  point.set(y, 33);
  return isValidPublicKey('p256', point) ? point : undefined;
}

function verifyWithCert(x5c: unknown, data: Uint8Array, sig: Uint8Array): boolean {
  if (!Array.isArray(x5c) || !(x5c[0] instanceof Uint8Array)) return false;
  try {
    const cert = new X509Certificate(x5c[0]);
    return nodeVerify('sha256', data, cert.publicKey, sig);
  } catch {
    return false;
  }
}

export interface RegisteredCredential {
  credentialId: string; publicKey: string; rpId: string; aaguid: string; attestationType: string; transports: string[]; signCount: number;
}

/** Checks one attestation (see the module comment); throws InvalidArgument naming `field`. */
export function verifyAttestation(p: AuthenticatorParams, origins: string[], field: string): RegisteredCredential {
  const fail = (why: string, at = `${field}.attestation`) => invalidArgument(`${at}: ${why}`, [{ field: at, description: why }]);
  const clientDataBytes = b64(p.attestation.clientDataJson);
  const cd = clientData(clientDataBytes, `${field}.attestation.clientDataJson`);
  if (cd.type !== 'webauthn.create') throw fail('clientDataJson.type must be webauthn.create', `${field}.attestation.clientDataJson`);
  if (cd.challenge !== p.challenge) throw fail('clientDataJson.challenge is not the challenge given', `${field}.challenge`);
  if (typeof cd.origin !== 'string') throw fail('clientDataJson has no origin', `${field}.attestation.clientDataJson`);
  if (origins.length > 0 && !origins.includes(cd.origin)) throw fail(`origin ${cd.origin} is not among FEATURE_NAME_WEBAUTHN_ORIGINS`, `${field}.attestation.clientDataJson`);

  // read (readAuthenticatorParams refused one that cannot be) before what it attests is checked
  const att = readAttestationObject(p.attestation.attestationObject);
  if (typeof att === 'string') throw fail(att, `${field}.attestation.attestationObject`);
  const { fmt, attStmt, authData, parsed, cose } = att;
  if (!parsed.flags.up) throw fail('the authenticator data shows no user presence');
  if (!parsed.flags.at || !parsed.credentialID || !cose || !parsed.aaguid) throw fail('the authenticator data carries no attested credential');
  if (!equalBytes(parsed.credentialID, b64(p.attestation.credentialId))) throw fail('credentialId is not the attested credential\'s id', `${field}.attestation.credentialId`);
  const key = es256Key(cose);
  if (!key) throw fail('only ES256 (P-256) passkeys are supported');
  const rpId = rpIdFor(cd.origin, parsed.rpIdHash);
  if (rpId === undefined) throw fail(`the authenticator data is for an RP ID other than ${cd.origin}'s host or its parent domains`);

  const clientDataHash = sha256(clientDataBytes);
  const signed = concatBytes(authData, clientDataHash);
  const sig = attStmt.get('sig');
  if (fmt === 'none') {
    if (attStmt.size > 0) throw fail('a none attestation must carry an empty statement');
  } else if (fmt === 'packed') {
    if (!(sig instanceof Uint8Array)) throw fail('the packed attestation has no signature');
    const ok = attStmt.has('x5c') ? verifyWithCert(attStmt.get('x5c'), signed, sig)
      : attStmt.get('alg') === -7 && verifyDigest('p256', derToCompactOr(sig), sha256(signed), key, { lowS: false, format: 'compact' });
    if (!ok) throw fail('the packed attestation signature does not verify');
  } else if (fmt === 'fido-u2f') {
    if (!(sig instanceof Uint8Array)) throw fail('the fido-u2f attestation has no signature');
    const data = concatBytes(new Uint8Array([0]), parsed.rpIdHash, clientDataHash, parsed.credentialID, key);
    if (!verifyWithCert(attStmt.get('x5c'), data, sig)) throw fail('the fido-u2f attestation signature does not verify');
  } else {
    throw fail(`attestation format ${String(fmt)} is not supported; ask the browser for attestation "none"`);
  }
  const g = bytesToHex(parsed.aaguid);
  return {
    credentialId: Buffer.from(parsed.credentialID).toString('base64url'),
    publicKey: bytesToHex(convertPublicKey('p256', key, true)),
    rpId, aaguid: `${g.slice(0, 8)}-${g.slice(8, 12)}-${g.slice(12, 16)}-${g.slice(16, 20)}-${g.slice(20)}`,
    attestationType: String(fmt), transports: p.attestation.transports, signCount: parsed.counter,
  };
}

function derToCompactOr(sig: Uint8Array): Uint8Array {
  try { return derToCompact(sig); } catch { return new Uint8Array(64); }
}

/**
 * Registers passkeys for a user (inside an activity's transaction). A credential id may be
 * registered once per organization.
 */
export async function registerAuthenticators(tx: Tx, organizationId: string, userId: string, list: AuthenticatorParams[], field: string, nowMs: number, newId: () => string): Promise<string[]> {
  const origins = await allowedOrigins(tx, organizationId);
  const ids: string[] = [];
  for (const [i, p] of list.entries()) {
    const c = verifyAttestation(p, origins, `${field}[${i}]`);
    // one registration of the credential racing on another node commits first, and is found below (not the unique index: a 500)
    await tx.lock('credential', `${organizationId}/passkey/${c.credentialId}`);
    if ((await tx.authenticators.byCredentialId(c.credentialId)).some((a) => a.organizationId === organizationId)) {
      throw invalidArgument(`${field}[${i}]: this passkey is already registered in the organization`,
        [{ field: `${field}[${i}].attestation.credentialId`, description: 'is already registered in this organization' }]);
    }
    const row: AuthenticatorRow = { id: newId(), organizationId, userId, name: p.authenticatorName, ...c, createdMs: nowMs, updatedMs: nowMs };
    await tx.authenticators.insert(row);
    ids.push(row.id);
  }
  return ids;
}

// ---- X-Stamp-Webauthn ---------------------------------------------------------------------------

export interface WebauthnStamp { authenticatorData: string; clientDataJson: string; credentialId: string; signature: string }

/** The X-Stamp-Webauthn header (plain JSON, base64url members); 401 when it is not one. */
export function parseWebauthnStamp(header: string): WebauthnStamp {
  let o: Record<string, unknown>;
  try { o = JSON.parse(header) as Record<string, unknown>; } catch { o = {}; }
  const keys = ['authenticatorData', 'clientDataJson', 'credentialId', 'signature'] as const;
  if (!o || typeof o !== 'object' || keys.some((k) => typeof o[k] !== 'string' || !B64URL.test(o[k] as string) || (o[k] as string).length > 64 * 1024)) {
    throw unauthenticated(TurnkeyMessage.STAMP_MALFORMED, 'MALFORMED_STAMP', 'X-Stamp-Webauthn must be JSON {authenticatorData, clientDataJson, credentialId, signature}, each base64url');
  }
  // The credential id in the form it is stored (base64url of the raw id, no padding).
  const credentialId = Buffer.from(o.credentialId as string, 'base64url').toString('base64url');
  return { authenticatorData: o.authenticatorData as string, clientDataJson: o.clientDataJson as string, credentialId, signature: o.signature as string };
}

/**
 * Whether the stamp verifies over `body` for the registered passkey `a` (origins: its
 * organization's allowed origins). On success, returns the authenticator's new signature counter.
 */
export function verifyWebauthnStamp(s: WebauthnStamp, a: AuthenticatorRow, body: Uint8Array, origins: string[]): { ok: true; signCount: number } | { ok: false } {
  const no = { ok: false } as const;
  const clientDataBytes = b64(s.clientDataJson);
  let cd: { type?: unknown; challenge?: unknown; origin?: unknown };
  try { cd = clientData(clientDataBytes, 'X-Stamp-Webauthn'); } catch { return no; }
  const challenge = Buffer.from(bytesToHex(sha256(body)), 'ascii').toString('base64url');
  if (cd.type !== 'webauthn.get' || cd.challenge !== challenge) return no;
  if (origins.length > 0 && (typeof cd.origin !== 'string' || !origins.includes(cd.origin))) return no;
  const authData = b64(s.authenticatorData);
  let parsed: ReturnType<typeof parseAuthenticatorData>;
  try { parsed = parseAuthenticatorData(authData); } catch { return no; }
  if (!parsed.flags.up || !equalBytes(parsed.rpIdHash, sha256(utf8(a.rpId)))) return no;
  if ((parsed.counter > 0 || a.signCount > 0) && parsed.counter <= a.signCount) return no; // a cloned authenticator, or a replay
  let sig: Uint8Array;
  try { sig = derToCompact(b64(s.signature)); } catch { return no; }
  const signed = concatBytes(authData, sha256(clientDataBytes));
  const pub = new Uint8Array(Buffer.from(a.publicKey, 'hex'));
  return verifyDigest('p256', sig, sha256(signed), pub, { lowS: false, format: 'compact' }) ? { ok: true, signCount: parsed.counter } : no;
}
