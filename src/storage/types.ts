/**
 * Repository interfaces. Handlers and domain code see only these; the SQLite implementation
 * lives in sqlite.ts (a postgres one can follow). Times are milliseconds since the epoch.
 */
import type { KeyStore } from './keys.js';

export type ApiKeyCurve = 'API_KEY_CURVE_P256' | 'API_KEY_CURVE_SECP256K1' | 'API_KEY_CURVE_ED25519';
export type TagType = 'TAG_TYPE_USER' | 'TAG_TYPE_PRIVATE_KEY';

export interface OrganizationRow {
  id: string;
  name: string;
  parentId: string | null;
  rootQuorumThreshold: number;
  createdMs: number;
  updatedMs: number;
}

export interface UserRow {
  id: string;
  organizationId: string;
  name: string;
  email: string | null;
  phoneNumber: string | null;
  /** Member of the organization's root quorum. */
  isRoot: boolean;
  createdMs: number;
  updatedMs: number;
}

export interface ApiKeyRow {
  id: string;
  organizationId: string;
  userId: string;
  name: string;
  /** Lowercase hex, as stamps carry it. */
  publicKey: string;
  curve: ApiKeyCurve;
  credentialType: string;
  /** Decimal string, as the API carries it; null = never expires. */
  expirationSeconds: string | null;
  /** createdMs + expirationSeconds·1000, or null. */
  expiresAtMs: number | null;
  createdMs: number;
  updatedMs: number;
}

/** A passkey (WebAuthn credential) of a user: create_authenticators, X-Stamp-Webauthn. */
export interface AuthenticatorRow {
  id: string;
  organizationId: string;
  userId: string;
  name: string;
  /** base64url of the credential's raw id */
  credentialId: string;
  /** compressed P-256 public key, lowercase hex (only ES256 credentials are registered) */
  publicKey: string;
  /** the RP ID the credential was registered for (its hash opens every assertion's authenticator data) */
  rpId: string;
  aaguid: string;
  attestationType: string;
  transports: string[];
  signCount: number;
  createdMs: number;
  updatedMs: number;
}

export interface TagRow {
  id: string;
  organizationId: string;
  name: string;
  type: TagType;
  createdMs: number;
  updatedMs: number;
}

export interface FeatureRow { name: string; value: string }

/** create_invitations: an invitation to join the organization (kept for organizationData; no e-mail is sent). */
export interface InvitationRow {
  id: string;
  organizationId: string;
  receiverUserName: string;
  receiverEmail: string;
  receiverUserTags: string[];
  accessType: string;
  status: 'INVITATION_STATUS_CREATED' | 'INVITATION_STATUS_ACCEPTED' | 'INVITATION_STATUS_REVOKED';
  senderUserId: string;
  createdMs: number;
  updatedMs: number;
}

/**
 * eth_send_transaction: a signed transaction kmas broadcasts and follows (src/broadcaster.ts).
 * INITIALIZED (signed, not yet accepted by a node) → BROADCASTING (in the node's pool) →
 * INCLUDED (mined, status 1) or FAILED (refused, or mined and reverted). nextCheckMs is when the
 * broadcaster looks at it again; null once it is INCLUDED or FAILED.
 */
export interface SendTransactionRow {
  id: string;
  organizationId: string;
  activityId: string;
  caip2: string;
  fromAddress: string;
  txHash: string;
  /** the EVM transaction's nonce (null for Solana) */
  nonce: number | null;
  signedTransaction: string;
  status: 'INITIALIZED' | 'BROADCASTING' | 'INCLUDED' | 'FAILED';
  error: string | null;
  blockNumber: string | null;
  attempts: number;
  nextCheckMs: number | null;
  createdMs: number;
  updatedMs: number;
}

/** import_secrets: a secret of the organization (sealed at rest) with its policy-visible properties. */
export interface SecretRow {
  id: string;
  organizationId: string;
  name: string | null;
  staticProperties: { key: string; value: string }[];
  sealed: Uint8Array;
  createdMs: number;
}

