/**
 * The repositories of the PostgreSQL adapter, over one unit of work's connection (postgres.ts
 * builds a set per unit). Same semantics as the SQLite adapter (sqlite.ts, keys.ts, paging.ts):
 * the same orderings, filters, cursors, and "changed" meaning a row was affected. Rows come back
 * with bigint columns as numbers and bytea as Buffers (postgres.ts sets the type parsers); the
 * row mappers below make them the types.ts shapes.
 */
import type {
  ActivityListQuery, ActivityRow, ApiKeyRow, LogCheckpointRow, AuthenticatorRow, ContractInterfaceRow, FeatureRow, InvitationRow, IpAllowlistRow, IpAllowlistRule,
  OauthProviderRow, OrganizationRow, OtpRow, PendingActivityRow, PolicyEvaluationRow, PolicyRow, Repositories, SecretRow, SendTransactionRow,
  SubOrgFilter, TagRow, TagType, UserRow, VoteRow, VoteRequestRow, DeliveryKind, WebhookDeliveryRow, WebhookEndpointRow, WebhookSubscription, LogHeadRow, StampContext,
} from './types.js';
import { PATH_SQL, addressKey, canonicalPath, type AddressEntry, type ImportTargetRow, type KeyStore, type ListPage, type PrivateKeyRow, type WalletAccountRow, type WalletRow } from './keys.js';

import { foldNodes, logIndexesFrom, nodePlace } from './logNodes.js';
import { MAIL_ROW, SENDER_TURN } from './sharedSql.js';
import { dbOrgData, dbStampContexts } from '../metrics.js';

export type Row = Record<string, unknown>;

/** The queries of one unit of work (postgres.ts): every call refused once the unit has ended. */
export interface Queries {
  all(sql: string, args?: unknown[]): Promise<Row[]>;
  get(sql: string, args?: unknown[]): Promise<Row | undefined>;
  /** the number of rows the statement affected */
  run(sql: string, args?: unknown[]): Promise<number>;
  /**
   * A write whose result nobody reads, sent with the unit's next statement or its COMMIT (one
   * round trip fewer; postgres.ts). Its failure fails the unit. Without it: run now.
   */
  deferred?(sql: string, args: unknown[]): void;
  /**
   * A log append (the entry's log_entries values, the head after it) sent with the unit's next
   * statement, together with the organization's other appends since: logAppend. Without it: one
   * statement per append (deferred).
   */
  appendLog?(organizationId: string, entry: unknown[], head: LogHeadRow): void;
  /**
   * How many statements of the unit so far write a table an organization's data version covers
   * (OrgDataCache; postgres.ts DATA_TABLES). Without it: data is never served from the cache.
   */
  dataWrites?(): number;
}

const bytes = (v: unknown): Uint8Array => new Uint8Array(v as Buffer);
const buf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const num = (v: unknown): number => v as number;
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : (v as number));
const str = (v: unknown): string => v as string;
const strOrNull = (v: unknown): string | null => (v as string | null) ?? null;

