/** Resolves a verified stamp's public key to the acting user and the addressed organization. */
import { ApiError, Grpc, TurnkeyMessage, unauthenticated } from '../errors.js';
import type { ApiKeyRow, AuthenticatorRow, OrganizationRow, StampContext, Tx } from '../storage/types.js';
import type { Principal } from './principal.js';
import { checkClientAddress } from './ipAllowlist.js';

export function isExpired(k: ApiKeyRow | AuthenticatorRow, nowMs: number): boolean {
  return 'expiresAtMs' in k && k.expiresAtMs !== null && nowMs >= k.expiresAtMs;
}

/** Organization ids are UUIDs (any version, either case). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The organization a body's `organizationId` names: a UUID is case-insensitive on input (RFC 9562
 * §4) and organizations are stored under the lower-case form they were issued in, so a UUID is
 * taken in lower case; anything else as sent (refused below as malformed, or not found).
 */
export function organizationIdOf(sent: string): string {
  return UUID.test(sent) ? sent.toLowerCase() : sent;
}

export interface Resolution { principal: Principal; organization: OrganizationRow }

/**
 * Order: a key registered in the named organization; for whoami, a key in one of its
 * sub-organizations (the reply then names the sub-organization); for reads that allow it,
 * a key of the named organization's parent. The credential's IP allowlist (ipAllowlist.ts) is
 * checked against the client's address.
 */
export async function resolvePrincipal(
  tx: Tx,
  keys: (ApiKeyRow | AuthenticatorRow)[],
  organizationId: string,
  opts: { parentMayRead: boolean; resolvesFromParent: boolean; clientAddress: string | undefined },
  nowMs: number,
  known?: StampContext,
): Promise<Resolution> {
  // `known`: the stamp's rows for this organization, read already in one statement (no re-read)
  const read = known && known.organizationId === organizationId ? known : undefined;
  const build = async (k: ApiKeyRow | AuthenticatorRow, access: 'member' | 'parent', organization: OrganizationRow): Promise<Resolution> => {
    if (isExpired(k, nowMs)) {
      throw unauthenticated(`${TurnkeyMessage.API_KEY_EXPIRED}: ${k.publicKey}`, 'API_KEY_EXPIRED', `API key ${k.id} expired`);
    }
    const fromRead = read !== undefined && access === 'member' && k.organizationId === read.organizationId && k.publicKey === read.publicKey && !('credentialId' in k);
    const own = access === 'member' ? organization : await tx.organizations.get(k.organizationId);
    const user = fromRead ? (read.user?.id === k.userId ? read.user : undefined) : await tx.users.get(k.organizationId, k.userId);
    if (!own || !user) throw new ApiError(Grpc.UNAUTHENTICATED, 'credential not found', { turnkeyErrorCode: 'CREDENTIAL_NOT_FOUND' });
    await checkClientAddress(tx, k, opts.clientAddress, fromRead ? read.allowlists : undefined);
    return { principal: { organization: own, user, credential: k, access, clientAddress: opts.clientAddress }, organization };
  };

  const target = read ? read.organization : await tx.organizations.get(organizationId);
  if (target) {
    const own = keys.find((k) => k.organizationId === organizationId);
    if (own) return await build(own, 'member', target);
  }
  if (opts.resolvesFromParent) {
    for (const k of keys) {
      const org = await tx.organizations.get(k.organizationId);
      if (org && org.parentId === organizationId) return await build(k, 'member', org);
    }
  }
  if (!target && !UUID.test(organizationId)) {
    throw new ApiError(Grpc.INVALID_ARGUMENT, TurnkeyMessage.ORGANIZATION_ID_MALFORMED, {
      turnkeyErrorCode: 'INVALID_ORGANIZATION_ID', fieldViolations: [{ field: 'organizationId', description: 'must be a UUID' }],
    });
  }
  if (!target) {
    throw new ApiError(Grpc.NOT_FOUND, TurnkeyMessage.ORGANIZATION_NOT_FOUND, { turnkeyErrorCode: 'ORGANIZATION_NOT_FOUND', reason: `organization ${organizationId.slice(0, 100)} not found` });
  }
  if (opts.parentMayRead && target.parentId !== null) {
    const parentKey = keys.find((k) => k.organizationId === target.parentId);
    if (parentKey) return await build(parentKey, 'parent', target);
  }
  if (target.parentId !== null && keys.some((k) => k.organizationId === target.parentId)) {
    // a parent organization's key writing into a sub-organization (Turnkey's example of this refusal)
    throw new ApiError(Grpc.PERMISSION_DENIED, TurnkeyMessage.NOT_AUTHORIZED, {
      turnkeyErrorCode: 'REQUEST_NOT_AUTHORIZED', reason: 'a parent organization may only read its sub-organizations',
    });
  }
  // Turnkey's answer: the key is not found in the organization the request names (nor its parent).
  throw unauthenticated(TurnkeyMessage.PUBLIC_KEY_NOT_FOUND, 'PUBLIC_KEY_NOT_FOUND', `the credential does not belong to organization ${organizationId.slice(0, 100)}`);
}