/** create_smart_contract_interface: an ABI (Ethereum) or IDL (Solana) for policies to decode calls with. */
export interface ContractInterfaceRow {
  id: string;
  organizationId: string;
  type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM' | 'SMART_CONTRACT_INTERFACE_TYPE_SOLANA';
  /** as given */
  address: string;
  /** the address as looked up: lowercase for Ethereum, as given for Solana */
  addressKey: string;
  /** the JSON text as given */
  interface: string;
  label: string;
  notes: string;
  createdMs: number;
  updatedMs: number;
}

export interface IpAllowlistRule { cidr: string; label: string; createdMs: number }

/** set_ip_allowlist: the organization's list (publicKey '') or one API key's. */
export interface IpAllowlistRow {
  organizationId: string;
  /** the API key's public key (lowercase hex), or '' for the organization */
  publicKey: string;
  /** organization lists only; a key's list is enabled by being there */
  enabled: boolean;
  onEvaluationError: 'ALLOW' | 'DENY';
  rules: IpAllowlistRule[];
  createdMs: number;
  updatedMs: number;
}

export interface ActivityRow {
  id: string;
  organizationId: string;
  type: string;
  status: string;
  fingerprint: string;
  /** The request's timestampMs (with the fingerprint, the idempotency key). */
  requestMs: number;
  createdMs: number;
  updatedMs: number;
  /** The whole v1Activity record as served. */
  record: Record<string, unknown>;
  /** JSON.stringify(record), when the caller has it already (stored as is; saves a second serialization). */
  recordJson?: string;
}

export interface ActivityListQuery {
  organizationId: string;
  statuses?: string[];
  types?: string[];
  limit: number;
  /** Newer than this activity (the page just before it in newest-first order). */
  beforeId?: string;
  /** Older than this activity. */
  afterId?: string;
}

/**
 * What list_suborgs matches: the sub-organization's name, or one of its users (name, e-mail
 * compared without regard to case, phone number), an API key's public key, a passkey's credential
 * id (base64url, as stored), or a wallet account's address; VERIFIED_*: a user whose current e-mail
 * address / phone number is the value and was proven with a one-time code (list_verified_suborgs).
 */
export type SubOrgFilter =
  | { type: 'NAME' | 'USERNAME' | 'EMAIL' | 'PHONE_NUMBER' | 'PUBLIC_KEY' | 'CREDENTIAL_ID' | 'VERIFIED_EMAIL' | 'VERIFIED_PHONE_NUMBER'; value: string }
  | { type: 'WALLET_ACCOUNT_ADDRESS'; value: string; addressKey: string }
  | { type: 'OAUTH_IDENTITY'; issuer: string; audience: string; subject: string };

export interface WebhookSubscription { eventType: string; filtersJson?: string; isActive: boolean }

/** A webhook endpoint (create_webhook_endpoint): an address and the events it subscribes to. */
export interface WebhookEndpointRow {
  id: string;
  organizationId: string;
  url: string;
  name: string;
  isActive: boolean;
  subscriptions: WebhookSubscription[];
  createdMs: number;
  updatedMs: number;
}

/** A webhook event waiting for delivery to one address (src/webhooks.ts). */
export interface WebhookDeliveryRow {
  /** the event id (X-Turnkey-Event-Id), the same on every attempt */
  id: string;
  /** the activity's organization (X-Turnkey-Organization-Id); the address may be its parent's */
  organizationId: string;
  activityId: string;
  /** X-Turnkey-Event-Type: ACTIVITY_UPDATES, SEND_TRANSACTION_STATUS_UPDATES (e-mails: unused) */
  eventType: string;
  url: string;
  body: string;
  /** attempts made so far */
  attempts: number;
  nextAttemptMs: number;
  createdMs: number;
}

/** An OIDC identity linked to a user (create_oauth_providers, oauthProviders of a new user). */
export interface OauthProviderRow {
  id: string;
  organizationId: string;
  userId: string;
  name: string;
  issuer: string;
  audience: string;
  subject: string;
  createdMs: number;
  updatedMs: number;
}

/** A one-time code sent by init_otp_auth / init_otp, until it is used, expires or runs out of attempts. */
export interface OtpRow {
  id: string;
  organizationId: string;
  /** the user it was sent to (init_otp_auth); null for init_otp, which may precede the user (sign-up) */
  userId: string | null;
  /** OTP_TYPE_EMAIL */
  otpType: string;
  contact: string;
  /** the code, sealed under the master key (kind "otp_code", this row's id) */
  sealedCode: Uint8Array;
  /** init_otp: the private key the client encrypts the code to (otpEncryptionTargetBundle), sealed */
  sealedTarget: Uint8Array | null;
  /** wrong codes tried so far */
  attempts: number;
  expiresMs: number;
  createdMs: number;
}

