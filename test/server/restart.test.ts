// State survives a stop and a start on the same data directory (issue 3): same bootstrap, same
// root key, users, API keys, tags, features and activities; idempotency still holds across restarts.
import { describe, it, expect, afterAll } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, newP256Key, submitBody, rawRequest, uniqueName, allActivities, type TestServer, rootOf } from './harness.js';
import { QUERY, SUBMIT } from './checks.js';
import { ensureBuilt, spawnServe, type ServeProcess } from './build.js';
import { freshDataDir, sdkClient } from './harness.js';

let first: TestServer | undefined;
let second: TestServer | undefined;
afterAll(async () => { await first?.stop(true); await second?.stop(); });

describe('restart', () => {
  it('keeps every piece of state', async () => {
    first = await startTestServer();
    const dataDir = first.dataDir;
    const bootstrap = readFileSync(join(dataDir, 'bootstrap.json'), 'utf8');
    const key = newP256Key();
    const userName = uniqueName('persist');
    const u: any = await first.sdk.createUsers({ users: [{ userName, userEmail: 'p@example.com', apiKeys: [{ apiKeyName: 'p', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const userId = u.userIds[0];
    const tag: any = await first.sdk.createUserTag({ userTagName: uniqueName('keep'), userIds: [userId] });
    await first.sdk.setOrganizationFeature({ name: 'FEATURE_NAME_EMAIL_AUTH', value: 'true' } as any);
    const idemBody = submitBody('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', first.orgId, { privateKeyTagName: uniqueName('idem'), privateKeyIds: [] });
    const idem1 = await first.raw(SUBMIT('create_private_key_tag'), idemBody);
    expect(idem1.status).toBe(200);
    const activitiesBefore = await allActivities(first);
    const userBefore: any = await first.sdk.getUser({ userId });
    const usersBefore: any = await first.sdk.getUsers();
    const cfgBefore: any = await first.sdk.getOrganizationConfigs({ organizationId: first.orgId });
    const oneBefore: any = await first.sdk.getActivity({ activityId: tag.activity.id });
    await first.stop(true);

    second = await startTestServer({ dataDir });
    expect(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).toBe(bootstrap);
    expect(second.server.bootstrap).toMatchObject(JSON.parse(bootstrap));
    expect(second.rootKey).toEqual(first.rootKey);
    expect(second.orgId).toBe(first.orgId);

    const who: any = await second.sdk.getWhoami();
    expect(who.userId).toBe(first.rootUserId);
    const r = await rawRequest(second.url, QUERY('whoami'), JSON.stringify({ organizationId: second.orgId }), { key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.userId).toBe(userId);

    const userAfter: any = await second.sdk.getUser({ userId });
    expect(userAfter.user).toEqual(userBefore.user);
    expect(userAfter.user.userTags).toEqual([tag.userTagId]);
    const usersAfter: any = await second.sdk.getUsers();
    expect(usersAfter.users).toEqual(usersBefore.users);
    const cfgAfter: any = await second.sdk.getOrganizationConfigs({ organizationId: second.orgId });
    expect(cfgAfter.configs).toEqual(cfgBefore.configs);
    const oneAfter: any = await second.sdk.getActivity({ activityId: tag.activity.id });
    expect(oneAfter.activity).toEqual(oneBefore.activity);
    const activitiesAfter = await allActivities(second);
    expect(activitiesAfter).toEqual(activitiesBefore);

    // identical resubmission after the restart still returns the stored activity
    const idem2 = await second.raw(SUBMIT('create_private_key_tag'), idemBody);
    expect(idem2.status, idem2.text).toBe(200);
    expect(idem2.json.activity.id).toBe(idem1.json.activity.id);
    expect((await allActivities(second)).length).toBe(activitiesBefore.length);

    // and the server keeps accepting new work
    const more: any = await second.sdk.createUserTag({ userTagName: uniqueName('after'), userIds: [] });
    expect(more.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  });
});

describe('durability', () => {
  it('activities acknowledged by a `kmas serve` process survive SIGKILL right after the reply', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const dataDir = freshDataDir();
    let serve: ServeProcess | undefined;
    let after: TestServer | undefined;
    try {
      serve = await spawnServe(dataDir);
      const url = serve.url;
      const { key, orgId } = rootOf(dataDir);
      const c = sdkClient(url, key, orgId);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r: any = await c.createUserTag({ userTagName: `durable-${i}`, userIds: [] });
        ids.push(r.activity.id);
      }
      await serve.stop('SIGKILL'); // no graceful shutdown: nothing may be left to flush
      after = await startTestServer({ dataDir });
      for (const id of ids) {
        const got: any = await after.sdk.getActivity({ activityId: id });
        expect(got.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      }
      const tags: any = await after.sdk.listUserTags();
      expect(tags.userTags.filter((t: any) => t.tagName.startsWith('durable-'))).toHaveLength(20);
    } finally {
      await serve?.stop('SIGKILL');
      await after?.stop();
      if (!after) (await import('node:fs')).rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
