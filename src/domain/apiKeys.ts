/** API key parameters (validation) and registration rules. */
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { alreadyExists, failedPrecondition, notFound } from '../errors.js';
import type { ApiKeyCurve, ApiKeyRow, Tx } from '../storage/types.js';
import { API_KEY_CURVES } from './enums.js';
import { isExpired } from './credentials.js';
import { MAX_NAME, type Validator } from './validate.js';

export interface ApiKeyParams {
  apiKeyName: string;
  publicKey: string;
  curveType: ApiKeyCurve;
  expirationSeconds?: string;
}

export const CREDENTIAL_TYPE: Record<ApiKeyCurve, string> = {
  API_KEY_CURVE_P256: 'CREDENTIAL_TYPE_API_KEY_P256',
  API_KEY_CURVE_SECP256K1: 'CREDENTIAL_TYPE_API_KEY_SECP256K1',
  API_KEY_CURVE_ED25519: 'CREDENTIAL_TYPE_API_KEY_ED25519',
};

/** The public key in the exact form stamps carry it (compressed SEC1 / raw Ed25519, lowercase hex); undefined if invalid. */
export function normalizePublicKey(curve: ApiKeyCurve, hex: string): string | undefined {
  const h = hex.toLowerCase();
  try {
    if (curve === 'API_KEY_CURVE_ED25519') {
      if (!/^[0-9a-f]{64}$/.test(h)) return undefined;
      ed25519.Point.fromHex(h);
      return h;
    }
    if (!/^(0[23][0-9a-f]{64}|04[0-9a-f]{128})$/.test(h)) return undefined;
    const point = (curve === 'API_KEY_CURVE_P256' ? p256 : secp256k1).Point.fromHex(h);
    return point.toHex(true);
  } catch {
    return undefined;
  }
}

/** Reads an array of API key parameters; `defaultCurve` for the older shapes without curveType. */
export function readApiKeyParams(v: Validator, list: unknown[] | undefined, field: string, defaultCurve?: ApiKeyCurve): ApiKeyParams[] {
  const out: ApiKeyParams[] = [];
  if (!list) return out;
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const f = `${field}[${i}]`;
    const o = v.object(item, f);
    if (!o) return;
    const apiKeyName = v.string(o, 'apiKeyName', `${f}.apiKeyName`, { required: true, max: MAX_NAME });
    const curveType = defaultCurve && (o.curveType === undefined || o.curveType === null)
      ? defaultCurve
      : v.enumOf(o, 'curveType', `${f}.curveType`, API_KEY_CURVES);
    const rawKey = v.string(o, 'publicKey', `${f}.publicKey`, { required: true, max: 200 });
    const expirationSeconds = v.uintString(o, 'expirationSeconds', `${f}.expirationSeconds`, { min: 1, max: 100 * 365 * 86400 });
    if (rawKey === undefined || curveType === undefined || apiKeyName === undefined) return;
    const publicKey = normalizePublicKey(curveType, rawKey);
    if (!publicKey) {
      v.fail(`${f}.publicKey`, curveType === 'API_KEY_CURVE_ED25519'
        ? 'must be a 32-byte Ed25519 public key in hex'
        : `must be a valid ${curveType === 'API_KEY_CURVE_P256' ? 'P-256' : 'secp256k1'} public key in hex (compressed, 33 bytes)`);
      return;
    }
    if (seen.has(publicKey)) { v.fail(`${f}.publicKey`, 'is a duplicate'); return; }
    seen.add(publicKey);
    out.push({ apiKeyName, publicKey, curveType, ...(expirationSeconds !== undefined ? { expirationSeconds } : {}) });
  });
  return out;
}

/** Registers keys for a user; a public key may appear only once per organization. */
export async function insertApiKeys(tx: Tx, organizationId: string, userId: string, keys: ApiKeyParams[], nowMs: number, newId: () => string): Promise<string[]> {
  const ids: string[] = [];
  for (const k of keys) {
    // the lock logins take (auth/services.ts registerKey): a registration racing on another node commits first, and is found below
    await tx.lock('public-key', `${organizationId}/${k.publicKey}`);
    if ((await tx.apiKeys.byPublicKey(k.publicKey)).some((r) => r.organizationId === organizationId)) {
      throw alreadyExists(`public key ${k.publicKey} is already registered in this organization`);
    }
    const row: ApiKeyRow = {
      id: newId(), organizationId, userId, name: k.apiKeyName, publicKey: k.publicKey, curve: k.curveType,
      credentialType: CREDENTIAL_TYPE[k.curveType],
      expirationSeconds: k.expirationSeconds ?? null,
      expiresAtMs: k.expirationSeconds !== undefined ? nowMs + Number(k.expirationSeconds) * 1000 : null,
      createdMs: nowMs, updatedMs: nowMs,
    };
    await tx.apiKeys.insert(row);
    ids.push(row.id);
  }
  return ids;
}

/**
 * The lock (SubmitOperation.locks) of the operations that remove credentials or root users and
 * then call assertRootStillReachable: two such changes on two nodes, each harmless alone, would
 * otherwise each count the credential the other removes, and both commit.
 */
export const rootCredentialsLock = (_intent: unknown, organizationId: string) => [{ name: 'root-credentials' as const, key: organizationId }];

/**
 * Refuses a change that would leave no root user holding an API key, a passkey or an OAuth
 * identity (the organization would be locked out). An API key that has expired (at `nowMs`) no
 * longer lets anyone in: it does not count. Its callers hold rootCredentialsLock.
 */
export async function assertRootStillReachable(tx: Tx, organizationId: string, nowMs: number): Promise<void> {
  let reachable = 0;
  for (const id of await tx.users.rootUserIds(organizationId)) {
    if ((await tx.apiKeys.listByUser(organizationId, id)).some((k) => !isExpired(k, nowMs)) || (await tx.authenticators.listByUser(organizationId, id)).length > 0
      || (await tx.oauthProviders.listByUser(organizationId, id)).length > 0) reachable++;
  }
  // A quorum of n needs n root users who can still sign in to approve anything.
  const needed = Math.max(1, (await tx.organizations.get(organizationId))?.rootQuorumThreshold ?? 1);
  if (reachable < needed) {
    throw failedPrecondition(reachable === 0
      ? 'this change would leave no root user with an unexpired API key, a passkey or an OAuth identity; the organization would be locked out'
      : `this change would leave ${reachable} root user(s) with an unexpired API key, a passkey or an OAuth identity, fewer than the root quorum's threshold of ${needed}; the organization would be locked out`);
  }
}

export async function requireUser(tx: Tx, organizationId: string, userId: string) {
  const u = await tx.users.get(organizationId, userId);
  if (!u) throw notFound(`user ${userId} not found in this organization`, 'USER_NOT_FOUND');
  return u;
}