/** A policy of an organization (create_policy): `condition` and `consensus` are policy-language sources ('' = none). */
export interface PolicyRow {
  id: string;
  organizationId: string;
  name: string;
  effect: 'EFFECT_ALLOW' | 'EFFECT_DENY';
  condition: string;
  consensus: string;
  /** the `time` expression ('' = always active) */
  time: string;
  notes: string;
  createdMs: number;
  updatedMs: number;
}

/** An activity stored with ACTIVITY_STATUS_CONSENSUS_NEEDED: what approve_activity needs to run it later. */
export interface PendingActivityRow {
  activityId: string;
  organizationId: string;
  fingerprint: string;
  /** The submit operation's path (its handler). */
  path: string;
  /** Who submitted it, with which credential. */
  userId: string;
  credentialId: string;
  createdMs: number;
}

/** A vote on an activity awaiting consensus; `record` is the v1Vote as served. */
export interface VoteRow {
  id: string;
  activityId: string;
  organizationId: string;
  userId: string;
  selection: 'VOTE_SELECTION_APPROVED' | 'VOTE_SELECTION_REJECTED';
  record: Record<string, unknown>;
  createdMs: number;
}

/** How the policies evaluated when an activity was decided (get_policy_evaluations). */
export interface PolicyEvaluationRow {
  id: string;
  activityId: string;
  organizationId: string;
  /** The vote that led to this evaluation ('' when the activity ran at once). */
  voteId: string;
  evaluations: { policyId: string; outcome: string }[];
  createdMs: number;
}

export interface Store {
  /** Runs fn inside one write transaction (all or nothing). */
  transaction<T>(fn: () => T): T;
  /**
   * When the store makes commits durable after they return (SQLite with syncOffThread): a promise
   * settled once every transaction committed so far is on disk; undefined when it already is (or
   * the store syncs at commit). Nothing may be acknowledged before it settles.
   */
  durable?(): Promise<void> | undefined;
  /**
   * From now on, make commits durable after they return (see durable()); before, each COMMIT is
   * durable when it returns. The server calls it once start-up is done.
   */
  deferSyncs?(): void;
  isReady(): boolean;
  close(): void;

