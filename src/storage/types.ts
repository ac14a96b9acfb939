/**
 * The storage seam: async repository interfaces reached through a unit of work (Db). Handlers and
 * domain code see only these; nothing above src/storage/ knows which engine serves them. The
 * SQLite adapter lives in sqlite.ts. Times are milliseconds since the epoch.
 */
import type { KeyStore } from './keys.js';
import type { EntryParts } from '../tlog/entry.js';

export type ApiKeyCurve = 'API_KEY_CURVE_P256' | 'API_KEY_CURVE_SECP256K1' | 'API_KEY_CURVE_ED25519';
export type TagType = 'TAG_TYPE_USER' | 'TAG_TYPE_PRIVATE_KEY';

/**
 * The rows resolving an API-key stamp against the organization a request names reads
 * (domain/credentials.ts resolvePrincipal): every key with the stamp's public key, the named
 * organization, and for the key registered in that organization (at most one: a public key is
 * unique per organization) its user and the IP allowlists that govern it. One read, where the
 * engine has round trips to save (PostgreSQL), instead of four.
 */
export interface StampContext {
  publicKey: string;
  organizationId: string;
  keys: ApiKeyRow[];
  organization: OrganizationRow | undefined;
  /** the user of the key with this public key registered in `organization` */
  user: UserRow | undefined;
  /** ipAllowlists.governing(organizationId, publicKey) */
  allowlists: { own?: IpAllowlistRow; organization?: IpAllowlistRow };
}

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
  /** why it FAILED; on an INITIALIZED row, the node's refusal of its send while the node cannot tell whether it has it */
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
  /**
   * The indexes of its entries in its organization's log, oldest first (log.indexesOf reads them):
   * the engine appends an entry before it stores the row, so the row carries the new index and no
   * index by activity is written. Read by get; written by insert (update appends one instead).
   */
  logIndexes?: number[];
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

/** What a webhook_deliveries row carries: a webhook event, or an e-mail (a `mailto:` address, src/mail.ts). */
export type DeliveryKind = 'webhook' | 'email';

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

/**
 * An approve_activity / reject_activity body whose vote was cast, by the body's fingerprint: the
 * same bytes sent again are answered with the activity it voted on, not counted again.
 */
