/**
 * Versioned schema migrations of the PostgreSQL adapter (postgres.ts). Their own list, separate
 * from SQLite's (migrations.ts): version 1 is the whole schema SQLite reaches after its 25
 * migrations (same tables, columns, unique constraints and indexes). Append new entries; never
 * edit an applied one. Applied versions are recorded in schema_migrations.
 *
 * Column types: times and counters that may pass 2^31 are bigint (read back as numbers, see
 * postgres.ts), blobs bytea, flags boolean, JSON documents text (stored exactly as written). Every
 * text column is COLLATE "C": ORDER BY and the (created_ms, id) cursors then compare bytes, as
 * SQLite does, whatever locale the database was created with (and lower() folds ASCII only, as
 * SQLite's does). `seq` columns (insertion order) are identities.
 *
 * Nodes apply pending migrations at open under a session advisory lock, so two nodes starting at
 * once never race; a database whose schema is newer than this code knows is refused.
 */
import pg from 'pg';

export interface PgMigration { version: number; name: string; sql: string }

/** text compared byte by byte */
const T = 'text COLLATE "C"';
/** the identity column that orders a table's rows as inserted */
const SEQ = 'seq bigint GENERATED ALWAYS AS IDENTITY';

/** The tables whose rows an organization's data version covers (migration 6; postgres.ts DATA_TABLES). */
export const DATA_VERSIONED = ['private_keys', 'private_key_addresses', 'wallet_accounts', 'features', 'webhook_endpoints'];

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'the whole schema (SQLite migrations 1 to 25)',
    sql: `
      CREATE TABLE organizations (
        id ${T} PRIMARY KEY,
        name ${T} NOT NULL,
        parent_id ${T} REFERENCES organizations(id),
        root_quorum_threshold integer NOT NULL DEFAULT 1,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX organizations_parent ON organizations(parent_id);

      CREATE TABLE users (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        name ${T} NOT NULL,
        email ${T},
        phone_number ${T},
        is_root boolean NOT NULL DEFAULT false,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX users_org ON users(organization_id, created_ms);

      CREATE TABLE api_keys (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        user_id ${T} NOT NULL REFERENCES users(id),
        name ${T} NOT NULL,
        public_key ${T} NOT NULL,
        curve ${T} NOT NULL,
        credential_type ${T} NOT NULL,
        expiration_seconds ${T},
        expires_at_ms bigint,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX api_keys_public_key ON api_keys(public_key);
      CREATE INDEX api_keys_user ON api_keys(organization_id, user_id);
      CREATE UNIQUE INDEX api_keys_organization_public_key ON api_keys(organization_id, public_key);

      CREATE TABLE tags (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        name ${T} NOT NULL,
        type ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE UNIQUE INDEX tags_name ON tags(organization_id, type, name);

      CREATE TABLE tag_members (
        tag_id ${T} NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
        member_id ${T} NOT NULL,
        PRIMARY KEY (tag_id, member_id)
      );
      CREATE INDEX tag_members_member ON tag_members(member_id);

      CREATE TABLE features (
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        name ${T} NOT NULL,
        value ${T} NOT NULL,
        PRIMARY KEY (organization_id, name)
      );

      CREATE TABLE activities (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL,
        type ${T} NOT NULL,
        status ${T} NOT NULL,
        request_ms bigint NOT NULL,
        fingerprint ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        record ${T} NOT NULL
      );
      CREATE INDEX activities_org ON activities(organization_id, seq);
      CREATE UNIQUE INDEX activities_request ON activities(request_ms, fingerprint);

      CREATE TABLE private_keys (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        name ${T} NOT NULL,
        curve ${T} NOT NULL,
        public_key ${T} NOT NULL,
        addresses ${T} NOT NULL,
        sealed bytea NOT NULL,
        imported boolean NOT NULL DEFAULT false,
        exported boolean NOT NULL DEFAULT false,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX private_keys_org ON private_keys(organization_id, seq);
      CREATE TABLE private_key_addresses (
        private_key_id ${T} NOT NULL REFERENCES private_keys(id) ON DELETE CASCADE,
        organization_id ${T} NOT NULL,
        address_key ${T} NOT NULL
      );
      CREATE INDEX private_key_addresses_lookup ON private_key_addresses(organization_id, address_key);
      CREATE INDEX private_key_addresses_key ON private_key_addresses(private_key_id);

      CREATE TABLE wallets (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        name ${T} NOT NULL,
        sealed_mnemonic bytea NOT NULL,
        imported boolean NOT NULL DEFAULT false,
        exported boolean NOT NULL DEFAULT false,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX wallets_org ON wallets(organization_id, seq);

      CREATE TABLE wallet_accounts (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL,
        wallet_id ${T} NOT NULL REFERENCES wallets(id) ON DELETE CASCADE,
        curve ${T} NOT NULL,
        path_format ${T} NOT NULL,
        path ${T} NOT NULL,
        address_format ${T} NOT NULL,
        address ${T} NOT NULL,
        address_key ${T} NOT NULL,
        public_key ${T} NOT NULL,
        sealed bytea NOT NULL,
        name ${T},
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        exported boolean NOT NULL DEFAULT false
      );
      CREATE INDEX wallet_accounts_org ON wallet_accounts(organization_id, seq);
      CREATE INDEX wallet_accounts_wallet ON wallet_accounts(wallet_id, seq);
      CREATE INDEX wallet_accounts_address ON wallet_accounts(organization_id, address_key);

      CREATE TABLE import_targets (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL,
        user_id ${T} NOT NULL,
        kind ${T} NOT NULL,
        sealed bytea NOT NULL,
        created_ms bigint NOT NULL,
        expires_ms bigint NOT NULL
      );
      CREATE INDEX import_targets_user ON import_targets(organization_id, user_id, kind, created_ms);

      CREATE TABLE server_secrets (
        name ${T} PRIMARY KEY,
        sealed bytea NOT NULL,
        public_key ${T} NOT NULL,
        created_ms bigint NOT NULL
      );

      CREATE TABLE webhook_deliveries (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL,
        activity_id ${T} NOT NULL,
        url ${T} NOT NULL,
        body ${T} NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_ms bigint NOT NULL,
        created_ms bigint NOT NULL,
        event_type ${T} NOT NULL DEFAULT 'ACTIVITY_UPDATES'
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms);

      CREATE TABLE webhook_endpoints (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        url ${T} NOT NULL,
        name ${T} NOT NULL,
        is_active boolean NOT NULL,
        subscriptions ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX webhook_endpoints_org ON webhook_endpoints(organization_id, seq);

      CREATE TABLE authenticators (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        user_id ${T} NOT NULL REFERENCES users(id),
        name ${T} NOT NULL,
        credential_id ${T} NOT NULL,
        public_key ${T} NOT NULL,
        rp_id ${T} NOT NULL,
        aaguid ${T} NOT NULL,
        attestation_type ${T} NOT NULL,
        transports ${T} NOT NULL,
        sign_count bigint NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX authenticators_credential ON authenticators(credential_id);
      CREATE INDEX authenticators_user ON authenticators(organization_id, user_id, seq);
      CREATE UNIQUE INDEX authenticators_organization_credential ON authenticators(organization_id, credential_id);

      CREATE TABLE oauth_providers (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        user_id ${T} NOT NULL REFERENCES users(id),
        name ${T} NOT NULL,
        issuer ${T} NOT NULL,
        audience ${T} NOT NULL,
        subject ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        UNIQUE (organization_id, issuer, subject, audience)
      );
      CREATE INDEX oauth_providers_user ON oauth_providers(organization_id, user_id, seq);

      CREATE TABLE otps (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        user_id ${T},
        otp_type ${T} NOT NULL,
        contact ${T} NOT NULL,
        sealed_code bytea NOT NULL,
        sealed_target bytea,
        attempts integer NOT NULL,
        expires_ms bigint NOT NULL,
        created_ms bigint NOT NULL
      );
      CREATE INDEX otps_user ON otps(organization_id, user_id);
      CREATE INDEX otps_expiry ON otps(expires_ms);

      CREATE TABLE verified_contacts (
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        user_id ${T} NOT NULL REFERENCES users(id),
        contact_type ${T} NOT NULL,
        contact ${T} NOT NULL,
        verified_ms bigint NOT NULL,
        PRIMARY KEY (user_id, contact_type)
      );
      CREATE INDEX verified_contacts_org ON verified_contacts(organization_id);

      CREATE TABLE disabled_auth_flows (
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        flag ${T} NOT NULL,
        PRIMARY KEY (organization_id, flag)
      );

      CREATE TABLE verification_tokens (
        id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL,
        expires_ms bigint NOT NULL,
        used_ms bigint
      );

      CREATE TABLE policies (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL REFERENCES organizations(id),
        name ${T} NOT NULL,
        effect ${T} NOT NULL,
        condition ${T} NOT NULL,
        consensus ${T} NOT NULL,
        notes ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        time ${T} NOT NULL DEFAULT ''
      );
      CREATE INDEX policies_org ON policies(organization_id, seq);

      CREATE TABLE pending_activities (
        activity_id ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL,
        fingerprint ${T} NOT NULL,
        path ${T} NOT NULL,
        user_id ${T} NOT NULL,
        credential_id ${T} NOT NULL,
        created_ms bigint NOT NULL
      );
      CREATE UNIQUE INDEX pending_activities_fingerprint ON pending_activities(organization_id, fingerprint);

      -- seq stands for SQLite's rowid (votes of one instant are listed in insertion order)
      CREATE TABLE votes (
        id ${T} PRIMARY KEY,
        activity_id ${T} NOT NULL,
        organization_id ${T} NOT NULL,
        user_id ${T} NOT NULL,
        selection ${T} NOT NULL,
        record ${T} NOT NULL,
        created_ms bigint NOT NULL,
        ${SEQ},
        UNIQUE (activity_id, user_id)
      );

      CREATE TABLE policy_evaluations (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        activity_id ${T} NOT NULL,
        organization_id ${T} NOT NULL,
        vote_id ${T} NOT NULL,
        evaluations ${T} NOT NULL,
        created_ms bigint NOT NULL
      );
      CREATE INDEX policy_evaluations_activity ON policy_evaluations(activity_id, seq);

      CREATE TABLE ip_allowlists (
        organization_id ${T} NOT NULL,
        public_key ${T} NOT NULL,
        enabled boolean NOT NULL,
        on_evaluation_error ${T} NOT NULL,
        rules ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        PRIMARY KEY (organization_id, public_key)
      );

      CREATE TABLE smart_contract_interfaces (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL,
        type ${T} NOT NULL,
        address ${T} NOT NULL,
        address_key ${T} NOT NULL,
        interface ${T} NOT NULL,
        label ${T} NOT NULL,
        notes ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        UNIQUE (organization_id, type, address_key)
      );

      CREATE TABLE org_secrets (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL,
        name ${T},
        static_properties ${T} NOT NULL,
        sealed bytea NOT NULL,
        created_ms bigint NOT NULL,
        UNIQUE (organization_id, name)
      );

      CREATE TABLE invitations (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL,
        receiver_user_name ${T} NOT NULL,
        receiver_email ${T} NOT NULL,
        receiver_user_tags ${T} NOT NULL,
        access_type ${T} NOT NULL,
        status ${T} NOT NULL,
        sender_user_id ${T} NOT NULL,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX invitations_org ON invitations(organization_id, seq);

      CREATE TABLE send_transactions (
        ${SEQ} PRIMARY KEY,
        id ${T} NOT NULL UNIQUE,
        organization_id ${T} NOT NULL,
        activity_id ${T} NOT NULL,
        caip2 ${T} NOT NULL,
        from_address ${T} NOT NULL,
        tx_hash ${T} NOT NULL,
        nonce bigint,
        signed_transaction ${T} NOT NULL,
        status ${T} NOT NULL,
        error ${T},
        block_number ${T},
        attempts integer NOT NULL,
        next_check_ms bigint,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE INDEX send_transactions_due ON send_transactions(next_check_ms) WHERE next_check_ms IS NOT NULL;
      CREATE INDEX send_transactions_sender ON send_transactions(caip2, from_address, status);
    `,
  },
  {
    version: 2,
    name: 'the verifiable activity log (SQLite migration 26)',
    sql: `
      CREATE TABLE log_heads (
        organization_id ${T} PRIMARY KEY,
        size bigint NOT NULL,
        frontier bytea NOT NULL,
        root bytea NOT NULL,
        updated_ms bigint NOT NULL
      );
      CREATE TABLE log_entries (
        organization_id ${T} NOT NULL,
        idx bigint NOT NULL,
        activity_id ${T} NOT NULL,
        entry bytea NOT NULL,
        created_ms bigint NOT NULL,
        PRIMARY KEY (organization_id, idx)
      );
      CREATE INDEX log_entries_activity ON log_entries(organization_id, activity_id, idx);
      CREATE TABLE log_nodes (
        organization_id ${T} NOT NULL,
        level integer NOT NULL,
        idx bigint NOT NULL,
        hash bytea NOT NULL,
        PRIMARY KEY (organization_id, level, idx)
      );
      CREATE TABLE log_checkpoints (
        organization_id ${T} NOT NULL,
        size bigint NOT NULL,
        root bytea NOT NULL,
        note ${T} NOT NULL,
        created_ms bigint NOT NULL,
        PRIMARY KEY (organization_id, size)
      );
    `,
  },
  {
    version: 3,
    name: 'the subtree hashes an append completes are a column of its entry (SQLite migration 27)',
    sql: `
      ALTER TABLE log_entries ADD COLUMN nodes bytea NOT NULL DEFAULT ''::bytea;
      UPDATE log_entries e SET nodes = f.nodes
        FROM (SELECT organization_id, ((idx + 1) << level) - 1 AS idx, string_agg(hash, ''::bytea ORDER BY level) AS nodes
              FROM log_nodes GROUP BY organization_id, ((idx + 1) << level) - 1) f
        WHERE e.organization_id = f.organization_id AND e.idx = f.idx;
      DROP TABLE log_nodes;
    `,
  },
  {
    version: 4,
    name: 'the indexes of an activity\'s log entries are a column of its row (SQLite migration 28)',
    sql: `
      ALTER TABLE activities ADD COLUMN log_indexes text NOT NULL DEFAULT '';
      UPDATE activities a SET log_indexes = e.idxs
        FROM (SELECT organization_id, activity_id, string_agg(idx::text, ',' ORDER BY idx) AS idxs FROM log_entries GROUP BY organization_id, activity_id) e
        WHERE e.organization_id = a.organization_id AND e.activity_id = a.id;
      DROP INDEX log_entries_activity;
    `,
  },
  {
    version: 5,
    name: 'auth versions: every change of an API key, user, organization or IP allowlist gives its scopes a new version (what a cached stamp context is checked against)',
    // A scope is 'org:<organization id>' (the organization's row, its users, API keys and IP
    // allowlists), 'pk:<public key>' (every API key with that public key, in any organization) or
    // 'all' (a TRUNCATE of one of those tables). Each change sets its scopes' versions to new values
    // of a sequence, in the changing transaction: a value is never used twice, not even after a
    // rollback, so a version read once stands for one state of the rows (postgresRepos.ts
    // StampContextCache).
    sql: `
      CREATE SEQUENCE auth_version_seq;
      CREATE TABLE auth_versions (scope ${T} PRIMARY KEY, n bigint NOT NULL);
      CREATE FUNCTION kmas_auth_bump(s text) RETURNS void LANGUAGE sql AS $$
        INSERT INTO auth_versions (scope, n) VALUES (s, nextval('auth_version_seq'))
        ON CONFLICT (scope) DO UPDATE SET n = EXCLUDED.n
      $$;
      CREATE FUNCTION kmas_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE r jsonb;
      BEGIN
        IF TG_LEVEL = 'STATEMENT' THEN
          PERFORM kmas_auth_bump('all');
          RETURN NULL;
        END IF;
        -- the row before and after the change (an organization's scope is its id, the others' their organization_id)
        FOR r IN SELECT x FROM unnest(ARRAY[CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END, CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END]) AS x WHERE x IS NOT NULL LOOP
          PERFORM kmas_auth_bump('org:' || coalesce(r->>'organization_id', r->>'id'));
          IF TG_TABLE_NAME = 'api_keys' THEN PERFORM kmas_auth_bump('pk:' || (r->>'public_key')); END IF;
        END LOOP;
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER api_keys_auth AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER users_auth AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH ROW EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER organizations_auth AFTER INSERT OR UPDATE OR DELETE ON organizations FOR EACH ROW EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER ip_allowlists_auth AFTER INSERT OR UPDATE OR DELETE ON ip_allowlists FOR EACH ROW EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER api_keys_auth_truncate AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER users_auth_truncate AFTER TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER organizations_auth_truncate AFTER TRUNCATE ON organizations FOR EACH STATEMENT EXECUTE FUNCTION kmas_auth_changed();
      CREATE TRIGGER ip_allowlists_auth_truncate AFTER TRUNCATE ON ip_allowlists FOR EACH STATEMENT EXECUTE FUNCTION kmas_auth_changed();
    `,
  },
  {
    version: 6,
    name: 'data versions: every change of a private key, its addresses, a wallet account, a feature or a webhook endpoint gives its organization\'s data scope a new version (what cached signing keys and webhook targets are checked against)',
    // The scope is 'data:<organization id>' ('all' for a TRUNCATE), in the same table and from the
    // same sequence as migration 5's scopes (postgresRepos.ts OrgDataCache). A wallet's deletion
    // reaches its accounts by ON DELETE CASCADE, which fires their row triggers too.
    sql: `
      CREATE FUNCTION kmas_data_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_LEVEL = 'STATEMENT' THEN
          PERFORM kmas_auth_bump('all');
          RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN PERFORM kmas_auth_bump('data:' || OLD.organization_id); END IF;
        IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.organization_id IS DISTINCT FROM OLD.organization_id) THEN
          PERFORM kmas_auth_bump('data:' || NEW.organization_id);
        END IF;
        RETURN NULL;
      END
      $$;
      ${DATA_VERSIONED.map((t) => `CREATE TRIGGER ${t}_data AFTER INSERT OR UPDATE OR DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION kmas_data_changed();
      CREATE TRIGGER ${t}_data_truncate AFTER TRUNCATE ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION kmas_data_changed();`).join('\n      ')}
    `,
  },
  {
    version: 7,
    name: 'kmas_expect(ok, code): raises SQLSTATE `code` unless ok is true (what a write that assumed its reads checks them with, in its COMMIT message)',
    // postgres.ts Predictions: a lone write on a node that knows its versions, that no activity
    // has its request and its organization's log head sends no reads; these checks go with its
    // writes and COMMIT instead, and fail the transaction (KM001–KM003) when one of them was wrong.
    sql: `
      CREATE FUNCTION kmas_expect(ok boolean, code text) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN
        IF ok IS NOT TRUE THEN
          RAISE EXCEPTION 'kmas: a read this write assumed has changed (%)', code USING ERRCODE = code;
        END IF;
        RETURN true;
      END
      $$;
    `,
  },
  {
    version: 8,
    name: 'vote requests: the approve_activity / reject_activity bodies whose votes were cast, by fingerprint (SQLite migration 30)',
    // A vote is not an activity: the same bytes sent again were counted again (409) or, once the
    // activity had settled, not found (404). One vote per body, whichever node takes it.
    sql: `
      CREATE TABLE vote_requests (
        fingerprint ${T} PRIMARY KEY,
        organization_id ${T} NOT NULL,
        activity_id ${T} NOT NULL,
        created_ms bigint NOT NULL
      );
    `,
  },
];

