// User and credential management raced on three nodes sharing one PostgreSQL: the root quorum's
// lock-out rule holds when two changes, each harmless alone, commit at once; and one new API key
// or passkey registered on several nodes at once is registered once, the others refused with a 4xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import { startNodes, type Fleet } from './nodes.js';
import { freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { newP256Key, rawRequest, sdkClient, submitBody, uniqueName, type ApiKeyPair } from '../server/harness.js';
import { SoftPasskey } from '../server/softPasskey.js';

const available = postgresAvailable();
if (!available) missingPostgres('the credential race tests (test/nodes/credential-races.test.ts)');

describe.runIf(available)('user and credential management raced on three nodes', () => {
  let fleet: Fleet | undefined;
  let nodes: RunningServer[] = [];
  let orgId = '';
  let root: ApiKeyPair;
  const sdk = (i: number, key: ApiKeyPair = root, org = orgId) => sdkClient(nodes[i]!.url, key, org);
  const submit = (i: number, key: ApiKeyPair, org: string, path: string, type: string, parameters: unknown, ms: number) =>
    rawRequest(nodes[i]!.url, `/public/v1/submit/${path}`, submitBody(type, org, parameters, String(ms)), { key });

  beforeAll(async () => {
    fleet = await startNodes(3, await freshDatabase());
    ({ nodes, orgId, root } = fleet);
  }, 90_000);
  afterAll(async () => { await fleet?.stop(); });

  // Guards: two removals that each leave one root user reachable, raced on two nodes, do not both commit (lock `root-credentials`).
  it('deleting one root user\'s API key and the other\'s passkey at once on two nodes leaves a root user who can sign in', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 6; round++) {
      const rKey = newP256Key();
      const passkey = new SoftPasskey();
      const sub: any = await sdk(0).createSubOrganization({
        subOrganizationName: uniqueName('lockout'), rootQuorumThreshold: 1,
        rootUsers: [
          { userName: 'r', apiKeys: [{ apiKeyName: 'r', publicKey: rKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] },
          { userName: 'x', apiKeys: [], authenticators: [passkey.params()], oauthProviders: [] },
        ],
      } as any);
      expect(sub.activity.status, JSON.stringify(sub.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
      const subId = sub.subOrganizationId as string;
      const users: any = await sdk(1).getUsers({ organizationId: subId } as any);
      const r = users.users.find((u: any) => u.userName === 'r');
      const x = users.users.find((u: any) => u.userName === 'x');
      const now = Date.now();
      const rs = await Promise.all([
        submit(0, rKey, subId, 'delete_api_keys', 'ACTIVITY_TYPE_DELETE_API_KEYS', { userId: r.userId, apiKeyIds: [r.apiKeys[0].apiKeyId] }, now),
        submit(1, rKey, subId, 'delete_authenticators', 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS', { userId: x.userId, authenticatorIds: [x.authenticators[0].authenticatorId] }, now + 1),
      ]);
      const after: any = await sdk(2).getUsers({ organizationId: subId } as any);
      const reachable = after.users.filter((u: any) => u.apiKeys.length + u.authenticators.length + u.oauthProviders.length > 0).length;
      outcomes.push(`${reachable} reachable (${rs.map((x) => `${x.status} ${x.status === 200 ? x.json.activity.status : x.json.message}`).join(' | ')})`);
    }
    expect(outcomes.filter((o) => o.startsWith('0 ')), outcomes.join('\n')).toEqual([]);
  });

  // Guards: a new API key, passkey or OAuth identity registered at once on three nodes is read and inserted under a lock (no unique-index violation as a 500).
  it('one new API key, passkey or OAuth identity registered at once on three nodes: one registration, the others refused with a 4xx, never a 500', async () => {
    const bad: string[] = [];
    const registered: string[] = [];
    const kinds = ['create_api_keys', 'create_authenticators', 'create_oauth_providers'] as const;
    for (let round = 0; round < 9; round++) {
      const kind = kinds[round % 3]!;
      const key = newP256Key();
      const params = new SoftPasskey().params();
      const claims = { iss: 'https://accounts.example.com', sub: uniqueName('sub'), aud: 'app' };
      const users: string[] = [];
      for (let i = 0; i < 3; i++) users.push(((await sdk(0).createUsers({ users: [{ userName: uniqueName('u'), apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] } as any)) as any).userIds[0]);
      const now = Date.now();
      const rs = await Promise.all([0, 1, 2].map((i) => (kind === 'create_api_keys'
        ? submit(i, root, orgId, kind, 'ACTIVITY_TYPE_CREATE_API_KEYS_V2', { userId: users[i], apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }] }, now + i)
        : kind === 'create_authenticators'
          ? submit(i, root, orgId, kind, 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', { userId: users[i], authenticators: [params] }, now + i)
          : submit(i, root, orgId, kind, 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2', { userId: users[i], oauthProviders: [{ providerName: 'p', oidcClaims: claims }] }, now + i))));
      for (const r of rs) if (r.status >= 500) bad.push(`${kind}: ${r.status} ${r.text.slice(0, 120)}`);
      const all: any = await sdk(1).getUsers({ organizationId: orgId } as any);
      const ours = all.users.filter((u: any) => users.includes(u.userId));
      registered.push(`${kind}: ${ours.reduce((n: number, u: any) => n + u.apiKeys.length + u.authenticators.length + u.oauthProviders.length, 0)}`);
    }
    expect(bad).toEqual([]);
    expect(registered, 'registrations per round').toEqual([...Array(9).keys()].map((i) => `${kinds[i % 3]}: 1`));
  });
});
