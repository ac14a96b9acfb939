/** The shapes every operation handler implements; the registry maps paths to them. */
import type { Principal } from '../domain/principal.js';
import type { LockName, OrganizationRow, Tx } from '../storage/types.js';
import type { StampCheck } from '../crypto/signpool.js';
import type { Obj } from '../domain/validate.js';
import type { PolicyTargetsOf } from '../policy/scope.js';
import type { Vault } from '../crypto/index.js';
import type { AuthServices } from '../auth/services.js';
import type { Networks } from '../chains/networks.js';
import type { TransparencyLog } from '../domain/activityLog.js';
import type { WebhookDestinations } from '../domain/destinations.js';

/**
 * What operations use besides the database, handed to them explicitly (ExecContext.services, and
 * the arguments of authorize and external): nothing is looked up from the store or a global.
 */
export interface Services {
  /** the only door to key material (src/crypto/vault.ts) */
  vault: Vault;
  /** the OIDC verifier and whether e-mail can be sent */
  auth: AuthServices;
  /** the networks kmas broadcasts to (RPC_URLS) */
  chains: Networks;
  /** the verifiable activity log: its signer and checkpoints on demand (src/domain/activityLog.ts) */
  tlog: TransparencyLog;
  /** Has the outboxes look for due rows; called after the commit that added some (Tx.afterCommit). */
  kick: { deliveries(): void; broadcasts(): void };
  /** Which addresses webhooks may be sent to (WEBHOOK_DESTINATIONS, src/domain/destinations.ts). */
  webhookDestinations: WebhookDestinations;
}

export interface ExecContext {
  tx: Tx;
  services: Services;
  principal: Principal;
  /** The organization the request addresses (after resolution). */
  organization: OrganizationRow;
  nowMs: number;
  newId(): string;
  /** The id of the activity a submit's execute runs for. */
  activityId?: string;
  /** What the operation's prepare() produced before the transaction, if it ran and succeeded. */
  prepared?: unknown;
  /** What the operation's derive() made before the transaction (see SubmitOperation.derive). */
  derived?: unknown;
  /** In prepare(): the request's stamp, for work that can check it on its own thread (signpool.ts). */
  stampCheck?: StampCheck;
  /** What the operation's external() produced before the transaction (it always runs when defined). */
  external?: unknown;
  /**
   * Registers a write that stays even when execute then fails (e.g. counting a wrong one-time
   * code): run after the failed handler's savepoint is rolled back, inside the activity's transaction.
   */
  keepOnFailure?(fn: () => Promise<void>): void;
}

/** What prepare() gets: no transaction (it runs outside one), the rest of an execution's context. */
export type PrepareContext = Omit<ExecContext, 'tx' | 'activityId' | 'prepared' | 'derived' | 'external' | 'keepOnFailure'>;

export interface TypeVersion {
  /** Key of the intent in activity.intent (the clients' swagger v1Intent member). */
  intentKey: string;
  /** Key under which the clients read the result (wire-compat §2.5 / v1Result member). */
  resultKey: string;
  /** The specification's intent member name (replies.md: result.activity.intent). */
  specIntentKey: string;
  /** The specification's result member name (result.activity.result). */
  specResultKey: string;
}

