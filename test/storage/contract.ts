// The storage contract: what any engine behind src/storage/types.ts (Db, Tx, Repositories) must
// do, written against those interfaces only. Each adapter's test file runs it (sqlite.contract.test.ts);
// an adapter passes when every case here passes unchanged.
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { randomUUID } from 'node:crypto';
import type {
  ActivityRow, ApiKeyRow, AuthenticatorRow, Db, OauthProviderRow, OrganizationRow, SendTransactionRow, TagRow, Tx, UserRow, WebhookDeliveryRow,
} from '../../src/storage/types.js';
import type { PrivateKeyRow, WalletAccountRow, WalletRow } from '../../src/storage/keys.js';
import { appendActivity, consistencyProofOf, inclusionProofOf } from '../../src/domain/activityLog.js';
import { leafHash, rootOf, verifyConsistency, verifyInclusion } from '../../src/tlog/merkle.js';
import { parseEntry } from '../../src/tlog/entry.js';

export interface ContractTarget {
  name: string;
  /** A new, empty database (migrated). */
  open(): Promise<Db>;
  /** Another handle on the same database (another process or node), if the engine has one. */
  another?(db: Db): Promise<Db>;
}

const id = () => randomUUID();
const org = (over: Partial<OrganizationRow> = {}): OrganizationRow => ({ id: id(), name: 'org', parentId: null, rootQuorumThreshold: 1, createdMs: 1, updatedMs: 1, ...over });
const user = (organizationId: string, over: Partial<UserRow> = {}): UserRow => ({
  id: id(), organizationId, name: 'u', email: null, phoneNumber: null, isRoot: false, createdMs: 1, updatedMs: 1, ...over,
});
const apiKey = (organizationId: string, userId: string, publicKey: string, over: Partial<ApiKeyRow> = {}): ApiKeyRow => ({
  id: id(), organizationId, userId, name: 'k', publicKey, curve: 'API_KEY_CURVE_P256', credentialType: 'CREDENTIAL_TYPE_API_KEY_P256',
  expirationSeconds: null, expiresAtMs: null, createdMs: 1, updatedMs: 1, ...over,
});
const passkey = (organizationId: string, userId: string, credentialId: string, over: Partial<AuthenticatorRow> = {}): AuthenticatorRow => ({
  id: id(), organizationId, userId, name: 'p', credentialId, publicKey: '02' + 'ab'.repeat(32), rpId: 'example.com', aaguid: '00', attestationType: 'none',
  transports: ['internal'], signCount: 0, createdMs: 1, updatedMs: 1, ...over,
});
const tag = (organizationId: string, name: string, type: TagRow['type'] = 'TAG_TYPE_USER', ms = 1): TagRow => ({ id: id(), organizationId, name, type, createdMs: ms, updatedMs: ms });
const activity = (organizationId: string, n: number, over: Partial<ActivityRow> = {}): ActivityRow => ({
  id: `0000000${n}-0000-7000-8000-${String(n).padStart(12, '0')}`, organizationId, type: 'ACTIVITY_TYPE_CREATE_USERS_V3', status: 'ACTIVITY_STATUS_COMPLETED',
  fingerprint: `sha256:${n}`, requestMs: 1_790_000_000_000 + n, createdMs: n, updatedMs: n, record: { n }, ...over,
});
const privateKey = (organizationId: string, address: string, over: Partial<PrivateKeyRow> = {}): PrivateKeyRow => ({
  id: id(), organizationId, name: 'pk', curve: 'CURVE_SECP256K1', publicKey: '02' + 'cd'.repeat(32), addresses: [{ format: 'ADDRESS_FORMAT_ETHEREUM', address }],
  sealed: new Uint8Array([1, 2, 3]), imported: false, exported: false, createdMs: 1, updatedMs: 1, ...over,
});
const wallet = (organizationId: string): WalletRow => ({ id: id(), organizationId, name: 'w', sealedMnemonic: new Uint8Array([9]), imported: false, exported: false, createdMs: 1, updatedMs: 1 });
const account = (organizationId: string, walletId: string, n: number): WalletAccountRow => ({
  id: id(), organizationId, walletId, curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: `m/44'/60'/0'/0/${n}`,
  addressFormat: 'ADDRESS_FORMAT_ETHEREUM', address: '0x' + n.toString(16).padStart(40, 'A'), publicKey: '02' + 'ef'.repeat(32),
  sealed: new Uint8Array([n]), name: null, createdMs: n, updatedMs: n,
});
const delivery = (organizationId: string, nextAttemptMs: number, over: Partial<WebhookDeliveryRow> = {}): WebhookDeliveryRow => ({
  id: id(), organizationId, activityId: 'a', eventType: 'ACTIVITY_UPDATES', url: 'https://example.invalid/hook', body: '{}', attempts: 0,
  nextAttemptMs, createdMs: nextAttemptMs, ...over,
});
const sent = (organizationId: string, nonce: number, over: Partial<SendTransactionRow> = {}): SendTransactionRow => ({
  id: id(), organizationId, activityId: 'a', caip2: 'eip155:1', fromAddress: '0xabc', txHash: '0x' + String(nonce), nonce, signedTransaction: '0x',
  status: 'INITIALIZED', error: null, blockNumber: null, attempts: 0, nextCheckMs: 100 + nonce, createdMs: 1, updatedMs: 1, ...over,
});
const provider = (organizationId: string, userId: string, subject: string): OauthProviderRow => ({
  id: id(), organizationId, userId, name: 'google', issuer: 'https://accounts.example', audience: 'app', subject, createdMs: 1, updatedMs: 1,
});