const orgFrom = (r: Row): OrganizationRow => ({
  id: str(r.id), name: str(r.name), parentId: strOrNull(r.parent_id),
  rootQuorumThreshold: num(r.root_quorum_threshold), createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const userFrom = (r: Row): UserRow => ({
  id: str(r.id), organizationId: str(r.organization_id), name: str(r.name),
  email: strOrNull(r.email), phoneNumber: strOrNull(r.phone_number),
  isRoot: r.is_root === true, createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const keyFrom = (r: Row): ApiKeyRow => ({
  id: str(r.id), organizationId: str(r.organization_id), userId: str(r.user_id), name: str(r.name),
  publicKey: str(r.public_key), curve: r.curve as ApiKeyRow['curve'], credentialType: str(r.credential_type),
  expirationSeconds: strOrNull(r.expiration_seconds), expiresAtMs: numOrNull(r.expires_at_ms),
  createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const tagFrom = (r: Row): TagRow => ({
  id: str(r.id), organizationId: str(r.organization_id), name: str(r.name), type: r.type as TagType,
  createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const authenticatorFrom = (r: Row): AuthenticatorRow => ({
  id: str(r.id), organizationId: str(r.organization_id), userId: str(r.user_id), name: str(r.name),
  credentialId: str(r.credential_id), publicKey: str(r.public_key), rpId: str(r.rp_id), aaguid: str(r.aaguid),
  attestationType: str(r.attestation_type), transports: JSON.parse(str(r.transports)) as string[],
  signCount: num(r.sign_count), createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const oauthProviderFrom = (r: Row): OauthProviderRow => ({
  id: str(r.id), organizationId: str(r.organization_id), userId: str(r.user_id), name: str(r.name),
  issuer: str(r.issuer), audience: str(r.audience), subject: str(r.subject),
  createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const otpFrom = (r: Row): OtpRow => ({
  id: str(r.id), organizationId: str(r.organization_id), userId: strOrNull(r.user_id), otpType: str(r.otp_type),
  contact: str(r.contact), sealedCode: bytes(r.sealed_code),
  sealedTarget: r.sealed_target === null ? null : bytes(r.sealed_target), attempts: num(r.attempts),
  expiresMs: num(r.expires_ms), createdMs: num(r.created_ms),
});
const headFrom = (r: Row): LogHeadRow => ({
  organizationId: str(r.organization_id), size: num(r.size), frontier: bytes(r.frontier), root: bytes(r.root), updatedMs: num(r.updated_ms),
});
const endpointFrom = (r: Row): WebhookEndpointRow => ({
  id: str(r.id), organizationId: str(r.organization_id), url: str(r.url), name: str(r.name),
  isActive: r.is_active === true, subscriptions: JSON.parse(str(r.subscriptions)) as WebhookSubscription[],
  createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const invitationFrom = (r: Row): InvitationRow => ({
  id: str(r.id), organizationId: str(r.organization_id), receiverUserName: str(r.receiver_user_name),
  receiverEmail: str(r.receiver_email), receiverUserTags: JSON.parse(str(r.receiver_user_tags)) as string[],
  accessType: str(r.access_type), status: r.status as InvitationRow['status'], senderUserId: str(r.sender_user_id),
  createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const sendTxFrom = (r: Row): SendTransactionRow => ({
  id: str(r.id), organizationId: str(r.organization_id), activityId: str(r.activity_id), caip2: str(r.caip2),
  fromAddress: str(r.from_address), txHash: str(r.tx_hash), nonce: numOrNull(r.nonce), signedTransaction: str(r.signed_transaction),
  status: r.status as SendTransactionRow['status'], error: strOrNull(r.error), blockNumber: strOrNull(r.block_number),
  attempts: num(r.attempts), nextCheckMs: numOrNull(r.next_check_ms), createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const secretFrom = (r: Row): SecretRow => ({
  id: str(r.id), organizationId: str(r.organization_id), name: strOrNull(r.name),
  staticProperties: JSON.parse(str(r.static_properties)) as SecretRow['staticProperties'],
  sealed: bytes(r.sealed), createdMs: num(r.created_ms),
});
const contractInterfaceFrom = (r: Row): ContractInterfaceRow => ({
  id: str(r.id), organizationId: str(r.organization_id), type: r.type as ContractInterfaceRow['type'],
  address: str(r.address), addressKey: str(r.address_key), interface: str(r.interface),
  label: str(r.label), notes: str(r.notes), createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const allowlistFrom = (r: Row): IpAllowlistRow => ({
  organizationId: str(r.organization_id), publicKey: str(r.public_key), enabled: r.enabled === true,
  onEvaluationError: r.on_evaluation_error === 'ALLOW' ? 'ALLOW' : 'DENY', rules: JSON.parse(str(r.rules)) as IpAllowlistRule[],
  createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const deliveryFrom = (r: Row): WebhookDeliveryRow => ({
  id: str(r.id), organizationId: str(r.organization_id), activityId: str(r.activity_id), eventType: str(r.event_type),
  url: str(r.url), body: str(r.body), attempts: num(r.attempts),
  nextAttemptMs: num(r.next_attempt_ms), createdMs: num(r.created_ms),
});
/** The condition (after `word`) that keeps the deliveries of one kind, or none for all. */
const ofKind = (kind: DeliveryKind | undefined, word: 'AND' | 'WHERE'): string =>
  (kind === undefined ? '' : ` ${word} ${kind === 'email' ? '' : 'NOT '}${MAIL_ROW}`);
const policyFrom = (r: Row): PolicyRow => ({
  id: str(r.id), organizationId: str(r.organization_id), name: str(r.name),
  effect: r.effect as PolicyRow['effect'], condition: str(r.condition), consensus: str(r.consensus),
  time: str(r.time), notes: str(r.notes), createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const pendingFrom = (r: Row): PendingActivityRow => ({
  activityId: str(r.activity_id), organizationId: str(r.organization_id), fingerprint: str(r.fingerprint),
  path: str(r.path), userId: str(r.user_id), credentialId: str(r.credential_id), createdMs: num(r.created_ms),
});
const voteFrom = (r: Row): VoteRow => ({
  id: str(r.id), activityId: str(r.activity_id), organizationId: str(r.organization_id),
  userId: str(r.user_id), selection: r.selection as VoteRow['selection'],
  record: JSON.parse(str(r.record)) as Record<string, unknown>, createdMs: num(r.created_ms),
});
const voteRequestFrom = (r: Row): VoteRequestRow => ({
  fingerprint: str(r.fingerprint), organizationId: str(r.organization_id), activityId: str(r.activity_id), createdMs: num(r.created_ms),
});
const evaluationFrom = (r: Row): PolicyEvaluationRow => ({
  id: str(r.id), activityId: str(r.activity_id), organizationId: str(r.organization_id), voteId: str(r.vote_id),
  evaluations: JSON.parse(str(r.evaluations)) as PolicyEvaluationRow['evaluations'], createdMs: num(r.created_ms),
});
const activityFrom = (r: Row): ActivityRow => ({
  id: str(r.id), organizationId: str(r.organization_id), type: str(r.type), status: str(r.status),
  fingerprint: str(r.fingerprint), requestMs: num(r.request_ms), createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
  record: JSON.parse(str(r.record)) as Record<string, unknown>,
  recordJson: str(r.record),
  logIndexes: logIndexesFrom(r.log_indexes as string),
});
const pkFrom = (r: Row): PrivateKeyRow => ({
  id: str(r.id), organizationId: str(r.organization_id), name: str(r.name), curve: str(r.curve),
  publicKey: str(r.public_key), addresses: JSON.parse(str(r.addresses)) as AddressEntry[], sealed: bytes(r.sealed),
  imported: r.imported === true, exported: r.exported === true, createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const walletFrom = (r: Row): WalletRow => ({
  id: str(r.id), organizationId: str(r.organization_id), name: str(r.name), sealedMnemonic: bytes(r.sealed_mnemonic),
  imported: r.imported === true, exported: r.exported === true, createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const accountFrom = (r: Row): WalletAccountRow => ({
  id: str(r.id), organizationId: str(r.organization_id), walletId: str(r.wallet_id), curve: str(r.curve),
  pathFormat: str(r.path_format), path: canonicalPath(str(r.path)), addressFormat: str(r.address_format), address: str(r.address),
  publicKey: str(r.public_key), sealed: bytes(r.sealed), name: strOrNull(r.name),
  exported: r.exported === true, createdMs: num(r.created_ms), updatedMs: num(r.updated_ms),
});
const targetFrom = (r: Row): ImportTargetRow => ({
  id: str(r.id), organizationId: str(r.organization_id), userId: str(r.user_id), kind: r.kind as ImportTargetRow['kind'],
  sealed: bytes(r.sealed), createdMs: num(r.created_ms), expiresMs: num(r.expires_ms),
});

/** Builds a parameter list: `p(value)` appends it and gives its placeholder ($1, $2, …). */
function params(): { args: unknown[]; p: (v: unknown) => string } {
  const args: unknown[] = [];
  return { args, p: (v) => { args.push(v); return `$${args.length}`; } };
}

/** Tables paged by seq (paging.ts); never taken from input. */
type SeqTable = 'activities' | 'wallet_accounts' | 'org_secrets';

/**
 * paging.ts on PostgreSQL: an organization's rows newest first by seq; afterId = the older rows
 * after that row, beforeId = the newer rows just before it (still newest first); undefined when
 * a cursor names no row of the organization.
 */
async function pageBySeq(q: Queries, table: SeqTable, organizationId: string, page: ListPage, filter?: (p: (v: unknown) => string) => string[]): Promise<Row[] | undefined> {
  const { args, p } = params();
  const where = [`organization_id = ${p(organizationId)}`, ...(filter ? filter(p) : [])];
  for (const [cursor, op] of [[page.afterId, '<'], [page.beforeId, '>']] as const) {
    if (cursor === undefined) continue;
    const r = await q.get(`SELECT seq FROM ${table} WHERE organization_id = $1 AND id = $2`, [organizationId, cursor]);
    if (!r) return undefined;
    where.push(`seq ${op} ${p(r.seq)}`);
  }
  const ascending = page.beforeId !== undefined && page.afterId === undefined;
  const rows = await q.all(`SELECT * FROM ${table} WHERE ${where.join(' AND ')} ORDER BY seq ${ascending ? 'ASC' : 'DESC'} LIMIT ${p(page.limit)}`, args);
  if (ascending) rows.reverse();
  return rows;
}

// Children before parents (foreign keys); activities are kept.
const ORG_DELETE = [
  'DELETE FROM tag_members WHERE tag_id IN (SELECT id FROM tags WHERE organization_id = $1)',
  'DELETE FROM api_keys WHERE organization_id = $1',
  'DELETE FROM authenticators WHERE organization_id = $1',
  'DELETE FROM oauth_providers WHERE organization_id = $1',
  'DELETE FROM otps WHERE organization_id = $1',
  'DELETE FROM verified_contacts WHERE organization_id = $1',
  'DELETE FROM disabled_auth_flows WHERE organization_id = $1',
  'DELETE FROM users WHERE organization_id = $1',
  'DELETE FROM tags WHERE organization_id = $1',
  'DELETE FROM features WHERE organization_id = $1',
  'DELETE FROM wallet_accounts WHERE organization_id = $1',
  'DELETE FROM wallets WHERE organization_id = $1',
  'DELETE FROM private_key_addresses WHERE organization_id = $1',
  'DELETE FROM private_keys WHERE organization_id = $1',
  'DELETE FROM import_targets WHERE organization_id = $1',
  'DELETE FROM webhook_endpoints WHERE organization_id = $1',
  'DELETE FROM ip_allowlists WHERE organization_id = $1',
  'DELETE FROM smart_contract_interfaces WHERE organization_id = $1',
  'DELETE FROM org_secrets WHERE organization_id = $1',
  'DELETE FROM invitations WHERE organization_id = $1',
  'DELETE FROM send_transactions WHERE organization_id = $1',
  'DELETE FROM policies WHERE organization_id = $1',
  'DELETE FROM pending_activities WHERE organization_id = $1',
  'DELETE FROM organizations WHERE id = $1',
];

/**
 * list_suborgs filters (all but OAUTH_IDENTITY), given the value's placeholder. A parameter
 * folded with lower() is taken as COLLATE "C", as the columns are, so that both sides fold ASCII
 * letters only, as SQLite's lower() does (the database's own locale might fold more).
 */
const SUBORG_FILTER: Record<Exclude<SubOrgFilter['type'], 'OAUTH_IDENTITY'>, (v: string) => string> = {
  NAME: (v) => `o.name = ${v}`,
  USERNAME: (v) => `EXISTS (SELECT 1 FROM users u WHERE u.organization_id = o.id AND u.name = ${v})`,
  EMAIL: (v) => `EXISTS (SELECT 1 FROM users u WHERE u.organization_id = o.id AND lower(u.email) = lower(${v} COLLATE "C"))`,
  PHONE_NUMBER: (v) => `EXISTS (SELECT 1 FROM users u WHERE u.organization_id = o.id AND u.phone_number = ${v})`,
  PUBLIC_KEY: (v) => `EXISTS (SELECT 1 FROM api_keys k WHERE k.organization_id = o.id AND k.public_key = lower(${v} COLLATE "C"))`,
  CREDENTIAL_ID: (v) => `EXISTS (SELECT 1 FROM authenticators p WHERE p.organization_id = o.id AND p.credential_id = ${v})`,
  VERIFIED_EMAIL: (v) => `EXISTS (SELECT 1 FROM users u JOIN verified_contacts c ON c.user_id = u.id AND c.contact_type = 'EMAIL' AND lower(c.contact) = lower(u.email)
      WHERE u.organization_id = o.id AND lower(u.email) = lower(${v} COLLATE "C"))`,
  VERIFIED_PHONE_NUMBER: (v) => `EXISTS (SELECT 1 FROM users u JOIN verified_contacts c ON c.user_id = u.id AND c.contact_type = 'PHONE_NUMBER' AND c.contact = u.phone_number
      WHERE u.organization_id = o.id AND u.phone_number = ${v})`,
  WALLET_ACCOUNT_ADDRESS: (v) => `EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.organization_id = o.id AND a.address_key = ${v})`,
};

/** Newest first (created_ms, then id). undefined when a cursor names no sub-organization of the parent. */
async function subOrgIds(q: Queries, parentId: string, filter: SubOrgFilter | undefined, page: { limit: number; beforeId?: string; afterId?: string }): Promise<string[] | undefined> {
  const { args, p } = params();
  const where = [`o.parent_id = ${p(parentId)}`];
  if (filter?.type === 'OAUTH_IDENTITY') {
    where.push(`EXISTS (SELECT 1 FROM oauth_providers x WHERE x.organization_id = o.id AND x.issuer = ${p(filter.issuer)} AND x.subject = ${p(filter.subject)} AND x.audience = ${p(filter.audience)})`);
  } else if (filter) {
    where.push(SUBORG_FILTER[filter.type](p(filter.type === 'WALLET_ACCOUNT_ADDRESS' ? filter.addressKey : filter.value)));
  }
  let ascending = false;
  const cursor = page.afterId ?? page.beforeId;
  if (cursor !== undefined) {
    const c = await q.get('SELECT created_ms, id FROM organizations WHERE parent_id = $1 AND id = $2', [parentId, cursor]);
    if (!c) return undefined;
    if (page.afterId !== undefined) where.push(`(o.created_ms, o.id) < (${p(c.created_ms)}, ${p(c.id)})`);
    else { where.push(`(o.created_ms, o.id) > (${p(c.created_ms)}, ${p(c.id)})`); ascending = true; }
  }
  const order = ascending ? 'ASC' : 'DESC';
  const rows = await q.all(`SELECT o.id FROM organizations o WHERE ${where.join(' AND ')} ORDER BY o.created_ms ${order}, o.id ${order} LIMIT ${p(page.limit)}`, args);
  const ids = rows.map((r) => str(r.id));
  if (ascending) ids.reverse();
  return ids;
}

/** Newest first. undefined when a cursor names no activity of the organization. */
async function listActivities(q: Queries, lq: ActivityListQuery): Promise<ActivityRow[] | undefined> {
  const rows = await pageBySeq(q, 'activities', lq.organizationId, lq, (p) => {
    const where: string[] = [];
    if (lq.statuses && lq.statuses.length > 0) where.push(`status = ANY(${p(lq.statuses)}::text[])`);
    if (lq.types && lq.types.length > 0) where.push(`type = ANY(${p(lq.types)}::text[])`);
    return where;
  });
  return rows?.map(activityFrom);
}

/** The reads orgData serves: a statement's rows, each with the data version (OrgDataCache). */
type OrgData = <T>(org: string, key: string, sql: string, args: unknown[], from: (rows: Row[]) => T, copy: (v: T) => T) => Promise<T>;

/**
 * `sql` (one row at most, with `id`) as one row always: its columns, or nulls when it found
 * nothing, and the organization's data version ($1) as `data_version`.
 */
const withDataVersion = (sql: string): string => `SELECT x.*, ${dataVersion('$1')} AS data_version FROM (SELECT 1) one LEFT JOIN (${sql}) x ON true`;
/** A key row of the cache, with bytes of its own (kept values are shared and frozen). */
const ownBytes = <R extends { sealed: Uint8Array }>(r: R | undefined): R | undefined => (r === undefined ? undefined : { ...r, sealed: r.sealed.slice() });

function keyStore(q: Queries, orgData: OrgData): KeyStore {
  // signWith's lookups, checked by the organization's data version (OrgDataCache)
  const pkGet = (org: string, id: string) => orgData(org, `private-key\u0000${org}\u0000${id}`,
    withDataVersion('SELECT * FROM private_keys WHERE organization_id = $1 AND id = $2'), [org, id],
    (rows) => (rows[0]!.id === null ? undefined : pkFrom(rows[0]!)), ownBytes);
  return {
    privateKeys: {
      get: pkGet,
      byAddress: (org, address) => orgData(org, `private-key-address\u0000${org}\u0000${addressKey(address)}`,
        withDataVersion(`SELECT k.* FROM private_key_addresses a JOIN private_keys k ON k.id = a.private_key_id
          WHERE a.organization_id = $1 AND a.address_key = $2 ORDER BY k.seq LIMIT 1`), [org, addressKey(address)],
        (rows) => (rows[0]!.id === null ? undefined : pkFrom(rows[0]!)), ownBytes),
      list: async (org) => (await q.all('SELECT * FROM private_keys WHERE organization_id = $1 ORDER BY seq DESC', [org])).map(pkFrom),
      insert: async (k) => {
        await q.run(`INSERT INTO private_keys (id, organization_id, name, curve, public_key, addresses, sealed, imported, exported, created_ms, updated_ms)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [k.id, k.organizationId, k.name, k.curve, k.publicKey, JSON.stringify(k.addresses), buf(k.sealed), k.imported, k.exported, k.createdMs, k.updatedMs]);
        for (const a of new Set(k.addresses.map((x) => addressKey(x.address)))) {
          await q.run('INSERT INTO private_key_addresses (private_key_id, organization_id, address_key) VALUES ($1, $2, $3)', [k.id, k.organizationId, a]);
        }
      },
      markExported: async (org, id, ms) => { await q.run('UPDATE private_keys SET exported = true, updated_ms = $1 WHERE organization_id = $2 AND id = $3', [ms, org, id]); },
      delete: async (org, id) => {
        await q.run('DELETE FROM private_key_addresses WHERE private_key_id = $1', [id]);
        await q.run('DELETE FROM private_keys WHERE organization_id = $1 AND id = $2', [org, id]);
      },
      count: async (org) => num((await q.get('SELECT COUNT(*) AS n FROM private_keys WHERE organization_id = $1', [org]))!.n),
    },
    wallets: {
      get: async (org, id) => { const r = await q.get('SELECT * FROM wallets WHERE organization_id = $1 AND id = $2', [org, id]); return r ? walletFrom(r) : undefined; },
      list: async (org) => (await q.all('SELECT * FROM wallets WHERE organization_id = $1 ORDER BY seq DESC', [org])).map(walletFrom),
      insert: async (w) => {
        await q.run(`INSERT INTO wallets (id, organization_id, name, sealed_mnemonic, imported, exported, created_ms, updated_ms)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [w.id, w.organizationId, w.name, buf(w.sealedMnemonic), w.imported, w.exported, w.createdMs, w.updatedMs]);
      },
      rename: async (org, id, name, ms) => { await q.run('UPDATE wallets SET name = $1, updated_ms = $2 WHERE organization_id = $3 AND id = $4', [name, ms, org, id]); },
      markExported: async (org, id, ms) => { await q.run('UPDATE wallets SET exported = true, updated_ms = $1 WHERE organization_id = $2 AND id = $3', [ms, org, id]); },
      delete: async (org, id) => {
        await q.run('DELETE FROM wallet_accounts WHERE organization_id = $1 AND wallet_id = $2', [org, id]);
        await q.run('DELETE FROM wallets WHERE organization_id = $1 AND id = $2', [org, id]);
      },
      count: async (org) => num((await q.get('SELECT COUNT(*) AS n FROM wallets WHERE organization_id = $1', [org]))!.n),
    },
    accounts: {
      get: async (org, id) => { const r = await q.get('SELECT * FROM wallet_accounts WHERE organization_id = $1 AND id = $2', [org, id]); return r ? accountFrom(r) : undefined; },
      byAddress: (org, address) => orgData(org, `account-address\u0000${org}\u0000${addressKey(address)}`,
        withDataVersion('SELECT * FROM wallet_accounts WHERE organization_id = $1 AND address_key = $2 ORDER BY seq LIMIT 1'), [org, addressKey(address)],
        (rows) => (rows[0]!.id === null ? undefined : accountFrom(rows[0]!)), ownBytes),
      inWalletByAddress: async (org, w, address) => {
        const r = await q.get('SELECT * FROM wallet_accounts WHERE organization_id = $1 AND wallet_id = $2 AND address_key = $3 ORDER BY seq LIMIT 1', [org, w, addressKey(address)]);
        return r ? accountFrom(r) : undefined;
      },
      inWalletByPath: async (org, w, path) => (await q.all(`SELECT * FROM wallet_accounts WHERE organization_id = $1 AND wallet_id = $2 AND ${PATH_SQL} = $3 ORDER BY seq`, [org, w, path])).map(accountFrom),
      list: async (org, walletId, page) => (await pageBySeq(q, 'wallet_accounts', org, page, walletId === undefined ? undefined : (p) => [`wallet_id = ${p(walletId)}`]))?.map(accountFrom),
      listAll: async (org, w) => (await q.all('SELECT * FROM wallet_accounts WHERE organization_id = $1 AND wallet_id = $2 ORDER BY seq', [org, w])).map(accountFrom),
      insert: async (a) => {
        await q.run(`INSERT INTO wallet_accounts (id, organization_id, wallet_id, curve, path_format, path, address_format, address, address_key,
          public_key, sealed, name, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [a.id, a.organizationId, a.walletId, a.curve, a.pathFormat, a.path, a.addressFormat, a.address, addressKey(a.address),
          a.publicKey, buf(a.sealed), a.name, a.createdMs, a.updatedMs]);
      },
      markExported: async (org, id, ms) => { await q.run('UPDATE wallet_accounts SET exported = true, updated_ms = $1 WHERE organization_id = $2 AND id = $3', [ms, org, id]); },
      delete: async (org, id) => { await q.run('DELETE FROM wallet_accounts WHERE organization_id = $1 AND id = $2', [org, id]); },
      count: async (org) => num((await q.get('SELECT COUNT(*) AS n FROM wallet_accounts WHERE organization_id = $1', [org]))!.n),
    },
    importTargets: {
      listValid: async (org, user, kind, now) => (await q.all(`SELECT * FROM import_targets WHERE organization_id = $1 AND user_id = $2 AND kind = $3 AND expires_ms > $4
        ORDER BY created_ms DESC, id`, [org, user, kind, now])).map(targetFrom),
      insert: async (t) => {
        await q.run('INSERT INTO import_targets (id, organization_id, user_id, kind, sealed, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [t.id, t.organizationId, t.userId, t.kind, buf(t.sealed), t.createdMs, t.expiresMs]);
      },
      delete: async (id) => (await q.run('DELETE FROM import_targets WHERE id = $1', [id])) > 0,
      purgeExpired: async (now) => { await q.run('DELETE FROM import_targets WHERE expires_ms <= $1', [now]); },
    },
    secrets: {
      get: async (name) => {
        const r = await q.get('SELECT * FROM server_secrets WHERE name = $1', [name]);
        return r ? { sealed: bytes(r.sealed), publicKey: str(r.public_key) } : undefined;
      },
      insert: async (name, sealed, publicKey, ms) => {
        await q.run('INSERT INTO server_secrets (name, sealed, public_key, created_ms) VALUES ($1, $2, $3, $4)', [name, buf(sealed), publicKey, ms]);
      },
    },
  };
}

/**
 * The data version of the organization `org` names (a parameter): the versions of the scopes 'all'
 * and 'data:<organization>' (PostgreSQL migration 6: its private keys and their addresses, wallet
 * accounts, features and webhook endpoints) as one text.
 */
const dataVersion = (org: string): string =>
  `(coalesce((SELECT n FROM auth_versions WHERE scope = 'all'), 0) || '/' || coalesce((SELECT n FROM auth_versions WHERE scope = 'data:' || ${org}), 0))`;

/**
 * A stamp context's auth version (the versions of its scopes 'all', 'org:<organization>' and
 * 'pk:<public key>', PostgreSQL migration 5, as one text; 0 for a scope that has not changed since)
 * and its organization's data version ($1 the public key, $2 the organization) as columns, 'all'
 * read once: what the read of a stamp context's rows returns with them.
 */
const VERSIONS = `SELECT v.a || '/' || v.o || '/' || v.p AS version, v.a || '/' || v.d AS data FROM (SELECT
  coalesce((SELECT n FROM auth_versions WHERE scope = 'all'), 0) AS a, coalesce((SELECT n FROM auth_versions WHERE scope = 'org:' || $2), 0) AS o,
  coalesce((SELECT n FROM auth_versions WHERE scope = 'pk:' || $1), 0) AS p, coalesce((SELECT n FROM auth_versions WHERE scope = 'data:' || $2), 0) AS d) v`;

/**
 * The same two versions from the four scopes' rows ($1 the scopes: versionScopes), read by one
 * index scan (cheaper for PostgreSQL than four subqueries): what a unit that kept a stamp context
 * reads to check it (VERSIONS's text). A group's checks are the same statement over all their
 * scopes (MERGED_READS).
 */
export const VERSION_ROWS = 'SELECT scope, n FROM auth_versions WHERE scope = ANY($1::text[])';
/** The scopes of a stamp context's versions, in VERSIONS's order. */
const versionScopes = (pk: string, org: string): string[] => ['all', `org:${org}`, `pk:${pk}`, `data:${org}`];

/**
 * An organization's log head with its row lock (log.takeHead). It changes no data and locks a row
 * no merged read reads: the members' merged statements may be moved across it (postgres.ts).
 */
export const TAKE_HEAD = 'SELECT * FROM log_heads WHERE organization_id = $1 FOR UPDATE';

/** An activity by its request (the idempotency lookup every submit makes). */
export const BY_REQUEST = 'SELECT * FROM activities WHERE request_ms = $1 AND fingerprint = $2';

/**
 * What a write that assumed a read instead of sending it (postgres.ts Predictions) checks in its
 * transaction, with its writes: kmas_expect (PostgreSQL migration 7) fails the transaction with
 * the SQLSTATE named when the assumption no longer holds.
 * - versions: VERSION_ROWS's scopes ($1) have these versions ($2, 0 for no row);
 * - request: BY_REQUEST finds nothing (after the request's lock, like the read it stands for);
 * - head: the organization's log head ($1) has this size ($2), and its row lock is taken as
 *   TAKE_HEAD takes it (a head moved by a transaction this one waited for is seen as moved).
 */
export const EXPECT_VERSIONS = `SELECT kmas_expect(NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::bigint[]) AS e(scope, n)
  LEFT JOIN auth_versions v ON v.scope = e.scope WHERE coalesce(v.n, 0) <> e.n), 'KM001')`;
export const EXPECT_NO_REQUEST = "SELECT kmas_expect(NOT EXISTS (SELECT 1 FROM activities WHERE request_ms = $1 AND fingerprint = $2), 'KM002')";
export const EXPECT_HEAD = "SELECT kmas_expect(count(*) = 1, 'KM003') FROM (SELECT 1 FROM log_heads WHERE organization_id = $1 AND size = $2 FOR UPDATE) h";

/**
 * A read that the members of a group ask for in one message, each with its own values, sent as one
 * statement over arrays of their values (postgres.ts readsMerged): `sql` the merged text, `values`
 * its parameters from the members' parameters, `mine` a member's rows of the merged result (what
 * its own statement would have returned).
 */
export interface MergedRead {
  sql: string;
  values(args: unknown[][]): unknown[];
  mine(rows: Row[], args: unknown[]): Row[];
}

/** The reads every stamped submit makes, by their text: the version check and the idempotency lookup. */
export const MERGED_READS: ReadonlyMap<string, MergedRead> = new Map<string, MergedRead>([
  [VERSION_ROWS, {
    sql: VERSION_ROWS,
    values: (args) => [[...new Set(args.flatMap(([scopes]) => scopes as string[]))]],
    mine: (rows, [scopes]) => {
      const mine = new Set(scopes as string[]);
      return rows.filter((r) => mine.has(r.scope as string));
    },
  }],
  [BY_REQUEST, {
    // a lookup by the unique index per pair (LIMIT keeps the subquery a parameterized index scan:
    // joined plainly, the generic plan hashes a scan of the whole table)
    sql: 'SELECT a.* FROM unnest($1::bigint[], $2::text[]) AS k(request_ms, fingerprint), LATERAL (SELECT * FROM activities WHERE request_ms = k.request_ms AND fingerprint = k.fingerprint LIMIT 1) a',
    values: (args) => [args.map((a) => a[0]), args.map((a) => a[1])],
    mine: (rows, [ms, fp]) => rows.filter((r) => String(r.request_ms) === String(ms) && r.fingerprint === fp),
  }],
]);

function versionsFrom(rows: Row[], pk: string, org: string): { version: string; data: string } {
  const [all, o, p, d] = versionScopes(pk, org).map((scope) => String(rows.find((r) => r.scope === scope)?.n ?? 0));
  return { version: `${all}/${o}/${p}`, data: `${all}/${d}` };
}

/**
 * What a node read and may serve again while a version read in the serving transaction shows its
 * rows unchanged, shared by the units of one Db; at most `limit` entries (the oldest goes first).
 *
 * Versions come from triggers (PostgreSQL migrations 5 and 6): every change of a row a scope
 * covers sets that scope's version to a new value of a sequence, in the changing transaction,
 * whoever makes the change. A sequence value is never handed out twice, even when the transaction
 * that took it rolls back, so a version stands for one state of the rows: an entry stored with the
 * version read in the same statement as its rows is served only to a unit that reads the same
 * version, and that unit sees the same rows a fresh read would. Values are frozen: callers share them.
 */
export class VersionedCache<T> {
  readonly #entries = new Map<string, { version: string; value: T }>();
  constructor(private readonly limit = 10_000) {}

  get(key: string): { version: string; value: T } | undefined {
    return this.#entries.get(key);
  }

  set(key: string, version: string, value: T): void {
    deepFreeze(value);
    this.#entries.delete(key);
    this.#entries.set(key, { version, value });
    if (this.#entries.size > this.limit) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

/**
 * Stamp contexts (apiKeys.stampContext) a node read, keyed by public key and organization, checked
 * against the auth version of their rows (scopes 'all', 'org:<organization>', 'pk:<public key>'):
 * no node serves a revoked key, a changed user or allowlist, or a deleted organization once the
 * change has committed (the next unit reads the new version), and a unit that made the change
 * itself sees its own new version.
 */
export type StampContextCache = VersionedCache<StampContext>;

/**
 * An organization's signing keys (by id or address) and webhook targets a node read, checked
 * against its data version (scopes 'all' and 'data:<organization>', migration 6). A unit serves
 * one only after its stamp check read the data version (in the same statement as the auth version:
 * no statement of its own), and only while nothing in the unit has written one of the tables the
 * scope covers (Queries.dataWrites): the unit then sees what it would read, as of that check.
 */
export type OrgDataCache = VersionedCache<unknown>;

/** The caches of one Db (postgres.ts), shared by its units. */
export interface NodeCaches {
  stampContexts: StampContextCache;
  orgData: OrgDataCache;
}

export function nodeCaches(): NodeCaches {
  return { stampContexts: new VersionedCache<StampContext>(), orgData: new VersionedCache<unknown>() };
}

function deepFreeze(v: unknown): void {
  // a typed array with elements cannot be frozen: kept key rows hand out copies of theirs (ownBytes)
  if (typeof v !== 'object' || v === null || Object.isFrozen(v) || ArrayBuffer.isView(v)) return;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
}

/** The VALUES list of `count` rows of `width` parameters each: ($1, …, $width), ($width+1, …), … */
export const valueRows = (count: number, width: number): string =>
  Array.from({ length: count }, (_, i) => `(${Array.from({ length: width }, (_, c) => `$${i * width + c + 1}`).join(', ')})`).join(', ');

/**
 * One organization's log appends, in index order (each entry the values of its log_entries row,
 * the organization first), and the head after the last, as one statement: the entries' rows and
 * the head's (takeHead created it, or this does). A group's appends to one organization are one
 * statement and one new version of the head's row, not one of each per activity.
 */
export function logAppend(entries: readonly unknown[][], head: LogHeadRow): { sql: string; args: unknown[] } {
  const h = entries.length * 6;
  return {
    sql: `WITH entry AS (INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms, nodes) VALUES ${valueRows(entries.length, 6)})
          INSERT INTO log_heads (organization_id, size, frontier, root, updated_ms) VALUES ($1, $${h + 1}, $${h + 2}, $${h + 3}, $${h + 4})
          ON CONFLICT (organization_id) DO UPDATE SET size = excluded.size, frontier = excluded.frontier, root = excluded.root, updated_ms = excluded.updated_ms`,
    args: [...entries.flat(), head.size, buf(head.frontier), buf(head.root), head.updatedMs],
  };
}

/** The repositories over one unit of work's queries. */
const checkpointFrom = (r: Row): LogCheckpointRow => ({
  organizationId: str(r.organization_id), size: num(r.size), root: bytes(r.root), note: str(r.note), createdMs: num(r.created_ms),
});

export function pgRepositories(q: Queries, caches?: NodeCaches): Repositories {
  const one = async <T>(sql: string, args: unknown[], from: (r: Row) => T): Promise<T | undefined> => {
    const r = await q.get(sql, args);
    return r ? from(r) : undefined;
  };
  const many = async <T>(sql: string, args: unknown[], from: (r: Row) => T): Promise<T[]> => (await q.all(sql, args)).map(from);
  const exec = async (sql: string, args: unknown[]): Promise<void> => { await q.run(sql, args); };
  const changed = async (sql: string, args: unknown[]): Promise<boolean> => (await q.run(sql, args)) > 0;
  // a write nobody reads the result of: sent with the unit's next statement (Queries.deferred)
  const later = async (sql: string, args: unknown[]): Promise<void> => { if (q.deferred) q.deferred(sql, args); else await q.run(sql, args); };
  // the data version of each organization this member's stamp check reads (VERSIONS), once read
  const dataVersions = new Map<string, Promise<string | undefined>>();
  /**
   * A read of an organization's data (OrgDataCache). `sql` returns one row at least, each with the
   * organization's data version as `data_version`, read in the same statement (so the value is
   * kept with the version of the state it was read from). When the node kept a value and this
   * member's stamp check reads the organization's data version (asked for in the same turn, it may
   * not have returned yet: wait for it), the kept value is served if the versions match and nothing
   * in the unit has written the data's tables (a write of the unit's own would be in neither).
   * Otherwise read now: a read the stamp check's version turned down costs a round trip of its own.
   */
  const orgData = async <T>(org: string, key: string, sql: string, args: unknown[], from: (rows: Row[]) => T, copy: (v: T) => T): Promise<T> => {
    const known = dataVersions.get(org);
    const kept = caches?.orgData.get(key);
    if (known !== undefined && kept !== undefined && q.dataWrites?.() === 0) {
      const version = await known;
      if (version === kept.version && q.dataWrites() === 0) {
        dbOrgData.inc({ source: 'cached' });
        return copy(kept.value as T);
      }
    }
    const rows = await q.all(sql, args);
    const value = from(rows);
    dbOrgData.inc({ source: 'read' });
    caches?.orgData.set(key, str(rows[0]!.data_version), value);
    return copy(value);
  };
  const keys = keyStore(q, orgData);

  return {
    organizations: {
      get: (id) => one('SELECT * FROM organizations WHERE id = $1', [id], orgFrom),
      insert: (o) => exec('INSERT INTO organizations (id, name, parent_id, root_quorum_threshold, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6)',
        [o.id, o.name, o.parentId, o.rootQuorumThreshold, o.createdMs, o.updatedMs]),
      childrenOf: (id) => many('SELECT * FROM organizations WHERE parent_id = $1 ORDER BY created_ms, id', [id], orgFrom),
      roots: () => many('SELECT * FROM organizations WHERE parent_id IS NULL ORDER BY created_ms, id', [], orgFrom),
      touch: (id, ms) => exec('UPDATE organizations SET updated_ms = $1 WHERE id = $2', [ms, id]),
      setRootQuorumThreshold: (id, threshold, ms) => exec('UPDATE organizations SET root_quorum_threshold = $1, updated_ms = $2 WHERE id = $3', [threshold, ms, id]),
      rename: (id, name, ms) => exec('UPDATE organizations SET name = $1, updated_ms = $2 WHERE id = $3', [name, ms, id]),
      disableFlows: async (id, flags) => {
        for (const f of flags) await q.run('INSERT INTO disabled_auth_flows (organization_id, flag) VALUES ($1, $2) ON CONFLICT DO NOTHING', [id, f]);
      },
      disabledFlows: async (id) => (await q.all('SELECT flag FROM disabled_auth_flows WHERE organization_id = $1 ORDER BY flag', [id])).map((r) => str(r.flag)),
      count: async () => num((await q.get('SELECT COUNT(*) AS n FROM organizations'))!.n),
      subOrgIds: (parentId, filter, page) => subOrgIds(q, parentId, filter, page),
      delete: async (id) => { for (const sql of ORG_DELETE) await q.run(sql, [id]); },
    },
    users: {
      get: (org, id) => one('SELECT * FROM users WHERE organization_id = $1 AND id = $2', [org, id], userFrom),
      list: (org) => many('SELECT * FROM users WHERE organization_id = $1 ORDER BY created_ms, id', [org], userFrom),
      insert: (u) => exec('INSERT INTO users (id, organization_id, name, email, phone_number, is_root, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [u.id, u.organizationId, u.name, u.email, u.phoneNumber, u.isRoot, u.createdMs, u.updatedMs]),
      update: (u) => exec('UPDATE users SET name = $1, email = $2, phone_number = $3, is_root = $4, updated_ms = $5 WHERE organization_id = $6 AND id = $7',
        [u.name, u.email, u.phoneNumber, u.isRoot, u.updatedMs, u.organizationId, u.id]),
      delete: (org, id) => exec('DELETE FROM users WHERE organization_id = $1 AND id = $2', [org, id]),
      rootUserIds: async (org) => (await q.all('SELECT id FROM users WHERE organization_id = $1 AND is_root ORDER BY created_ms, id', [org])).map((r) => str(r.id)),
    },
    apiKeys: {
      get: (org, id) => one('SELECT * FROM api_keys WHERE organization_id = $1 AND id = $2', [org, id], keyFrom),
      byPublicKey: (pk) => many('SELECT * FROM api_keys WHERE public_key = $1', [pk], keyFrom),
      // One round trip for the four reads of resolvePrincipal (each row as json: the same column
      // names, plain types; json is built faster than jsonb), with the auth versions they were read
      // at. A context read before is served again once a read of the versions (VERSION_ROWS: one
      // index scan instead of four reads made json) finds them unchanged: StampContextCache.
      stampContext: async (pk, org) => {
        // what the organization's data reads of this member wait for (orgData)
        let data!: (version: string | undefined) => void;
        dataVersions.set(org, new Promise((resolve) => { data = resolve; }));
        try {
          const key = `${pk}\u0000${org}`;
          const kept = caches?.stampContexts.get(key);
          if (kept !== undefined) {
            const now = versionsFrom(await q.all(VERSION_ROWS, [versionScopes(pk, org)]), pk, org);
            data(now.data);
            if (now.version === kept.version) {
              dbStampContexts.inc({ source: 'cached' });
              return kept.value;
            }
          }
          const r = (await q.get(`SELECT
            (SELECT coalesce(json_agg(row_to_json(k)), '[]'::json) FROM api_keys k WHERE k.public_key = $1) AS keys,
            (SELECT row_to_json(o) FROM organizations o WHERE o.id = $2) AS organization,
            (SELECT row_to_json(u) FROM api_keys k JOIN users u ON u.organization_id = k.organization_id AND u.id = k.user_id
              WHERE k.organization_id = $2 AND k.public_key = $1) AS usr,
            (SELECT coalesce(json_agg(row_to_json(a)), '[]'::json) FROM ip_allowlists a WHERE a.organization_id = $2 AND a.public_key IN ($1, '')) AS lists,
            v.version, v.data FROM (${VERSIONS}) v`, [pk, org]))!;
          data(str(r.data));
          const lists = (r.lists as Row[]).map(allowlistFrom);
          const context: StampContext = {
            publicKey: pk, organizationId: org, keys: (r.keys as Row[]).map(keyFrom),
            organization: r.organization ? orgFrom(r.organization as Row) : undefined,
            user: r.usr ? userFrom(r.usr as Row) : undefined,
            allowlists: { own: lists.find((l) => l.publicKey === pk), organization: lists.find((l) => l.publicKey === '') },
          };
          dbStampContexts.inc({ source: 'read' });
          // a public key no organization has (any stranger's stamp) is not kept: it would push real ones out
          if (context.keys.length > 0) caches?.stampContexts.set(key, str(r.version), context);
          return context;
        } finally {
          data(undefined); // failed: the data reads read (a promise settles once)
        }
      },
      listByUser: (org, user) => many('SELECT * FROM api_keys WHERE organization_id = $1 AND user_id = $2 ORDER BY created_ms, id', [org, user], keyFrom),
      listByOrganization: (org) => many('SELECT * FROM api_keys WHERE organization_id = $1 ORDER BY created_ms, id', [org], keyFrom),
      insert: (k) => exec(`INSERT INTO api_keys (id, organization_id, user_id, name, public_key, curve, credential_type, expiration_seconds, expires_at_ms, created_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [k.id, k.organizationId, k.userId, k.name, k.publicKey, k.curve, k.credentialType, k.expirationSeconds, k.expiresAtMs, k.createdMs, k.updatedMs]),
      delete: async (org, id) => {
        const gone = await q.get('DELETE FROM api_keys WHERE organization_id = $1 AND id = $2 RETURNING public_key', [org, id]);
        // A key's IP allowlist goes with the last API key of the organization that has its public key.
        if (gone) {
          await q.run(`DELETE FROM ip_allowlists WHERE organization_id = $1 AND public_key = $2 AND public_key != ''
            AND NOT EXISTS (SELECT 1 FROM api_keys WHERE organization_id = $1 AND public_key = $2)`, [org, gone.public_key]);
        }
        return gone !== undefined;
      },
    },
    authenticators: {
      get: (org, id) => one('SELECT * FROM authenticators WHERE organization_id = $1 AND id = $2', [org, id], authenticatorFrom),
      byCredentialId: (cred) => many('SELECT * FROM authenticators WHERE credential_id = $1 ORDER BY seq', [cred], authenticatorFrom),
      listByUser: (org, user) => many('SELECT * FROM authenticators WHERE organization_id = $1 AND user_id = $2 ORDER BY seq', [org, user], authenticatorFrom),
      listByOrganization: (org) => many('SELECT * FROM authenticators WHERE organization_id = $1 ORDER BY seq', [org], authenticatorFrom),
      insert: (a) => exec(`INSERT INTO authenticators (id, organization_id, user_id, name, credential_id, public_key, rp_id, aaguid, attestation_type, transports, sign_count, created_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [a.id, a.organizationId, a.userId, a.name, a.credentialId, a.publicKey, a.rpId, a.aaguid, a.attestationType, JSON.stringify(a.transports), a.signCount, a.createdMs, a.updatedMs]),
      delete: (org, id) => exec('DELETE FROM authenticators WHERE organization_id = $1 AND id = $2', [org, id]),
      advanceSignCount: (id, n) => changed('UPDATE authenticators SET sign_count = $1 WHERE id = $2 AND sign_count < $1', [n, id]),
    },
    tags: {
      get: (org, id) => one('SELECT * FROM tags WHERE organization_id = $1 AND id = $2', [org, id], tagFrom),
      byName: (org, type, name) => one('SELECT * FROM tags WHERE organization_id = $1 AND type = $2 AND name = $3', [org, type, name], tagFrom),
      list: (org, type) => many('SELECT * FROM tags WHERE organization_id = $1 AND type = $2 ORDER BY created_ms, id', [org, type], tagFrom),
      insert: (t) => exec('INSERT INTO tags (id, organization_id, name, type, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6)',
        [t.id, t.organizationId, t.name, t.type, t.createdMs, t.updatedMs]),
      update: (t) => exec('UPDATE tags SET name = $1, updated_ms = $2 WHERE organization_id = $3 AND id = $4', [t.name, t.updatedMs, t.organizationId, t.id]),
      delete: (org, id) => exec('DELETE FROM tags WHERE organization_id = $1 AND id = $2', [org, id]),
      tagsOf: async (member, type) => (type === undefined
        ? await q.all('SELECT m.tag_id FROM tag_members m JOIN tags t ON t.id = m.tag_id WHERE m.member_id = $1 ORDER BY t.created_ms, t.id', [member])
        : await q.all('SELECT m.tag_id FROM tag_members m JOIN tags t ON t.id = m.tag_id WHERE m.member_id = $1 AND t.type = $2 ORDER BY t.created_ms, t.id', [member, type])
      ).map((r) => str(r.tag_id)),
      members: async (tag) => (await q.all('SELECT member_id FROM tag_members WHERE tag_id = $1 ORDER BY member_id', [tag])).map((r) => str(r.member_id)),
      memberships: async (org, type) => (await q.all(`SELECT m.tag_id, m.member_id FROM tag_members m JOIN tags t ON t.id = m.tag_id
        WHERE t.organization_id = $1 AND t.type = $2 ORDER BY t.created_ms, t.id, m.member_id`, [org, type])).map((r) => ({ tagId: str(r.tag_id), memberId: str(r.member_id) })),
      attach: (tag, member) => exec('INSERT INTO tag_members (tag_id, member_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [tag, member]),
      detach: (tag, member) => exec('DELETE FROM tag_members WHERE tag_id = $1 AND member_id = $2', [tag, member]),
      detachAll: (member) => exec('DELETE FROM tag_members WHERE member_id = $1', [member]),
    },
    privateKeys: {
      exists: async (org, id) => (await q.get('SELECT 1 AS ok FROM private_keys WHERE organization_id = $1 AND id = $2', [org, id])) !== undefined,
    },
    keys,
    features: {
      get: async (org, name) => { const r = await q.get('SELECT value FROM features WHERE organization_id = $1 AND name = $2', [org, name]); return r ? str(r.value) : undefined; },
      list: (org) => many<FeatureRow>('SELECT name, value FROM features WHERE organization_id = $1 ORDER BY name', [org], (r) => ({ name: str(r.name), value: str(r.value) })),
      set: (org, name, value) => exec('INSERT INTO features (organization_id, name, value) VALUES ($1, $2, $3) ON CONFLICT (organization_id, name) DO UPDATE SET value = excluded.value',
        [org, name, value]),
      remove: (org, name) => changed('DELETE FROM features WHERE organization_id = $1 AND name = $2', [org, name]),
    },
    sendTransactions: {
      get: (org, id) => one('SELECT * FROM send_transactions WHERE organization_id = $1 AND id = $2', [org, id], sendTxFrom),
      insert: (t) => exec(`INSERT INTO send_transactions (id, organization_id, activity_id, caip2, from_address, tx_hash, nonce, signed_transaction, status, error, block_number, attempts, next_check_ms, created_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
      [t.id, t.organizationId, t.activityId, t.caip2, t.fromAddress, t.txHash, t.nonce, t.signedTransaction, t.status, t.error,
        t.blockNumber, t.attempts, t.nextCheckMs, t.createdMs, t.updatedMs]),
      due: (nowMs, limit) => many(`SELECT * FROM send_transactions s WHERE s.next_check_ms IS NOT NULL AND s.next_check_ms <= $1 AND ${SENDER_TURN} ORDER BY s.next_check_ms, s.seq LIMIT $2`, [nowMs, limit], sendTxFrom),
      claim: (id, dueMs, untilMs) => changed('UPDATE send_transactions SET next_check_ms = $1 WHERE id = $2 AND next_check_ms = $3', [untilMs, id, dueMs]),
      update: (t) => exec('UPDATE send_transactions SET status = $1, error = $2, block_number = $3, attempts = $4, next_check_ms = $5, updated_ms = $6 WHERE id = $7',
        [t.status, t.error, t.blockNumber, t.attempts, t.nextCheckMs, t.updatedMs, t.id]),
      nextDueMs: async () => {
        const r = await q.get(`SELECT MIN(s.next_check_ms) AS ms FROM send_transactions s WHERE s.next_check_ms IS NOT NULL AND ${SENDER_TURN}`);
        return numOrNull(r?.ms) ?? undefined;
      },
      pending: async () => {
        const r = (await q.get('SELECT COUNT(*) AS n, MIN(created_ms) AS oldest FROM send_transactions WHERE next_check_ms IS NOT NULL'))!;
        return { count: num(r.n), oldestMs: numOrNull(r.oldest) ?? undefined };
      },
      highestUsedNonce: async (caip2, from) => {
        const r = await q.get(`SELECT MAX(nonce) AS n FROM send_transactions WHERE caip2 = $1 AND from_address = $2 AND (status IN ('INITIALIZED', 'BROADCASTING', 'INCLUDED') OR block_number IS NOT NULL)`, [caip2, from]);
        return numOrNull(r?.n) ?? undefined;
      },
    },
    invitations: {
      get: (org, id) => one('SELECT * FROM invitations WHERE organization_id = $1 AND id = $2', [org, id], invitationFrom),
      list: (org) => many('SELECT * FROM invitations WHERE organization_id = $1 ORDER BY seq', [org], invitationFrom),
      insert: (r) => exec(`INSERT INTO invitations (id, organization_id, receiver_user_name, receiver_email, receiver_user_tags, access_type, status, sender_user_id, created_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [r.id, r.organizationId, r.receiverUserName, r.receiverEmail, JSON.stringify(r.receiverUserTags), r.accessType, r.status, r.senderUserId, r.createdMs, r.updatedMs]),
      delete: (org, id) => changed('DELETE FROM invitations WHERE organization_id = $1 AND id = $2', [org, id]),
    },
    orgSecrets: {
      get: (org, id) => one('SELECT * FROM org_secrets WHERE organization_id = $1 AND id = $2', [org, id], secretFrom),
      byName: (org, name) => one('SELECT * FROM org_secrets WHERE organization_id = $1 AND name = $2', [org, name], secretFrom),
      list: async (org, page) => (await pageBySeq(q, 'org_secrets', org, page))?.map(secretFrom),
      insert: (r) => exec('INSERT INTO org_secrets (id, organization_id, name, static_properties, sealed, created_ms) VALUES ($1, $2, $3, $4, $5, $6)',
        [r.id, r.organizationId, r.name, JSON.stringify(r.staticProperties), buf(r.sealed), r.createdMs]),
    },
    contractInterfaces: {
      get: (org, id) => one('SELECT * FROM smart_contract_interfaces WHERE organization_id = $1 AND id = $2', [org, id], contractInterfaceFrom),
      list: (org) => many('SELECT * FROM smart_contract_interfaces WHERE organization_id = $1 ORDER BY seq DESC', [org], contractInterfaceFrom),
      byAddress: (org, type, key) => one('SELECT * FROM smart_contract_interfaces WHERE organization_id = $1 AND type = $2 AND address_key = $3', [org, type, key], contractInterfaceFrom),
      insert: (r) => exec(`INSERT INTO smart_contract_interfaces (id, organization_id, type, address, address_key, interface, label, notes, created_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [r.id, r.organizationId, r.type, r.address, r.addressKey, r.interface, r.label, r.notes, r.createdMs, r.updatedMs]),
      delete: (org, id) => changed('DELETE FROM smart_contract_interfaces WHERE organization_id = $1 AND id = $2', [org, id]),
    },
    ipAllowlists: {
      get: (org, pk) => one('SELECT * FROM ip_allowlists WHERE organization_id = $1 AND public_key = $2', [org, pk], allowlistFrom),
      governing: async (org, pk) => {
        const rows = (await q.all("SELECT * FROM ip_allowlists WHERE organization_id = $1 AND public_key IN ($2, '')", [org, pk])).map(allowlistFrom);
        return { own: pk === '' ? undefined : rows.find((r) => r.publicKey === pk), organization: rows.find((r) => r.publicKey === '') };
      },
      set: (r) => exec(`INSERT INTO ip_allowlists (organization_id, public_key, enabled, on_evaluation_error, rules, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (organization_id, public_key) DO UPDATE SET enabled = excluded.enabled, on_evaluation_error = excluded.on_evaluation_error, rules = excluded.rules, updated_ms = excluded.updated_ms`,
      [r.organizationId, r.publicKey, r.enabled, r.onEvaluationError, JSON.stringify(r.rules), r.createdMs, r.updatedMs]),
      remove: (org, pk) => changed('DELETE FROM ip_allowlists WHERE organization_id = $1 AND public_key = $2', [org, pk]),
    },
    webhooks: {
      endpoints: (org) => many('SELECT * FROM webhook_endpoints WHERE organization_id = $1 ORDER BY seq', [org], endpointFrom),
      // one row at least (the feature's value, or null, and the data version), one per endpoint
      activityTargets: (org, feature) => orgData(org, `webhook-targets\u0000${org}\u0000${feature}`,
        `SELECT f.value AS feature_value, f.data_version, e.* FROM (SELECT (SELECT value FROM features WHERE organization_id = $1 AND name = $2) AS value,
          ${dataVersion('$1')} AS data_version) f LEFT JOIN webhook_endpoints e ON e.organization_id = $1 ORDER BY e.seq`, [org, feature], (rows) => {
          const value = rows[0]!.feature_value;
          return { feature: typeof value === 'string' ? value : undefined, endpoints: rows.filter((r) => r.id !== null).map(endpointFrom) };
        }, (v) => ({ feature: v.feature, endpoints: [...v.endpoints] })),
      insertEndpoint: (e) => exec('INSERT INTO webhook_endpoints (id, organization_id, url, name, is_active, subscriptions, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [e.id, e.organizationId, e.url, e.name, e.isActive, JSON.stringify(e.subscriptions), e.createdMs, e.updatedMs]),
      updateEndpoint: (e) => exec('UPDATE webhook_endpoints SET url = $1, name = $2, is_active = $3, subscriptions = $4, updated_ms = $5 WHERE organization_id = $6 AND id = $7',
        [e.url, e.name, e.isActive, JSON.stringify(e.subscriptions), e.updatedMs, e.organizationId, e.id]),
      deleteEndpoint: (org, id) => changed('DELETE FROM webhook_endpoints WHERE organization_id = $1 AND id = $2', [org, id]),
      enqueue: (w) => exec('INSERT INTO webhook_deliveries (id, organization_id, activity_id, event_type, url, body, attempts, next_attempt_ms, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
        [w.id, w.organizationId, w.activityId, w.eventType, w.url, w.body, w.attempts, w.nextAttemptMs, w.createdMs]),
      due: (nowMs, limit, kind) => many(`SELECT * FROM webhook_deliveries WHERE next_attempt_ms <= $1${ofKind(kind, 'AND')} ORDER BY next_attempt_ms, created_ms LIMIT $2`, [nowMs, limit], deliveryFrom),
      claim: (id, dueMs, untilMs, url) => (url === undefined
        ? changed('UPDATE webhook_deliveries SET next_attempt_ms = $1 WHERE id = $2 AND next_attempt_ms = $3', [untilMs, id, dueMs])
        : changed('UPDATE webhook_deliveries SET next_attempt_ms = $1 WHERE id = $2 AND next_attempt_ms = $3 AND url = $4', [untilMs, id, dueMs, url])),
      addressedTo: (url) => many(`SELECT * FROM webhook_deliveries WHERE url = $1${ofKind('webhook', 'AND')} ORDER BY created_ms, id`, [url], deliveryFrom),
      readdress: (id, url) => exec('UPDATE webhook_deliveries SET url = $1 WHERE id = $2', [url, id]),
      remove: (id) => exec('DELETE FROM webhook_deliveries WHERE id = $1', [id]),
      retryAt: (id, attempts, nextMs) => exec('UPDATE webhook_deliveries SET attempts = $1, next_attempt_ms = $2 WHERE id = $3', [attempts, nextMs, id]),
      nextDueMs: async (kind) => numOrNull((await q.get(`SELECT MIN(next_attempt_ms) AS ms FROM webhook_deliveries${ofKind(kind, 'WHERE')}`))?.ms) ?? undefined,
      // SQLite's LIKE ignores the case of ASCII letters: lower() of a "C" column folds just those.
      pending: async () => (await q.all(`SELECT (lower(url) LIKE 'mailto:%') AS mail, COUNT(*) AS n, MIN(created_ms) AS oldest FROM webhook_deliveries GROUP BY 1 ORDER BY 1`))
        .map((r) => ({ kind: r.mail === true ? 'email' as const : 'webhook' as const, count: num(r.n), oldestMs: numOrNull(r.oldest) ?? undefined })),
    },
    oauthProviders: {
      get: (org, id) => one('SELECT * FROM oauth_providers WHERE organization_id = $1 AND id = $2', [org, id], oauthProviderFrom),
      listByUser: (org, user) => many('SELECT * FROM oauth_providers WHERE organization_id = $1 AND user_id = $2 ORDER BY seq', [org, user], oauthProviderFrom),
      listByOrganization: (org) => many('SELECT * FROM oauth_providers WHERE organization_id = $1 ORDER BY seq', [org], oauthProviderFrom),
      byIdentity: (org, iss, aud, sub) => one('SELECT * FROM oauth_providers WHERE organization_id = $1 AND issuer = $2 AND subject = $3 AND audience = $4', [org, iss, sub, aud], oauthProviderFrom),
      insert: (p) => exec('INSERT INTO oauth_providers (id, organization_id, user_id, name, issuer, audience, subject, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
        [p.id, p.organizationId, p.userId, p.name, p.issuer, p.audience, p.subject, p.createdMs, p.updatedMs]),
      delete: (org, id) => exec('DELETE FROM oauth_providers WHERE organization_id = $1 AND id = $2', [org, id]),
    },
    otps: {
      get: (org, id) => one('SELECT * FROM otps WHERE organization_id = $1 AND id = $2', [org, id], otpFrom),
      insert: (o) => exec('INSERT INTO otps (id, organization_id, user_id, otp_type, contact, sealed_code, sealed_target, attempts, expires_ms, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
        [o.id, o.organizationId, o.userId, o.otpType, o.contact, buf(o.sealedCode), o.sealedTarget === null ? null : buf(o.sealedTarget), o.attempts, o.expiresMs, o.createdMs]),
      setAttempts: (id, n) => exec('UPDATE otps SET attempts = $1 WHERE id = $2', [n, id]),
      delete: (id) => changed('DELETE FROM otps WHERE id = $1', [id]),
      deleteByUser: (org, user) => exec('DELETE FROM otps WHERE organization_id = $1 AND user_id = $2', [org, user]),
      deleteExpired: (ms) => exec('DELETE FROM otps WHERE expires_ms < $1', [ms]),
    },
    verifiedContacts: {
      mark: (org, user, type, contact, ms) => exec(`INSERT INTO verified_contacts (organization_id, user_id, contact_type, contact, verified_ms) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (user_id, contact_type) DO UPDATE SET contact = excluded.contact, verified_ms = excluded.verified_ms`, [org, user, type, contact, ms]),
      deleteByUser: (org, user) => exec('DELETE FROM verified_contacts WHERE organization_id = $1 AND user_id = $2', [org, user]),
    },
    verificationTokens: {
      insert: async (id, org, expiresMs) => {
        await q.run('DELETE FROM verification_tokens WHERE expires_ms < $1', [Date.now() - 86_400_000]);
        await q.run('INSERT INTO verification_tokens (id, organization_id, expires_ms, used_ms) VALUES ($1, $2, $3, NULL)', [id, org, expiresMs]);
      },
      use: (id, nowMs) => changed('UPDATE verification_tokens SET used_ms = $1 WHERE id = $2 AND used_ms IS NULL AND expires_ms > $1', [nowMs, id]),
    },
    policies: {
      get: (org, id) => one('SELECT * FROM policies WHERE organization_id = $1 AND id = $2', [org, id], policyFrom),
      list: (org) => many('SELECT * FROM policies WHERE organization_id = $1 ORDER BY seq', [org], policyFrom),
      insert: (p) => exec('INSERT INTO policies (id, organization_id, name, effect, condition, consensus, time, notes, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
        [p.id, p.organizationId, p.name, p.effect, p.condition, p.consensus, p.time, p.notes, p.createdMs, p.updatedMs]),
      update: (p) => exec('UPDATE policies SET name = $1, effect = $2, condition = $3, consensus = $4, time = $5, notes = $6, updated_ms = $7 WHERE organization_id = $8 AND id = $9',
        [p.name, p.effect, p.condition, p.consensus, p.time, p.notes, p.updatedMs, p.organizationId, p.id]),
      delete: (org, id) => changed('DELETE FROM policies WHERE organization_id = $1 AND id = $2', [org, id]),
    },
    pending: {
      byFingerprint: (org, fp) => one('SELECT * FROM pending_activities WHERE organization_id = $1 AND fingerprint = $2', [org, fp], pendingFrom),
      insert: (p) => exec('INSERT INTO pending_activities (activity_id, organization_id, fingerprint, path, user_id, credential_id, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [p.activityId, p.organizationId, p.fingerprint, p.path, p.userId, p.credentialId, p.createdMs]),
      delete: (id) => exec('DELETE FROM pending_activities WHERE activity_id = $1', [id]),
    },
    votes: {
      list: (activityId) => many('SELECT * FROM votes WHERE activity_id = $1 ORDER BY created_ms, seq', [activityId], voteFrom),
      insert: (v) => exec('INSERT INTO votes (id, activity_id, organization_id, user_id, selection, record, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [v.id, v.activityId, v.organizationId, v.userId, v.selection, JSON.stringify(v.record), v.createdMs]),
      request: (fp) => one('SELECT * FROM vote_requests WHERE fingerprint = $1', [fp], voteRequestFrom),
      insertRequest: (v) => exec('INSERT INTO vote_requests (fingerprint, organization_id, activity_id, created_ms) VALUES ($1, $2, $3, $4)',
        [v.fingerprint, v.organizationId, v.activityId, v.createdMs]),
    },
    policyEvaluations: {
      list: (activityId) => many('SELECT * FROM policy_evaluations WHERE activity_id = $1 ORDER BY seq', [activityId], evaluationFrom),
      insert: (e) => exec('INSERT INTO policy_evaluations (id, activity_id, organization_id, vote_id, evaluations, created_ms) VALUES ($1, $2, $3, $4, $5, $6)',
        [e.id, e.activityId, e.organizationId, e.voteId, JSON.stringify(e.evaluations), e.createdMs]),
    },
    log: {
      head: (org) => one('SELECT * FROM log_heads WHERE organization_id = $1', [org], headFrom),
      // SELECT … FOR UPDATE takes the head's row lock and, at READ COMMITTED, returns the latest
      // committed head once a concurrent append has ended: lock and read in one round trip. It
      // writes no new version of the row (the append writes the one new head). An organization's
      // first append finds no row: an upsert that changes nothing creates a size-0 head, or waits
      // for the one a concurrent first append creates, and locks it.
      // no later entries here: the head takeHead gives is sealed (a method: the unit's takeHead, postgres.ts, is the one called)
      seal(org) { return this.takeHead(org); },
      takeHead: async (org) => await one(TAKE_HEAD, [org], headFrom)
        ?? await one(`INSERT INTO log_heads (organization_id, size, frontier, root, updated_ms) VALUES ($1, 0, ''::bytea, sha256(''::bytea), 0)
          ON CONFLICT (organization_id) DO UPDATE SET size = log_heads.size RETURNING *`, [org], headFrom),
      // The entry, the nodes it completes and the new head in one statement, sent with the COMMIT
      // when it is the unit's last (it is, for a stored activity): the head's row lock, taken by
      // takeHead, is then held for one round trip fewer.
      append: async (e, nodes, h) => {
        const entry = [e.organizationId, e.index, e.activityId, buf(e.entry), e.createdMs, buf(foldNodes(e.index, nodes))];
        if (q.appendLog) { q.appendLog(e.organizationId, entry, h); return; }
        const { sql, args } = logAppend([entry], h);
        await later(sql, args);
      },
      insertEntry: (e) => exec('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms) VALUES ($1, $2, $3, $4, $5)',
        [e.organizationId, e.index, e.activityId, buf(e.entry), e.createdMs]),
      entries: (org, start, end) => many('SELECT organization_id, idx, activity_id, entry, created_ms FROM log_entries WHERE organization_id = $1 AND idx >= $2 AND idx < $3 ORDER BY idx', [org, start, end], (r) => ({
        organizationId: str(r.organization_id), index: num(r.idx), activityId: str(r.activity_id), entry: bytes(r.entry), createdMs: num(r.created_ms),
      })),
      indexesOf: async (org, activityId) => logIndexesFrom((await q.get('SELECT log_indexes FROM activities WHERE organization_id = $1 AND id = $2', [org, activityId]))?.log_indexes as string | undefined),
      nodes: async (org, wanted) => {
        if (wanted.length === 0) return [];
        const places = wanted.map((w) => nodePlace(w.level, w.index));
        const rows = await q.all(`SELECT w.n, substring(e.nodes FROM w.o + 1 FOR 32) AS hash FROM unnest($2::bigint[], $3::integer[]) WITH ORDINALITY AS w(i, o, n)
          JOIN log_entries e ON e.organization_id = $1 AND e.idx = w.i WHERE length(e.nodes) >= w.o + 32`, [org, places.map((p) => p.entry), places.map((p) => p.offset)]);
        return rows.map((r) => { const w = wanted[num(r.n) - 1]!; return { level: w.level, index: w.index, hash: bytes(r.hash) }; });
      },
      insertCheckpoint: (c) => exec('INSERT INTO log_checkpoints (organization_id, size, root, note, created_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
        [c.organizationId, c.size, buf(c.root), c.note, c.createdMs]),
      checkpoint: (org, size) => (size === undefined
        ? one('SELECT * FROM log_checkpoints WHERE organization_id = $1 ORDER BY size DESC LIMIT 1', [org], checkpointFrom)
        : one('SELECT * FROM log_checkpoints WHERE organization_id = $1 AND size = $2', [org, size], checkpointFrom)),
    },
    activities: {
      get: (org, id) => one('SELECT * FROM activities WHERE organization_id = $1 AND id = $2', [org, id], activityFrom),
      byFingerprint: (fp, requestMs) => one(BY_REQUEST, [requestMs, fp], activityFrom),
      insert: (a) => later('INSERT INTO activities (id, organization_id, type, status, request_ms, fingerprint, created_ms, updated_ms, record, log_indexes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
        [a.id, a.organizationId, a.type, a.status, a.requestMs, a.fingerprint, a.createdMs, a.updatedMs, a.recordJson ?? JSON.stringify(a.record), (a.logIndexes ?? []).join(',')]),
      update: (a, logIndex) => later(`UPDATE activities SET status = $1, updated_ms = $2, record = $3,
        log_indexes = CASE WHEN $5::text IS NULL THEN log_indexes WHEN log_indexes = '' THEN $5::text ELSE log_indexes || ',' || $5::text END WHERE id = $4`,
        [a.status, a.updatedMs, a.recordJson ?? JSON.stringify(a.record), a.id, logIndex === undefined ? null : String(logIndex)]),
      list: (lq) => listActivities(q, lq),
      count: async (org) => num((await q.get('SELECT COUNT(*) AS n FROM activities WHERE organization_id = $1', [org]))!.n),
    },
  };
}
