/**
 * What the authentication flows need beyond the store: the OIDC verifier, whether e-mail can be
 * sent, and the short-lived credentials they issue (wire-compat §4.2, §4.6, §5):
 * - a new P-256 API key whose private key leaves only inside a credential bundle for the
 *   caller's targetPublicKey (email_auth, otp_auth, oauth, recovery, read-write sessions);
 * - a session JWT for a key the client holds (oauth_login, stamp_login), signed by the server's
 *   session signer.
 * Attached to the store at start-up, as the Vault and the webhook dispatcher are.
 */
import { ApiError, Grpc, alreadyExists, failedPrecondition } from '../errors.js';
import { cryptoCall } from '../domain/keys.js';
import { isExpired } from '../domain/credentials.js';
import type { Vault } from '../crypto/index.js';
import type { ApiKeyRow, Tx, UserRow } from '../storage/types.js';
import { OidcVerifier } from './oidc.js';

export interface AuthServices {
  oidc: OidcVerifier;
  /** An SMTP server (SMTP_URL) or a mail directory (MAIL_DIR) is configured: the e-mail flows may run. */
  mail: boolean;
}

/** Refuses an e-mail flow on a server without SMTP_URL (nothing is stored). */
export function requireMail(auth: AuthServices): void {
  if (!auth.mail) {
    throw failedPrecondition('this server sends no e-mail: set SMTP_URL (or MAIL_DIR for local development) to use e-mail authentication, one-time codes and recovery');
  }
}

/** Credential types of the keys the flows create (wire-compat §3: v1CredentialType). */
export const CREDENTIAL = {
  emailAuth: 'CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256',
  otpAuth: 'CREDENTIAL_TYPE_OTP_AUTH_KEY_P256',
  oauth: 'CREDENTIAL_TYPE_OAUTH_KEY_P256',
  readWriteSession: 'CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256',
  recoverUser: 'CREDENTIAL_TYPE_RECOVER_USER_KEY_P256',
  login: 'CREDENTIAL_TYPE_LOGIN',
} as const;

/** How long a key the flows issue lasts when the request does not say (decimal seconds). */
export const DEFAULT_ISSUED_KEY_SECONDS = '900';
/** The longest expirationSeconds the flows accept. */
export const MAX_ISSUED_KEY_SECONDS = 365 * 86400;

export interface IssueOptions {
  credentialType: string;
  /** apiKeyName, or a default such as "Email Auth - <ms>" */
  name: string;
  /** the request's expirationSeconds; unset: DEFAULT_ISSUED_KEY_SECONDS */
  expirationSeconds?: string | undefined;
  /**
   * The public key of the API key that asks for the new one (stamp_login, create_read_write_session):
   * a key limited by an IP allowlist of its own makes keys limited by the same list, or the list
   * would be stepped around by minting a key from inside the allowed addresses.
   */
  allowlistOf?: string | undefined;
  /** Removes the user's earlier keys of the same credential type first. */
  invalidateExisting: boolean;
}

/** What issuing a credential needs of an activity's context. */
interface Issuing { tx: Tx; services: { vault: Vault }; nowMs: number; newId(): string }

async function removeEarlier(ctx: Issuing, user: UserRow, credentialType: string): Promise<void> {
  for (const k of await ctx.tx.apiKeys.listByUser(user.organizationId, user.id)) {
    if (k.credentialType === credentialType) await ctx.tx.apiKeys.delete(user.organizationId, k.id);
  }
}

/**
 * Registers `publicKey` for `user`. A key the client logs in with again replaces its earlier
 * registration of the same kind (a new expiry), as does one whose registration has expired; one
 * registered to another user of the organization is refused.
 *
 * A key the user already holds otherwise, still good (an API key without expiry, a key of another
 * credential type), is returned as it is: the login is for it, and does not turn it into a
 * session key that expires. A user logging in with their own API key expects a session, not to
 * lose that key when the session ends (the only root user's only key would lock the organization
 * out for good).
 */
