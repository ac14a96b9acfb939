/** Stored rows → the record shapes of the public API (swagger v1User, v1ApiKey, datav1Tag, …). */
import type { ApiKeyRow, AuthenticatorRow, OauthProviderRow, OrganizationRow, Tx, TagRow, UserRow } from '../storage/types.js';

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

/** v1User: four reads for one user. */
export async function userRecord(tx: Tx, u: UserRow): Promise<Record<string, unknown>> {
  return userRecordOf(u, {
    authenticators: await tx.authenticators.listByUser(u.organizationId, u.id),
    apiKeys: await tx.apiKeys.listByUser(u.organizationId, u.id),
    tagIds: await tx.tags.tagsOf(u.id),
    providers: await tx.oauthProviders.listByUser(u.organizationId, u.id),
  });
}

/** v1User of each user of one organization (list_users, organizationData): four reads in all, whatever the number of users. */
export async function userRecords(tx: Tx, users: UserRow[]): Promise<Record<string, unknown>[]> {
  if (users.length <= 1) return Promise.all(users.map((u) => userRecord(tx, u)));
  const org = users[0]!.organizationId;
  const byUser = <T extends { userId: string }>(rows: T[]) => {
    const m = new Map<string, T[]>();
    for (const r of rows) { let l = m.get(r.userId); if (!l) m.set(r.userId, l = []); l.push(r); }
    return m;
  };
  const authenticators = byUser(await tx.authenticators.listByOrganization(org));
  const apiKeys = byUser(await tx.apiKeys.listByOrganization(org));
  const providers = byUser(await tx.oauthProviders.listByOrganization(org));
  const tags = new Map<string, string[]>();
  for (const { tagId, memberId } of await tx.tags.memberships(org, 'TAG_TYPE_USER')) {
    let l = tags.get(memberId); if (!l) tags.set(memberId, l = []); l.push(tagId);
  }
  return users.map((u) => userRecordOf(u, {
    authenticators: authenticators.get(u.id) ?? [], apiKeys: apiKeys.get(u.id) ?? [], tagIds: tags.get(u.id) ?? [], providers: providers.get(u.id) ?? [],
  }));
}

function userRecordOf(u: UserRow, c: { authenticators: AuthenticatorRow[]; apiKeys: ApiKeyRow[]; tagIds: string[]; providers: OauthProviderRow[] }): Record<string, unknown> {
  const out: Record<string, unknown> = { userId: u.id, userName: u.name };
  if (u.email !== null) out.userEmail = u.email;
  if (u.phoneNumber !== null) out.userPhoneNumber = u.phoneNumber;
  out.authenticators = c.authenticators.map(authenticatorRecord);
  out.apiKeys = c.apiKeys.map(apiKeyRecord);
  out.userTags = c.tagIds;
  out.oauthProviders = c.providers.map(oauthProviderRecord);
  out.createdAt = timestamp(u.createdMs);
  out.updatedAt = timestamp(u.updatedMs);
  out.mfaPolicies = [];
  return out;
}

export function tagRecord(t: TagRow): Record<string, unknown> {
  return { tagId: t.id, tagName: t.name, tagType: t.type, createdAt: timestamp(t.createdMs), updatedAt: timestamp(t.updatedMs) };
}

export async function quorumRecord(tx: Tx, org: OrganizationRow): Promise<{ threshold: number; userIds: string[] }> {
  return { threshold: org.rootQuorumThreshold, userIds: await tx.users.rootUserIds(org.id) };
}

export async function featuresRecord(tx: Tx, orgId: string): Promise<{ name: string; value: string }[]> {
  return (await tx.features.list(orgId)).map((f) => ({ name: f.name, value: f.value }));
}
