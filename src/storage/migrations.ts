/**
 * Versioned schema migrations. Append new entries; never edit an applied one.
 * Applied versions are recorded in schema_migrations.
 */
import { KEYS_MIGRATION_SQL } from './keys.js';

export interface Migration { version: number; name: string; sql: string }

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'organizations, users, api keys, tags, features, activities',
    sql: `
      CREATE TABLE organizations (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        parent_id TEXT REFERENCES organizations(id),
        root_quorum_threshold INTEGER NOT NULL DEFAULT 1,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX organizations_parent ON organizations(parent_id);

      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        email TEXT,
        phone_number TEXT,
        is_root INTEGER NOT NULL DEFAULT 0,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX users_org ON users(organization_id, created_ms);

      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        user_id TEXT NOT NULL REFERENCES users(id),
        name TEXT NOT NULL,
        public_key TEXT NOT NULL,
        curve TEXT NOT NULL,
        credential_type TEXT NOT NULL,
        expiration_seconds TEXT,
        expires_at_ms INTEGER,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX api_keys_public_key ON api_keys(public_key);
      CREATE INDEX api_keys_user ON api_keys(organization_id, user_id);

      CREATE TABLE tags (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX tags_name ON tags(organization_id, type, name);

      CREATE TABLE tag_members (
        tag_id TEXT NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
        member_id TEXT NOT NULL,
        PRIMARY KEY (tag_id, member_id)
      );
      CREATE INDEX tag_members_member ON tag_members(member_id);

      CREATE TABLE features (
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (organization_id, name)
      );

      CREATE TABLE activities (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL,
        type TEXT NOT NULL,
        status TEXT NOT NULL,
        fingerprint TEXT NOT NULL UNIQUE,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        record TEXT NOT NULL
      );
      CREATE INDEX activities_org ON activities(organization_id, seq);
    `,
  },
  {
    // issue 4 (keys helper): private keys, wallets, wallet accounts, import targets, server secrets
    version: 10,
    name: 'private keys, wallets, wallet accounts, import targets, server secrets (sealed)',
    sql: KEYS_MIGRATION_SQL,
  },
  {
    // The idempotency index keyed by (request timestampMs, body fingerprint) instead of the
    // fingerprint alone: a fingerprint is random, so every insert dirtied a random page of a
    // growing index; request times are nearly in order, so inserts now land at its right edge
    // (and activity ids are time-ordered UUIDv7s for the same reason). Identical bodies carry the
    // same timestampMs, so the lookup is as exact as before.
    version: 11,
    name: 'activities: idempotency index by (request_ms, fingerprint)',
    sql: `
      CREATE TABLE activities_v11 (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL,
        type TEXT NOT NULL,
        status TEXT NOT NULL,
        request_ms INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        record TEXT NOT NULL
      );
      INSERT INTO activities_v11 (seq, id, organization_id, type, status, request_ms, fingerprint, created_ms, updated_ms, record)
        SELECT seq, id, organization_id, type, status, CAST(json_extract(record, '$.timestampMs') AS INTEGER), fingerprint, created_ms, updated_ms, record
        FROM activities ORDER BY seq;
      DROP TABLE activities;
      ALTER TABLE activities_v11 RENAME TO activities;
      CREATE INDEX activities_org ON activities(organization_id, seq);
      CREATE UNIQUE INDEX activities_request ON activities(request_ms, fingerprint);
    `,
  },
  {
    // Webhook outbox (src/webhooks.ts): a row per event and receiving address, written in the
    // transaction of the activity it announces, removed once delivered or given up.
    version: 12,
    name: 'webhook deliveries (outbox)',
    sql: `
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL,
        activity_id TEXT NOT NULL,
        url TEXT NOT NULL,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL,
        created_ms INTEGER NOT NULL
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms);
    `,
  },
  {
    // create_webhook_endpoint & co.: addresses with their event subscriptions (JSON array).
    version: 13,
    name: 'webhook endpoints',
    sql: `
      CREATE TABLE webhook_endpoints (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        url TEXT NOT NULL,
        name TEXT NOT NULL,
        is_active INTEGER NOT NULL,
        subscriptions TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX webhook_endpoints_org ON webhook_endpoints(organization_id, seq);
    `,
  },
  {
    // Passkeys (WebAuthn authenticators): the credential's P-256 public key and the RP ID its
    // registration was made for, found by credential id when an X-Stamp-Webauthn arrives.
    version: 14,
    name: 'authenticators (passkeys)',
    sql: `
      CREATE TABLE authenticators (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        user_id TEXT NOT NULL REFERENCES users(id),
        name TEXT NOT NULL,
        credential_id TEXT NOT NULL,
        public_key TEXT NOT NULL,
        rp_id TEXT NOT NULL,
        aaguid TEXT NOT NULL,
        attestation_type TEXT NOT NULL,
        transports TEXT NOT NULL,
        sign_count INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX authenticators_credential ON authenticators(credential_id);
      CREATE INDEX authenticators_user ON authenticators(organization_id, user_id, seq);
    `,
  },
  {
    // delete_wallet_accounts: an account counts as exported once it (export_wallet_account) or its
    // wallet (export_wallet) was.
    version: 15,
    name: 'wallet accounts: exported',
    sql: `ALTER TABLE wallet_accounts ADD COLUMN exported INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    // OAuth providers (OIDC identities linked to users: oauth, oauth_login); the one-time codes of
    // init_otp_auth / init_otp (sealed, with init_otp's sealed encryption target; attempts
    // counted); e-mail addresses proven by a code (list_verified_suborgs); verify_otp's tokens
    // (each usable once); the login flows a sub-organization was created without (disable*).
    version: 16,
    name: 'oauth providers, one-time codes, verified contacts',
    sql: `
      CREATE TABLE oauth_providers (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        user_id TEXT NOT NULL REFERENCES users(id),
        name TEXT NOT NULL,
        issuer TEXT NOT NULL,
        audience TEXT NOT NULL,
        subject TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        UNIQUE (organization_id, issuer, subject, audience)
      );
      CREATE INDEX oauth_providers_user ON oauth_providers(organization_id, user_id, seq);
      CREATE TABLE otps (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        user_id TEXT,
        otp_type TEXT NOT NULL,
        contact TEXT NOT NULL,
        sealed_code BLOB NOT NULL,
        sealed_target BLOB,
        attempts INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        created_ms INTEGER NOT NULL
      );
      CREATE INDEX otps_user ON otps(organization_id, user_id);
      CREATE INDEX otps_expiry ON otps(expires_ms);
      CREATE TABLE verified_contacts (
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        user_id TEXT NOT NULL REFERENCES users(id),
        contact_type TEXT NOT NULL,
        contact TEXT NOT NULL,
        verified_ms INTEGER NOT NULL,
        PRIMARY KEY (user_id, contact_type)
      );
      CREATE INDEX verified_contacts_org ON verified_contacts(organization_id);
      CREATE TABLE disabled_auth_flows (
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        flag TEXT NOT NULL,
        PRIMARY KEY (organization_id, flag)
      );
      CREATE TABLE verification_tokens (
        id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL,
        expires_ms INTEGER NOT NULL,
        used_ms INTEGER
      );
    `,
  },
  {
    version: 17,
    name: 'policies, activities awaiting consensus, votes, policy evaluations',
    sql: `
      CREATE TABLE policies (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL REFERENCES organizations(id),
        name TEXT NOT NULL,
        effect TEXT NOT NULL,
        condition TEXT NOT NULL,
        consensus TEXT NOT NULL,
        notes TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX policies_org ON policies(organization_id, seq);
      CREATE TABLE pending_activities (
        activity_id TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        path TEXT NOT NULL,
        user_id TEXT NOT NULL,
        credential_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX pending_activities_fingerprint ON pending_activities(organization_id, fingerprint);
      CREATE TABLE votes (
        id TEXT PRIMARY KEY,
        activity_id TEXT NOT NULL,
        organization_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        selection TEXT NOT NULL,
        record TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        UNIQUE (activity_id, user_id)
      );
      CREATE TABLE policy_evaluations (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        activity_id TEXT NOT NULL,
        organization_id TEXT NOT NULL,
        vote_id TEXT NOT NULL,
        evaluations TEXT NOT NULL,
        created_ms INTEGER NOT NULL
      );
      CREATE INDEX policy_evaluations_activity ON policy_evaluations(activity_id, seq);
    `,
  },
  {
    version: 18,
    name: 'IP allowlists (organization-level and per API key)',
    sql: `
      CREATE TABLE ip_allowlists (
        organization_id TEXT NOT NULL,
        public_key TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        on_evaluation_error TEXT NOT NULL,
        rules TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY (organization_id, public_key)
      );
    `,
  },
  {
    version: 19,
    name: 'smart contract interfaces (ABIs and IDLs for policies)',
    sql: `
      CREATE TABLE smart_contract_interfaces (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL,
        type TEXT NOT NULL,
        address TEXT NOT NULL,
        address_key TEXT NOT NULL,
        interface TEXT NOT NULL,
        label TEXT NOT NULL,
        notes TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        UNIQUE (organization_id, type, address_key)
      );
    `,
  },
  {
    version: 20,
    name: 'policy time expressions',
    sql: `
      ALTER TABLE policies ADD COLUMN time TEXT NOT NULL DEFAULT '';
    `,
  },
  {
    version: 21,
    name: 'organization secrets (import_secrets / export_secrets), sealed',
    sql: `
      CREATE TABLE org_secrets (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL,
        name TEXT,
        static_properties TEXT NOT NULL,
        sealed BLOB NOT NULL,
        created_ms INTEGER NOT NULL,
        UNIQUE (organization_id, name)
      );
    `,
  },
  {
    version: 22,
    name: 'invitations',
    sql: `
      CREATE TABLE invitations (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL,
        receiver_user_name TEXT NOT NULL,
        receiver_email TEXT NOT NULL,
        receiver_user_tags TEXT NOT NULL,
        access_type TEXT NOT NULL,
        status TEXT NOT NULL,
        sender_user_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX invitations_org ON invitations(organization_id, seq);
    `,
  },
  {
    version: 23,
    name: 'transactions sent to EVM networks (eth_send_transaction, get_send_transaction_status)',
    sql: `
      CREATE TABLE send_transactions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        organization_id TEXT NOT NULL,
        activity_id TEXT NOT NULL,
        caip2 TEXT NOT NULL,
        from_address TEXT NOT NULL,
        tx_hash TEXT NOT NULL,
        nonce INTEGER,
        signed_transaction TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        block_number TEXT,
        attempts INTEGER NOT NULL,
        next_check_ms INTEGER,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX send_transactions_due ON send_transactions(next_check_ms) WHERE next_check_ms IS NOT NULL;
      CREATE INDEX send_transactions_sender ON send_transactions(caip2, from_address, status);
    `,
  },
  {
    version: 24,
    name: 'webhook deliveries carry their event type (SEND_TRANSACTION_STATUS_UPDATES besides ACTIVITY_UPDATES)',
    sql: `
      ALTER TABLE webhook_deliveries ADD COLUMN event_type TEXT NOT NULL DEFAULT 'ACTIVITY_UPDATES';
    `,
  },
  {
    version: 25,
    name: 'one registration of a public key / a passkey credential per organization, enforced by the database',
    sql: `
      CREATE UNIQUE INDEX api_keys_organization_public_key ON api_keys(organization_id, public_key);
      CREATE UNIQUE INDEX authenticators_organization_credential ON authenticators(organization_id, credential_id);
    `,
  },
  {
    version: 26,
    name: 'the verifiable activity log: entries, stored subtree hashes, heads, signed checkpoints (one Merkle tree per organization)',
    sql: `
      CREATE TABLE log_heads (
        organization_id TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        frontier BLOB NOT NULL,
        root BLOB NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE TABLE log_entries (
        organization_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        activity_id TEXT NOT NULL,
        entry BLOB NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (organization_id, idx)
      ) WITHOUT ROWID;
      CREATE INDEX log_entries_activity ON log_entries(organization_id, activity_id, idx);
      CREATE TABLE log_nodes (
        organization_id TEXT NOT NULL,
        level INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        hash BLOB NOT NULL,
        PRIMARY KEY (organization_id, level, idx)
      ) WITHOUT ROWID;
      CREATE TABLE log_checkpoints (
        organization_id TEXT NOT NULL,
        size INTEGER NOT NULL,
        root BLOB NOT NULL,
        note TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (organization_id, size)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 27,
    name: 'the subtree hashes an append completes are a column of its entry (log_entries.nodes) instead of rows of log_nodes, and log_entries is a rowid table: an append writes one row, at the end of the table',
    // Node (level, idx) covers leaves [idx·2^level, (idx+1)·2^level): the append of entry
    // (idx+1)·2^level − 1 completed it, with the other nodes of levels 0…k ending there. Their
    // hashes, level 0 first, become that entry's nodes. Same hashes, stored elsewhere. The table is
    // rebuilt with a rowid (the primary key becomes its index): an entry of about 1 KB then stays in
    // its page (a WITHOUT ROWID row spills into an overflow page past about 1,000 bytes) and an
    // append adds to the end of the table's B-tree.
    sql: `
      CREATE TEMP TABLE log_nodes_folded AS
        SELECT organization_id, ((idx + 1) << level) - 1 AS idx, unhex(group_concat(hex(hash), '' ORDER BY level)) AS nodes
        FROM log_nodes GROUP BY organization_id, ((idx + 1) << level) - 1;
      CREATE INDEX temp.log_nodes_folded_key ON log_nodes_folded(organization_id, idx);
      CREATE TABLE log_entries_new (
        organization_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        activity_id TEXT NOT NULL,
        entry BLOB NOT NULL,
        created_ms INTEGER NOT NULL,
        nodes BLOB NOT NULL DEFAULT x'',
        PRIMARY KEY (organization_id, idx)
      );
      INSERT INTO log_entries_new (organization_id, idx, activity_id, entry, created_ms, nodes)
        SELECT e.organization_id, e.idx, e.activity_id, e.entry, e.created_ms, coalesce(f.nodes, x'')
        FROM log_entries e LEFT JOIN temp.log_nodes_folded f ON f.organization_id = e.organization_id AND f.idx = e.idx
        ORDER BY e.organization_id, e.idx;
      DROP TABLE temp.log_nodes_folded;
      DROP TABLE log_nodes;
      DROP TABLE log_entries;
      ALTER TABLE log_entries_new RENAME TO log_entries;
      CREATE INDEX log_entries_activity ON log_entries(organization_id, activity_id, idx);
    `,
  },
  {
    version: 28,
    name: 'the indexes of an activity\'s log entries are a column of its row (activities.log_indexes) instead of an index of log_entries by activity',
    // The activity row is written in the append's transaction anyway (its page is dirty already);
    // the index by activity cost every append a page of its own, at a random place. Filled from
    // that index before it goes: decimal, comma-separated, oldest first (storage/logNodes.ts).
    sql: `
      ALTER TABLE activities ADD COLUMN log_indexes TEXT NOT NULL DEFAULT '';
      UPDATE activities SET log_indexes = (
        SELECT group_concat(idx, ',' ORDER BY idx) FROM log_entries e WHERE e.organization_id = activities.organization_id AND e.activity_id = activities.id)
      WHERE EXISTS (SELECT 1 FROM log_entries e WHERE e.organization_id = activities.organization_id AND e.activity_id = activities.id);
      DROP INDEX log_entries_activity;
    `,
  },
  {
    version: 29,
    name: 'no log_heads row: an organization\'s log head is derived from its entries\' rows (the last index and the frontier nodes stored there)',
    // An append wrote the head's row besides its entry: a page of its own in every commit. The
    // head is the last entry's index + 1 and the right edge's subtree hashes, which the entries'
    // nodes columns hold already (storage/logNodes.ts headFromNodes; the adapter keeps the heads it
    // committed in memory, logHeads.ts). PostgreSQL keeps its log_heads: the row lock serializes
    // the appends of several nodes (kmas migrate-store builds its rows from the entries).
    sql: `
      DROP TABLE log_heads;
    `,
  },
  {
    version: 30,
    name: 'vote requests: the approve_activity / reject_activity bodies whose votes were cast, by fingerprint',
    // A vote is not an activity, so the idempotency of activities by fingerprint did not cover it:
    // the same bytes sent again were counted again (409) or, once the activity had settled, not
    // found (404). The key is the body's fingerprint: one vote per body, whichever node takes it.
    sql: `
      CREATE TABLE vote_requests (
        fingerprint TEXT PRIMARY KEY,
        organization_id TEXT NOT NULL,
        activity_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL
      );
    `,
  },
];
