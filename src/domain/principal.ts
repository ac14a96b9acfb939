/**
 * Who is acting, and the fixed authorization rules (policies and approvals extend them: activities/consensus.ts):
 * - a credential acts only inside its own organization;
 * - a parent organization's credential may read (queries only) its direct sub-organizations;
 * - root users (members of the root quorum) may do everything inside their organization;
 * - a non-root user may read, and change only its own user (not its tag membership) and its own API keys;
 * - a non-root user starts and finishes imports only as itself (requireOwnImport), whatever the policies say.
 */
import { ApiError, Grpc, permissionDenied } from '../errors.js';
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

/**
 * A refusal that no policy and no approval lifts: authorizeSubmit gives it back as it is, where
 * any other PermissionDenied from an operation's authorize lets the policies or the root quorum decide.
 */
export class FixedRefusal extends ApiError {
  constructor(message: string) {
    super(Grpc.PERMISSION_DENIED, message, { turnkeyErrorCode: 'REQUEST_NOT_AUTHORIZED' });
  }
}

/**
 * init_import_* / import_*: an import target is a key made for one user (its userId is in the
 * bundle the user's client checks, wire-compat §4.4), used by that user's imports. A root user may
 * act for any user of the organization; a non-root user only as itself. A policy cannot tell one
 * from the other (an import's userId is no policy keyword), so no policy lifts this: a user whom a
 * policy lets import could otherwise use up another user's pending target, or import that user's
 * bundle still awaiting approval.
 */
export function requireOwnImport(p: Principal, userId: string, what: string): void {
  if (isRoot(p)) return;
  if (p.access === 'member' && p.user.id === userId) return;
  throw new FixedRefusal(`a non-root user may ${what} only as itself: userId must be its own user id`);
}

