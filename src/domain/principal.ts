/**
 * Who is acting, and the fixed authorization rules (policies and approvals extend them: activities/consensus.ts):
 * - a credential acts only inside its own organization;
 * - a parent organization's credential may read (queries only) its direct sub-organizations;
 * - root users (members of the root quorum) may do everything inside their organization;
 * - a non-root user may read, and change only its own user (not its tag membership) and its own API keys.
 */
import { permissionDenied } from '../errors.js';
import type { ApiKeyRow, AuthenticatorRow, OrganizationRow, UserRow } from '../storage/types.js';

export interface Principal {
  /** The organization the credential belongs to. */
  organization: OrganizationRow;
  user: UserRow;
  /** What stamped the request: an API key, or a passkey. */
  credential: ApiKeyRow | AuthenticatorRow;
  /** 'member': target organization is the credential's own; 'parent': the credential's org is the target's parent. */
  access: 'member' | 'parent';
  /** The request's client address (as the IP allowlists see it), when known. */
  clientAddress?: string | undefined;
}

export function isRoot(p: Principal): boolean {
  return p.access === 'member' && p.user.isRoot;
}

/** Root users only. */
export function requireRoot(p: Principal, what: string): void {
  if (!isRoot(p)) throw permissionDenied(`only a root user of the organization may ${what}`);
}

/** Root users, or the user itself. */
export function requireSelfOrRoot(p: Principal, userId: string, what: string): void {
  if (isRoot(p)) return;
  if (p.access === 'member' && p.user.id === userId) return;
  throw permissionDenied(`a non-root user may ${what} only for itself`);
}