export interface VoteRequestRow {
  fingerprint: string;
  organizationId: string;
  activityId: string;
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

/** An organization's verifiable activity log: its head (src/domain/activityLog.ts appends). */
export interface LogHeadRow {
  organizationId: string;
  /** leaves in the tree */
  size: number;
  /** the frontier: the hashes of the perfect subtrees of the right edge, largest first (one per set bit of size), 32 bytes each, concatenated */
  frontier: Uint8Array;
  /** the tree head of those leaves */
  root: Uint8Array;
  updatedMs: number;
  /**
   * SQLite: entries whose index is taken (counted in size) but which are not sealed yet (logLater.ts),
   * oldest first; frontier and root are then those of the entries before them. Empty or absent: all sealed.
   */
  later?: readonly LaterEntry[];
}

/** An entry whose index is taken and whose content is its activity's row as stored: what sealing needs. */
export interface LaterEntry {
  index: number;
  activityId: string;
  /** the activity record's canonical JSON text, as its row stores it */
  text: string;
  createdMs: number;
  updatedMs: number;
  /** what the entry takes from the record, when it was made with the record (else the text is parsed) */
  parts?: EntryParts;
}

/** One leaf of the log: the entry's canonical bytes (src/tlog/entry.ts). */
export interface LogEntryRow {
  organizationId: string;
  index: number;
  activityId: string;
  entry: Uint8Array;
  createdMs: number;
}

/** A completed perfect subtree of the log: node (level, index) over leaves [index·2^level, (index+1)·2^level). */
export interface LogNodeRow { level: number; index: number; hash: Uint8Array }

/** A signed checkpoint (C2SP tlog-checkpoint note) of the log at one size. */
export interface LogCheckpointRow {
  organizationId: string;
  size: number;
  root: Uint8Array;
  /** the signed note's text */
  note: string;
  createdMs: number;
}

/**
 * The repositories: one per aggregate, every method async so that any engine can serve them.
 * They are reached only through a unit of work (Db.write / Db.read below), as a Tx.
 */
export interface Repositories {
  organizations: {
    get(id: string): Promise<OrganizationRow | undefined>;
    insert(row: OrganizationRow): Promise<void>;
    childrenOf(id: string): Promise<OrganizationRow[]>;
    /** Organizations without a parent, oldest first. */
    roots(): Promise<OrganizationRow[]>;
    touch(id: string, ms: number): Promise<void>;
    setRootQuorumThreshold(id: string, threshold: number, ms: number): Promise<void>;
    rename(id: string, name: string, ms: number): Promise<void>;
    /** The login flows create_sub_organization switched off (disableEmailAuth, disableEmailRecovery, disableOtpEmailAuth, disableSmsAuth). */
    disableFlows(id: string, flags: string[]): Promise<void>;
    disabledFlows(id: string): Promise<string[]>;
    count(): Promise<number>;
    /**
     * Ids of the direct sub-organizations of `parentId` that match `filter`, newest first, a page
     * at a time (the cursors are sub-organization ids); undefined when a cursor names none of them.
     */
    subOrgIds(parentId: string, filter: SubOrgFilter | undefined, page: { limit: number; beforeId?: string; afterId?: string }): Promise<string[] | undefined>;
    /**
     * Removes an organization and everything it holds (users, API keys, passkeys, tags, features,
     * wallets, accounts, private keys, import targets, webhook endpoints, OAuth providers, one-time
     * codes). Its activities stay, as
     * the audit trail, and so do its pending webhook deliveries. The caller makes sure it has no
     * sub-organizations.
     */
    delete(id: string): Promise<void>;
  };
  users: {
    get(organizationId: string, id: string): Promise<UserRow | undefined>;
    list(organizationId: string): Promise<UserRow[]>;
    insert(row: UserRow): Promise<void>;
    update(row: UserRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<void>;
    rootUserIds(organizationId: string): Promise<string[]>;
  };
  apiKeys: {
    get(organizationId: string, id: string): Promise<ApiKeyRow | undefined>;
    /** Every key with this public key, in any organization. */
    byPublicKey(publicKey: string): Promise<ApiKeyRow[]>;
    /** What a stamp's resolution against the organization a request names reads (StampContext), in one statement where the engine can. */
    stampContext(publicKey: string, organizationId: string): Promise<StampContext>;
    listByUser(organizationId: string, userId: string): Promise<ApiKeyRow[]>;
    listByOrganization(organizationId: string): Promise<ApiKeyRow[]>;
    insert(row: ApiKeyRow): Promise<void>;
    /** Whether a key was removed: false when it was not there (or a concurrent transaction removed it first). */
    delete(organizationId: string, id: string): Promise<boolean>;
  };
  authenticators: {
    get(organizationId: string, id: string): Promise<AuthenticatorRow | undefined>;
    /** Every registration of a credential id. */
    byCredentialId(credentialId: string): Promise<AuthenticatorRow[]>;
    listByUser(organizationId: string, userId: string): Promise<AuthenticatorRow[]>;
    /** Every passkey of the organization, oldest first. */
    listByOrganization(organizationId: string): Promise<AuthenticatorRow[]>;
    insert(row: AuthenticatorRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<void>;
    /**
     * Moves the signature counter up to signCount, only from below (one statement: two requests
     * racing cannot move it back); whether it moved. A request whose counter did not is a replay.
     */
    advanceSignCount(id: string, signCount: number): Promise<boolean>;
  };
  tags: {
    get(organizationId: string, id: string): Promise<TagRow | undefined>;
    byName(organizationId: string, type: TagType, name: string): Promise<TagRow | undefined>;
    list(organizationId: string, type: TagType): Promise<TagRow[]>;
    insert(row: TagRow): Promise<void>;
    update(row: TagRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<void>;
    /** Ids of the tags attached to a member (user id or private key id), of one type when given, oldest tag first. */
    tagsOf(memberId: string, type?: TagType): Promise<string[]>;
    members(tagId: string): Promise<string[]>;
    /** Every (tag, member) pair of the organization's tags of one type, oldest tag first. */
    memberships(organizationId: string, type: TagType): Promise<{ tagId: string; memberId: string }[]>;
    attach(tagId: string, memberId: string): Promise<void>;
    detach(tagId: string, memberId: string): Promise<void>;
    /** Removes a member from every tag. */
    detachAll(memberId: string): Promise<void>;
  };
  privateKeys: {
    /** Whether a private key with this id exists in the organization (keys arrive in a later issue). */
    exists(organizationId: string, id: string): Promise<boolean>;
  };
  /** Private keys, wallets, wallet accounts, import targets (src/storage/keys.ts; sealed secrets only). */
  keys: KeyStore;
  features: {
    /** The value of one feature (cached: every submit asks for FEATURE_NAME_WEBHOOK). */
    get(organizationId: string, name: string): Promise<string | undefined>;
    list(organizationId: string): Promise<FeatureRow[]>;
    set(organizationId: string, name: string, value: string): Promise<void>;
    remove(organizationId: string, name: string): Promise<boolean>;
  };
  sendTransactions: {
    get(organizationId: string, id: string): Promise<SendTransactionRow | undefined>;
    insert(row: SendTransactionRow): Promise<void>;
    /**
     * Rows to look at by nowMs (INITIALIZED or BROADCASTING), earliest first. An INITIALIZED row
     * waits while an INITIALIZED row of its sender on its network holds a lower nonce: each sender's
     * transactions reach the node one at a time, in nonce order, whichever node sends them.
     */
    due(nowMs: number, limit: number): Promise<SendTransactionRow[]>;
    /** Takes a due row for this process (as webhooks.claim): its next check moves from dueMs to untilMs. */
    claim(id: string, dueMs: number, untilMs: number): Promise<boolean>;
    /** A new state: status, error, block number, attempts, next check. */
    update(row: Pick<SendTransactionRow, 'id' | 'status' | 'error' | 'blockNumber' | 'attempts' | 'nextCheckMs' | 'updatedMs'>): Promise<void>;
    /** When the earliest row is due (undefined: none waits), leaving out the rows due() holds back. */
    nextDueMs(): Promise<number | undefined>;
    /** Rows still being followed (INITIALIZED or BROADCASTING) and the creation time of the oldest (metrics). */
    pending(): Promise<{ count: number; oldestMs: number | undefined }>;
    /**
     * The highest nonce the sender's transactions on a network hold or have used: signed and not yet
     * settled, or mined (INCLUDED, or FAILED with a block). A node refusal (FAILED, no block) used none.
     */
    highestUsedNonce(caip2: string, fromAddress: string): Promise<number | undefined>;
  };
  invitations: {
    get(organizationId: string, id: string): Promise<InvitationRow | undefined>;
    /** Oldest first. */
    list(organizationId: string): Promise<InvitationRow[]>;
    insert(row: InvitationRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<boolean>;
  };
  orgSecrets: {
    get(organizationId: string, id: string): Promise<SecretRow | undefined>;
    byName(organizationId: string, name: string): Promise<SecretRow | undefined>;
    /** Newest first; undefined when a cursor names no secret of the organization. */
    list(organizationId: string, page: { limit: number; beforeId?: string; afterId?: string }): Promise<SecretRow[] | undefined>;
    insert(row: SecretRow): Promise<void>;
  };
  contractInterfaces: {
    get(organizationId: string, id: string): Promise<ContractInterfaceRow | undefined>;
    /** Newest first. */
    list(organizationId: string): Promise<ContractInterfaceRow[]>;
    byAddress(organizationId: string, type: ContractInterfaceRow['type'], addressKey: string): Promise<ContractInterfaceRow | undefined>;
    insert(row: ContractInterfaceRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<boolean>;
  };
  ipAllowlists: {
    /** The organization's list (publicKey '') or an API key's (cached: every request asks). */
    get(organizationId: string, publicKey: string): Promise<IpAllowlistRow | undefined>;
    /** An API key's own list and its organization's, in one look (every request asks for both). */
    governing(organizationId: string, publicKey: string): Promise<{ own?: IpAllowlistRow; organization?: IpAllowlistRow }>;
    /** Creates or replaces. */
    set(row: IpAllowlistRow): Promise<void>;
    remove(organizationId: string, publicKey: string): Promise<boolean>;
  };
  webhooks: {
    /** The organization's endpoints, oldest first (cached: every submit asks). */
    endpoints(organizationId: string): Promise<WebhookEndpointRow[]>;
    /** The value of the organization's feature `feature` (the webhook URL, if set) and its endpoints, in one look (every stored activity asks). */
    activityTargets(organizationId: string, feature: string): Promise<{ feature?: string; endpoints: WebhookEndpointRow[] }>;
    insertEndpoint(row: WebhookEndpointRow): Promise<void>;
    updateEndpoint(row: WebhookEndpointRow): Promise<void>;
    deleteEndpoint(organizationId: string, id: string): Promise<boolean>;
    enqueue(row: WebhookDeliveryRow): Promise<void>;
    /** Deliveries due at nowMs, oldest first; of one kind only when `kind` is given (e-mails: `mailto:` addresses). */
    due(nowMs: number, limit: number, kind?: DeliveryKind): Promise<WebhookDeliveryRow[]>;
    /**
     * Takes a due delivery for this process: moves its next attempt to untilMs unless another
     * process (or an earlier call) already moved it, or (`url` given) it was readdressed since.
     * true when taken.
     */
    claim(id: string, dueMs: number, untilMs: number, url?: string): Promise<boolean>;
    /** The webhook deliveries waiting for `url`, oldest first (a scan: asked only when an address changes). */
    addressedTo(url: string): Promise<WebhookDeliveryRow[]>;
    /** Moves a waiting delivery to another address (its event id, attempts and schedule kept). */
    readdress(id: string, url: string): Promise<void>;
    /** Delivered or given up: the row goes. */
    remove(id: string): Promise<void>;
    retryAt(id: string, attempts: number, nextAttemptMs: number): Promise<void>;
    /** When the earliest delivery (of `kind`, when given) is due (undefined: none waits). */
    nextDueMs(kind?: DeliveryKind): Promise<number | undefined>;
    /** Deliveries not yet done and the creation time of the oldest, by kind (metrics). */
    pending(): Promise<{ kind: DeliveryKind; count: number; oldestMs: number | undefined }[]>;
  };
  oauthProviders: {
    get(organizationId: string, id: string): Promise<OauthProviderRow | undefined>;
    listByUser(organizationId: string, userId: string): Promise<OauthProviderRow[]>;
    /** Every linked identity of the organization, oldest first. */
    listByOrganization(organizationId: string): Promise<OauthProviderRow[]>;
    /** The provider of an identity in an organization (one user per identity). */
    byIdentity(organizationId: string, issuer: string, audience: string, subject: string): Promise<OauthProviderRow | undefined>;
    insert(row: OauthProviderRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<void>;
  };
  otps: {
    get(organizationId: string, id: string): Promise<OtpRow | undefined>;
    insert(row: OtpRow): Promise<void>;
    setAttempts(id: string, attempts: number): Promise<void>;
    /** Uses a code up: false when it was gone already (a concurrent transaction used it first). */
    delete(id: string): Promise<boolean>;
    /** Removes the codes of a user (deleted user) or those expired before nowMs. */
    deleteByUser(organizationId: string, userId: string): Promise<void>;
    deleteExpired(nowMs: number): Promise<void>;
  };
  /** Contacts a user proved to own (a one-time code), while they are still the user's. */
  verifiedContacts: {
    mark(organizationId: string, userId: string, type: 'EMAIL' | 'PHONE_NUMBER', contact: string, nowMs: number): Promise<void>;
    deleteByUser(organizationId: string, userId: string): Promise<void>;
  };
  /** Ids of issued verification tokens (verify_otp), each usable once. */
  verificationTokens: {
    insert(id: string, organizationId: string, expiresMs: number): Promise<void>;
    /** Marks the token used; false when unknown, already used or expired. */
    use(id: string, nowMs: number): Promise<boolean>;
  };
  policies: {
    get(organizationId: string, id: string): Promise<PolicyRow | undefined>;
    list(organizationId: string): Promise<PolicyRow[]>;
    insert(row: PolicyRow): Promise<void>;
    update(row: PolicyRow): Promise<void>;
    delete(organizationId: string, id: string): Promise<boolean>;
  };
  pending: {
    byFingerprint(organizationId: string, fingerprint: string): Promise<PendingActivityRow | undefined>;
    insert(row: PendingActivityRow): Promise<void>;
    delete(activityId: string): Promise<void>;
  };
  votes: {
    list(activityId: string): Promise<VoteRow[]>;
    insert(row: VoteRow): Promise<void>;
    /** The vote request a body with this fingerprint made, if one was cast. */
    request(fingerprint: string): Promise<VoteRequestRow | undefined>;
    /** Keeps a cast vote's request (the fingerprint is its key: a second one for the same bytes fails). */
    insertRequest(row: VoteRequestRow): Promise<void>;
  };
  policyEvaluations: {
    list(activityId: string): Promise<PolicyEvaluationRow[]>;
    insert(row: PolicyEvaluationRow): Promise<void>;
  };
  /** The verifiable activity log, one Merkle tree per organization (appends one at a time: takeHead). */
  log: {
    head(organizationId: string): Promise<LogHeadRow | undefined>;
    /**
     * The organization's head, taken for this transaction: another transaction's takeHead of the
     * same log waits until this one ends, then sees what it stored (a row lock on PostgreSQL;
     * SQLite has one writer). Undefined (or a head of size 0) for a log with no entry yet.
     */
    takeHead(organizationId: string): Promise<LogHeadRow | undefined>;
    /**
     * The head, taken as takeHead does, with every entry sealed (none `later`): what an append that
     * computes its own nodes needs. Engines without later entries return takeHead's.
     */
    seal(organizationId: string): Promise<LogHeadRow | undefined>;
    /**
     * SQLite with a sealing thread only (absent elsewhere): an activity's first entry, whose content
     * is the activity's row as this transaction stores it (`text`: the record's canonical JSON);
     * returns its index, taken now; the entry is sealed after the commit (logLater.ts).
     */
    appendLater?(entry: { organizationId: string; activityId: string; text: string; createdMs: number; updatedMs: number; parts?: EntryParts }): Promise<number>;
    /**
     * One append: the entry, the subtree nodes it completes (levels 0…k, all ending at this entry:
     * stored in its row, logNodes.ts), and the new head (fails when the index is taken). The head
     * must be the one these nodes make: SQLite stores no head row but derives it from the entries'
     * rows (logNodes.ts headFromNodes); PostgreSQL keeps it in log_heads, its row lock taken by takeHead.
     */
    append(entry: LogEntryRow, nodes: LogNodeRow[], head: LogHeadRow): Promise<void>;
    /** An entry without its nodes. Fails (a unique violation) when the index is taken: two appends never share one. */
    insertEntry(row: LogEntryRow): Promise<void>;
    /** Entries [start, end), by index. */
    entries(organizationId: string, start: number, end: number): Promise<LogEntryRow[]>;
    /** The indexes of an activity's entries, oldest first (from its activity row: ActivityRow.logIndexes). */
    indexesOf(organizationId: string, activityId: string): Promise<number[]>;
    /** The stored nodes among those asked for (absent ones are left out). */
    nodes(organizationId: string, wanted: { level: number; index: number }[]): Promise<LogNodeRow[]>;
    /** Keeps a checkpoint (a second one at the same size is ignored). */
    insertCheckpoint(row: LogCheckpointRow): Promise<void>;
    /** The checkpoint at `size`, or the largest when size is undefined. */
    checkpoint(organizationId: string, size?: number): Promise<LogCheckpointRow | undefined>;
  };
  activities: {
    get(organizationId: string, id: string): Promise<ActivityRow | undefined>;
    /** The activity a request body created: its fingerprint and its timestampMs. */
    byFingerprint(fingerprint: string, requestMs: number): Promise<ActivityRow | undefined>;
    insert(row: ActivityRow): Promise<void>;
    /**
     * Replaces status, updatedMs and record (an activity leaving CONSENSUS_NEEDED, or voted on), and
     * adds logIndex, the index of the log entry of this change, to its logIndexes.
     */
    update(row: ActivityRow, logIndex?: number): Promise<void>;
    list(q: ActivityListQuery): Promise<ActivityRow[] | undefined>;
    count(organizationId: string): Promise<number>;
  };
}

/**
 * Locks a write names where two writers must not interleave. SQLite's write transaction is
 * exclusive, so there they cost nothing; an engine with concurrent writers (PostgreSQL) takes each
 * as a transaction-scoped lock on (name, key), held until commit or rollback.
 */
export type LockName =
  /** one request body (keyed by its fingerprint): the idempotency check, then the insert */
  | 'request'
  /** one activity awaiting consensus (keyed by its fingerprint): votes are counted one at a time */
  | 'approval'
  /** one sender's nonces on one network (eth_send_transaction) */
  | 'sender-nonce'
  /** one one-time code (keyed by its id): checks of it, right or wrong, are counted one at a time */
  | 'one-time-code'
  /**
   * one public key in one organization (keyed by both): a login reads the key's registrations, then
   * replaces or inserts one, after the login before it has committed
   */
  | 'public-key'
  /**
   * one passkey (credential id) or OAuth identity in one organization (keyed by both): whether it
   * is registered is read, then it is inserted (an API key's public key: `public-key`)
   */
  | 'credential'
  /** start-up: creating the root organization and the server's keys */
  | 'bootstrap'
  /** one organization's policies (keyed by its id): their count and unique names are checked, then written */
  | 'policies'
  /**
   * one organization's wallet accounts (keyed by its id): no account twice (curve, path, address
   * format), then the insert; their seq values thus drawn in commit order (cursors, paging.ts)
   */
  | 'wallet-accounts'
  /** one organization's tags of one kind (keyed by both): a unique name is checked, then written */
  | 'tags'
  /** one organization's smart contract interfaces (keyed by its id): one per contract address */
  | 'contract-interfaces'
  /**
   * one organization's sub-organizations (keyed by the parent's id): a new one's created_ms, the
   * list_suborgs order, is set past its newest sibling's, so that order is the commit order
   */
  | 'sub-organizations'
  /** one organization's secrets (keyed by its id): a unique name is checked, then written */
  | 'secrets'
  /**
   * one organization's root users and their credentials (keyed by its id): a change that could
   * lock the organization out is made, then the root users who can still sign in are counted
   */
  | 'root-credentials'
  /**
   * one organization's webhook endpoints (keyed by its id): their count is checked, then written;
   * a change reads the endpoint and moves the deliveries waiting for its old address
   */
  | 'webhook-endpoints';

/** One transaction: the repositories, plus what a unit of work adds. */
export interface Tx extends Repositories {
  /**
   * Takes the named lock until this transaction ends (see LockName). A statement of this
   * transaction issued after the call runs once the lock is held, even one issued before the
   * returned promise settles (PostgreSQL may send the lock with it).
   */
  lock(name: LockName, key: string): Promise<void>;
  /** Runs fn in a savepoint: if it throws, its changes are undone and the error passes on. */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs fn once this transaction has committed and is durable (never when it rolls back). */
  afterCommit(fn: () => void): void;
  /**
   * Call first: this write's reads are answered by the database, none assumed from what the node
   * read before (PostgreSQL's predicted writes; nothing on SQLite). For a write that would do
   * costly work on an assumption its COMMIT then finds false, such as deriving keys for a body
   * the caller has just seen stored.
   */
  readFirst(): void;
}

/**
 * The unit of work. write: one transaction, all or nothing; its promise settles only once the
 * commit is durable (nothing may be acknowledged earlier). read: one consistent snapshot; the
 * callback must not write. A read may see commits not yet durable (an engine that syncs after
 * commit): what is shown to a client waits for durable() first. Callbacks do no slow work of
 * their own (key derivation, network): that runs before, so no lock is held while it does.
 */
export interface Db {
  /** The engine, for logs and metrics only: nothing may behave differently by it. */
  readonly engine: 'sqlite' | 'postgres';
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  read<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * A read whose statements need no common snapshot: each may see a later commit than the one
   * before it. For checks a write repeats in its own transaction (the stamp's key before the
   * signing that precedes the write); an engine may then spare the transaction's own round trips.
   */
  peek<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Whether the database answers now (GET /readyz). */
  isReady(): Promise<boolean>;
  /**
   * Start-up is done: from now on the engine may make commits durable after they return (SQLite
   * syncs its WAL off the event loop); write() still settles only once durable.
   */
  deferSyncs?(): void;
  /** Settles once every commit made so far is durable (before showing what a read saw; at shutdown). */
  durable(): Promise<void>;
  /**
   * Seals the log entries of an organization (every organization without one) whose index is
   * taken but which are not stored yet (SQLite's later entries), so that what is read next sees
   * every committed entry. What the log's readers call first. SQLite has it whether or not it
   * seals later itself (a database may hold entries another run left unsealed); PostgreSQL, whose
   * appends are all sealed in their transactions, does not.
   */
  settleLog?(organizationId?: string): Promise<void>;
  close(): Promise<void>;
}
