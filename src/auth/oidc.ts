/**
 * OIDC ID tokens for the OAuth flows (wire-compat §5): `oauth`, `oauth_login`, and the OAuth
 * providers registered with a user. A token is accepted only from an issuer listed in
 * OIDC_ISSUERS; its keys come from the issuer's discovery document (`jwks_uri`), fetched and
 * cached by jose, and its signature, `exp`/`nbf` and issuer are checked by jose's jwtVerify.
 * The login flows also bind the token to the caller's key: the `nonce` (or `tknonce`) claim must
 * be the lowercase hex SHA-256 of the public key hex string exactly as sent.
 */
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import { ApiError, Grpc, invalidArgument } from '../errors.js';
import { bytesToHex, utf8 } from '../encoding/bytes.js';
import { sha256 } from '../crypto/curves.js';

/** What kmas keeps of a token: the identity a provider row stores. */
export interface OidcIdentity { issuer: string; audience: string; subject: string }

const DISCOVERY_TTL_MS = 3_600_000;
const FETCH_TIMEOUT_MS = 5_000;
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** The `nonce` a login token must carry for `publicKey` (hex string as the request sends it). */
export function oidcNonceFor(publicKey: string): string {
  return bytesToHex(sha256(utf8(publicKey)));
}

const bad = (field: string, description: string) => invalidArgument(`invalid OIDC token: ${description}`, [{ field, description }]);

export class OidcVerifier {
  readonly #issuers: Map<string, string>;
  readonly #keys = new Map<string, { jwks: ReturnType<typeof createRemoteJWKSet>; until: number }>();

  /** `issuers`: trusted issuer URLs (config OIDC_ISSUERS). */
  constructor(issuers: readonly string[]) {
    // Tokens name the issuer exactly; Google's sometimes leave out the scheme.
    this.#issuers = new Map(issuers.map((i) => [i, i]));
    for (const i of issuers) if (i.startsWith('https://')) this.#issuers.set(i.slice('https://'.length), i);
  }

  /**
   * Verifies a compact ID token and returns its identity. `nonceFor`: the public key the token
   * must be bound to (login flows). Errors name `field`.
   */
  async verify(token: string, field: string, nonceFor?: string): Promise<OidcIdentity> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      throw bad(field, 'not a compact JWT');
    }
    const iss = unverified.iss;
    if (typeof iss !== 'string' || iss === '') throw bad(field, 'no iss claim');
    const base = this.#issuers.get(iss);
    if (base === undefined) throw bad(field, `issuer ${JSON.stringify(iss)} is not trusted by this server (OIDC_ISSUERS)`);
    const jwks = await this.#jwksFor(base);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer: iss, algorithms: ALGORITHMS, clockTolerance: 30 }));
    } catch (e) {
      throw this.#explain(e, field, base);
    }
    const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
    if (typeof aud !== 'string' || aud === '') throw bad(field, 'no aud claim');
    if (typeof payload.sub !== 'string' || payload.sub === '') throw bad(field, 'no sub claim');
    if (nonceFor !== undefined) {
      const want = oidcNonceFor(nonceFor);
      if (payload.nonce !== want && payload.tknonce !== want) {
        throw bad(field, 'the nonce (or tknonce) claim must be the hex SHA-256 of the public key sent with it');
      }
    }
    return { issuer: iss, audience: aud, subject: payload.sub };
  }

  async #jwksFor(issuer: string): Promise<ReturnType<typeof createRemoteJWKSet>> {
    const cached = this.#keys.get(issuer);
    if (cached && cached.until > Date.now()) return cached.jwks;
    let jwksUri: URL;
    try {
      const res = await fetch(`${issuer}/.well-known/openid-configuration`, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const doc = await res.json() as { jwks_uri?: unknown };
      if (typeof doc.jwks_uri !== 'string') throw new Error('no jwks_uri');
      jwksUri = new URL(doc.jwks_uri);
      // Keys over https only, or from the issuer's own (loopback http) origin.
      if (jwksUri.protocol !== 'https:' && jwksUri.origin !== new URL(issuer).origin) throw new Error('jwks_uri is not https');
    } catch (e) {
      throw new ApiError(Grpc.UNAVAILABLE, `could not read the OIDC discovery document of ${issuer}: ${(e as Error).message}`, { turnkeyErrorCode: 'OIDC_ISSUER_UNAVAILABLE' });
    }
    const jwks = createRemoteJWKSet(jwksUri, { timeoutDuration: FETCH_TIMEOUT_MS });
    this.#keys.set(issuer, { jwks, until: Date.now() + DISCOVERY_TTL_MS });
    return jwks;
  }

  #explain(e: unknown, field: string, issuer: string): ApiError {
    const code = (e as { code?: string }).code;
    switch (code) {
      case 'ERR_JWT_EXPIRED': return bad(field, 'the token has expired');
      case 'ERR_JWT_CLAIM_VALIDATION_FAILED': return bad(field, (e as Error).message);
      case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED': return bad(field, 'the signature does not verify');
      case 'ERR_JWKS_NO_MATCHING_KEY': return bad(field, 'no key of the issuer matches the token');
      case 'ERR_JOSE_ALG_NOT_ALLOWED': return bad(field, 'the signing algorithm is not accepted');
      case 'ERR_JWKS_TIMEOUT':
      case 'ERR_JOSE_GENERIC':
        return new ApiError(Grpc.UNAVAILABLE, `could not fetch the keys of ${issuer}`, { turnkeyErrorCode: 'OIDC_ISSUER_UNAVAILABLE' });
      default: return bad(field, 'the token could not be verified');
    }
  }
}
