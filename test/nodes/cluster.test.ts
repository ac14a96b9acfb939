// Several kmas nodes on one PostgreSQL (issue 15): three servers, each with a data dir of its own,
// one database and one master key. What one node does, the others see at once, and the guarantees
// that span nodes hold because the database enforces them: the root organization is created once
// by nodes starting together; an identical body sent to two nodes at once is one activity; two
// approvals racing on two nodes run the activity once; one approval body sent to three nodes is one
// vote; a key deleted on one node is refused by the next request to another.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server.js';
import { startNodes, type Fleet } from './nodes.js';
import { controlTestCluster, freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { newP256Key, rawRequest, sdkClient, submitBody, uniqueName, type ApiKeyPair } from '../server/harness.js';

const available = postgresAvailable();
if (!available) missingPostgres('the multi-node tests (test/nodes)');

describe.runIf(available)('three nodes on one PostgreSQL', () => {
  let fleet: Fleet;
  let nodes: RunningServer[] = [];
  let dirs: string[] = [];
  let orgId = '';
  let root: ApiKeyPair;
  let rootUserId = '';

  beforeAll(async () => {
    // started together: they race for the root organization
    fleet = await startNodes(3, await freshDatabase());
    ({ nodes, dirs, orgId, root, rootUserId } = fleet);
    expect(fleet.creators, 'exactly one node created the root organization and holds its key').toHaveLength(1);
  });
  afterAll(async () => { await fleet?.stop(); });

  it('every node found the one root organization, the same server keys, and answers for it', async () => {
    const files = dirs.map((d) => JSON.parse(readFileSync(join(d, 'bootstrap.json'), 'utf8')));
    for (const f of files) expect(f).toEqual(files[0]);
    for (const n of nodes) {
      expect(n.bootstrap.signerPublicKey).toBe(nodes[0]!.bootstrap.signerPublicKey);
      const who: any = await sdkClient(n.url, root, orgId).getWhoami({ organizationId: orgId });
      expect(who).toMatchObject({ organizationId: orgId, userId: rootUserId });
    }
  });

  it('an identical body sent to two nodes at once is one activity; both replies carry it', async () => {
    for (let i = 0; i < 5; i++) {
      const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: uniqueName('same'), userIds: [] });
      const [a, b] = await Promise.all([nodes[0]!, nodes[1]!].map((n) => rawRequest(n.url, '/public/v1/submit/create_user_tag', body, { key: root })));
      expect([a!.status, b!.status]).toEqual([200, 200]);
      expect(a!.json.activity.id).toBe(b!.json.activity.id);
      const tags: any = await sdkClient(nodes[2]!.url, root, orgId).listUserTags({ organizationId: orgId } as any);
      expect(tags.userTags.filter((t: any) => t.tagName === JSON.parse(body).parameters.userTagName)).toHaveLength(1);
    }
  });

  it('an API key deleted on one node is refused by the very next request to another', async () => {
    const key = newP256Key();
    const made: any = await sdkClient(nodes[0]!.url, root, orgId).createApiKeys({ userId: rootUserId, apiKeys: [{ apiKeyName: uniqueName('k'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    const asKey = (n: RunningServer) => rawRequest(n.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: orgId }), { key });
    expect((await asKey(nodes[1]!)).status).toBe(200);
    await sdkClient(nodes[0]!.url, root, orgId).deleteApiKeys({ userId: rootUserId, apiKeyIds: made.apiKeyIds } as any);
    for (const n of nodes.slice(1)) expect((await asKey(n)).status).toBe(401);
  });

  it('while PostgreSQL is down every node answers 503 (never 500) and /readyz 503; back, they serve again without a restart', async (ctx) => {
    if (!await controlTestCluster('stop')) ctx.skip('PostgreSQL is not this test process\'s own cluster (KMAS_TEST_DATABASE_URL)');
    try {
      for (const n of nodes) {
        expect((await fetch(`${n.url}/readyz`)).status).toBe(503);
        const who = await rawRequest(n.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: orgId }), { key: root });
        expect(who.status).toBe(503);
        expect(who.json.code).toBe(14);
        const submit = await rawRequest(n.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: uniqueName('down'), userIds: [] }), { key: root });
        expect(submit.status).toBe(503);
      }
    } finally {
      await controlTestCluster('start');
    }
    for (const n of nodes) {
      let ready = 0;
      for (let i = 0; i < 100 && ready !== 200; i++) { ready = (await fetch(`${n.url}/readyz`)).status; if (ready !== 200) await new Promise((r) => setTimeout(r, 100)); }
      expect(ready).toBe(200);
      expect((await rawRequest(n.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: orgId }), { key: root })).status).toBe(200);
    }
  });

  it('one approve_activity body sent to three nodes at once is one vote; every reply is the activity it settled', async () => {
    const member = newP256Key();
    await sdkClient(nodes[0]!.url, root, orgId).createUsers({ users: [{
      userName: uniqueName('member'), apiKeys: [{ apiKeyName: 'k', publicKey: member.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [],
    }] } as any);
    // a user no rule allows: the tag waits for the root user's approval
    const name = uniqueName('voted-once');
    const asked = await rawRequest(nodes[0]!.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: name, userIds: [] }), { key: member });
    expect(asked.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const body = submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', orgId, { fingerprint: asked.json.activity.fingerprint });
    const replies = await Promise.all(nodes.map((n) => rawRequest(n.url, '/public/v1/submit/approve_activity', body, { key: root })));
    expect(replies.map((r) => r.status), replies.map((r) => r.text).join('\n')).toEqual([200, 200, 200]);
    expect(new Set(replies.map((r) => r.text)).size, 'the same reply from every node').toBe(1);
    const final: any = await sdkClient(nodes[1]!.url, root, orgId).getActivity({ organizationId: orgId, activityId: asked.json.activity.id } as any);
    expect(final.activity.votes.map((v: any) => v.userId), 'the request\'s vote and one approval').toEqual([asked.json.activity.votes[0].userId, rootUserId]);
    expect(final.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(replies[0]!.json.activity).toEqual(final.activity);
    const tags: any = await sdkClient(nodes[2]!.url, root, orgId).listUserTags({ organizationId: orgId } as any);
    expect(tags.userTags.filter((t: any) => t.tagName === name), 'the approved activity ran exactly once').toHaveLength(1);
  });

  it('two approvals racing on two nodes run the waiting activity once', async () => {
    // a quorum of two root users: the bootstrap user and a second one
    const second = newP256Key();
    const made: any = await sdkClient(nodes[0]!.url, root, orgId).createUsers({ users: [{
      userName: uniqueName('root2'), apiKeys: [{ apiKeyName: 'k', publicKey: second.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [],
    }] } as any);
    const secondId = made.userIds[0];
    const third = newP256Key();
    const made3: any = await sdkClient(nodes[0]!.url, root, orgId).createUsers({ users: [{
      userName: uniqueName('root3'), apiKeys: [{ apiKeyName: 'k', publicKey: third.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [],
    }] } as any);
    // three votes needed: the request's own and both approvals, which race on two nodes
    await sdkClient(nodes[1]!.url, root, orgId).updateRootQuorum({ threshold: 3, userIds: [rootUserId, secondId, made3.userIds[0]] } as any);
    const name = uniqueName('approved-once');
    const asked = await rawRequest(nodes[2]!.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: name, userIds: [] }), { key: root });
    expect(asked.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const fingerprint = asked.json.activity.fingerprint;
    const approve = (n: RunningServer, key: ApiKeyPair) =>
      rawRequest(n.url, '/public/v1/submit/approve_activity', submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', orgId, { fingerprint }), { key });
    const replies = await Promise.all([approve(nodes[0]!, second), approve(nodes[1]!, third)]);
    expect(replies.map((r) => r.status)).toEqual([200, 200]);
    const tags: any = await sdkClient(nodes[2]!.url, root, orgId).listUserTags({ organizationId: orgId } as any);
    expect(tags.userTags.filter((t: any) => t.tagName === name), 'the approved activity ran exactly once').toHaveLength(1);
    const final: any = await sdkClient(nodes[2]!.url, root, orgId).getActivity({ organizationId: orgId, activityId: asked.json.activity.id } as any);
    expect(final.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(final.activity.votes, 'the request and both approvals').toHaveLength(3);
  });

});