/** The session advisory lock held while migrating: (hashtext('kmas'), hashtext('schema_migrations')). */
const LOCK_SQL = "SELECT pg_advisory_lock(hashtext('kmas'), hashtext('schema_migrations'))";
const UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtext('kmas'), hashtext('schema_migrations'))";

export interface MigrationResult {
  /** versions applied now (empty when the schema was current) */
  applied: number[];
  /** the schema version the database is at */
  version: number;
}

/**
 * Applies pending migrations on one connection, each in a transaction of its own, under the
 * migration lock; throws (and changes nothing) when the database's schema is newer than known.
 */
export async function migrateClient(client: pg.ClientBase, migrations: readonly PgMigration[] = PG_MIGRATIONS): Promise<MigrationResult> {
  await client.query(LOCK_SQL);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_ms bigint NOT NULL)');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => Number(r.version)));
    const latest = Math.max(0, ...done);
    const known = Math.max(0, ...migrations.map((m) => m.version));
    if (latest > known) {
      throw new Error(`database schema version ${latest} is newer than this kmas (${known}); refusing to start`);
    }
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`PostgreSQL migration ${m.version} (${m.name}) failed: ${(e as Error).message}`, { cause: e });
      }
      applied.push(m.version);
    }
    return { applied, version: Math.max(latest, ...applied) };
  } finally {
    await client.query(UNLOCK_SQL).catch(() => undefined);
  }
}

/** `kmas migrate`: brings the database at url up to this kmas's schema. */
export async function migratePostgres(url: string): Promise<MigrationResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await migrateClient(client);
  } finally {
    await client.end();
  }
}
