/**
 * The SQLite adapter (the embedded default: better-sqlite3, WAL, one file DATA_DIR/kmas.sqlite):
 * migrations, the synchronous repositories over prepared statements and the row cache, behind the
 * unit of work of sqliteUnit.ts.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import type {
  Db, Repositories,
  SendTransactionRow,
  PolicyRow, PendingActivityRow, PolicyEvaluationRow, VoteRow, VoteRequestRow, ActivityListQuery, ActivityRow, ApiKeyRow, AuthenticatorRow, ContractInterfaceRow, InvitationRow, SecretRow, FeatureRow, IpAllowlistRow, IpAllowlistRule, OauthProviderRow, OrganizationRow, OtpRow, Tx, SubOrgFilter, TagRow, TagType, UserRow, WebhookDeliveryRow, WebhookEndpointRow, WebhookSubscription, LogHeadRow,
} from './types.js';
import { MIGRATIONS } from './migrations.js';
import { sqliteKeyStore } from './keys.js';
import { RowCache } from './rowcache.js';
import { pagerOf } from './paging.js';
import type { SqliteSynchronous } from '../config.js';
import { BUSY_TIMEOUT_MS, SqliteUnits, WalSync } from './sqliteUnit.js';
import type { Sync } from './sync.js';
import { LogHeads } from './logHeads.js';
import { foldNodes, headFromNodes, logIndexesFrom, nodePlace } from './logNodes.js';
import { headWithLater, LaterLog } from './logLater.js';
import type { LaterEntry } from './types.js';
import { MAIL_ROW, SENDER_TURN } from './sharedSql.js';

type Row = Record<string, unknown>;

/** Sealed log rows one INSERT statement takes at most (logLater.ts). */
const LOG_ROWS_PER_INSERT = 32;