export interface SubmitOperation<I = unknown, R = unknown> {
  kind: 'submit';
  /** Path suffix after /public/v1/submit/. */
  path: string;
  /** Accepted activity types (versions of this operation) and their member keys. */
  types: Record<string, TypeVersion>;
  /** parameters → normalized intent (throws InvalidArgument with field violations). */
  validate(params: Obj, type: string): I;
  /**
   * Throws PermissionDenied (nothing is stored). Reads only. Other errors it throws (validation
   * against the state) are the reply, and store nothing either. `organization`: the one the
   * request addresses (a parent's caller has its own as principal.organization).
   * The operation's rules come first and its permission rule (requireRoot, requireKeyAdmin …)
   * last: when that rule denies a user of the organization, the policies or the root quorum
   * decide instead (consensus.ts), and a rule checked after it would never be checked for the
   * users they admit (test/activities/rules-before-permission.test.ts walks every operation).
   */
  authorize(principal: Principal, intent: I, tx: Tx, services: Services, organization: OrganizationRow): void | Promise<void>;
  /** Runs inside the activity transaction; an ApiError thrown here marks the activity FAILED. */
  execute(ctx: ExecContext, intent: I): R | Promise<R>;
  /** true when execute changes nothing in the store (signing): it then needs no savepoint of its own. */
  readOnly?: boolean;
  /**
   * Starts, in the transaction's first message, reads that authorize or execute will make (the
   * signing key), before the caller is known: their results are used only after authorize has
   * run, and only in this transaction. Must not throw, nor write.
   */
  prefetch?(tx: Tx, intent: I, organizationId: string): void;
  /**
   * Locks (storage/types.ts LockName) the engine takes before execute's savepoint, held to the end
   * of the transaction: a lock taken inside the savepoint is released when a failing execute rolls
   * it back, before what keepOnFailure writes is committed.
   */
  locks?(intent: I, organizationId: string): { name: LockName; key: string }[];
  /**
   * Optional work done before the transaction, after validate and authorize passed outside it,
   * e.g. signing on a worker thread while the event loop serves other requests. It must change
   * nothing; its result reaches execute as ctx.prepared, and execute must check that it still
   * applies (the state may change before the transaction). undefined = nothing to prepare; a
   * rejection only means execute does the work itself.
   */
  prepare?(ctx: PrepareContext, intent: I): Promise<unknown> | undefined;
  /**
   * Key material the operation makes (a mnemonic and its accounts, new private keys), made before
   * the transaction once the stamp has verified and a read allows the request, so no lock is held
   * while a key is derived. It changes nothing (new ids are its own); its value reaches execute as
   * ctx.derived, which uses it only where it still applies and derives anew otherwise. A throw
   * only means execute does the work itself. `read` is a short read of its own.
   */
  derive?(ctx: PrepareContext, intent: I, read: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>): unknown;
  /** The intent as the specification names its fields, when it differs from the clients' form. */
  specIntent?(intent: I): unknown;
  /**
   * Work outside the store that execute needs, done before the transaction on every submit (e.g.
   * verifying an OIDC token against its issuer's keys); its value reaches execute as ctx.external.
   * An ApiError it throws refuses the request (nothing is stored).
   */
  external?(intent: I, services: Services): Promise<unknown>;
  /**
   * Its policy view depends on external()'s result (policyTargets reads it): the gate before
   * external() then decides no policy, and the decision in the write reads what will be signed.
   */
  policyReadsExternal?: boolean;
  /**
   * A credential of the parent organization may submit this into a sub-organization (the
   * authentication flows an application's backend runs for its users); authorize decides who.
   */
  parentMaySubmit?: boolean;
  /**
   * The keys and transaction this submit targets, for policy conditions (policy/scope.ts).
   * `external` is external()'s result in the decision that counts (in the write transaction), and
   * absent in the gate before external() runs: what execute will sign must be what it describes.
   * An activity that touches several targets (payloads, signing keys, secrets) returns a list: the
   * policies decide each, and the activity is denied if any is, allowed only if every one is.
   */
  policyTargets?(intent: I, tx: Tx, organizationId: string, external?: unknown): PolicyTargetsOf | Promise<PolicyTargetsOf>;
  /** approve_activity / reject_activity: a vote on the activity awaiting consensus that `intent.fingerprint` names. */
  vote?: 'VOTE_SELECTION_APPROVED' | 'VOTE_SELECTION_REJECTED';
}

export interface QueryOperation<Q = unknown> {
  kind: 'query';
  /** Path suffix after /public/v1/query/. */
  path: string;
  /** Whether a credential of the parent organization may call it for a sub-organization. */
  parentMayRead: boolean;
  /** whoami: the body may name the parent organization of the credential's sub-organization. */
  resolvesFromParent?: boolean;
  validate(body: Obj): Q;
  /**
   * Work outside the store the reply needs (e.g. asking a network's node), done after the caller
   * is authenticated; its value reaches execute as ctx.external. An ApiError it throws is the reply.
   * `read` runs a short read of its own (never held across the network call).
   */
  external?(query: Q, services: Services, organizationId: string, read: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>): Promise<unknown>;
  /** The reply object exactly as the clients read it. */
  execute(ctx: ExecContext, query: Q): Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * How the specification's `activity` wrapper is added (replies.md): 'wrap' adds
   * {activity: {…, result: reply}}; 'none' leaves the reply as it is (get_activity).
   */
  specWrapper: 'wrap' | 'none';
}

export type Operation = SubmitOperation<any, any> | QueryOperation<any>;

/** Builds the member keys of a type from the swagger naming rule (camelCase + Intent + version suffix). */
export function keysFor(type: string, over: Partial<TypeVersion> = {}): TypeVersion {
  const m = /^ACTIVITY_TYPE_(.+?)(?:_(V\d+))?$/.exec(type);
  if (!m) throw new Error(`bad activity type ${type}`);
  const base = m[1]!.toLowerCase().replace(/_([a-z0-9])/g, (_s, c: string) => c.toUpperCase());
  const v = m[2] ?? '';
  const intentKey = `${base}Intent${v}`;
  const resultKey = `${base}Result${v}`;
  return {
    intentKey,
    resultKey,
    specIntentKey: intentKey,
    specResultKey: resultKey,
    ...over,
  };
}
