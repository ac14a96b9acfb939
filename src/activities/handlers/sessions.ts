/**
 * create_read_only_session: a session JWT (session_type SESSION_TYPE_READ_ONLY, one hour) for the
 * stamping user; no key is made, and the token grants nothing by itself (clients keep it to
 * know the session and its expiry).
 * create_read_write_session (V2): a new P-256 API key of type READ_WRITE_SESSION for a user, with
 * an expiry (default 900 s), its private key returned only inside a credential bundle encrypted to
 * the request's targetPublicKey (wire-compat §4.2, §5). The requester makes one for itself; a
 * root user also for another user of the organization.
 */
import { requireSelfOrRoot } from '../../domain/principal.js';
import { requireUser } from '../../domain/apiKeys.js';
import { CREDENTIAL, issueBundledKey, sessionJwt, stampingApiKey } from '../../auth/services.js';
import { keysFor, type SubmitOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';
import { readTargetPublicKey } from './keyParams.js';
import { readLoginCommon, type LoginCommon } from './oauth.js';


/** How long a read-only session lasts (s) [UNCONFIRMED: Turnkey's documented hour]. */
export const READ_ONLY_SESSION_SECONDS = 3600;

interface ReadOnlySessionResult { organizationId: string; organizationName: string; userId: string; username: string; session: string; sessionExpiry: string }

export const createReadOnlySession: SubmitOperation<Record<string, never>, ReadOnlySessionResult> = {
  kind: 'submit',
  path: 'create_read_only_session',
  types: { ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION: keysFor('ACTIVITY_TYPE_CREATE_READ_ONLY_SESSION') },
  validate: () => ({}),
  // The stamping user, for itself.
  authorize() { /* any member user */ },
  execute(ctx) {
    const { organization, principal, nowMs } = ctx;
    const exp = Math.floor(nowMs / 1000) + READ_ONLY_SESSION_SECONDS;
    const session = sessionJwt(ctx.services.vault, {
      exp, session_type: 'SESSION_TYPE_READ_ONLY', user_id: principal.user.id, organization_id: organization.id,
    });
    return {
      organizationId: organization.id, organizationName: organization.name, userId: principal.user.id, username: principal.user.name,
      session, sessionExpiry: String(exp),
    };
  },
};

interface CreateSession extends LoginCommon { targetPublicKey: string; userId?: string }

interface SessionResult {
  organizationId: string; organizationName: string; userId: string; username: string; apiKeyId: string; credentialBundle: string;
}

export const createReadWriteSession: SubmitOperation<CreateSession, SessionResult> = {
  kind: 'submit',
  path: 'create_read_write_session',
  types: { ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2: keysFor('ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2') },
  validate(params: Obj) {
    const v = new Validator();
    const targetPublicKey = readTargetPublicKey(v, params);
    const userId = v.string(params, 'userId', 'userId', { max: 100 }) || undefined;
    const common = readLoginCommon(v, params, true);
    v.done();
    return { targetPublicKey: targetPublicKey!, ...(userId !== undefined ? { userId } : {}), ...common };
  },
  authorize(p, intent) { requireSelfOrRoot(p, intent.userId ?? p.user.id, 'create a read-write session'); },
  async execute(ctx, intent) {
    const { tx, organization, nowMs } = ctx;
    const user = await requireUser(tx, organization.id, intent.userId ?? ctx.principal.user.id);
    const { key, credentialBundle } = await issueBundledKey(ctx, user, intent.targetPublicKey, {
      credentialType: CREDENTIAL.readWriteSession,
      name: intent.apiKeyName ?? `Read Write Session - ${nowMs}`,
      expirationSeconds: intent.expirationSeconds,
      invalidateExisting: intent.invalidateExisting === true,
      allowlistOf: stampingApiKey(ctx.principal.credential),
    });
    return {
      organizationId: organization.id, organizationName: organization.name, userId: user.id, username: user.name,
      apiKeyId: key.id, credentialBundle,
    };
  },
};
