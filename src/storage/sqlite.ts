/** SQLite implementation of the Store (better-sqlite3, WAL, one file DATA_DIR/kmas.sqlite). */
import Database from 'better-sqlite3';
import type {
  ActivityListQuery, ActivityRow, ApiKeyRow, FeatureRow, OrganizationRow, Store, TagRow, TagType, UserRow,
} from './types.js';
import { MIGRATIONS } from './migrations.js';
import { sqliteKeyStore } from './keys.js';
import type { SqliteSynchronous } from '../config.js';

type Row = Record<string, unknown>;

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
const activityFrom = (r: Row): ActivityRow => ({
  id: r.id as string, organizationId: r.organization_id as string, type: r.type as string, status: r.status as string,
  fingerprint: r.fingerprint as string, createdMs: r.created_ms as number, updatedMs: r.updated_ms as number,
  record: JSON.parse(r.record as string) as Record<string, unknown>,
});

const BUSY_TIMEOUT_MS = 5000;

export function openSqliteStore(file: string, opts: { synchronous?: SqliteSynchronous } = {}): Store {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  migrate(db);
  const keys = sqliteKeyStore(db);

  const q = <T = Row>(sql: string) => db.prepare<unknown[], T>(sql);

  const s = {
    orgGet: q('SELECT * FROM organizations WHERE id = ?'),
    orgInsert: q('INSERT INTO organizations (id, name, parent_id, root_quorum_threshold, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    orgChildren: q('SELECT * FROM organizations WHERE parent_id = ? ORDER BY created_ms, id'),
    orgRoots: q('SELECT * FROM organizations WHERE parent_id IS NULL ORDER BY created_ms, id'),
    orgTouch: q('UPDATE organizations SET updated_ms = ? WHERE id = ?'),
    orgCount: q<{ n: number }>('SELECT COUNT(*) AS n FROM organizations'),

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

    tagGet: q('SELECT * FROM tags WHERE organization_id = ? AND id = ?'),
    tagByName: q('SELECT * FROM tags WHERE organization_id = ? AND type = ? AND name = ?'),
    tagList: q('SELECT * FROM tags WHERE organization_id = ? AND type = ? ORDER BY created_ms, id'),
    tagInsert: q('INSERT INTO tags (id, organization_id, name, type, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    tagUpdate: q('UPDATE tags SET name = ?, updated_ms = ? WHERE organization_id = ? AND id = ?'),
    tagDelete: q('DELETE FROM tags WHERE organization_id = ? AND id = ?'),
    tagsOf: q<{ tag_id: string }>('SELECT m.tag_id FROM tag_members m JOIN tags t ON t.id = m.tag_id WHERE m.member_id = ? ORDER BY t.created_ms, t.id'),
    tagMembers: q<{ member_id: string }>('SELECT member_id FROM tag_members WHERE tag_id = ? ORDER BY member_id'),
    tagAttach: q('INSERT OR IGNORE INTO tag_members (tag_id, member_id) VALUES (?, ?)'),
    tagDetach: q('DELETE FROM tag_members WHERE tag_id = ? AND member_id = ?'),
    tagDetachAll: q('DELETE FROM tag_members WHERE member_id = ?'),

    featList: q<FeatureRow>('SELECT name, value FROM features WHERE organization_id = ? ORDER BY name'),
    featSet: q('INSERT INTO features (organization_id, name, value) VALUES (?, ?, ?) ON CONFLICT (organization_id, name) DO UPDATE SET value = excluded.value'),
    featRemove: q('DELETE FROM features WHERE organization_id = ? AND name = ?'),

    actGet: q('SELECT * FROM activities WHERE organization_id = ? AND id = ?'),
    actSeq: q<{ seq: number }>('SELECT seq FROM activities WHERE organization_id = ? AND id = ?'),
    actByFp: q('SELECT * FROM activities WHERE fingerprint = ?'),
    actInsert: q('INSERT INTO activities (id, organization_id, type, status, fingerprint, created_ms, updated_ms, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    actCount: q<{ n: number }>('SELECT COUNT(*) AS n FROM activities WHERE organization_id = ?'),
    ping: q('SELECT 1 AS ok'),
  };

  /**
   * Every stamped request looks its API key up by public key (twice for a submit: before the
   * signature check and again inside the group commit). Those lookups are cached. Correctness:
   * the cache is cleared by every insert / delete of an API key through this store (also inside
   * a transaction that is later rolled back: clearing is always safe), is filled only outside
   * transactions (never with uncommitted rows), and is dropped whenever another connection
   * (another process of the pool, the CLI) has committed (PRAGMA data_version). Expiry is not
   * cached: callers compare expiresAtMs with their clock on every request.
   */
  const keyCache = new Map<string, ApiKeyRow[]>();
  const KEY_CACHE_MAX = 10_000;
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  let seenDataVersion = dataVersion.get();
  const keysByPublicKey = (pk: string): ApiKeyRow[] => {
    const v = dataVersion.get();
    if (v !== seenDataVersion) { keyCache.clear(); seenDataVersion = v; }
    let rows = keyCache.get(pk);
    if (!rows) {
      rows = s.keyByPub.all(pk).map(keyFrom);
      if (!db.inTransaction) {
        if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
        keyCache.set(pk, rows);
      }
    }
    return rows.map((r) => ({ ...r }));
  };

  // One transaction function for every call (BEGIN IMMEDIATE … COMMIT, or a SAVEPOINT when
  // nested): db.transaction(fn) per call built four wrapper functions each time (~4% of a
  // submit's CPU under load).
  const runInTransaction = db.transaction((fn: () => unknown) => fn());
  // PRAGMA busy_timeout acts when the statement is prepared, so these cannot be prepared once.
  const noBusyWait = () => db.pragma('busy_timeout = 0');
  const busyWait = () => db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);

  let closed = false;
  // transactionNoWait: the optional group-commit capability (engine.ts NoWaitTransactions).
  const store: Store & { transactionNoWait<T>(fn: () => T): { busy: true } | { busy: false; value: T } } = {
    transaction: <T>(fn: () => T): T => runInTransaction.immediate(fn) as T,
    // The group commit's first try (engine.ts NoWaitTransactions): BEGIN IMMEDIATE with no busy
    // wait, so a process of a pool does not sleep in SQLite's busy handler with its event loop
    // stopped while another process commits; inside the transaction the usual timeout applies.
    transactionNoWait: <T>(fn: () => T): { busy: true } | { busy: false; value: T } => {
      if (db.inTransaction) return { busy: false, value: runInTransaction.immediate(fn) as T };
      let started = false;
      noBusyWait();
      try {
        const value = runInTransaction.immediate(() => { started = true; busyWait(); return fn(); }) as T;
        return { busy: false, value };
      } catch (e) {
        if (!started && (e as { code?: string }).code === 'SQLITE_BUSY') return { busy: true };
        throw e;
      } finally {
        if (!started) busyWait();
      }
    },
    isReady: () => {
      if (closed) return false;
      try { return s.ping.get() !== undefined; } catch { return false; }
    },
    close: () => { if (!closed) { closed = true; db.close(); } },

    organizations: {
      get: (id) => { const r = s.orgGet.get(id); return r ? orgFrom(r) : undefined; },
      insert: (o) => { s.orgInsert.run(o.id, o.name, o.parentId, o.rootQuorumThreshold, o.createdMs, o.updatedMs); },
      childrenOf: (id) => s.orgChildren.all(id).map(orgFrom),
      roots: () => s.orgRoots.all().map(orgFrom),
      touch: (id, ms) => { s.orgTouch.run(ms, id); },
      count: () => s.orgCount.get()!.n,
    },
    users: {
      get: (org, id) => { const r = s.userGet.get(org, id); return r ? userFrom(r) : undefined; },
      list: (org) => s.userList.all(org).map(userFrom),
      insert: (u) => { s.userInsert.run(u.id, u.organizationId, u.name, u.email, u.phoneNumber, u.isRoot ? 1 : 0, u.createdMs, u.updatedMs); },
      update: (u) => { s.userUpdate.run(u.name, u.email, u.phoneNumber, u.isRoot ? 1 : 0, u.updatedMs, u.organizationId, u.id); },
      delete: (org, id) => { s.userDelete.run(org, id); },
      rootUserIds: (org) => s.userRoots.all(org).map((r) => r.id),
    },
    apiKeys: {
      get: (org, id) => { const r = s.keyGet.get(org, id); return r ? keyFrom(r) : undefined; },
      byPublicKey: (pk) => keysByPublicKey(pk),
      listByUser: (org, user) => s.keyByUser.all(org, user).map(keyFrom),
      listByOrganization: (org) => s.keyByOrg.all(org).map(keyFrom),
      insert: (k) => {
        keyCache.clear();
        s.keyInsert.run(k.id, k.organizationId, k.userId, k.name, k.publicKey, k.curve, k.credentialType,
          k.expirationSeconds, k.expiresAtMs, k.createdMs, k.updatedMs);
      },
      delete: (org, id) => { keyCache.clear(); s.keyDelete.run(org, id); },
    },
    tags: {
      get: (org, id) => { const r = s.tagGet.get(org, id); return r ? tagFrom(r) : undefined; },
      byName: (org, type, name) => { const r = s.tagByName.get(org, type, name); return r ? tagFrom(r) : undefined; },
      list: (org, type) => s.tagList.all(org, type).map(tagFrom),
      insert: (t) => { s.tagInsert.run(t.id, t.organizationId, t.name, t.type, t.createdMs, t.updatedMs); },
      update: (t) => { s.tagUpdate.run(t.name, t.updatedMs, t.organizationId, t.id); },
      delete: (org, id) => { s.tagDelete.run(org, id); },
      tagsOf: (member) => s.tagsOf.all(member).map((r) => r.tag_id),
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
      list: (org) => s.featList.all(org).map((r) => ({ name: r.name, value: r.value })),
      set: (org, name, value) => { s.featSet.run(org, name, value); },
      remove: (org, name) => s.featRemove.run(org, name).changes > 0,
    },
    activities: {
      get: (org, id) => { const r = s.actGet.get(org, id); return r ? activityFrom(r) : undefined; },
      byFingerprint: (fp) => { const r = s.actByFp.get(fp); return r ? activityFrom(r) : undefined; },
      insert: (a) => {
        s.actInsert.run(a.id, a.organizationId, a.type, a.status, a.fingerprint, a.createdMs, a.updatedMs, JSON.stringify(a.record));
      },
      list: (lq) => listActivities(lq),
      count: (org) => s.actCount.get(org)!.n,
    },
  };

  /** Newest first. undefined when a cursor names no activity of the organization. */
  function listActivities(lq: ActivityListQuery): ActivityRow[] | undefined {
    const where: string[] = ['organization_id = ?'];
    const args: unknown[] = [lq.organizationId];
    if (lq.statuses && lq.statuses.length > 0) {
      where.push(`status IN (${lq.statuses.map(() => '?').join(', ')})`);
      args.push(...lq.statuses);
    }
    if (lq.types && lq.types.length > 0) {
      where.push(`type IN (${lq.types.map(() => '?').join(', ')})`);
      args.push(...lq.types);
    }
    let ascending = false;
    if (lq.afterId !== undefined) {
      const c = s.actSeq.get(lq.organizationId, lq.afterId);
      if (!c) return undefined;
      where.push('seq < ?'); args.push(c.seq);
    }
    if (lq.beforeId !== undefined) {
      const c = s.actSeq.get(lq.organizationId, lq.beforeId);
      if (!c) return undefined;
      where.push('seq > ?'); args.push(c.seq);
      if (lq.afterId === undefined) ascending = true;
    }
    const sql = `SELECT * FROM activities WHERE ${where.join(' AND ')} ORDER BY seq ${ascending ? 'ASC' : 'DESC'} LIMIT ?`;
    args.push(lq.limit);
    const rows = db.prepare(sql).all(...args) as Row[];
    const out = rows.map(activityFrom);
    if (ascending) out.reverse();
    return out;
  }

  return store;
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
