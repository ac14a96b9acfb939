/** Stored rows → the record shapes of the public API (swagger v1User, v1ApiKey, datav1Tag, …). */
import type { ApiKeyRow, AuthenticatorRow, OauthProviderRow, OrganizationRow, Store, TagRow, UserRow } from '../storage/types.js';

export interface WireTimestamp { seconds: string; nanos: string }

export function timestamp(ms: number): WireTimestamp {
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: String((ms - seconds * 1000) * 1_000_000) };
}

export function apiKeyRecord(k: ApiKeyRow): Record<string, unknown> {
  const out: Record<string, unknown> = {
    credential: { publicKey: k.publicKey, type: k.credentialType },
    apiKeyId: k.id,
    apiKeyName: k.name,
    createdAt: timestamp(k.createdMs),
    updatedAt: timestamp(k.updatedMs),
  };
  if (k.expirationSeconds !== null) out.expirationSeconds = k.expirationSeconds;
  return out;
}

/** v1Authenticator; `model` is the AAGUID's (kmas keeps no authenticator metadata). */
export function authenticatorRecord(a: AuthenticatorRow): Record<string, unknown> {
  return {
    transports: a.transports, attestationType: a.attestationType, aaguid: a.aaguid, credentialId: a.credentialId,
    model: a.aaguid, credential: { publicKey: a.publicKey, type: 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR' },
    authenticatorId: a.id, authenticatorName: a.name, createdAt: timestamp(a.createdMs), updatedAt: timestamp(a.updatedMs),
  };
}

/** v1OauthProvider */
export function oauthProviderRecord(p: OauthProviderRow): Record<string, unknown> {
  return {
    providerId: p.id, providerName: p.name, issuer: p.issuer, audience: p.audience, subject: p.subject,
    createdAt: timestamp(p.createdMs), updatedAt: timestamp(p.updatedMs),
  };
}

export function userRecord(store: Store, u: UserRow): Record<string, unknown> {
  const out: Record<string, unknown> = { userId: u.id, userName: u.name };
  if (u.email !== null) out.userEmail = u.email;
  if (u.phoneNumber !== null) out.userPhoneNumber = u.phoneNumber;
  out.authenticators = store.authenticators.listByUser(u.organizationId, u.id).map(authenticatorRecord);
  out.apiKeys = store.apiKeys.listByUser(u.organizationId, u.id).map(apiKeyRecord);
  out.userTags = store.tags.tagsOf(u.id);
  out.oauthProviders = store.oauthProviders.listByUser(u.organizationId, u.id).map(oauthProviderRecord);
  out.createdAt = timestamp(u.createdMs);
  out.updatedAt = timestamp(u.updatedMs);
  out.mfaPolicies = [];
  return out;
}

export function tagRecord(t: TagRow): Record<string, unknown> {
  return { tagId: t.id, tagName: t.name, tagType: t.type, createdAt: timestamp(t.createdMs), updatedAt: timestamp(t.updatedMs) };
}

export function quorumRecord(store: Store, org: OrganizationRow): { threshold: number; userIds: string[] } {
  return { threshold: org.rootQuorumThreshold, userIds: store.users.rootUserIds(org.id) };
}

export function featuresRecord(store: Store, orgId: string): { name: string; value: string }[] {
  return store.features.list(orgId).map((f) => ({ name: f.name, value: f.value }));
}
