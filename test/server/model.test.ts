// Model-based test (fast-check commands): random sequences of user / user-tag operations through
// @turnkey/sdk-server, checked after every step against a plain in-memory model of who carries
// which tag (create_users, delete_users, update_user userTagIds — replace semantics, [] clears —,
// create_user_tag, update_user_tag rename/add/remove, delete_user_tags).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import { startTestServer, type TestServer } from './harness.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

interface Model { users: string[]; tags: Map<string, { name: string; members: Set<string> }>; seq: number }
type Real = TestServer;

const pick = <T>(xs: T[], i: number): T | undefined => (xs.length ? xs[i % xs.length] : undefined);
const subset = <T>(xs: T[], mask: number): T[] => xs.filter((_, i) => (mask >> (i % 30)) & 1);
let runTag = 0;
// Distinct timestampMs for every submit: two identical bodies in one millisecond would be the same
// activity by fingerprint (idempotency), which is right but not what a model step means.
let lastTs = 0;
const nextTs = () => { lastTs = Math.max(Date.now(), lastTs + 1); return String(lastTs); };

async function compare(m: Model, real: Real) {
  const users: any = await real.sdk.getUsers();
  const byId = new Map<string, any>(users.users.map((u: any) => [u.userId, u]));
  for (const id of m.users) {
    const u = byId.get(id);
    expect(u, `user ${id} listed`).toBeDefined();
    const expected = [...m.tags].filter(([, t]) => t.members.has(id)).map(([tid]) => tid).sort();
    expect([...u.userTags].sort(), `tags of user ${id}`).toEqual(expected);
  }
  const tags: any = await real.sdk.listUserTags();
  const listed = new Map<string, string>(tags.userTags.map((t: any) => [t.tagId, t.tagName]));
  for (const [tid, t] of m.tags) expect(listed.get(tid), `tag ${tid}`).toBe(t.name);
}