export function storageContract(target: ContractTarget): void {
  describe(`storage contract (${target.name})`, () => {
    let db: Db;
    const extra: Db[] = [];
    beforeEach(async () => { db = await target.open(); });
    afterEach(async () => {
      for (const d of extra.splice(0)) await d.close();
      await db.close();
    });
    /** An organization with one user, for rows that need both. */
    const seed = async () => {
      const o = org();
      const u = user(o.id, { isRoot: true });
      await db.write(async (tx) => { await tx.organizations.insert(o); await tx.users.insert(u); });
      return { o, u };
    };

    describe('unit of work', () => {
      it('a write that throws halfway leaves nothing behind, and its error reaches the caller', async () => {
        const o = org();
        await expect(db.write(async (tx) => {
          await tx.organizations.insert(o);
          await tx.users.insert(user(o.id));
          throw new Error('halfway');
        })).rejects.toThrow('halfway');
        expect(await db.read((tx) => tx.organizations.get(o.id))).toBeUndefined();
        expect(await db.read((tx) => tx.users.list(o.id))).toEqual([]);
      });

      it('a write that breaks a constraint halfway leaves nothing behind either', async () => {
        const { o, u } = await seed();
        const t = tag(o.id, 'dup');
        await expect(db.write(async (tx) => {
          await tx.users.update({ ...u, name: 'renamed' });
          await tx.tags.insert(t);
          await tx.tags.insert({ ...t, id: id() }); // same (organization, type, name)
        })).rejects.toThrow();
        expect((await db.read((tx) => tx.users.get(o.id, u.id)))!.name).toBe('u');
        expect(await db.read((tx) => tx.tags.list(o.id, 'TAG_TYPE_USER'))).toEqual([]);
      });

      it('reads inside a write see its own changes; others see them only once it has committed', async () => {
        const o = org();
        let seenInside: OrganizationRow | undefined;
        await db.write(async (tx) => {
          await tx.organizations.insert(o);
          seenInside = await tx.organizations.get(o.id);
          await tx.organizations.rename(o.id, 'renamed', 2);
          expect((await tx.organizations.get(o.id))!.name).toBe('renamed');
        });
        expect(seenInside?.id).toBe(o.id);
        expect((await db.read((tx) => tx.organizations.get(o.id)))!.name).toBe('renamed');
      });

      it('a savepoint undoes only its own changes and passes its error on', async () => {
        const { o } = await seed();
        await db.write(async (tx) => {
          await tx.tags.insert(tag(o.id, 'kept'));
          await expect(tx.savepoint(async () => { await tx.tags.insert(tag(o.id, 'undone')); throw new Error('inner'); })).rejects.toThrow('inner');
          expect(await tx.savepoint(async () => { await tx.tags.insert(tag(o.id, 'also kept', 'TAG_TYPE_USER', 2)); return 7; })).toBe(7);
        });
        expect((await db.read((tx) => tx.tags.list(o.id, 'TAG_TYPE_USER'))).map((t) => t.name)).toEqual(['kept', 'also kept']);
      });

      it('afterCommit runs once the write has committed, never for a write that rolled back', async () => {
        const { o } = await seed();
        const ran: string[] = [];
        await db.write(async (tx) => { await tx.tags.insert(tag(o.id, 'a')); tx.afterCommit(() => ran.push('committed')); });
        await db.write(async (tx) => { tx.afterCommit(() => ran.push('rolled back')); throw new Error('no'); }).catch(() => undefined);
        await db.write(async (tx) => {
          await tx.savepoint(async () => { tx.afterCommit(() => ran.push('undone savepoint')); throw new Error('no'); }).catch(() => undefined);
        });
        expect(ran).toEqual(['committed']);
      });

      it('named locks can be taken in a write (and cost a single writer nothing)', async () => {
        const { o } = await seed();
        await db.write(async (tx) => {
          await tx.lock('request', o.id);
          await tx.lock('approval', 'sha256:00');
          await tx.lock('request', o.id); // again in the same transaction
        });
      });

      it('many writers at once: each commits or fails alone, in any interleaving', async () => {
        const { o } = await seed();
        const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => db.write(async (tx) => {
          await tx.tags.insert(tag(o.id, `t${i % 10}`)); // every name twice: one of each pair must fail
          return i;
        })));
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
        expect((await db.read((tx) => tx.tags.list(o.id, 'TAG_TYPE_USER'))).map((t) => t.name).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `t${i}`).sort());
      });

      it('two writers racing for the same row: exactly one takes it', async () => {
        const o = org();
        const d = delivery(o.id, 10);
        await db.write((tx) => tx.webhooks.enqueue(d));
        const others = target.another ? [await target.another(db)] : [];
        extra.push(...others);
        const handles = [db, db, ...others, ...others];
        const won = await Promise.all(handles.map((h, i) => h.write((tx) => tx.webhooks.claim(d.id, 10, 1000 + i))));
        expect(won.filter(Boolean)).toHaveLength(1);
      });

      it('a repository used outside a unit of work is refused', async () => {
        let leaked: Parameters<Parameters<Db['read']>[0]>[0] | undefined;
        await db.read(async (tx) => { leaked = tx; });
        await expect(leaked!.organizations.count()).rejects.toThrow(/outside/);
      });
    });

    describe('organizations and users', () => {
      it('insert, get, rename, quorum, touch, children, roots, count, disabled flows', async () => {
        const root = org({ createdMs: 1 });
        const child = org({ parentId: root.id, createdMs: 2 });
        await db.write(async (tx) => { await tx.organizations.insert(root); await tx.organizations.insert(child); });
        await db.write(async (tx) => {
          await tx.organizations.rename(child.id, 'child', 5);
          await tx.organizations.setRootQuorumThreshold(child.id, 2, 6);
          await tx.organizations.touch(root.id, 7);
          await tx.organizations.disableFlows(child.id, ['disableSmsAuth', 'disableEmailAuth']);
        });
        await db.read(async (tx) => {
          expect(await tx.organizations.get(child.id)).toEqual({ ...child, name: 'child', rootQuorumThreshold: 2, updatedMs: 6 });
          expect((await tx.organizations.get(root.id))!.updatedMs).toBe(7);
          expect((await tx.organizations.childrenOf(root.id)).map((x) => x.id)).toEqual([child.id]);
          expect((await tx.organizations.roots()).map((x) => x.id)).toEqual([root.id]);
          expect(await tx.organizations.count()).toBe(2);
          expect(await tx.organizations.disabledFlows(child.id)).toEqual(['disableEmailAuth', 'disableSmsAuth']);
          expect(await tx.organizations.get('nope')).toBeUndefined();
        });
      });

      it('users: insert, get, list oldest first, update, root users, delete', async () => {
        const { o, u } = await seed();
        const b = user(o.id, { createdMs: 2, email: 'B@example.com' });
        await db.write(async (tx) => { await tx.users.insert(b); await tx.users.update({ ...b, name: 'bee', isRoot: true, updatedMs: 3 }); });
        await db.read(async (tx) => {
          expect(await tx.users.get(o.id, b.id)).toEqual({ ...b, name: 'bee', isRoot: true, updatedMs: 3 });
          expect((await tx.users.list(o.id)).map((x) => x.id)).toEqual([u.id, b.id]);
          expect(await tx.users.rootUserIds(o.id)).toEqual([u.id, b.id]);
        });
        await db.write((tx) => tx.users.delete(o.id, b.id));
        expect(await db.read((tx) => tx.users.get(o.id, b.id))).toBeUndefined();
      });

      it('deleting an organization removes what it holds and keeps its activities', async () => {
        const { o, u } = await seed();
        await db.write(async (tx) => {
          await tx.apiKeys.insert(apiKey(o.id, u.id, '02aa'));
          await tx.tags.insert(tag(o.id, 't'));
          await tx.features.set(o.id, 'FEATURE_NAME_WEBHOOK', 'https://x');
          await tx.activities.insert(activity(o.id, 1));
        });
        await db.write((tx) => tx.organizations.delete(o.id));
        await db.read(async (tx) => {
          expect(await tx.organizations.get(o.id)).toBeUndefined();
          expect(await tx.users.list(o.id)).toEqual([]);
          expect(await tx.apiKeys.byPublicKey('02aa')).toEqual([]);
          expect(await tx.features.list(o.id)).toEqual([]);
          expect(await tx.activities.count(o.id)).toBe(1);
        });
      });

      it('sub-organizations a page at a time, by filter, newest first; an unknown cursor is undefined', async () => {
        const parent = org();
        const subs = [1, 2, 3, 4].map((n) => org({ parentId: parent.id, name: n % 2 ? 'odd' : 'even', createdMs: n }));
        await db.write(async (tx) => { await tx.organizations.insert(parent); for (const s of subs) await tx.organizations.insert(s); });
        await db.read(async (tx) => {
          expect(await tx.organizations.subOrgIds(parent.id, undefined, { limit: 10 })).toEqual(subs.map((s) => s.id).reverse());
          expect(await tx.organizations.subOrgIds(parent.id, undefined, { limit: 2 })).toEqual([subs[3]!.id, subs[2]!.id]);
          expect(await tx.organizations.subOrgIds(parent.id, undefined, { limit: 2, afterId: subs[2]!.id })).toEqual([subs[1]!.id, subs[0]!.id]);
          expect(await tx.organizations.subOrgIds(parent.id, undefined, { limit: 10, beforeId: subs[1]!.id })).toEqual([subs[3]!.id, subs[2]!.id]);
          expect(await tx.organizations.subOrgIds(parent.id, { type: 'NAME', value: 'odd' }, { limit: 10 })).toEqual([subs[2]!.id, subs[0]!.id]);
          expect(await tx.organizations.subOrgIds(parent.id, undefined, { limit: 10, afterId: 'unknown' })).toBeUndefined();
        });
      });
    });

    describe('credentials', () => {
      it('API keys: by public key across organizations, per user, per organization; one registration per organization', async () => {
        const a = await seed();
        const b = await seed();
        const k1 = apiKey(a.o.id, a.u.id, '02aa');
        const k2 = apiKey(b.o.id, b.u.id, '02aa', { createdMs: 2 });
        await db.write(async (tx) => { await tx.apiKeys.insert(k1); await tx.apiKeys.insert(k2); });
        await db.read(async (tx) => {
          expect((await tx.apiKeys.byPublicKey('02aa')).map((k) => k.id).sort()).toEqual([k1.id, k2.id].sort());
          expect(await tx.apiKeys.get(a.o.id, k1.id)).toEqual(k1);
          expect((await tx.apiKeys.listByUser(a.o.id, a.u.id)).map((k) => k.id)).toEqual([k1.id]);
          expect((await tx.apiKeys.listByOrganization(b.o.id)).map((k) => k.id)).toEqual([k2.id]);
        });
        await expect(db.write((tx) => tx.apiKeys.insert(apiKey(a.o.id, a.u.id, '02aa')))).rejects.toThrow();
        // delete says whether it removed the key (recover_user relies on it: a recovery key is used once)
        expect(await db.write((tx) => tx.apiKeys.delete(a.o.id, k1.id))).toBe(true);
        expect(await db.write((tx) => tx.apiKeys.delete(a.o.id, k1.id))).toBe(false);
        expect(await db.write((tx) => tx.apiKeys.delete(a.o.id, k2.id))).toBe(false);
        expect((await db.read((tx) => tx.apiKeys.byPublicKey('02aa'))).map((k) => k.id)).toEqual([k2.id]);
      });

      it('a stamp\'s context: the same rows as the four reads it stands for, for every organization a request may name', async () => {
        const a = await seed();
        const b = await seed();
        const expiring = apiKey(a.o.id, a.u.id, '02cc', { expiresAtMs: 123, expirationSeconds: '60' });
        const k1 = apiKey(a.o.id, a.u.id, '02cc'.replace('cc', 'dd'));
        const k2 = apiKey(b.o.id, b.u.id, '02dd', { createdMs: 2 });
        const list = (org: string, pk: string, cidr: string) => ({ organizationId: org, publicKey: pk, enabled: true, onEvaluationError: 'ALLOW' as const, rules: [{ cidr, label: 'l', createdMs: 1 }], createdMs: 1, updatedMs: 1 });
        await db.write(async (tx) => {
          for (const k of [expiring, k1, k2]) await tx.apiKeys.insert(k);
          await tx.ipAllowlists.set(list(a.o.id, '', '10.0.0.0/8'));
          await tx.ipAllowlists.set(list(a.o.id, '02dd', '192.0.2.0/24'));
          await tx.ipAllowlists.set(list(b.o.id, '02ee', '198.51.100.0/24'));
        });
        const separately = async (tx: Tx, pk: string, org: string) => {
          const keys = await tx.apiKeys.byPublicKey(pk);
          const own = keys.find((k) => k.organizationId === org);
          return {
            publicKey: pk, organizationId: org, keys, organization: await tx.organizations.get(org),
            user: own ? await tx.users.get(org, own.userId) : undefined, allowlists: await tx.ipAllowlists.governing(org, pk),
          };
        };
        const sorted = <T extends { keys: ApiKeyRow[] }>(c: T): T => ({ ...c, keys: [...c.keys].sort((x, y) => x.id.localeCompare(y.id)) });
        for (const read of [db.read.bind(db), db.write.bind(db)]) {
          await read(async (tx) => {
            for (const [pk, org] of [['02dd', a.o.id], ['02dd', b.o.id], ['02cc', a.o.id], ['02cc', b.o.id], ['02dd', id()], ['02ff', a.o.id], ['02dd', '']] as const) {
              const got = await tx.apiKeys.stampContext(pk, org);
              expect(sorted(got)).toEqual(sorted(await separately(tx, pk, org)));
            }
            const ctx = await tx.apiKeys.stampContext('02dd', a.o.id);
            expect(ctx.keys.map((k) => k.id).sort()).toEqual([k1.id, k2.id].sort());
            expect(ctx.user).toEqual(a.u);
            expect(ctx.allowlists.own?.rules[0]?.cidr).toBe('192.0.2.0/24');
            expect(ctx.allowlists.organization?.rules[0]?.cidr).toBe('10.0.0.0/8');
            expect((await tx.apiKeys.stampContext('02cc', a.o.id)).keys).toEqual([expiring]);
          });
        }
        // a change is seen by the next read
        await db.write(async (tx) => { await tx.apiKeys.delete(b.o.id, k2.id); await tx.users.delete(b.o.id, b.u.id); });
        await db.read(async (tx) => {
          const ctx = await tx.apiKeys.stampContext('02dd', b.o.id);
          expect(ctx.keys.map((k) => k.id)).toEqual([k1.id]);
          expect(ctx.user).toBeUndefined();
        });
      });

      it('passkeys: by credential id, per user and organization, sign counter; one registration per organization', async () => {
        const { o, u } = await seed();
        const p = passkey(o.id, u.id, 'cred-1');
        await db.write((tx) => tx.authenticators.insert(p));
        expect(await db.write((tx) => tx.authenticators.advanceSignCount(p.id, 9))).toBe(true);
        // only up: the same or a lower counter changes nothing, and says so
        expect(await db.write((tx) => tx.authenticators.advanceSignCount(p.id, 9))).toBe(false);
        expect(await db.write((tx) => tx.authenticators.advanceSignCount(p.id, 4))).toBe(false);
        await db.read(async (tx) => {
          expect(await tx.authenticators.get(o.id, p.id)).toEqual({ ...p, signCount: 9 });
          expect((await tx.authenticators.byCredentialId('cred-1')).map((x) => x.id)).toEqual([p.id]);
          expect((await tx.authenticators.listByUser(o.id, u.id)).map((x) => x.id)).toEqual([p.id]);
          expect((await tx.authenticators.listByOrganization(o.id)).map((x) => x.id)).toEqual([p.id]);
        });
        await expect(db.write((tx) => tx.authenticators.insert(passkey(o.id, u.id, 'cred-1')))).rejects.toThrow();
        await db.write((tx) => tx.authenticators.delete(o.id, p.id));
        expect(await db.read((tx) => tx.authenticators.byCredentialId('cred-1'))).toEqual([]);
      });

      it('OAuth identities: one user per identity in an organization', async () => {
        const { o, u } = await seed();
        const p = provider(o.id, u.id, 'sub-1');
        await db.write((tx) => tx.oauthProviders.insert(p));
        await db.read(async (tx) => {
          expect(await tx.oauthProviders.byIdentity(o.id, p.issuer, p.audience, 'sub-1')).toEqual(p);
          expect((await tx.oauthProviders.listByUser(o.id, u.id)).map((x) => x.id)).toEqual([p.id]);
          expect((await tx.oauthProviders.listByOrganization(o.id)).map((x) => x.id)).toEqual([p.id]);
        });
        await expect(db.write((tx) => tx.oauthProviders.insert(provider(o.id, u.id, 'sub-1')))).rejects.toThrow();
        await db.write((tx) => tx.oauthProviders.delete(o.id, p.id));
        expect(await db.read((tx) => tx.oauthProviders.get(o.id, p.id))).toBeUndefined();
      });

      it('one-time codes, verification tokens (used once) and verified contacts', async () => {
        const { o, u } = await seed();
        const code = { id: id(), organizationId: o.id, userId: u.id, otpType: 'OTP_TYPE_EMAIL', contact: 'a@example.com', sealedCode: new Uint8Array([1]), sealedTarget: null, attempts: 0, expiresMs: 500, createdMs: 1 };
        await db.write(async (tx) => { await tx.otps.insert(code); await tx.otps.setAttempts(code.id, 2); await tx.verificationTokens.insert('vt-1', o.id, Date.now() + 60_000); });
        expect(await db.read((tx) => tx.otps.get(o.id, code.id))).toEqual({ ...code, attempts: 2 });
        const uses = await Promise.all([1, 2, 3].map(() => db.write((tx) => tx.verificationTokens.use('vt-1', Date.now()))));
        expect(uses.filter(Boolean)).toHaveLength(1);
        await db.write(async (tx) => { await tx.otps.deleteExpired(1000); await tx.verifiedContacts.mark(o.id, u.id, 'EMAIL', 'a@example.com', 1); });
        expect(await db.read((tx) => tx.otps.get(o.id, code.id))).toBeUndefined();
      });
    });

    describe('tags, features, policies', () => {
      it('tags: by name, list, rename, members, memberships by type, detach', async () => {
        const { o, u } = await seed();
        const t1 = tag(o.id, 'one', 'TAG_TYPE_USER', 1);
        const t2 = tag(o.id, 'two', 'TAG_TYPE_USER', 2);
        const k1 = tag(o.id, 'one', 'TAG_TYPE_PRIVATE_KEY', 3); // same name, other type: allowed
        await db.write(async (tx) => {
          for (const t of [t1, t2, k1]) await tx.tags.insert(t);
          await tx.tags.attach(t2.id, u.id); await tx.tags.attach(t1.id, u.id); await tx.tags.attach(t1.id, u.id); // twice: once
          await tx.tags.attach(k1.id, 'pk-1');
          await tx.tags.update({ ...t2, name: 'deux', updatedMs: 5 });
        });
        await db.read(async (tx) => {
          expect((await tx.tags.byName(o.id, 'TAG_TYPE_USER', 'deux'))!.id).toBe(t2.id);
          expect((await tx.tags.list(o.id, 'TAG_TYPE_USER')).map((t) => t.id)).toEqual([t1.id, t2.id]);
          expect(await tx.tags.tagsOf(u.id)).toEqual([t1.id, t2.id]);
          expect(await tx.tags.tagsOf(u.id, 'TAG_TYPE_PRIVATE_KEY')).toEqual([]);
          expect(await tx.tags.tagsOf('pk-1', 'TAG_TYPE_PRIVATE_KEY')).toEqual([k1.id]);
          expect(await tx.tags.members(t1.id)).toEqual([u.id]);
          expect(await tx.tags.memberships(o.id, 'TAG_TYPE_USER')).toEqual([{ tagId: t1.id, memberId: u.id }, { tagId: t2.id, memberId: u.id }]);
        });
        await expect(db.write((tx) => tx.tags.insert(tag(o.id, 'one')))).rejects.toThrow();
        await db.write(async (tx) => { await tx.tags.detach(t1.id, u.id); await tx.tags.detachAll('pk-1'); await tx.tags.delete(o.id, t2.id); });
        await db.read(async (tx) => {
          expect(await tx.tags.tagsOf(u.id)).toEqual([]);
          expect(await tx.tags.members(k1.id)).toEqual([]);
          expect(await tx.tags.get(o.id, t2.id)).toBeUndefined();
        });
      });

      it('features: set (and replace), get, list, remove', async () => {
        const { o } = await seed();
        await db.write(async (tx) => { await tx.features.set(o.id, 'B', '1'); await tx.features.set(o.id, 'A', '2'); await tx.features.set(o.id, 'B', '3'); });
        expect(await db.read((tx) => tx.features.list(o.id))).toEqual([{ name: 'A', value: '2' }, { name: 'B', value: '3' }]);
        expect(await db.write((tx) => tx.features.remove(o.id, 'A'))).toBe(true);
        expect(await db.write((tx) => tx.features.remove(o.id, 'A'))).toBe(false);
        expect(await db.read((tx) => tx.features.get(o.id, 'A'))).toBeUndefined();
      });

      it('policies, pending activities, votes (one per user) and evaluations', async () => {
        const { o, u } = await seed();
        const p = { id: id(), organizationId: o.id, name: 'p', effect: 'EFFECT_ALLOW' as const, condition: 'true', consensus: '', time: '', notes: '', createdMs: 1, updatedMs: 1 };
        const a = activity(o.id, 1, { status: 'ACTIVITY_STATUS_CONSENSUS_NEEDED' });
        const vote = { id: id(), activityId: a.id, organizationId: o.id, userId: u.id, selection: 'VOTE_SELECTION_APPROVED' as const, record: { v: 1 }, createdMs: 1 };
        await db.write(async (tx) => {
          await tx.policies.insert(p);
          await tx.policies.update({ ...p, name: 'renamed' });
          await tx.activities.insert(a);
          await tx.pending.insert({ activityId: a.id, organizationId: o.id, fingerprint: a.fingerprint, path: 'create_users', userId: u.id, credentialId: 'k', createdMs: 1 });
          await tx.votes.insert(vote);
          await tx.policyEvaluations.insert({ id: id(), activityId: a.id, organizationId: o.id, voteId: vote.id, evaluations: [{ policyId: p.id, outcome: 'OUTCOME_ALLOW' }], createdMs: 1 });
        });
        await db.read(async (tx) => {
          expect((await tx.policies.get(o.id, p.id))!.name).toBe('renamed');
          expect((await tx.policies.list(o.id)).map((x) => x.id)).toEqual([p.id]);
          expect((await tx.pending.byFingerprint(o.id, a.fingerprint))!.activityId).toBe(a.id);
          expect(await tx.votes.list(a.id)).toEqual([vote]);
          expect((await tx.policyEvaluations.list(a.id))[0]!.evaluations).toEqual([{ policyId: p.id, outcome: 'OUTCOME_ALLOW' }]);
        });
        await expect(db.write((tx) => tx.votes.insert({ ...vote, id: id() }))).rejects.toThrow();
        await db.write(async (tx) => { await tx.pending.delete(a.id); expect(await tx.policies.delete(o.id, p.id)).toBe(true); });
        expect(await db.read((tx) => tx.pending.byFingerprint(o.id, a.fingerprint))).toBeUndefined();
      });

      it('vote requests: by the body\'s fingerprint; one per fingerprint', async () => {
        const { o } = await seed();
        const request = { fingerprint: `sha256:${id()}`, organizationId: o.id, activityId: id(), createdMs: 2 };
        await db.write((tx) => tx.votes.insertRequest(request));
        await db.read(async (tx) => {
          expect(await tx.votes.request(request.fingerprint)).toEqual(request);
          expect(await tx.votes.request(`sha256:${id()}`)).toBeUndefined();
        });
        await expect(db.write((tx) => tx.votes.insertRequest({ ...request, activityId: id() }))).rejects.toThrow();
        expect((await db.read((tx) => tx.votes.request(request.fingerprint)))!.activityId).toBe(request.activityId);
      });
    });

    describe('activities', () => {
      it('insert, get, by (timestampMs, fingerprint), update; the same (timestampMs, fingerprint) is stored once', async () => {
        const { o } = await seed();
        const a = activity(o.id, 1, { logIndexes: [4] });
        await db.write((tx) => tx.activities.insert(a));
        await db.write((tx) => tx.activities.update({ ...a, status: 'ACTIVITY_STATUS_FAILED', updatedMs: 9, record: { n: 1, failed: true } }, 11));
        await db.read(async (tx) => {
          const got = await tx.activities.get(o.id, a.id);
          expect(got).toMatchObject({ id: a.id, status: 'ACTIVITY_STATUS_FAILED', updatedMs: 9, record: { n: 1, failed: true }, logIndexes: [4, 11] });
          // the indexes of its log entries are the activity row's, oldest first, for its organization only
          expect(await tx.log.indexesOf(o.id, a.id)).toEqual([4, 11]);
          expect(await tx.log.indexesOf(org().id, a.id)).toEqual([]);
          expect(await tx.log.indexesOf(o.id, 'no-such-activity')).toEqual([]);
          expect((await tx.activities.byFingerprint(a.fingerprint, a.requestMs))!.id).toBe(a.id);
          expect(await tx.activities.byFingerprint(a.fingerprint, a.requestMs + 1)).toBeUndefined();
        });
        // two writers with one body: one activity
        const twice = await Promise.allSettled([2, 2].map((n) => db.write((tx) => tx.activities.insert({ ...activity(o.id, n), id: id() }))));
        expect(twice.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
        expect(await db.read((tx) => tx.activities.count(o.id))).toBe(2);
      });

      it('lists newest first, filtered, a page at a time in both directions; an unknown cursor is undefined', async () => {
        const { o } = await seed();
        const rows = [1, 2, 3, 4, 5].map((n) => activity(o.id, n, { type: n % 2 ? 'ACTIVITY_TYPE_A' : 'ACTIVITY_TYPE_B', status: n === 5 ? 'ACTIVITY_STATUS_FAILED' : 'ACTIVITY_STATUS_COMPLETED' }));
        await db.write(async (tx) => { for (const r of rows) await tx.activities.insert(r); });
        const ids = (l: ActivityRow[] | undefined) => l?.map((r) => Number(r.record.n));
        await db.read(async (tx) => {
          expect(ids(await tx.activities.list({ organizationId: o.id, limit: 10 }))).toEqual([5, 4, 3, 2, 1]);
          expect(ids(await tx.activities.list({ organizationId: o.id, limit: 2 }))).toEqual([5, 4]);
          expect(ids(await tx.activities.list({ organizationId: o.id, limit: 2, afterId: rows[3]!.id }))).toEqual([3, 2]);
          expect(ids(await tx.activities.list({ organizationId: o.id, limit: 2, beforeId: rows[1]!.id }))).toEqual([4, 3]);
          expect(ids(await tx.activities.list({ organizationId: o.id, limit: 10, types: ['ACTIVITY_TYPE_B'] }))).toEqual([4, 2]);
          expect(ids(await tx.activities.list({ organizationId: o.id, limit: 10, statuses: ['ACTIVITY_STATUS_FAILED'] }))).toEqual([5]);
          expect(await tx.activities.list({ organizationId: o.id, limit: 10, afterId: 'unknown' })).toBeUndefined();
        });
      });
    });

    describe('the verifiable activity log', () => {
      const rec = (organizationId: string, n: number) => ({ id: `act-${n}`, organizationId, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `sha256:${n}`, timestampMs: String(n), intent: { n }, result: {}, votes: [] });
      /** the tree head of the stored entries, recomputed from their bytes (independent of the stored nodes and head) */
      const recomputed = async (h: Db, organizationId: string, size: number) => rootOf((await h.read((tx) => tx.log.entries(organizationId, 0, size))).map((e) => leafHash(e.entry)));

      it('appends: indexes 0, 1, 2, …; the head, the stored nodes and the entries agree; proofs from stored nodes verify', async () => {
        const o = org();
        for (let n = 0; n < 13; n++) expect(await db.write((tx) => appendActivity(tx, rec(o.id, n), n, n))).toBe(n);
        const head = (await db.read((tx) => tx.log.head(o.id)))!;
        expect(head.size).toBe(13);
        expect(head.frontier.length).toBe(3 * 32); // 13 = 8 + 4 + 1
        expect(head.root).toEqual(await recomputed(db, o.id, 13));
        const entries = await db.read((tx) => tx.log.entries(o.id, 3, 6));
        expect(entries.map((e) => [e.index, e.activityId, parseEntry(e.entry).index])).toEqual([[3, 'act-3', 3], [4, 'act-4', 4], [5, 'act-5', 5]]);
        for (const [i, size] of [[0, 13], [12, 13], [5, 8], [6, 7]] as const) {
          const path = await db.read((tx) => inclusionProofOf(tx, o.id, i, size));
          const leaf = leafHash((await db.read((tx) => tx.log.entries(o.id, i, i + 1)))[0]!.entry);
          expect(verifyInclusion(leaf, i, size, path, await recomputed(db, o.id, size))).toBe(true);
        }
        for (const [m, size] of [[1, 13], [4, 13], [7, 13], [12, 13]] as const) {
          const proof = await db.read((tx) => consistencyProofOf(tx, o.id, m, size));
          expect(verifyConsistency(m, size, await recomputed(db, o.id, m), head.root, proof)).toBe(true);
        }
      });

      it('an append in a write that then fails leaves no trace; a second entry at one index is refused', async () => {
        const o = org();
        await db.write((tx) => appendActivity(tx, rec(o.id, 0), 0, 0));
        await expect(db.write(async (tx) => { await appendActivity(tx, rec(o.id, 1), 1, 1); throw new Error('after the append'); })).rejects.toThrow('after the append');
        expect((await db.read((tx) => tx.log.head(o.id)))!.size).toBe(1);
        expect(await db.read((tx) => tx.log.entries(o.id, 0, 10))).toHaveLength(1);
        await expect(db.write((tx) => tx.log.insertEntry({ organizationId: o.id, index: 0, activityId: 'other', entry: new Uint8Array([1]), createdMs: 1 }))).rejects.toThrow();
        expect(await db.write((tx) => appendActivity(tx, rec(o.id, 1), 1, 1))).toBe(1);
      });

      it('writers appending at once (on every handle) get distinct consecutive indexes, and the tree matches its entries', async () => {
        const o = org();
        const others = target.another ? [await target.another(db)] : [];
        extra.push(...others);
        const handles = [db, ...others];
        const got = await Promise.all(Array.from({ length: 24 }, (_, n) => handles[n % handles.length]!.write((tx) => appendActivity(tx, rec(o.id, n), n, n))));
        expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i));
        const head = (await db.read((tx) => tx.log.head(o.id)))!;
        expect(head.size).toBe(24);
        expect(head.root).toEqual(await recomputed(db, o.id, 24));
      });

      it('checkpoints: kept per size (a second at one size is ignored), the latest by size, none for another organization', async () => {
        const o = org();
        const cp = (size: number, note: string) => ({ organizationId: o.id, size, root: new Uint8Array(32).fill(size), note, createdMs: size });
        await db.write(async (tx) => { await tx.log.insertCheckpoint(cp(3, 'three')); await tx.log.insertCheckpoint(cp(9, 'nine')); await tx.log.insertCheckpoint(cp(3, 'again')); });
        await db.read(async (tx) => {
          expect(await tx.log.checkpoint(o.id)).toEqual(cp(9, 'nine'));
          expect(await tx.log.checkpoint(o.id, 3)).toEqual(cp(3, 'three'));
          expect(await tx.log.checkpoint(o.id, 4)).toBeUndefined();
          expect(await tx.log.checkpoint(id())).toBeUndefined();
          expect(await tx.log.head(id())).toBeUndefined();
        });
      });
    });

    describe('keys and wallets', () => {
      it('private keys: by id and by address (0x-hex in any case), newest first, exported, counted, deleted', async () => {
        const { o } = await seed();
        const address = '0x' + 'aB'.repeat(20);
        const k = privateKey(o.id, address);
        await db.write(async (tx) => { await tx.keys.privateKeys.insert(k); await tx.keys.privateKeys.markExported(o.id, k.id, 5); });
        await db.read(async (tx) => {
          expect(await tx.keys.privateKeys.get(o.id, k.id)).toMatchObject({ id: k.id, exported: true, sealed: new Uint8Array([1, 2, 3]) });
          expect((await tx.keys.privateKeys.byAddress(o.id, address.toLowerCase()))!.id).toBe(k.id);
          expect((await tx.keys.privateKeys.byAddress(o.id, '0x' + 'AB'.repeat(20)))!.id).toBe(k.id);
          expect((await tx.keys.privateKeys.list(o.id)).map((x) => x.id)).toEqual([k.id]);
          expect(await tx.keys.privateKeys.count(o.id)).toBe(1);
          expect(await tx.privateKeys.exists(o.id, k.id)).toBe(true);
        });
        await db.write((tx) => tx.keys.privateKeys.delete(o.id, k.id));
        expect(await db.read((tx) => tx.keys.privateKeys.count(o.id))).toBe(0);
      });

      it('wallets and accounts: pages of accounts in both directions, by path and address; deleting a wallet deletes its accounts', async () => {
        const { o } = await seed();
        const w = wallet(o.id);
        const accts = [1, 2, 3].map((n) => account(o.id, w.id, n));
        await db.write(async (tx) => {
          await tx.keys.wallets.insert(w);
          for (const a of accts) await tx.keys.accounts.insert(a);
          await tx.keys.wallets.rename(o.id, w.id, 'renamed', 2);
        });
        await db.read(async (tx) => {
          expect((await tx.keys.wallets.get(o.id, w.id))!.name).toBe('renamed');
          expect((await tx.keys.accounts.list(o.id, w.id, { limit: 10 }))!.map((a) => a.id)).toEqual(accts.map((a) => a.id).reverse());
          expect((await tx.keys.accounts.list(o.id, undefined, { limit: 1, afterId: accts[2]!.id }))!.map((a) => a.id)).toEqual([accts[1]!.id]);
          expect((await tx.keys.accounts.list(o.id, w.id, { limit: 10, beforeId: accts[0]!.id }))!.map((a) => a.id)).toEqual([accts[2]!.id, accts[1]!.id]);
          expect(await tx.keys.accounts.list(o.id, w.id, { limit: 10, afterId: 'unknown' })).toBeUndefined();
          expect((await tx.keys.accounts.inWalletByPath(o.id, w.id, accts[1]!.path)).map((a) => a.id)).toEqual([accts[1]!.id]);
          expect((await tx.keys.accounts.byAddress(o.id, accts[2]!.address.toLowerCase()))!.id).toBe(accts[2]!.id);
          expect(await tx.keys.accounts.count(o.id)).toBe(3);
        });
        await db.write((tx) => tx.keys.wallets.delete(o.id, w.id));
        expect(await db.read((tx) => tx.keys.accounts.count(o.id))).toBe(0);
      });

      it('import targets expire; server secrets are stored once by name', async () => {
        const { o, u } = await seed();
        const t = { id: id(), organizationId: o.id, userId: u.id, kind: 'wallet' as const, sealed: new Uint8Array([4]), createdMs: 1, expiresMs: 100 };
        await db.write(async (tx) => { await tx.keys.importTargets.insert(t); await tx.keys.secrets.insert('signer', new Uint8Array([5]), '04ab', 1); });
        expect((await db.read((tx) => tx.keys.importTargets.listValid(o.id, u.id, 'wallet', 50))).map((x) => x.id)).toEqual([t.id]);
        expect(await db.read((tx) => tx.keys.importTargets.listValid(o.id, u.id, 'wallet', 150))).toEqual([]);
        await db.write((tx) => tx.keys.importTargets.purgeExpired(150));
        expect(await db.read((tx) => tx.keys.importTargets.listValid(o.id, u.id, 'wallet', 50))).toEqual([]);
        expect(await db.read((tx) => tx.keys.secrets.get('signer'))).toEqual({ sealed: new Uint8Array([5]), publicKey: '04ab' });
        await expect(db.write((tx) => tx.keys.secrets.insert('signer', new Uint8Array([6]), '04cd', 2))).rejects.toThrow();
      });
    });

    describe('outboxes', () => {
      it('webhook deliveries: due in order, claimed once, retried, removed; endpoints', async () => {
        const { o } = await seed();
        const d1 = delivery(o.id, 10);
        const d2 = delivery(o.id, 20, { url: 'mailto:a@example.com' });
        const endpoint = { id: id(), organizationId: o.id, url: 'https://x', name: 'e', isActive: true, subscriptions: [{ eventType: 'ACTIVITY_UPDATES', isActive: true }], createdMs: 1, updatedMs: 1 };
        await db.write(async (tx) => { await tx.webhooks.enqueue(d2); await tx.webhooks.enqueue(d1); await tx.webhooks.insertEndpoint(endpoint); });
        await db.read(async (tx) => {
          expect((await tx.webhooks.due(15, 10)).map((d) => d.id)).toEqual([d1.id]);
          expect((await tx.webhooks.due(25, 10)).map((d) => d.id)).toEqual([d1.id, d2.id]);
          expect(await tx.webhooks.nextDueMs()).toBe(10);
          // each kind on its own (the dispatcher's two lanes)
          expect((await tx.webhooks.due(25, 10, 'email')).map((d) => d.id)).toEqual([d2.id]);
          expect((await tx.webhooks.due(25, 10, 'webhook')).map((d) => d.id)).toEqual([d1.id]);
          expect(await tx.webhooks.nextDueMs('email')).toBe(20);
          expect(await tx.webhooks.nextDueMs('webhook')).toBe(10);
          expect((await tx.webhooks.pending()).sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
            { kind: 'email', count: 1, oldestMs: 20 }, { kind: 'webhook', count: 1, oldestMs: 10 }]);
          expect(await tx.webhooks.endpoints(o.id)).toEqual([endpoint]);
          expect(await tx.webhooks.activityTargets(o.id, 'FEATURE_NAME_WEBHOOK')).toEqual({ feature: undefined, endpoints: [endpoint] });
        });
        // the feature's value with the endpoints; a second endpoint after the first; none at all
        const second = { ...endpoint, id: id(), url: 'https://y', name: 'f' };
        await db.write(async (tx) => { await tx.features.set(o.id, 'FEATURE_NAME_WEBHOOK', 'https://w'); await tx.webhooks.insertEndpoint(second); });
        expect(await db.read((tx) => tx.webhooks.activityTargets(o.id, 'FEATURE_NAME_WEBHOOK'))).toEqual({ feature: 'https://w', endpoints: [endpoint, second] });
        await db.write(async (tx) => { await tx.webhooks.deleteEndpoint(o.id, second.id); await tx.webhooks.deleteEndpoint(o.id, endpoint.id); });
        expect(await db.read((tx) => tx.webhooks.activityTargets(o.id, 'FEATURE_NAME_WEBHOOK'))).toEqual({ feature: 'https://w', endpoints: [] });
        await db.write(async (tx) => { await tx.features.remove(o.id, 'FEATURE_NAME_WEBHOOK'); await tx.webhooks.insertEndpoint(endpoint); });
        expect(await db.write((tx) => tx.webhooks.claim(d1.id, 10, 500))).toBe(true);
        expect(await db.write((tx) => tx.webhooks.claim(d1.id, 10, 600))).toBe(false); // moved since
        await db.write((tx) => tx.webhooks.retryAt(d2.id, 1, 700));
        await db.write((tx) => tx.webhooks.remove(d1.id));
        await db.read(async (tx) => {
          expect(await tx.webhooks.due(650, 10)).toEqual([]);
          expect((await tx.webhooks.due(700, 10)).map((d) => [d.id, d.attempts])).toEqual([[d2.id, 1]]);
        });
        await db.write(async (tx) => { await tx.webhooks.updateEndpoint({ ...endpoint, isActive: false }); });
        expect((await db.read((tx) => tx.webhooks.endpoints(o.id)))[0]!.isActive).toBe(false);
        expect(await db.write((tx) => tx.webhooks.deleteEndpoint(o.id, endpoint.id))).toBe(true);
      });

      it('webhook deliveries by address: listed (no e-mails), readdressed, claimed only at the address they were read with', async () => {
        const { o } = await seed();
        const url = `https://a.example/${id()}`;
        const a = delivery(o.id, 10, { url });
        const b = delivery(o.id, 5, { url, createdMs: 5 });
        const mail = delivery(o.id, 10, { url: `mailto:${id()}@example.com` });
        await db.write(async (tx) => { await tx.webhooks.enqueue(a); await tx.webhooks.enqueue(b); await tx.webhooks.enqueue(mail); });
        expect((await db.read((tx) => tx.webhooks.addressedTo(url))).map((d) => d.id)).toEqual([b.id, a.id]);
        expect(await db.read((tx) => tx.webhooks.addressedTo(mail.url))).toEqual([]);
        const moved = `https://b.example/${id()}`;
        await db.write((tx) => tx.webhooks.readdress(a.id, moved));
        expect(await db.read((tx) => tx.webhooks.addressedTo(moved))).toEqual([{ ...a, url: moved }]);
        expect(await db.write((tx) => tx.webhooks.claim(a.id, a.nextAttemptMs, 500, url))).toBe(false); // read before it moved
        expect(await db.write((tx) => tx.webhooks.claim(a.id, a.nextAttemptMs, 500, moved))).toBe(true);
        await db.write(async (tx) => { for (const d of [a, b, mail]) await tx.webhooks.remove(d.id); });
      });

      it('sent transactions: due, claimed once, updated, nonces used per sender', async () => {
        const { o } = await seed();
        const s1 = sent(o.id, 1);
        const s2 = sent(o.id, 2);
        await db.write(async (tx) => { await tx.sendTransactions.insert(s1); await tx.sendTransactions.insert(s2); });
        await db.read(async (tx) => {
          expect((await tx.sendTransactions.due(101, 10)).map((s) => s.id)).toEqual([s1.id]);
          expect(await tx.sendTransactions.nextDueMs()).toBe(101);
          expect(await tx.sendTransactions.highestUsedNonce('eip155:1', '0xabc')).toBe(2);
          expect(await tx.sendTransactions.pending()).toEqual({ count: 2, oldestMs: 1 });
        });
        expect(await db.write((tx) => tx.sendTransactions.claim(s1.id, 101, 900))).toBe(true);
        expect(await db.write((tx) => tx.sendTransactions.claim(s1.id, 101, 901))).toBe(false);
        await db.write((tx) => tx.sendTransactions.update({ id: s2.id, status: 'INCLUDED', error: null, blockNumber: '7', attempts: 1, nextCheckMs: null, updatedMs: 3 }));
        await db.read(async (tx) => {
          expect(await tx.sendTransactions.get(o.id, s2.id)).toMatchObject({ status: 'INCLUDED', blockNumber: '7', nextCheckMs: null });
          // mined: its nonce stays used
          expect(await tx.sendTransactions.highestUsedNonce('eip155:1', '0xabc')).toBe(2);
        });
        // refused by the node (no block): its nonce was never used
        await db.write((tx) => tx.sendTransactions.update({ id: s2.id, status: 'FAILED', error: 'nonce too low', blockNumber: null, attempts: 2, nextCheckMs: null, updatedMs: 4 }));
        expect(await db.read((tx) => tx.sendTransactions.highestUsedNonce('eip155:1', '0xabc'))).toBe(1);
      });
      it('sent transactions: a sender\'s INITIALIZED rows come due one at a time, lowest nonce first, on each network', async () => {
        const { o } = await seed();
        const later = sent(o.id, 5, { nextCheckMs: 5 }); // due first, but nonce 4 is not with the node yet
        const first = sent(o.id, 4, { nextCheckMs: 50 });
        const followed = sent(o.id, 2, { status: 'BROADCASTING', nextCheckMs: 30 }); // with the node: it holds nothing back
        const elsewhere = sent(o.id, 7, { caip2: 'eip155:10', nextCheckMs: 31 });
        const stranger = sent(o.id, 9, { fromAddress: '0xdef', nextCheckMs: 32 });
        const solana = sent(o.id, 0, { caip2: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', nonce: null, nextCheckMs: 33 });
        await db.write(async (tx) => { for (const r of [later, first, followed, elsewhere, stranger, solana]) await tx.sendTransactions.insert(r); });
        const due = (ms: number) => db.read(async (tx) => (await tx.sendTransactions.due(ms, 10)).map((s) => s.id));
        expect(await due(40)).toEqual([followed.id, elsewhere.id, stranger.id, solana.id]);
        expect(await due(60)).toEqual([followed.id, elsewhere.id, stranger.id, solana.id, first.id]);
        expect(await db.read((tx) => tx.sendTransactions.nextDueMs())).toBe(30);
        // nonce 4 reached the node: nonce 5 is next
        await db.write((tx) => tx.sendTransactions.update({ id: first.id, status: 'BROADCASTING', error: null, blockNumber: null, attempts: 1, nextCheckMs: 70, updatedMs: 2 }));
        expect(await due(60)).toEqual([later.id, followed.id, elsewhere.id, stranger.id, solana.id]);
        expect(await db.read((tx) => tx.sendTransactions.nextDueMs())).toBe(5);
        // a refused one (FAILED) holds nothing back either
        await db.write((tx) => tx.sendTransactions.update({ id: first.id, status: 'FAILED', error: 'refused', blockNumber: null, attempts: 2, nextCheckMs: null, updatedMs: 3 }));
        const third = sent(o.id, 6, { nextCheckMs: 1 });
        await db.write((tx) => tx.sendTransactions.insert(third));
        expect(await due(60)).toEqual([later.id, followed.id, elsewhere.id, stranger.id, solana.id]);
      });
    });

    describe('the rest of an organization', () => {
      it('invitations, secrets (paged), contract interfaces (one per address), IP allowlists (replaced)', async () => {
        const { o, u } = await seed();
        const inv = { id: id(), organizationId: o.id, receiverUserName: 'r', receiverEmail: 'r@example.com', receiverUserTags: [], accessType: 'ACCESS_TYPE_WEB', status: 'INVITATION_STATUS_CREATED' as const, senderUserId: u.id, createdMs: 1, updatedMs: 1 };
        const secrets = [1, 2, 3].map((n) => ({ id: id(), organizationId: o.id, name: `s${n}`, staticProperties: [{ key: 'k', value: String(n) }], sealed: new Uint8Array([n]), createdMs: n }));
        const ci = { id: id(), organizationId: o.id, type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM' as const, address: '0xAb', addressKey: '0xab', interface: '[]', label: 'l', notes: '', createdMs: 1, updatedMs: 1 };
        const list = { organizationId: o.id, publicKey: '', enabled: true, onEvaluationError: 'DENY' as const, rules: [{ cidr: '10.0.0.0/8', label: 'x', createdMs: 1 }], createdMs: 1, updatedMs: 1 };
        await db.write(async (tx) => {
          await tx.invitations.insert(inv);
          for (const s of secrets) await tx.orgSecrets.insert(s);
          await tx.contractInterfaces.insert(ci);
          await tx.ipAllowlists.set(list);
          await tx.ipAllowlists.set({ ...list, enabled: false, updatedMs: 2 });
        });
        await db.read(async (tx) => {
          expect(await tx.invitations.list(o.id)).toEqual([inv]);
          expect((await tx.orgSecrets.list(o.id, { limit: 2 }))!.map((s) => s.name)).toEqual(['s3', 's2']);
          expect((await tx.orgSecrets.list(o.id, { limit: 2, afterId: secrets[1]!.id }))!.map((s) => s.name)).toEqual(['s1']);
          expect((await tx.orgSecrets.byName(o.id, 's2'))!.staticProperties).toEqual([{ key: 'k', value: '2' }]);
          expect((await tx.contractInterfaces.byAddress(o.id, ci.type, '0xab'))!.id).toBe(ci.id);
          expect(await tx.ipAllowlists.get(o.id, '')).toMatchObject({ enabled: false, rules: list.rules });
        });
        // a key's own list and its organization's in one look; the organization's alone for ''
        const own = { ...list, publicKey: '02aa', rules: [{ cidr: '192.0.2.0/24', label: 'own', createdMs: 1 }] };
        await db.write((tx) => tx.ipAllowlists.set(own));
        await db.read(async (tx) => {
          const both = await tx.ipAllowlists.governing(o.id, '02aa');
          expect(both.own).toMatchObject({ publicKey: '02aa', rules: own.rules });
          expect(both.organization).toMatchObject({ publicKey: '', enabled: false });
          expect(await tx.ipAllowlists.governing(o.id, '')).toEqual({ own: undefined, organization: both.organization });
          expect(await tx.ipAllowlists.governing(o.id, '02bb')).toEqual({ own: undefined, organization: both.organization });
        });
        await db.write(async (tx) => { expect(await tx.ipAllowlists.remove(o.id, '02aa')).toBe(true); });
        await expect(db.write((tx) => tx.orgSecrets.insert({ ...secrets[0]!, id: id() }))).rejects.toThrow();
        await expect(db.write((tx) => tx.contractInterfaces.insert({ ...ci, id: id() }))).rejects.toThrow();
        await db.write(async (tx) => {
          expect(await tx.invitations.delete(o.id, inv.id)).toBe(true);
          expect(await tx.contractInterfaces.delete(o.id, ci.id)).toBe(true);
          expect(await tx.ipAllowlists.remove(o.id, '')).toBe(true);
        });
        expect(await db.read((tx) => tx.ipAllowlists.get(o.id, ''))).toBeUndefined();
      });
    });
  });
}