const orgFrom = (r: Row): OrganizationRow => ({
  id: r.id as string, name: r.name as string, parentId: (r.parent_id as string | null) ?? null,
  rootQuorumThreshold: r.root_quorum_threshold as number, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const userFrom = (r: Row): UserRow => ({
  id: r.id as string, organizationId: r.organization_id as string, name: r.name as string,
  email: (r.email as string | null) ?? null, phoneNumber: (r.phone_number as string | null) ?? null,
  isRoot: r.is_root === 1, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const keyFrom = (r: Row): ApiKeyRow => ({
  id: r.id as string, organizationId: r.organization_id as string, userId: r.user_id as string, name: r.name as string,
  publicKey: r.public_key as string, curve: r.curve as ApiKeyRow['curve'], credentialType: r.credential_type as string,
  expirationSeconds: (r.expiration_seconds as string | null) ?? null, expiresAtMs: (r.expires_at_ms as number | null) ?? null,
  createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const tagFrom = (r: Row): TagRow => ({
  id: r.id as string, organizationId: r.organization_id as string, name: r.name as string, type: r.type as TagType,
  createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const authenticatorFrom = (r: Row): AuthenticatorRow => ({
  id: r.id as string, organizationId: r.organization_id as string, userId: r.user_id as string, name: r.name as string,
  credentialId: r.credential_id as string, publicKey: r.public_key as string, rpId: r.rp_id as string, aaguid: r.aaguid as string,
  attestationType: r.attestation_type as string, transports: JSON.parse(r.transports as string) as string[],
  signCount: r.sign_count as number, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const oauthProviderFrom = (r: Row): OauthProviderRow => ({
  id: r.id as string, organizationId: r.organization_id as string, userId: r.user_id as string, name: r.name as string,
  issuer: r.issuer as string, audience: r.audience as string, subject: r.subject as string,
  createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const otpFrom = (r: Row): OtpRow => ({
  id: r.id as string, organizationId: r.organization_id as string, userId: (r.user_id as string | null) ?? null, otpType: r.otp_type as string,
  contact: r.contact as string, sealedCode: new Uint8Array(r.sealed_code as Buffer),
  sealedTarget: r.sealed_target === null ? null : new Uint8Array(r.sealed_target as Buffer), attempts: r.attempts as number,
  expiresMs: r.expires_ms as number, createdMs: r.created_ms as number,
});
const endpointFrom = (r: Row): WebhookEndpointRow => ({
  id: r.id as string, organizationId: r.organization_id as string, url: r.url as string, name: r.name as string,
  isActive: r.is_active === 1, subscriptions: JSON.parse(r.subscriptions as string) as WebhookSubscription[],
  createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const invitationFrom = (r: Row): InvitationRow => ({
  id: r.id as string, organizationId: r.organization_id as string, receiverUserName: r.receiver_user_name as string,
  receiverEmail: r.receiver_email as string, receiverUserTags: JSON.parse(r.receiver_user_tags as string) as string[],
  accessType: r.access_type as string, status: r.status as InvitationRow['status'], senderUserId: r.sender_user_id as string,
  createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const sendTxFrom = (r: Row): SendTransactionRow => ({
  id: r.id as string, organizationId: r.organization_id as string, activityId: r.activity_id as string, caip2: r.caip2 as string,
  fromAddress: r.from_address as string, txHash: r.tx_hash as string, nonce: (r.nonce as number | null) ?? null, signedTransaction: r.signed_transaction as string,
  status: r.status as SendTransactionRow['status'], error: (r.error as string | null) ?? null, blockNumber: (r.block_number as string | null) ?? null,
  attempts: r.attempts as number, nextCheckMs: (r.next_check_ms as number | null) ?? null, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const secretFrom = (r: Row): SecretRow => ({
  id: r.id as string, organizationId: r.organization_id as string, name: (r.name as string | null) ?? null,
  staticProperties: JSON.parse(r.static_properties as string) as SecretRow['staticProperties'],
  sealed: new Uint8Array(r.sealed as Buffer), createdMs: r.created_ms as number,
});
const contractInterfaceFrom = (r: Row): ContractInterfaceRow => ({
  id: r.id as string, organizationId: r.organization_id as string, type: r.type as ContractInterfaceRow['type'],
  address: r.address as string, addressKey: r.address_key as string, interface: r.interface as string,
  label: r.label as string, notes: r.notes as string, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const allowlistFrom = (r: Row): IpAllowlistRow => ({
  organizationId: r.organization_id as string, publicKey: r.public_key as string, enabled: r.enabled === 1,
  onEvaluationError: r.on_evaluation_error === 'ALLOW' ? 'ALLOW' : 'DENY', rules: JSON.parse(r.rules as string) as IpAllowlistRule[],
  createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const deliveryFrom = (r: Row): WebhookDeliveryRow => ({
  id: r.id as string, organizationId: r.organization_id as string, activityId: r.activity_id as string, eventType: r.event_type as string,
  url: r.url as string, body: r.body as string, attempts: r.attempts as number,
  nextAttemptMs: r.next_attempt_ms as number, createdMs: r.created_ms as number,
});
const policyFrom = (r: Row): PolicyRow => ({
  id: r.id as string, organizationId: r.organization_id as string, name: r.name as string,
  effect: r.effect as PolicyRow['effect'], condition: r.condition as string, consensus: r.consensus as string,
  time: r.time as string, notes: r.notes as string, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
});
const pendingFrom = (r: Row): PendingActivityRow => ({
  activityId: r.activity_id as string, organizationId: r.organization_id as string, fingerprint: r.fingerprint as string,
  path: r.path as string, userId: r.user_id as string, credentialId: r.credential_id as string, createdMs: r.created_ms as number,
});
const voteFrom = (r: Row): VoteRow => ({
  id: r.id as string, activityId: r.activity_id as string, organizationId: r.organization_id as string,
  userId: r.user_id as string, selection: r.selection as VoteRow['selection'],
  record: JSON.parse(r.record as string) as Record<string, unknown>, createdMs: r.created_ms as number,
});
const voteRequestFrom = (r: Row): VoteRequestRow => ({
  fingerprint: r.fingerprint as string, organizationId: r.organization_id as string, activityId: r.activity_id as string, createdMs: r.created_ms as number,
});
const activityFrom = (r: Row): ActivityRow => ({
  id: r.id as string, organizationId: r.organization_id as string, type: r.type as string, status: r.status as string,
  fingerprint: r.fingerprint as string, requestMs: r.request_ms as number, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
  record: JSON.parse(r.record as string) as Record<string, unknown>,
  recordJson: r.record as string,
  logIndexes: logIndexesFrom(r.log_indexes as string),
});


export interface SqliteStoreOptions {
  synchronous?: SqliteSynchronous;
  /**
   * With synchronous FULL: once deferSyncs() is called, SQLite runs at NORMAL and the adapter
   * itself fsyncs the WAL on libuv's thread pool (sqliteUnit.ts WalSync); a write still settles
   * only once it is on disk. Until then (start-up, bootstrap) every COMMIT is synced by SQLite.
   */
  syncOffThread?: boolean;
  /**
   * Other server processes write this database too (a WORKERS pool): the group commit then first
   * tries BEGIN IMMEDIATE without waiting (sqliteUnit.ts), so a process does not sleep in
   * SQLite's busy handler while another commits. Default true; a lone server passes false and
   * saves two PRAGMA statements per group (an occasional CLI write is simply waited for).
   */
  multiProcess?: boolean;
  /** Work per commit group before the rest waits for the next (ms; default 5). */
  groupBudgetMs?: number;
  /**
   * An activity's first log entry is sealed after its commit, on a thread (logLater.ts), instead
   * of in its transaction. Default false (every append synchronous); a lone server passes true.
   */
  sealLogLater?: boolean;
  /** How long committed later entries wait to go to the thread together (ms; default 10; tests only). */
  sealDelayMs?: number;
}

export function openSqliteDb(file: string, opts: SqliteStoreOptions = {}): Db {
  // A new database is created 0600 by us, not 0644 by SQLite; its -wal and -shm take its mode.
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const synchronous = opts.synchronous ?? 'FULL';
  const offThread = opts.syncOffThread === true && synchronous === 'FULL';
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  migrate(db);
  // Rows read by every request (rowcache.ts has the rules that keep them correct).
  const cache = new RowCache(db);
  const pageBySeq = pagerOf(db);
  const keys = sqliteKeyStore(db, cache, pageBySeq);

  const q = <T = Row>(sql: string) => db.prepare<unknown[], T>(sql);

  const s = {
    orgGet: q('SELECT * FROM organizations WHERE id = ?'),
    orgInsert: q('INSERT INTO organizations (id, name, parent_id, root_quorum_threshold, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    orgChildren: q('SELECT * FROM organizations WHERE parent_id = ? ORDER BY created_ms, id'),
    orgRoots: q('SELECT * FROM organizations WHERE parent_id IS NULL ORDER BY created_ms, id'),
    orgTouch: q('UPDATE organizations SET updated_ms = ? WHERE id = ?'),
    orgQuorum: q('UPDATE organizations SET root_quorum_threshold = ?, updated_ms = ? WHERE id = ?'),
    orgRename: q('UPDATE organizations SET name = ?, updated_ms = ? WHERE id = ?'),
    orgCount: q<{ n: number }>('SELECT COUNT(*) AS n FROM organizations'),
    orgDisable: q('INSERT OR IGNORE INTO disabled_auth_flows (organization_id, flag) VALUES (?, ?)'),
    orgDisabled: q<{ flag: string }>('SELECT flag FROM disabled_auth_flows WHERE organization_id = ? ORDER BY flag'),

    userGet: q('SELECT * FROM users WHERE organization_id = ? AND id = ?'),
    userList: q('SELECT * FROM users WHERE organization_id = ? ORDER BY created_ms, id'),
    userInsert: q('INSERT INTO users (id, organization_id, name, email, phone_number, is_root, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    userUpdate: q('UPDATE users SET name = ?, email = ?, phone_number = ?, is_root = ?, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    userDelete: q('DELETE FROM users WHERE organization_id = ? AND id = ?'),
    userRoots: q<{ id: string }>('SELECT id FROM users WHERE organization_id = ? AND is_root = 1 ORDER BY created_ms, id'),

    keyGet: q('SELECT * FROM api_keys WHERE organization_id = ? AND id = ?'),
    keyByPub: q('SELECT * FROM api_keys WHERE public_key = ?'),
    keyByUser: q('SELECT * FROM api_keys WHERE organization_id = ? AND user_id = ? ORDER BY created_ms, id'),
    keyByOrg: q('SELECT * FROM api_keys WHERE organization_id = ? ORDER BY created_ms, id'),
    keyInsert: q('INSERT INTO api_keys (id, organization_id, user_id, name, public_key, curve, credential_type, expiration_seconds, expires_at_ms, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    keyDelete: q('DELETE FROM api_keys WHERE organization_id = ? AND id = ?'),

    authGet: q('SELECT * FROM authenticators WHERE organization_id = ? AND id = ?'),
    authByCred: q('SELECT * FROM authenticators WHERE credential_id = ? ORDER BY seq'),
    authByUser: q('SELECT * FROM authenticators WHERE organization_id = ? AND user_id = ? ORDER BY seq'),
    authByOrg: q('SELECT * FROM authenticators WHERE organization_id = ? ORDER BY seq'),
    authInsert: q('INSERT INTO authenticators (id, organization_id, user_id, name, credential_id, public_key, rp_id, aaguid, attestation_type, transports, sign_count, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    authDelete: q('DELETE FROM authenticators WHERE organization_id = ? AND id = ?'),
    authCount: q('UPDATE authenticators SET sign_count = ? WHERE id = ? AND sign_count < ?'),

    oapGet: q('SELECT * FROM oauth_providers WHERE organization_id = ? AND id = ?'),
    oapByUser: q('SELECT * FROM oauth_providers WHERE organization_id = ? AND user_id = ? ORDER BY seq'),
    oapByOrg: q('SELECT * FROM oauth_providers WHERE organization_id = ? ORDER BY seq'),
    oapByIdentity: q('SELECT * FROM oauth_providers WHERE organization_id = ? AND issuer = ? AND subject = ? AND audience = ?'),
    oapInsert: q('INSERT INTO oauth_providers (id, organization_id, user_id, name, issuer, audience, subject, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    oapDelete: q('DELETE FROM oauth_providers WHERE organization_id = ? AND id = ?'),

    otpGet: q('SELECT * FROM otps WHERE organization_id = ? AND id = ?'),
    otpInsert: q('INSERT INTO otps (id, organization_id, user_id, otp_type, contact, sealed_code, sealed_target, attempts, expires_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    vcMark: q('INSERT INTO verified_contacts (organization_id, user_id, contact_type, contact, verified_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, contact_type) DO UPDATE SET contact = excluded.contact, verified_ms = excluded.verified_ms'),
    vcDeleteByUser: q('DELETE FROM verified_contacts WHERE organization_id = ? AND user_id = ?'),
    vtInsert: q('INSERT INTO verification_tokens (id, organization_id, expires_ms, used_ms) VALUES (?, ?, ?, NULL)'),
    vtUse: q('UPDATE verification_tokens SET used_ms = ? WHERE id = ? AND used_ms IS NULL AND expires_ms > ?'),
    vtPrune: q('DELETE FROM verification_tokens WHERE expires_ms < ?'),
    otpAttempts: q('UPDATE otps SET attempts = ? WHERE id = ?'),
    otpDelete: q('DELETE FROM otps WHERE id = ?'),
    otpDeleteByUser: q('DELETE FROM otps WHERE organization_id = ? AND user_id = ?'),
    otpDeleteExpired: q('DELETE FROM otps WHERE expires_ms < ?'),

    tagGet: q('SELECT * FROM tags WHERE organization_id = ? AND id = ?'),
    tagByName: q('SELECT * FROM tags WHERE organization_id = ? AND type = ? AND name = ?'),
    tagList: q('SELECT * FROM tags WHERE organization_id = ? AND type = ? ORDER BY created_ms, id'),
    tagInsert: q('INSERT INTO tags (id, organization_id, name, type, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    tagUpdate: q('UPDATE tags SET name = ?, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    tagDelete: q('DELETE FROM tags WHERE organization_id = ? AND id = ?'),
    tagsOf: q<{ tag_id: string }>('SELECT m.tag_id FROM tag_members m JOIN tags t ON t.id = m.tag_id WHERE m.member_id = ? ORDER BY t.created_ms, t.id'),
    tagsOfType: q<{ tag_id: string }>('SELECT m.tag_id FROM tag_members m JOIN tags t ON t.id = m.tag_id WHERE m.member_id = ? AND t.type = ? ORDER BY t.created_ms, t.id'),
    tagMemberships: q<{ tag_id: string; member_id: string }>('SELECT m.tag_id, m.member_id FROM tag_members m JOIN tags t ON t.id = m.tag_id WHERE t.organization_id = ? AND t.type = ? ORDER BY t.created_ms, t.id, m.member_id'),
    tagMembers: q<{ member_id: string }>('SELECT member_id FROM tag_members WHERE tag_id = ? ORDER BY member_id'),
    tagAttach: q('INSERT OR IGNORE INTO tag_members (tag_id, member_id) VALUES (?, ?)'),
    tagDetach: q('DELETE FROM tag_members WHERE tag_id = ? AND member_id = ?'),
    tagDetachAll: q('DELETE FROM tag_members WHERE member_id = ?'),

    featList: q<FeatureRow>('SELECT name, value FROM features WHERE organization_id = ? ORDER BY name'),
    featSet: q('INSERT INTO features (organization_id, name, value) VALUES (?, ?, ?) ON CONFLICT (organization_id, name) DO UPDATE SET value = excluded.value'),
    featRemove: q('DELETE FROM features WHERE organization_id = ? AND name = ?'),
    featGet: q<{ value: string }>('SELECT value FROM features WHERE organization_id = ? AND name = ?'),

    stxGet: q('SELECT * FROM send_transactions WHERE organization_id = ? AND id = ?'),
    stxInsert: q(`INSERT INTO send_transactions (id, organization_id, activity_id, caip2, from_address, tx_hash, nonce, signed_transaction, status, error, block_number, attempts, next_check_ms, created_ms, updated_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    stxUsedNonce: q<{ n: number | null }>(`SELECT MAX(nonce) AS n FROM send_transactions WHERE caip2 = ? AND from_address = ? AND (status IN ('INITIALIZED', 'BROADCASTING', 'INCLUDED') OR block_number IS NOT NULL)`),
    stxDue: q(`SELECT * FROM send_transactions s WHERE s.next_check_ms IS NOT NULL AND s.next_check_ms <= ? AND ${SENDER_TURN} ORDER BY s.next_check_ms, s.seq LIMIT ?`),
    stxClaim: q('UPDATE send_transactions SET next_check_ms = ? WHERE id = ? AND next_check_ms = ?'),
    stxUpdate: q('UPDATE send_transactions SET status = ?, error = ?, block_number = ?, attempts = ?, next_check_ms = ?, updated_ms = ? WHERE id = ?'),
    stxNext: q<{ ms: number | null }>(`SELECT MIN(s.next_check_ms) AS ms FROM send_transactions s WHERE s.next_check_ms IS NOT NULL AND ${SENDER_TURN}`),
    stxPending: q<{ n: number; oldest: number | null }>('SELECT COUNT(*) AS n, MIN(created_ms) AS oldest FROM send_transactions WHERE next_check_ms IS NOT NULL'),
    invGet: q('SELECT * FROM invitations WHERE organization_id = ? AND id = ?'),
    invList: q('SELECT * FROM invitations WHERE organization_id = ? ORDER BY seq'),
    invInsert: q(`INSERT INTO invitations (id, organization_id, receiver_user_name, receiver_email, receiver_user_tags, access_type, status, sender_user_id, created_ms, updated_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    invDelete: q('DELETE FROM invitations WHERE organization_id = ? AND id = ?'),
    osGet: q('SELECT * FROM org_secrets WHERE organization_id = ? AND id = ?'),
    osByName: q('SELECT * FROM org_secrets WHERE organization_id = ? AND name = ?'),
    osInsert: q('INSERT INTO org_secrets (id, organization_id, name, static_properties, sealed, created_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    sciGet: q('SELECT * FROM smart_contract_interfaces WHERE organization_id = ? AND id = ?'),
    sciList: q('SELECT * FROM smart_contract_interfaces WHERE organization_id = ? ORDER BY seq DESC'),
    sciByAddress: q('SELECT * FROM smart_contract_interfaces WHERE organization_id = ? AND type = ? AND address_key = ?'),
    sciInsert: q('INSERT INTO smart_contract_interfaces (id, organization_id, type, address, address_key, interface, label, notes, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    sciDelete: q('DELETE FROM smart_contract_interfaces WHERE organization_id = ? AND id = ?'),
    ipGet: q('SELECT * FROM ip_allowlists WHERE organization_id = ? AND public_key = ?'),
    ipSet: q(`INSERT INTO ip_allowlists (organization_id, public_key, enabled, on_evaluation_error, rules, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (organization_id, public_key) DO UPDATE SET enabled = excluded.enabled, on_evaluation_error = excluded.on_evaluation_error, rules = excluded.rules, updated_ms = excluded.updated_ms`),
    ipRemove: q('DELETE FROM ip_allowlists WHERE organization_id = ? AND public_key = ?'),
    // A key's list goes with the last API key of the organization that has its public key.
    ipOrphan: q(`DELETE FROM ip_allowlists WHERE organization_id = ? AND public_key = ? AND public_key != ''
      AND NOT EXISTS (SELECT 1 FROM api_keys WHERE organization_id = ? AND public_key = ?)`),

    whepList: q('SELECT * FROM webhook_endpoints WHERE organization_id = ? ORDER BY seq'),
    whepInsert: q('INSERT INTO webhook_endpoints (id, organization_id, url, name, is_active, subscriptions, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    whepUpdate: q('UPDATE webhook_endpoints SET url = ?, name = ?, is_active = ?, subscriptions = ?, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    whepDelete: q('DELETE FROM webhook_endpoints WHERE organization_id = ? AND id = ?'),
    whInsert: q('INSERT INTO webhook_deliveries (id, organization_id, activity_id, event_type, url, body, attempts, next_attempt_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    whDue: q('SELECT * FROM webhook_deliveries WHERE next_attempt_ms <= ? ORDER BY next_attempt_ms, created_ms LIMIT ?'),
    whDueMail: q(`SELECT * FROM webhook_deliveries WHERE next_attempt_ms <= ? AND ${MAIL_ROW} ORDER BY next_attempt_ms, created_ms LIMIT ?`),
    whDueHook: q(`SELECT * FROM webhook_deliveries WHERE next_attempt_ms <= ? AND NOT ${MAIL_ROW} ORDER BY next_attempt_ms, created_ms LIMIT ?`),
    whClaim: q('UPDATE webhook_deliveries SET next_attempt_ms = ? WHERE id = ? AND next_attempt_ms = ?'),
    whClaimAt: q('UPDATE webhook_deliveries SET next_attempt_ms = ? WHERE id = ? AND next_attempt_ms = ? AND url = ?'),
    whTo: q(`SELECT * FROM webhook_deliveries WHERE url = ? AND NOT ${MAIL_ROW} ORDER BY created_ms, id`),
    whReaddress: q('UPDATE webhook_deliveries SET url = ? WHERE id = ?'),
    whDelete: q('DELETE FROM webhook_deliveries WHERE id = ?'),
    whRetry: q('UPDATE webhook_deliveries SET attempts = ?, next_attempt_ms = ? WHERE id = ?'),
    whNext: q<{ ms: number | null }>('SELECT MIN(next_attempt_ms) AS ms FROM webhook_deliveries'),
    whNextMail: q<{ ms: number | null }>(`SELECT MIN(next_attempt_ms) AS ms FROM webhook_deliveries WHERE ${MAIL_ROW}`),
    whNextHook: q<{ ms: number | null }>(`SELECT MIN(next_attempt_ms) AS ms FROM webhook_deliveries WHERE NOT ${MAIL_ROW}`),
    whPending: q<{ mail: number; n: number; oldest: number | null }>(`SELECT url LIKE 'mailto:%' AS mail, COUNT(*) AS n, MIN(created_ms) AS oldest FROM webhook_deliveries GROUP BY mail`),

    actGet: q('SELECT * FROM activities WHERE organization_id = ? AND id = ?'),
    actByFp: q('SELECT * FROM activities WHERE request_ms = ? AND fingerprint = ?'),
    polGet: q('SELECT * FROM policies WHERE organization_id = ? AND id = ?'),
    polList: q('SELECT * FROM policies WHERE organization_id = ? ORDER BY seq'),
    polInsert: q('INSERT INTO policies (id, organization_id, name, effect, condition, consensus, time, notes, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    polUpdate: q('UPDATE policies SET name = ?, effect = ?, condition = ?, consensus = ?, time = ?, notes = ?, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    polDelete: q('DELETE FROM policies WHERE organization_id = ? AND id = ?'),
    penByFp: q('SELECT * FROM pending_activities WHERE organization_id = ? AND fingerprint = ?'),
    penInsert: q('INSERT INTO pending_activities (activity_id, organization_id, fingerprint, path, user_id, credential_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    penDelete: q('DELETE FROM pending_activities WHERE activity_id = ?'),
    voteList: q('SELECT * FROM votes WHERE activity_id = ? ORDER BY created_ms, rowid'),
    voteInsert: q('INSERT INTO votes (id, activity_id, organization_id, user_id, selection, record, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    voteRequest: q('SELECT * FROM vote_requests WHERE fingerprint = ?'),
    voteRequestInsert: q('INSERT INTO vote_requests (fingerprint, organization_id, activity_id, created_ms) VALUES (?, ?, ?, ?)'),
    pevList: q('SELECT * FROM policy_evaluations WHERE activity_id = ? ORDER BY seq'),
    pevInsert: q('INSERT INTO policy_evaluations (id, activity_id, organization_id, vote_id, evaluations, created_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    // log_indexes: the new entry's index added to the list (storage/logNodes.ts), unless there is none
    actUpdate: q("UPDATE activities SET status = ?, updated_ms = ?, record = ?, log_indexes = CASE WHEN ? IS NULL THEN log_indexes ELSE ltrim(log_indexes || ',' || ?, ',') END WHERE id = ?"),
    actInsert: q('INSERT INTO activities (id, organization_id, type, status, request_ms, fingerprint, created_ms, updated_ms, record, log_indexes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    actCount: q<{ n: number }>('SELECT COUNT(*) AS n FROM activities WHERE organization_id = ?'),
    logLast: q<{ idx: number; created_ms: number }>('SELECT idx, created_ms FROM log_entries WHERE organization_id = ? ORDER BY idx DESC LIMIT 1'),
    logEntryInsert: q('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms, nodes) VALUES (?, ?, ?, ?, ?, ?)'),
    logEntries: q('SELECT organization_id, idx, activity_id, entry, created_ms FROM log_entries WHERE organization_id = ? AND idx >= ? AND idx < ? ORDER BY idx'),
    logIndexesOf: q<{ log_indexes: string }>('SELECT log_indexes FROM activities WHERE id = ? AND organization_id = ?'),
    logNode: q('SELECT substr(nodes, ?, 32) AS hash FROM log_entries WHERE organization_id = ? AND idx = ?'),
    // the newest activities of an organization first, for the entries not sealed yet (logLater.ts)
    actNewest: q<{ seq: number; id: string; log_indexes: string }>('SELECT seq, id, log_indexes FROM activities WHERE organization_id = ? ORDER BY seq DESC'),
    actSealing: q<{ record: string; created_ms: number; updated_ms: number }>('SELECT record, created_ms, updated_ms FROM activities WHERE seq = ?'),
    actOrgs: q<{ organization_id: string }>('SELECT DISTINCT organization_id FROM activities'),
    sealSp: q('SAVEPOINT seal'), sealRelease: q('RELEASE seal'), sealRollback: q('ROLLBACK TO seal'),
    logCpInsert: q('INSERT INTO log_checkpoints (organization_id, size, root, note, created_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING'),
    logCpAt: q('SELECT * FROM log_checkpoints WHERE organization_id = ? AND size = ?'),
    logCpLatest: q('SELECT * FROM log_checkpoints WHERE organization_id = ? ORDER BY size DESC LIMIT 1'),
    ping: q('SELECT 1 AS ok'),
  };

  const keyCache = cache.map<ApiKeyRow[]>();
  const orgCache = cache.map<OrganizationRow>();
  const userCache = cache.map<UserRow>();
  const featCache = cache.map<{ value: string | undefined }>();
  const endpointCache = cache.map<WebhookEndpointRow[]>();
  const allowlistCache = cache.map<{ row: IpAllowlistRow | undefined }>();
  const logNodeAt = (org: string, level: number, index: number): Uint8Array | undefined => {
    const at = nodePlace(level, index);
    const r = s.logNode.get(at.offset + 1, org, at.entry);
    return r && (r.hash as Buffer).length === 32 ? new Uint8Array(r.hash as Buffer) : undefined;
  };
  // No head row: the head is the last entry's index and the frontier nodes in the entries' rows
  // (an append writes one row; logHeads.ts keeps the heads this process committed).
  const logHeadOf = (org: string): LogHeadRow | undefined => {
    const last = s.logLast.get(org);
    return last ? headFromNodes(org, last.idx + 1, last.created_ms, (level, index) => logNodeAt(org, level, index)) : undefined;
  };
  // The head an append takes: the stored entries' head, and the entries whose index an activity's
  // row holds past it (later entries not sealed yet, logLater.ts: after a crash, or written by
  // another connection). Their indexes follow on from the stored ones, newest activity last.
  const takenHeadOf = (org: string): LogHeadRow | undefined => {
    const sealed = logHeadOf(org);
    const base = sealed?.size ?? 0;
    const found: { seq: number; id: string; log_indexes: string }[] = [];
    for (const r of s.actNewest.iterate(org)) {
      const first = logIndexesFrom(r.log_indexes)[0];
      if (first === undefined || first < base) break;
      found.push(r);
    }
    if (found.length === 0) return sealed;
    found.reverse();
    const later = found.map((r, i): LaterEntry => {
      const idx = logIndexesFrom(r.log_indexes);
      if (idx.length !== 1 || idx[0] !== base + i) throw new Error(`the log of ${org} is damaged: activity ${r.id} holds entry ${idx.join(',')} where entry ${base + i} is missing`);
      const a = s.actSealing.get(r.seq)!;
      return { index: base + i, activityId: r.id, text: a.record, createdMs: a.created_ms, updatedMs: a.updated_ms };
    });
    return headWithLater(org, base + later.length, sealed?.frontier ?? new Uint8Array(0), later[later.length - 1]!.updatedMs, later);
  };
  const logHeads = new LogHeads(cache, takenHeadOf);
  const logRunInserts = new Map<number, Database.Statement>();
  const laterLog = new LaterLog({
    heads: logHeads,
    threaded: opts.sealLogLater === true,
    ...(opts.sealDelayMs !== undefined ? { sealDelayMs: opts.sealDelayMs } : {}),
    insert: (rows, org) => {
      // up to LOG_ROWS_PER_INSERT rows a statement: one statement's cost for a run of entries
      for (let i = 0; i < rows.length; i += LOG_ROWS_PER_INSERT) {
        const run = rows.slice(i, i + LOG_ROWS_PER_INSERT);
        let st = logRunInserts.get(run.length);
        if (!st) {
          st = db.prepare(`INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms, nodes) VALUES ${run.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`);
          logRunInserts.set(run.length, st);
        }
        st.run(run.flatMap((r) => [org, r.index, r.activityId, r.entry, r.createdMs, r.nodes]));
      }
    },
    savepoint: (fn) => {
      // outside a transaction SAVEPOINT would begin one, and RELEASE commit it
      if (!db.inTransaction) return false;
      s.sealSp.run();
      try {
        fn();
        s.sealRelease.run();
        return true;
      } catch {
        if (db.inTransaction) { s.sealRollback.run(); s.sealRelease.run(); }
        logHeads.rolledBackToSavepoint();
        return false;
      }
    },
    write: () => { if (!closed) units.write(async () => {}).catch(() => {}); },
  });
  const featureOf = (org: string, name: string): string | undefined => cache.get(featCache, `${org}/${name}`, () => s.featGet.get(org, name) ?? { value: undefined })!.value;
  const endpointsOf = (org: string): WebhookEndpointRow[] => cache.get(endpointCache, org, () => s.whepList.all(org).map(endpointFrom), (rows) => rows.map((r) => ({ ...r, subscriptions: r.subscriptions.map((x) => ({ ...x })) })))!;
  const allowlistGet = (org: string, pk: string): IpAllowlistRow | undefined => cache.get(allowlistCache, `${org}/${pk}`, () => {
    const r = s.ipGet.get(org, pk) as Row | undefined;
    return { row: r ? allowlistFrom(r) : undefined };
  }, (c) => ({ row: c.row && { ...c.row, rules: c.row.rules.map((x) => ({ ...x })) } }))!.row;
  const clearCaches = () => cache.clear();
  const keysByPublicKey = (pk: string): ApiKeyRow[] => cache.get(keyCache, pk, () => s.keyByPub.all(pk).map(keyFrom))!;

  let closed = false;
  const repos: Sync<Repositories> = {
    organizations: {
      get: (id) => cache.get(orgCache, id, () => { const r = s.orgGet.get(id); return r ? orgFrom(r) : undefined; }),
      insert: (o) => { clearCaches(); s.orgInsert.run(o.id, o.name, o.parentId, o.rootQuorumThreshold, o.createdMs, o.updatedMs); },
      childrenOf: (id) => s.orgChildren.all(id).map(orgFrom),
      roots: () => s.orgRoots.all().map(orgFrom),
      touch: (id, ms) => { clearCaches(); s.orgTouch.run(ms, id); },
      setRootQuorumThreshold: (id, threshold, ms) => { clearCaches(); s.orgQuorum.run(threshold, ms, id); },
      rename: (id, name, ms) => { clearCaches(); s.orgRename.run(name, ms, id); },
      count: () => s.orgCount.get()!.n,
      subOrgIds: (parentId, filter, page) => listSubOrgIds(parentId, filter, page),
      disableFlows: (id, flags) => { for (const f of flags) s.orgDisable.run(id, f); },
      disabledFlows: (id) => s.orgDisabled.all(id).map((r) => r.flag),
      delete: (id) => {
        clearCaches();
        for (const st of orgDelete) st.run(id);
      },
    },
    users: {
      get: (org, id) => cache.get(userCache, `${org}/${id}`, () => { const r = s.userGet.get(org, id); return r ? userFrom(r) : undefined; }),
      list: (org) => s.userList.all(org).map(userFrom),
      insert: (u) => { clearCaches(); s.userInsert.run(u.id, u.organizationId, u.name, u.email, u.phoneNumber, u.isRoot ? 1 : 0, u.createdMs, u.updatedMs); },
      update: (u) => { clearCaches(); s.userUpdate.run(u.name, u.email, u.phoneNumber, u.isRoot ? 1 : 0, u.updatedMs, u.organizationId, u.id); },
      delete: (org, id) => { clearCaches(); s.userDelete.run(org, id); },
      rootUserIds: (org) => s.userRoots.all(org).map((r) => r.id),
    },
    apiKeys: {
      get: (org, id) => { const r = s.keyGet.get(org, id); return r ? keyFrom(r) : undefined; },
      byPublicKey: (pk) => keysByPublicKey(pk),
      // the cached reads the resolution made one by one
      stampContext: (pk, org) => {
        const keys = keysByPublicKey(pk);
        const own = keys.find((k) => k.organizationId === org);
        const user = own ? cache.get(userCache, `${org}/${own.userId}`, () => { const r = s.userGet.get(org, own.userId); return r ? userFrom(r) : undefined; }) : undefined;
        const organization = cache.get(orgCache, org, () => { const r = s.orgGet.get(org); return r ? orgFrom(r) : undefined; });
        return { publicKey: pk, organizationId: org, keys, organization, user, allowlists: { own: allowlistGet(org, pk), organization: allowlistGet(org, '') } };
      },
      listByUser: (org, user) => s.keyByUser.all(org, user).map(keyFrom),
      listByOrganization: (org) => s.keyByOrg.all(org).map(keyFrom),
      insert: (k) => {
        clearCaches();
        s.keyInsert.run(k.id, k.organizationId, k.userId, k.name, k.publicKey, k.curve, k.credentialType,
          k.expirationSeconds, k.expiresAtMs, k.createdMs, k.updatedMs);
      },
      delete: (org, id) => {
        clearCaches();
        const key = s.keyGet.get(org, id) as Row | undefined;
        const removed = s.keyDelete.run(org, id).changes > 0;
        if (key) s.ipOrphan.run(org, key.public_key as string, org, key.public_key as string);
        return removed;
      },
    },
    authenticators: {
      get: (org, id) => { const r = s.authGet.get(org, id); return r ? authenticatorFrom(r) : undefined; },
      // Not in the row cache: a passkey that counts its signatures writes its counter on every
      // stamp, and a write to a cached table would drop every cached row.
      byCredentialId: (cred) => s.authByCred.all(cred).map(authenticatorFrom),
      listByUser: (org, user) => s.authByUser.all(org, user).map(authenticatorFrom),
      listByOrganization: (org) => s.authByOrg.all(org).map(authenticatorFrom),
      insert: (a) => {
        s.authInsert.run(a.id, a.organizationId, a.userId, a.name, a.credentialId, a.publicKey, a.rpId, a.aaguid, a.attestationType,
          JSON.stringify(a.transports), a.signCount, a.createdMs, a.updatedMs);
      },
      delete: (org, id) => { s.authDelete.run(org, id); },
      advanceSignCount: (id, n) => s.authCount.run(n, id, n).changes > 0,
    },
    tags: {
      get: (org, id) => { const r = s.tagGet.get(org, id); return r ? tagFrom(r) : undefined; },
      byName: (org, type, name) => { const r = s.tagByName.get(org, type, name); return r ? tagFrom(r) : undefined; },
      list: (org, type) => s.tagList.all(org, type).map(tagFrom),
      insert: (t) => { s.tagInsert.run(t.id, t.organizationId, t.name, t.type, t.createdMs, t.updatedMs); },
      update: (t) => { s.tagUpdate.run(t.name, t.updatedMs, t.organizationId, t.id); },
      delete: (org, id) => { s.tagDelete.run(org, id); },
      tagsOf: (member, type) => (type === undefined ? s.tagsOf.all(member) : s.tagsOfType.all(member, type)).map((r) => r.tag_id),
      memberships: (org, type) => s.tagMemberships.all(org, type).map((r) => ({ tagId: r.tag_id, memberId: r.member_id })),
      members: (tag) => s.tagMembers.all(tag).map((r) => r.member_id),
      attach: (tag, member) => { s.tagAttach.run(tag, member); },
      detach: (tag, member) => { s.tagDetach.run(tag, member); },
      detachAll: (member) => { s.tagDetachAll.run(member); },
    },
    privateKeys: {
      exists: (org, id) => keys.privateKeys.get(org, id) !== undefined,
    },
    keys,
    features: {
      get: featureOf,
      list: (org) => s.featList.all(org).map((r) => ({ name: r.name, value: r.value })),
      set: (org, name, value) => { clearCaches(); s.featSet.run(org, name, value); },
      remove: (org, name) => { clearCaches(); return s.featRemove.run(org, name).changes > 0; },
    },
    sendTransactions: {
      get: (org, id) => { const r = s.stxGet.get(org, id); return r ? sendTxFrom(r) : undefined; },
      insert: (t) => {
        s.stxInsert.run(t.id, t.organizationId, t.activityId, t.caip2, t.fromAddress, t.txHash, t.nonce, t.signedTransaction, t.status, t.error,
          t.blockNumber, t.attempts, t.nextCheckMs, t.createdMs, t.updatedMs);
      },
      due: (nowMs, limit) => s.stxDue.all(nowMs, limit).map(sendTxFrom),
      claim: (id, dueMs, untilMs) => s.stxClaim.run(untilMs, id, dueMs).changes > 0,
      update: (t) => { s.stxUpdate.run(t.status, t.error, t.blockNumber, t.attempts, t.nextCheckMs, t.updatedMs, t.id); },
      nextDueMs: () => s.stxNext.get()?.ms ?? undefined,
      pending: () => { const r = s.stxPending.get()!; return { count: r.n, oldestMs: r.oldest ?? undefined }; },
      highestUsedNonce: (caip2, from) => s.stxUsedNonce.get(caip2, from)?.n ?? undefined,
    },
    invitations: {
      get: (org, id) => { const r = s.invGet.get(org, id) as Row | undefined; return r ? invitationFrom(r) : undefined; },
      list: (org) => (s.invList.all(org) as Row[]).map(invitationFrom),
      insert: (r) => {
        s.invInsert.run(r.id, r.organizationId, r.receiverUserName, r.receiverEmail, JSON.stringify(r.receiverUserTags), r.accessType, r.status, r.senderUserId, r.createdMs, r.updatedMs);
      },
      delete: (org, id) => s.invDelete.run(org, id).changes > 0,
    },
    orgSecrets: {
      get: (org, id) => { const r = s.osGet.get(org, id) as Row | undefined; return r ? secretFrom(r) : undefined; },
      byName: (org, name) => { const r = s.osByName.get(org, name) as Row | undefined; return r ? secretFrom(r) : undefined; },
      list: (org, page) => pageBySeq('org_secrets', org, page)?.map(secretFrom),
      insert: (r) => { s.osInsert.run(r.id, r.organizationId, r.name, JSON.stringify(r.staticProperties), Buffer.from(r.sealed), r.createdMs); },
    },
    contractInterfaces: {
      get: (org, id) => { const r = s.sciGet.get(org, id) as Row | undefined; return r ? contractInterfaceFrom(r) : undefined; },
      list: (org) => (s.sciList.all(org) as Row[]).map(contractInterfaceFrom),
      byAddress: (org, type, key) => { const r = s.sciByAddress.get(org, type, key) as Row | undefined; return r ? contractInterfaceFrom(r) : undefined; },
      insert: (r) => {
        s.sciInsert.run(r.id, r.organizationId, r.type, r.address, r.addressKey, r.interface, r.label, r.notes, r.createdMs, r.updatedMs);
      },
      delete: (org, id) => s.sciDelete.run(org, id).changes > 0,
    },
    ipAllowlists: {
      get: allowlistGet,
      governing: (org, pk) => ({ own: pk === '' ? undefined : allowlistGet(org, pk), organization: allowlistGet(org, '') }),
      set: (r) => {
        clearCaches();
        s.ipSet.run(r.organizationId, r.publicKey, r.enabled ? 1 : 0, r.onEvaluationError, JSON.stringify(r.rules), r.createdMs, r.updatedMs);
      },
      remove: (org, pk) => { clearCaches(); return s.ipRemove.run(org, pk).changes > 0; },
    },
    webhooks: {
      endpoints: endpointsOf,
      activityTargets: (org, feature) => ({ feature: featureOf(org, feature), endpoints: endpointsOf(org) }),
      insertEndpoint: (e) => {
        clearCaches();
        s.whepInsert.run(e.id, e.organizationId, e.url, e.name, e.isActive ? 1 : 0, JSON.stringify(e.subscriptions), e.createdMs, e.updatedMs);
      },
      updateEndpoint: (e) => {
        clearCaches();
        s.whepUpdate.run(e.url, e.name, e.isActive ? 1 : 0, JSON.stringify(e.subscriptions), e.updatedMs, e.organizationId, e.id);
      },
      deleteEndpoint: (org, id) => { clearCaches(); return s.whepDelete.run(org, id).changes > 0; },
      enqueue: (w) => { s.whInsert.run(w.id, w.organizationId, w.activityId, w.eventType, w.url, w.body, w.attempts, w.nextAttemptMs, w.createdMs); },
      due: (nowMs, limit, kind) => (kind === undefined ? s.whDue : kind === 'email' ? s.whDueMail : s.whDueHook).all(nowMs, limit).map(deliveryFrom),
      claim: (id, dueMs, untilMs, url) => (url === undefined ? s.whClaim.run(untilMs, id, dueMs) : s.whClaimAt.run(untilMs, id, dueMs, url)).changes > 0,
      addressedTo: (url) => s.whTo.all(url).map(deliveryFrom),
      readdress: (id, url) => { s.whReaddress.run(url, id); },
      remove: (id) => { s.whDelete.run(id); },
      retryAt: (id, attempts, nextMs) => { s.whRetry.run(attempts, nextMs, id); },
      nextDueMs: (kind) => (kind === undefined ? s.whNext : kind === 'email' ? s.whNextMail : s.whNextHook).get()?.ms ?? undefined,
      pending: () => s.whPending.all().map((r) => ({ kind: r.mail ? 'email' as const : 'webhook' as const, count: r.n, oldestMs: r.oldest ?? undefined })),
    },
    oauthProviders: {
      get: (org, id) => { const r = s.oapGet.get(org, id); return r ? oauthProviderFrom(r) : undefined; },
      listByUser: (org, user) => s.oapByUser.all(org, user).map(oauthProviderFrom),
      listByOrganization: (org) => s.oapByOrg.all(org).map(oauthProviderFrom),
      byIdentity: (org, iss, aud, sub) => { const r = s.oapByIdentity.get(org, iss, sub, aud); return r ? oauthProviderFrom(r) : undefined; },
      insert: (p) => { s.oapInsert.run(p.id, p.organizationId, p.userId, p.name, p.issuer, p.audience, p.subject, p.createdMs, p.updatedMs); },
      delete: (org, id) => { s.oapDelete.run(org, id); },
    },
    otps: {
      get: (org, id) => { const r = s.otpGet.get(org, id); return r ? otpFrom(r) : undefined; },
      insert: (o) => { s.otpInsert.run(o.id, o.organizationId, o.userId, o.otpType, o.contact, o.sealedCode, o.sealedTarget, o.attempts, o.expiresMs, o.createdMs); },
      setAttempts: (id, n) => { s.otpAttempts.run(n, id); },
      delete: (id) => s.otpDelete.run(id).changes > 0,
      deleteByUser: (org, user) => { s.otpDeleteByUser.run(org, user); },
      deleteExpired: (ms) => { s.otpDeleteExpired.run(ms); },
    },
    verifiedContacts: {
      mark: (org, user, type, contact, ms) => { s.vcMark.run(org, user, type, contact, ms); },
      deleteByUser: (org, user) => { s.vcDeleteByUser.run(org, user); },
    },
    verificationTokens: {
      insert: (id, org, expiresMs) => { s.vtPrune.run(Date.now() - 86_400_000); s.vtInsert.run(id, org, expiresMs); },
      use: (id, nowMs) => s.vtUse.run(nowMs, id, nowMs).changes > 0,
    },
    policies: {
      get: (org, id) => { const r = s.polGet.get(org, id); return r ? policyFrom(r) : undefined; },
      list: (org) => s.polList.all(org).map(policyFrom),
      insert: (p) => { s.polInsert.run(p.id, p.organizationId, p.name, p.effect, p.condition, p.consensus, p.time, p.notes, p.createdMs, p.updatedMs); },
      update: (p) => { s.polUpdate.run(p.name, p.effect, p.condition, p.consensus, p.time, p.notes, p.updatedMs, p.organizationId, p.id); },
      delete: (org, id) => s.polDelete.run(org, id).changes > 0,
    },
    pending: {
      byFingerprint: (org, fp) => { const r = s.penByFp.get(org, fp); return r ? pendingFrom(r) : undefined; },
      insert: (p) => { s.penInsert.run(p.activityId, p.organizationId, p.fingerprint, p.path, p.userId, p.credentialId, p.createdMs); },
      delete: (id) => { s.penDelete.run(id); },
    },
    votes: {
      list: (activityId) => s.voteList.all(activityId).map(voteFrom),
      insert: (v) => { s.voteInsert.run(v.id, v.activityId, v.organizationId, v.userId, v.selection, JSON.stringify(v.record), v.createdMs); },
      request: (fp) => { const r = s.voteRequest.get(fp); return r ? voteRequestFrom(r) : undefined; },
      insertRequest: (v) => { s.voteRequestInsert.run(v.fingerprint, v.organizationId, v.activityId, v.createdMs); },
    },
    policyEvaluations: {
      list: (activityId) => s.pevList.all(activityId).map((r) => ({
        id: r.id as string, activityId: r.activity_id as string, organizationId: r.organization_id as string, voteId: r.vote_id as string,
        evaluations: JSON.parse(r.evaluations as string) as PolicyEvaluationRow['evaluations'], createdMs: r.created_ms as number,
      })),
      insert: (e) => { s.pevInsert.run(e.id, e.activityId, e.organizationId, e.voteId, JSON.stringify(e.evaluations), e.createdMs); },
    },
    log: {
      head: (org) => logHeadOf(org),
      // one writer at a time: the head read in a write is the head until it commits (kept in memory: logHeads.ts)
      takeHead: (org) => logHeads.take(org),
      seal: (org) => laterLog.seal(org),
      ...(laterLog.available ? { appendLater: (e: Omit<LaterEntry, 'index'> & { organizationId: string }) => laterLog.append(e) } : {}),
      append: (e, nodes, h) => {
        logHeads.forget(h.organizationId);
        s.logEntryInsert.run(e.organizationId, e.index, e.activityId, e.entry, e.createdMs, foldNodes(e.index, nodes));
        logHeads.wrote(h);
      },
      insertEntry: (e) => { s.logEntryInsert.run(e.organizationId, e.index, e.activityId, e.entry, e.createdMs, new Uint8Array(0)); },
      entries: (org, start, end) => s.logEntries.all(org, start, end).map((r) => ({
        organizationId: r.organization_id as string, index: r.idx as number, activityId: r.activity_id as string,
        entry: new Uint8Array(r.entry as Buffer), createdMs: r.created_ms as number,
      })),
      indexesOf: (org, activityId) => logIndexesFrom(s.logIndexesOf.get(activityId, org)?.log_indexes),
      nodes: (org, wanted) => {
        const out = [];
        for (const w of wanted) {
          const hash = logNodeAt(org, w.level, w.index);
          if (hash) out.push({ level: w.level, index: w.index, hash });
        }
        return out;
      },
      insertCheckpoint: (c) => { s.logCpInsert.run(c.organizationId, c.size, c.root, c.note, c.createdMs); },
      checkpoint: (org, size) => {
        const r = size === undefined ? s.logCpLatest.get(org) : s.logCpAt.get(org, size);
        return r ? {
          organizationId: r.organization_id as string, size: r.size as number, root: new Uint8Array(r.root as Buffer),
          note: r.note as string, createdMs: r.created_ms as number,
        } : undefined;
      },
    },
    activities: {
      get: (org, id) => { const r = s.actGet.get(org, id); return r ? activityFrom(r) : undefined; },
      byFingerprint: (fp, requestMs) => { const r = s.actByFp.get(requestMs, fp); return r ? activityFrom(r) : undefined; },
      insert: (a) => {
        s.actInsert.run(a.id, a.organizationId, a.type, a.status, a.requestMs, a.fingerprint, a.createdMs, a.updatedMs, a.recordJson ?? JSON.stringify(a.record), (a.logIndexes ?? []).join(','));
      },
      update: (a, logIndex) => {
        const idx = logIndex === undefined ? null : String(logIndex);
        s.actUpdate.run(a.status, a.updatedMs, a.recordJson ?? JSON.stringify(a.record), idx, idx, a.id);
      },
      list: (lq) => listActivities(lq),
      count: (org) => s.actCount.get(org)!.n,
    },
  };

  // Children before parents (foreign keys); activities are kept.
  const orgDelete = [
    'DELETE FROM tag_members WHERE tag_id IN (SELECT id FROM tags WHERE organization_id = ?)',
    'DELETE FROM api_keys WHERE organization_id = ?',
    'DELETE FROM authenticators WHERE organization_id = ?',
    'DELETE FROM oauth_providers WHERE organization_id = ?',
    'DELETE FROM otps WHERE organization_id = ?',
    'DELETE FROM verified_contacts WHERE organization_id = ?',
    'DELETE FROM disabled_auth_flows WHERE organization_id = ?',
    'DELETE FROM users WHERE organization_id = ?',
    'DELETE FROM tags WHERE organization_id = ?',
    'DELETE FROM features WHERE organization_id = ?',
    'DELETE FROM wallet_accounts WHERE organization_id = ?',
    'DELETE FROM wallets WHERE organization_id = ?',
    'DELETE FROM private_key_addresses WHERE organization_id = ?',
    'DELETE FROM private_keys WHERE organization_id = ?',
    'DELETE FROM import_targets WHERE organization_id = ?',
    'DELETE FROM webhook_endpoints WHERE organization_id = ?',
    'DELETE FROM ip_allowlists WHERE organization_id = ?',
    'DELETE FROM smart_contract_interfaces WHERE organization_id = ?',
    'DELETE FROM org_secrets WHERE organization_id = ?',
    'DELETE FROM invitations WHERE organization_id = ?',
    'DELETE FROM send_transactions WHERE organization_id = ?',
    'DELETE FROM policies WHERE organization_id = ?',
    'DELETE FROM pending_activities WHERE organization_id = ?',
    'DELETE FROM organizations WHERE id = ?',
  ].map((sql) => db.prepare(sql));

  const SUBORG_FILTER: Record<Exclude<SubOrgFilter['type'], 'OAUTH_IDENTITY'>, string> = {
    NAME: 'o.name = ?',
    USERNAME: 'EXISTS (SELECT 1 FROM users u WHERE u.organization_id = o.id AND u.name = ?)',
    EMAIL: 'EXISTS (SELECT 1 FROM users u WHERE u.organization_id = o.id AND lower(u.email) = lower(?))',
    PHONE_NUMBER: 'EXISTS (SELECT 1 FROM users u WHERE u.organization_id = o.id AND u.phone_number = ?)',
    PUBLIC_KEY: 'EXISTS (SELECT 1 FROM api_keys k WHERE k.organization_id = o.id AND k.public_key = lower(?))',
    CREDENTIAL_ID: 'EXISTS (SELECT 1 FROM authenticators p WHERE p.organization_id = o.id AND p.credential_id = ?)',
    VERIFIED_EMAIL: `EXISTS (SELECT 1 FROM users u JOIN verified_contacts v ON v.user_id = u.id AND v.contact_type = 'EMAIL' AND lower(v.contact) = lower(u.email)
      WHERE u.organization_id = o.id AND lower(u.email) = lower(?))`,
    VERIFIED_PHONE_NUMBER: `EXISTS (SELECT 1 FROM users u JOIN verified_contacts v ON v.user_id = u.id AND v.contact_type = 'PHONE_NUMBER' AND v.contact = u.phone_number
      WHERE u.organization_id = o.id AND u.phone_number = ?)`,
    WALLET_ACCOUNT_ADDRESS: 'EXISTS (SELECT 1 FROM wallet_accounts a WHERE a.organization_id = o.id AND a.address_key = ?)',
  };
  const subOrgCursor = q<{ created_ms: number; id: string }>('SELECT created_ms, id FROM organizations WHERE parent_id = ? AND id = ?');

  /** Newest first (created_ms, then id). undefined when a cursor names no sub-organization of the parent. */
  function listSubOrgIds(parentId: string, filter: SubOrgFilter | undefined, page: { limit: number; beforeId?: string; afterId?: string }): string[] | undefined {
    const where = ['o.parent_id = ?'];
    const args: unknown[] = [parentId];
    if (filter?.type === 'OAUTH_IDENTITY') {
      where.push('EXISTS (SELECT 1 FROM oauth_providers p WHERE p.organization_id = o.id AND p.issuer = ? AND p.subject = ? AND p.audience = ?)');
      args.push(filter.issuer, filter.subject, filter.audience);
    } else if (filter) {
      where.push(SUBORG_FILTER[filter.type]);
      args.push(filter.type === 'WALLET_ACCOUNT_ADDRESS' ? filter.addressKey : filter.value);
    }
    let ascending = false;
    const cursor = page.afterId ?? page.beforeId;
    if (cursor !== undefined) {
      const c = subOrgCursor.get(parentId, cursor);
      if (!c) return undefined;
      if (page.afterId !== undefined) where.push('(o.created_ms, o.id) < (?, ?)');
      else { where.push('(o.created_ms, o.id) > (?, ?)'); ascending = true; }
      args.push(c.created_ms, c.id);
    }
    const order = ascending ? 'ASC' : 'DESC';
    const sql = `SELECT o.id FROM organizations o WHERE ${where.join(' AND ')} ORDER BY o.created_ms ${order}, o.id ${order} LIMIT ?`;
    args.push(page.limit);
    const ids = (db.prepare(sql).all(...args) as { id: string }[]).map((r) => r.id);
    if (ascending) ids.reverse();
    return ids;
  }

  /** Newest first. undefined when a cursor names no activity of the organization. */
  function listActivities(lq: ActivityListQuery): ActivityRow[] | undefined {
    const where: string[] = [];
    const args: unknown[] = [];
    if (lq.statuses && lq.statuses.length > 0) {
      where.push(`status IN (${lq.statuses.map(() => '?').join(', ')})`);
      args.push(...lq.statuses);
    }
    if (lq.types && lq.types.length > 0) {
      where.push(`type IN (${lq.types.map(() => '?').join(', ')})`);
      args.push(...lq.types);
    }
    return pageBySeq('activities', lq.organizationId, lq, where, args)?.map(activityFrom);
  }

  const units = new SqliteUnits(db, repos, {
    ended: (committed) => { logHeads.ended(committed); cache.transactionEnded(); laterLog.ended(committed); },
    rolledBackToSavepoint: () => logHeads.rolledBackToSavepoint(),
    began: () => laterLog.began(),
  }, { multiProcess: opts.multiProcess !== false, budgetMs: opts.groupBudgetMs });
  const sqliteDb: Db = {
    engine: 'sqlite',
    read: (fn) => units.read(fn),
    // a turn is exclusive: a read is as cheap as it gets
    peek: (fn) => units.read(fn),
    write: (fn) => units.write(fn),
    durable: () => (closed ? Promise.resolve() : units.durable()),
    settleLog: async (org) => {
      // read from the rows: another connection may have taken entries since this one's heads
      if (closed) return;
      const unsealed = await units.read(async () => (org !== undefined ? [org] : s.actOrgs.all().map((r) => r.organization_id))
        .filter((o) => (takenHeadOf(o)?.later?.length ?? 0) > 0));
      if (unsealed.length > 0) await units.write(async () => { for (const o of unsealed) laterLog.seal(o); });
    },
    deferSyncs: () => {
      if (!offThread || units.walSync || closed) return;
      db.pragma('synchronous = NORMAL');
      units.walSync = new WalSync(`${file}-wal`);
    },
    isReady: async () => {
      if (closed || units.walSync?.failed) return false;
      try { return s.ping.get() !== undefined; } catch { return false; }
    },
    close: async () => {
      if (closed) return;
      await units.close();
      // what the thread has not sealed yet is sealed here (else the next start finds it in the activities' rows)
      const unsealed = laterLog.unsealed();
      if (unsealed.length > 0) await units.write(async () => { for (const o of unsealed) laterLog.seal(o); }).catch(() => {});
      await laterLog.close();
      closed = true;
      units.walSync?.close();
      db.close();
    },
  };
  return sqliteDb;
}

function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)');
  const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version));
  const latest = Math.max(0, ...applied);
  const known = Math.max(0, ...MIGRATIONS.map((m) => m.version));
  if (latest > known) {
    throw new Error(`database schema version ${latest} is newer than this kmas (${known}); refusing to start`);
  }
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    }).immediate();
  }
}