class CreateUser implements fc.AsyncCommand<Model, Real> {
  constructor(readonly tagMask: number) {}
  check = () => true;
  async run(m: Model, real: Real) {
    const tagIds = subset([...m.tags.keys()], this.tagMask);
    const r: any = await real.sdk.createUsers({ timestampMs: nextTs(), users: [{ userName: `m${runTag}-u${m.seq++}`, apiKeys: [], authenticators: [], oauthProviders: [], userTags: tagIds }] } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const id = r.userIds[0];
    m.users.push(id);
    for (const t of tagIds) m.tags.get(t)!.members.add(id);
    await compare(m, real);
  }
  toString = () => `CreateUser(${this.tagMask})`;
}

class DeleteUser implements fc.AsyncCommand<Model, Real> {
  constructor(readonly i: number) {}
  check = (m: Readonly<Model>) => m.users.length > 0;
  async run(m: Model, real: Real) {
    const id = pick(m.users, this.i)!;
    const r: any = await real.sdk.deleteUsers({ timestampMs: nextTs(), userIds: [id] } as any);
    expect(r.userIds).toEqual([id]);
    m.users = m.users.filter((u) => u !== id);
    for (const t of m.tags.values()) t.members.delete(id);
    const gone = await real.raw('/public/v1/query/get_user', JSON.stringify({ organizationId: real.orgId, userId: id }));
    expect(gone.status).toBe(404);
    await compare(m, real);
  }
  toString = () => `DeleteUser(${this.i})`;
}

class SetUserTags implements fc.AsyncCommand<Model, Real> {
  constructor(readonly i: number, readonly mask: number) {}
  check = (m: Readonly<Model>) => m.users.length > 0;
  async run(m: Model, real: Real) {
    const id = pick(m.users, this.i)!;
    const tagIds = subset([...m.tags.keys()], this.mask);
    const r: any = await real.sdk.updateUser({ timestampMs: nextTs(), userId: id, userTagIds: tagIds } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    for (const [tid, t] of m.tags) { if (tagIds.includes(tid)) t.members.add(id); else t.members.delete(id); }
    await compare(m, real);
  }
  toString = () => `SetUserTags(${this.i}, ${this.mask})`;
}

class CreateTag implements fc.AsyncCommand<Model, Real> {
  constructor(readonly mask: number) {}
  check = () => true;
  async run(m: Model, real: Real) {
    const members = subset(m.users, this.mask);
    const name = `m${runTag}-t${m.seq++}`;
    const r: any = await real.sdk.createUserTag({ timestampMs: nextTs(), userTagName: name, userIds: members } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect([...r.userIds].sort()).toEqual([...members].sort());
    m.tags.set(r.userTagId, { name, members: new Set(members) });
    await compare(m, real);
  }
  toString = () => `CreateTag(${this.mask})`;
}

class UpdateTag implements fc.AsyncCommand<Model, Real> {
  constructor(readonly i: number, readonly addMask: number, readonly removeMask: number, readonly rename: boolean) {}
  check = (m: Readonly<Model>) => m.tags.size > 0;
  async run(m: Model, real: Real) {
    const tid = pick([...m.tags.keys()], this.i)!;
    const t = m.tags.get(tid)!;
    const add = subset(m.users.filter((u) => !t.members.has(u)), this.addMask);
    const remove = subset([...t.members], this.removeMask);
    const newName = this.rename ? `m${runTag}-t${m.seq++}` : undefined;
    const r: any = await real.sdk.updateUserTag({ timestampMs: nextTs(), userTagId: tid, ...(newName ? { newUserTagName: newName } : {}), addUserIds: add, removeUserIds: remove } as any);
    expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.userTagId).toBe(tid);
    for (const u of add) t.members.add(u);
    for (const u of remove) t.members.delete(u);
    if (newName) t.name = newName;
    await compare(m, real);
  }
  toString = () => `UpdateTag(${this.i}, +${this.addMask}, -${this.removeMask}, ${this.rename})`;
}

class DeleteTags implements fc.AsyncCommand<Model, Real> {
  constructor(readonly mask: number) {}
  check = (m: Readonly<Model>) => m.tags.size > 0;
  async run(m: Model, real: Real) {
    const ids = subset([...m.tags.keys()], this.mask);
    if (ids.length === 0) return;
    const r: any = await real.sdk.deleteUserTags({ timestampMs: nextTs(), userTagIds: ids } as any);
    expect([...r.userTagIds].sort()).toEqual([...ids].sort());
    for (const id of ids) m.tags.delete(id);
    const tags: any = await real.sdk.listUserTags();
    for (const id of ids) expect(tags.userTags.map((t: any) => t.tagId)).not.toContain(id);
    await compare(m, real);
  }
  toString = () => `DeleteTags(${this.mask})`;
}

describe('users and user tags against a model', () => {
  it('random operation sequences keep the server equal to the model', async () => {
    const mask = fc.integer({ min: 0, max: 0xffff });
    const commands = fc.commands([
      mask.map((x) => new CreateUser(x)),
      fc.nat().map((i) => new DeleteUser(i)),
      fc.tuple(fc.nat(), mask).map(([i, x]) => new SetUserTags(i, x)),
      mask.map((x) => new CreateTag(x)),
      fc.tuple(fc.nat(), mask, mask, fc.boolean()).map(([i, a, r, n]) => new UpdateTag(i, a, r, n)),
      mask.map((x) => new DeleteTags(x)),
    ], { maxCommands: 14 });
    await fc.assert(fc.asyncProperty(commands, async (cmds) => {
      runTag++;
      await fc.asyncModelRun(() => ({ model: { users: [], tags: new Map(), seq: 0 }, real: ts }), cmds);
    }), { numRuns: 30 });
  });
});

describe('organization features against a model', () => {
  it('random set/remove sequences: each result is the whole resulting list, and get_organization_configs agrees', async () => {
    const names = ['FEATURE_NAME_ROOT_USER_EMAIL_RECOVERY', 'FEATURE_NAME_WEBAUTHN_ORIGINS', 'FEATURE_NAME_EMAIL_AUTH', 'FEATURE_NAME_EMAIL_RECOVERY', 'FEATURE_NAME_WEBHOOK', 'FEATURE_NAME_SMS_AUTH', 'FEATURE_NAME_OTP_EMAIL_AUTH'];
    const start: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
    const model = new Map<string, string>((start.configs.features ?? []).map((f: any) => [f.name, f.value]));
    const step = fc.record({
      set: fc.boolean(),
      name: fc.constantFrom(...names),
      value: fc.oneof(fc.constantFrom('true', 'false', 'https://example.com/a', 'http://127.0.0.1:8/b', 'https://wallet.example.com'), fc.stringMatching(/^https:\/\/[a-z]{1,8}\.example\.com\/[a-z0-9]{0,8}$/)),
    });
    const isOrigin = (x: string) => { try { return new URL(x).origin === x; } catch { return false; } };
    const asList = (m: Map<string, string>) => [...m].map(([name, value]) => ({ name, value })).sort((a, b) => a.name.localeCompare(b.name));
    const sorted = (xs: any[]) => [...xs].sort((a, b) => a.name.localeCompare(b.name));
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
      for (const s of steps) {
        let r: any;
        if (s.set) {
          const value = s.name === 'FEATURE_NAME_WEBHOOK' && !/^https?:\/\//.test(s.value) ? 'https://hook.example.com/x' : s.value;
          // allowed passkey origins are origins as a browser sends them (no path): anything else is a 400 that changes nothing
          if (s.name === 'FEATURE_NAME_WEBAUTHN_ORIGINS' && !isOrigin(value)) {
            r = await ts.sdk.setOrganizationFeature({ timestampMs: nextTs(), name: s.name, value } as any).catch((e: any) => e);
            expect(r.activity, `${value} was stored as an origin`).toBeUndefined();
            expect(r.message).toMatch(/^Turnkey error 3:/);
            continue;
          }
          r = await ts.sdk.setOrganizationFeature({ timestampMs: nextTs(), name: s.name, value } as any);
          model.set(s.name, value);
        } else {
          // removing a feature that is not set is a 404 (an unknown id: nothing stored)
          r = await ts.sdk.removeOrganizationFeature({ timestampMs: nextTs(), name: s.name } as any).catch((e: any) => e);
          if (!r.activity) {
            expect(model.has(s.name), `removing a set feature failed: ${r.message}`).toBe(false);
            expect(r.message).toMatch(/^Turnkey error 5:/);
            continue;
          }
          model.delete(s.name);
        }
        expect(r.activity.status, JSON.stringify(r.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
        expect(sorted(r.features)).toEqual(asList(model));
      }
      const cfg: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
      expect(sorted(cfg.configs.features ?? [])).toEqual(asList(model));
    }), { numRuns: 15 });
  });
});