  organizations: {
    get(id: string): OrganizationRow | undefined;
    insert(row: OrganizationRow): void;
    childrenOf(id: string): OrganizationRow[];
    /** Organizations without a parent, oldest first. */
    roots(): OrganizationRow[];
    touch(id: string, ms: number): void;
    setRootQuorumThreshold(id: string, threshold: number, ms: number): void;
    rename(id: string, name: string, ms: number): void;
    /** The login flows create_sub_organization switched off (disableEmailAuth, disableEmailRecovery, disableOtpEmailAuth, disableSmsAuth). */
    disableFlows(id: string, flags: string[]): void;
    disabledFlows(id: string): string[];
    count(): number;
    /**
     * Ids of the direct sub-organizations of `parentId` that match `filter`, newest first, a page
     * at a time (the cursors are sub-organization ids); undefined when a cursor names none of them.
     */
    subOrgIds(parentId: string, filter: SubOrgFilter | undefined, page: { limit: number; beforeId?: string; afterId?: string }): string[] | undefined;
    /**
     * Removes an organization and everything it holds (users, API keys, passkeys, tags, features,
     * wallets, accounts, private keys, import targets, webhook endpoints, OAuth providers, one-time
     * codes). Its activities stay, as
     * the audit trail, and so do its pending webhook deliveries. The caller makes sure it has no
     * sub-organizations.
     */
    delete(id: string): void;
  };
  users: {
    get(organizationId: string, id: string): UserRow | undefined;
    list(organizationId: string): UserRow[];
    insert(row: UserRow): void;
    update(row: UserRow): void;
    delete(organizationId: string, id: string): void;
    rootUserIds(organizationId: string): string[];
  };
  apiKeys: {
    get(organizationId: string, id: string): ApiKeyRow | undefined;
    /** Every key with this public key, in any organization. */
    byPublicKey(publicKey: string): ApiKeyRow[];
    listByUser(organizationId: string, userId: string): ApiKeyRow[];
    listByOrganization(organizationId: string): ApiKeyRow[];
    insert(row: ApiKeyRow): void;
    delete(organizationId: string, id: string): void;
  };
  authenticators: {
    get(organizationId: string, id: string): AuthenticatorRow | undefined;
    /** Every registration of a credential id. */
    byCredentialId(credentialId: string): AuthenticatorRow[];
    listByUser(organizationId: string, userId: string): AuthenticatorRow[];
    insert(row: AuthenticatorRow): void;
    delete(organizationId: string, id: string): void;
    setSignCount(id: string, signCount: number): void;
  };
  tags: {
    get(organizationId: string, id: string): TagRow | undefined;
    byName(organizationId: string, type: TagType, name: string): TagRow | undefined;
    list(organizationId: string, type: TagType): TagRow[];
    insert(row: TagRow): void;
    update(row: TagRow): void;
    delete(organizationId: string, id: string): void;
    /** Tag ids attached to a member (user id or private key id). */
    tagsOf(memberId: string): string[];
    members(tagId: string): string[];
    attach(tagId: string, memberId: string): void;
    detach(tagId: string, memberId: string): void;
    /** Removes a member from every tag. */
    detachAll(memberId: string): void;
  };
  privateKeys: {
    /** Whether a private key with this id exists in the organization (keys arrive in a later issue). */
    exists(organizationId: string, id: string): boolean;
  };
  /** Private keys, wallets, wallet accounts, import targets (src/storage/keys.ts; sealed secrets only). */
  keys: KeyStore;
  features: {
    /** The value of one feature (cached: every submit asks for FEATURE_NAME_WEBHOOK). */
    get(organizationId: string, name: string): string | undefined;
    list(organizationId: string): FeatureRow[];
    set(organizationId: string, name: string, value: string): void;
    remove(organizationId: string, name: string): boolean;
  };
  sendTransactions: {
    get(organizationId: string, id: string): SendTransactionRow | undefined;
    insert(row: SendTransactionRow): void;
    /** Rows to look at by nowMs (INITIALIZED or BROADCASTING), earliest first. */
    due(nowMs: number, limit: number): SendTransactionRow[];
    /** Takes a due row for this process (as webhooks.claim): its next check moves from dueMs to untilMs. */
    claim(id: string, dueMs: number, untilMs: number): boolean;
    /** A new state: status, error, block number, attempts, next check. */
    update(row: Pick<SendTransactionRow, 'id' | 'status' | 'error' | 'blockNumber' | 'attempts' | 'nextCheckMs' | 'updatedMs'>): void;
    /** When the earliest row is due (undefined: none waits). */
    nextDueMs(): number | undefined;
    /** Rows still being followed (INITIALIZED or BROADCASTING) and the creation time of the oldest (metrics). */
    pending(): { count: number; oldestMs: number | undefined };
    /** The highest nonce of the sender's transactions on a network that are signed and not yet settled. */
    highestPendingNonce(caip2: string, fromAddress: string): number | undefined;
  };
  invitations: {
    get(organizationId: string, id: string): InvitationRow | undefined;
    /** Oldest first. */
    list(organizationId: string): InvitationRow[];
    insert(row: InvitationRow): void;
    delete(organizationId: string, id: string): boolean;
  };
  orgSecrets: {
    get(organizationId: string, id: string): SecretRow | undefined;
    byName(organizationId: string, name: string): SecretRow | undefined;
    /** Newest first; undefined when a cursor names no secret of the organization. */
    list(organizationId: string, page: { limit: number; beforeId?: string; afterId?: string }): SecretRow[] | undefined;
    insert(row: SecretRow): void;
  };
  contractInterfaces: {
    get(organizationId: string, id: string): ContractInterfaceRow | undefined;
    /** Newest first. */
    list(organizationId: string): ContractInterfaceRow[];
    byAddress(organizationId: string, type: ContractInterfaceRow['type'], addressKey: string): ContractInterfaceRow | undefined;
    insert(row: ContractInterfaceRow): void;
    delete(organizationId: string, id: string): boolean;
  };
  ipAllowlists: {
    /** The organization's list (publicKey '') or an API key's (cached: every request asks). */
    get(organizationId: string, publicKey: string): IpAllowlistRow | undefined;
    /** Creates or replaces. */
    set(row: IpAllowlistRow): void;
    remove(organizationId: string, publicKey: string): boolean;
  };
  webhooks: {
    /** The organization's endpoints, oldest first (cached: every submit asks). */
    endpoints(organizationId: string): WebhookEndpointRow[];
    insertEndpoint(row: WebhookEndpointRow): void;
    updateEndpoint(row: WebhookEndpointRow): void;
    deleteEndpoint(organizationId: string, id: string): boolean;
    enqueue(row: WebhookDeliveryRow): void;
    /** Deliveries due at nowMs, oldest first. */
    due(nowMs: number, limit: number): WebhookDeliveryRow[];
    /**
     * Takes a due delivery for this process: moves its next attempt to untilMs unless another
     * process (or an earlier call) already moved it. true when taken.
     */
    claim(id: string, dueMs: number, untilMs: number): boolean;
    /** Delivered or given up: the row goes. */
    remove(id: string): void;
    retryAt(id: string, attempts: number, nextAttemptMs: number): void;
    /** When the earliest delivery is due (undefined: none waits). */
    nextDueMs(): number | undefined;
    /** Deliveries not yet done and the creation time of the oldest, by kind (metrics). */
    pending(): { kind: 'webhook' | 'email'; count: number; oldestMs: number | undefined }[];
  };
  oauthProviders: {
    get(organizationId: string, id: string): OauthProviderRow | undefined;
    listByUser(organizationId: string, userId: string): OauthProviderRow[];
    /** The provider of an identity in an organization (one user per identity). */
    byIdentity(organizationId: string, issuer: string, audience: string, subject: string): OauthProviderRow | undefined;
    insert(row: OauthProviderRow): void;
    delete(organizationId: string, id: string): void;
  };
  otps: {
    get(organizationId: string, id: string): OtpRow | undefined;
    insert(row: OtpRow): void;
    setAttempts(id: string, attempts: number): void;
    delete(id: string): void;
    /** Removes the codes of a user (deleted user) or those expired before nowMs. */
    deleteByUser(organizationId: string, userId: string): void;
    deleteExpired(nowMs: number): void;
  };
  /** Contacts a user proved to own (a one-time code), while they are still the user's. */
  verifiedContacts: {
    mark(organizationId: string, userId: string, type: 'EMAIL' | 'PHONE_NUMBER', contact: string, nowMs: number): void;
    deleteByUser(organizationId: string, userId: string): void;
  };
  /** Ids of issued verification tokens (verify_otp), each usable once. */
  verificationTokens: {
    insert(id: string, organizationId: string, expiresMs: number): void;
    /** Marks the token used; false when unknown, already used or expired. */
    use(id: string, nowMs: number): boolean;
  };
  policies: {
    get(organizationId: string, id: string): PolicyRow | undefined;
    list(organizationId: string): PolicyRow[];
    insert(row: PolicyRow): void;
    update(row: PolicyRow): void;
    delete(organizationId: string, id: string): boolean;
  };
  pending: {
    byFingerprint(organizationId: string, fingerprint: string): PendingActivityRow | undefined;
    insert(row: PendingActivityRow): void;
    delete(activityId: string): void;
  };
  votes: {
    list(activityId: string): VoteRow[];
    insert(row: VoteRow): void;
  };
  policyEvaluations: {
    list(activityId: string): PolicyEvaluationRow[];
    insert(row: PolicyEvaluationRow): void;
  };
  activities: {
    get(organizationId: string, id: string): ActivityRow | undefined;
    /** The activity a request body created: its fingerprint and its timestampMs. */
    byFingerprint(fingerprint: string, requestMs: number): ActivityRow | undefined;
    insert(row: ActivityRow): void;
    /** Replaces status, updatedMs and record (an activity leaving CONSENSUS_NEEDED, or voted on). */
    update(row: ActivityRow): void;
    list(q: ActivityListQuery): ActivityRow[] | undefined;
    count(organizationId: string): number;
  };
}
