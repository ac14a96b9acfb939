/** Resolves a verified stamp's public key to the acting user and the addressed organization. */
import { ApiError, Grpc, notFound, permissionDenied, unauthenticated } from '../errors.js';
import type { ApiKeyCurve, ApiKeyRow, AuthenticatorRow, OrganizationRow, Store } from '../storage/types.js';
import type { Principal } from './principal.js';
import { checkClientAddress } from './ipAllowlist.js';

/** Registered keys usable with a stamp (same public key, curve of the scheme). */
export function candidateKeys(store: Store, publicKey: string, curve: ApiKeyCurve): ApiKeyRow[] {
  return store.apiKeys.byPublicKey(publicKey).filter((k) => k.curve === curve);
}

export function isExpired(k: ApiKeyRow | AuthenticatorRow, nowMs: number): boolean {
  return 'expiresAtMs' in k && k.expiresAtMs !== null && nowMs >= k.expiresAtMs;
}

export interface Resolution { principal: Principal; organization: OrganizationRow }

/**
 * Order: a key registered in the named organization; for whoami, a key in one of its
 * sub-organizations (the reply then names the sub-organization); for reads that allow it,
 * a key of the named organization's parent. The credential's IP allowlist (ipAllowlist.ts) is
 * checked against the client's address.
 */
export function resolvePrincipal(
  store: Store,
  keys: (ApiKeyRow | AuthenticatorRow)[],
  organizationId: string,
  opts: { parentMayRead: boolean; resolvesFromParent: boolean; clientAddress: string | undefined },
  nowMs: number,
): Resolution {
  const build = (k: ApiKeyRow | AuthenticatorRow, access: 'member' | 'parent', organization: OrganizationRow): Resolution => {
    if (isExpired(k, nowMs)) throw unauthenticated('the API key that signed this request has expired', 'API_KEY_EXPIRED');
    const own = access === 'member' ? organization : store.organizations.get(k.organizationId);
    const user = store.users.get(k.organizationId, k.userId);
    if (!own || !user) throw new ApiError(Grpc.UNAUTHENTICATED, 'credential not found', { turnkeyErrorCode: 'CREDENTIAL_NOT_FOUND' });
    checkClientAddress(store, k, opts.clientAddress);
    return { principal: { organization: own, user, credential: k, access, clientAddress: opts.clientAddress }, organization };
  };

  const target = store.organizations.get(organizationId);
  if (target) {
    const own = keys.find((k) => k.organizationId === organizationId);
    if (own) return build(own, 'member', target);
  }
  if (opts.resolvesFromParent) {
    for (const k of keys) {
      const org = store.organizations.get(k.organizationId);
      if (org && org.parentId === organizationId) return build(k, 'member', org);
    }
  }
  if (!target) {
    throw notFound(`organization ${organizationId} not found`, 'ORGANIZATION_NOT_FOUND');
  }
  if (opts.parentMayRead && target.parentId !== null) {
    const parentKey = keys.find((k) => k.organizationId === target.parentId);
    if (parentKey) return build(parentKey, 'parent', target);
  }
  throw permissionDenied(`the credential does not belong to organization ${organizationId}`, 'ORGANIZATION_MISMATCH');
}
