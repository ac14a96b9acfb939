// Passkey registration with attestation objects that are CBOR but not of the expected shape: each
// is refused as a 400 naming the field, not answered with a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import { startTestServer, type TestServer } from '../server/harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const b64u = (b: Uint8Array | string) => Buffer.from(b).toString('base64url');
const enc = new TextEncoder();

/** Registration parameters of a software ES256 authenticator; `attStmt` and `cose` replace the usual ones. */
function params(opts: { attStmt?: unknown; cose?: Uint8Array; fmt?: string }) {
  const sk = p256.utils.randomSecretKey();
  const credId = new Uint8Array(randomBytes(16));
  const challenge = b64u(randomBytes(32));
  const clientData = enc.encode(JSON.stringify({ type: 'webauthn.create', challenge, origin: 'https://wallet.example.com' }));
  const pub = p256.getPublicKey(sk, false);
  const cose = opts.cose ?? isoCBOR.encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, pub.slice(1, 33)], [-3, pub.slice(33)]]));
  const head = new Uint8Array([...sha256(enc.encode('example.com')), 0x01 | 0x04 | 0x40, 0, 0, 0, 0]);
  const authData = new Uint8Array([...head, ...new Uint8Array(16), 0, credId.length, ...credId, ...cose]);
  const attestationObject = isoCBOR.encode(new Map<string, unknown>([['fmt', opts.fmt ?? 'none'], ['attStmt', opts.attStmt ?? new Map()], ['authData', authData]]) as never);
  return {
    authenticatorName: 'odd passkey', challenge,
    attestation: { credentialId: b64u(credId), clientDataJson: b64u(clientData), attestationObject: b64u(attestationObject), transports: [] },
  };
}

async function register(authenticator: unknown) {
  return ts.raw('/public/v1/submit/create_authenticators', JSON.stringify({
    type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', timestampMs: String(Date.now()), organizationId: ts.orgId,
    parameters: { userId: ts.rootUserId, authenticators: [authenticator] },
  }));
}

describe('create_authenticators with a malformed attestation object', () => {
  // Guards: an attStmt that is not a CBOR map is a 400, not a 500.
  it('attStmt that is a CBOR integer, not a map', async () => {
    const r = await register(params({ attStmt: 1 }));
    expect(r.status, r.text).toBe(400);
  });

  // Guards: an attested credential public key that is not a COSE map is a 400, not a 500.
  it('a credential public key that is a CBOR integer, not a COSE map', async () => {
    const r = await register(params({ cose: isoCBOR.encode(7 as never) }));
    expect(r.status, r.text).toBe(400);
  });
});