async function registerKey(ctx: Issuing, user: UserRow, publicKey: string, o: IssueOptions): Promise<ApiKeyRow> {
  // Logins with one new key racing (on several nodes): each reads the registrations of the key
  // once the one before has committed its own, and replaces it, instead of inserting a second
  // registration that the organization's unique index on the public key refuses.
  await ctx.tx.lock('public-key', `${user.organizationId}/${publicKey}`);
  if (o.invalidateExisting) await removeEarlier(ctx, user, o.credentialType);
  // A key's own IP allowlist stays with it when its registration is replaced (deleting the last
  // registration of a public key drops its list).
  const ownList = await ctx.tx.ipAllowlists.get(user.organizationId, publicKey.toLowerCase());
  for (const k of await ctx.tx.apiKeys.byPublicKey(publicKey)) {
    if (k.organizationId !== user.organizationId) continue;
    if (k.userId !== user.id) throw alreadyExists('this public key is registered to another user of the organization');
    if (!isExpired(k, ctx.nowMs) && (k.expiresAtMs === null || k.credentialType !== o.credentialType)) return k;
    await ctx.tx.apiKeys.delete(k.organizationId, k.id);
  }
  const seconds = o.expirationSeconds ?? DEFAULT_ISSUED_KEY_SECONDS;
  const row: ApiKeyRow = {
    id: ctx.newId(), organizationId: user.organizationId, userId: user.id, name: o.name,
    publicKey, curve: 'API_KEY_CURVE_P256', credentialType: o.credentialType,
    expirationSeconds: seconds, expiresAtMs: ctx.nowMs + Number(seconds) * 1000,
    createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
  };
  await ctx.tx.apiKeys.insert(row);
  const list = ownList ?? (o.allowlistOf === undefined ? undefined : await ctx.tx.ipAllowlists.get(user.organizationId, o.allowlistOf.toLowerCase()));
  if (list) await ctx.tx.ipAllowlists.set({ ...list, publicKey: publicKey.toLowerCase(), createdMs: ownList?.createdMs ?? ctx.nowMs, updatedMs: ctx.nowMs });
  return row;
}

/** The API key a request was stamped with, whose own IP allowlist the keys it asks for take (IssueOptions.allowlistOf). */
export function stampingApiKey(credential: { publicKey: string } & ({ credentialId: string } | object)): string | undefined {
  return 'credentialId' in credential ? undefined : credential.publicKey;
}

/** A new P-256 API key for `user`; its private key only inside the returned credential bundle. */
export async function issueBundledKey(ctx: Issuing, user: UserRow, targetPublicKey: string, o: IssueOptions): Promise<{ key: ApiKeyRow; credentialBundle: string }> {
  const k = cryptoCall(() => ctx.services.vault.newSessionKey(targetPublicKey));
  return { key: await registerKey(ctx, user, k.publicKey, o), credentialBundle: k.credentialBundle };
}

/**
 * Registers the client's own P-256 key (compressed hex) for `user` and returns a session JWT for
 * it: header {"alg":"ES256","typ":"JWT"}, claims exp (s), public_key, session_type, user_id,
 * organization_id; signature r‖s over SHA-256(SHA-256(header.payload)) by the session signer.
 */
export async function issueSession(ctx: Issuing, user: UserRow, publicKey: string, o: IssueOptions): Promise<{ key: ApiKeyRow; session: string }> {
  const key = await registerKey(ctx, user, publicKey, o);
  // the session asked for; no longer than a key kept as it was (registerKey) lasts
  const askedMs = ctx.nowMs + Number(o.expirationSeconds ?? DEFAULT_ISSUED_KEY_SECONDS) * 1000;
  const claims = {
    exp: Math.floor(Math.min(askedMs, key.expiresAtMs ?? askedMs) / 1000),
    public_key: publicKey,
    session_type: 'SESSION_TYPE_READ_WRITE',
    user_id: user.id,
    organization_id: user.organizationId,
  };
  return { key, session: sessionJwt(ctx.services.vault, claims) };
}

/** A session JWT over `claims`, signed by the session signer (verifySessionJwtSignature accepts it). */
export function sessionJwt(vault: Vault, claims: Record<string, string | number>): string {
  const signingInput = `${b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
  const signature = cryptoCall(() => vault.signSessionJwt(signingInput));
  return `${signingInput}.${Buffer.from(signature).toString('base64url')}`;
}

/**
 * Clients decode the payload with atob, which refuses '-' and '_' (wire-compat §4.6). An ASCII
 * JSON text only produces them for '>', '?' or '~' (6-bit groups 62, 63 need such a byte), and the
 * claims hold none: ids, hex and enum names. Checked anyway.
 */
function b64url(json: string): string {
  const s = Buffer.from(json, 'utf8').toString('base64url');
  if (/[-_]/.test(s)) throw new ApiError(Grpc.INTERNAL, 'session claims cannot be encoded for the clients');
  return s;
}
