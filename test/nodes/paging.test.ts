// Cursor lists across nodes (list_wallet_accounts, list_activities): rows are listed newest first
// by a sequence drawn when a row is inserted, not when it commits, so a row drawn first may commit
// after a row drawn later on another node. A client that read the newest page and then asks for
// what is newer than the newest row it saw (`before`) must still get every row committed since:
// none may appear below a row it has already seen. The interleaving is made with PostgreSQL's own
// locks: a row lock a test connection holds on one wallet delays the account insert into that
// wallet at its foreign-key check, after the insert drew its sequence value.
// list_suborgs orders by creation time instead: a request's time is taken when it arrives, so a
// sub-organization whose request waited (here: for its request lock, which the test holds) may
// commit after one that arrived later.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { RunningServer } from '../../src/server.js';
import { startNodes, type Fleet } from './nodes.js';
import { freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { newP256Key, rawRequest, sleep, submitBody, uniqueName, type RawReply } from '../server/harness.js';
import { fingerprintOf } from '../server/checks.js';

const available = postgresAvailable();
if (!available) missingPostgres('the multi-node paging test (test/nodes/paging.test.ts)');

const eth = (i: number) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: `m/44'/60'/0'/0/${i}`, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });

describe.runIf(available)('cursor lists while two nodes commit out of sequence order', () => {
  let fleet: Fleet;
  let nodes: RunningServer[] = [];
  let databaseUrl = '';
  let admin: pg.Client;

  beforeAll(async () => {
    databaseUrl = await freshDatabase();
    fleet = await startNodes(2, databaseUrl);
    nodes = fleet.nodes;
    admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await fleet?.stop();
  });

  const submit = async (n: RunningServer, path: string, type: string, parameters: object): Promise<RawReply> =>
    await rawRequest(n.url, `/public/v1/submit/${path}`, submitBody(type, fleet.orgId, parameters), { key: fleet.root });
  const query = async (n: RunningServer, path: string, body: object): Promise<any> => {
    const r = await rawRequest(n.url, `/public/v1/query/${path}`, JSON.stringify({ organizationId: fleet.orgId, ...body }), { key: fleet.root });
    expect(r.status, r.text).toBe(200);
    return r.json;
  };
  const accounts = async (n: RunningServer, page: object): Promise<string[]> =>
    (await query(n, 'list_wallet_accounts', { paginationOptions: { limit: '100', ...page } })).accounts.map((a: any) => a.walletAccountId);
  const activities = async (n: RunningServer, page: object): Promise<string[]> =>
    (await query(n, 'list_activities', { paginationOptions: { limit: '100', ...page } })).activities.map((a: any) => a.id);
  /** backends of the test database waiting for a lock */
  const lockWaiters = async (): Promise<number> =>
    (await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0]!.n;
  const until = async (what: string, cond: () => Promise<boolean>): Promise<void> => {
    const t0 = Date.now();
    while (!await cond()) {
      if (Date.now() - t0 > 20_000) throw new Error(`timed out waiting for ${what}`);
      await sleep(20);
    }
  };

  it('what is newer than the newest row a client saw holds every row committed after it read (wallet accounts, activities)', async () => {
    const [a, b] = nodes as [RunningServer, RunningServer];
    const wallets: string[] = [];
    // Made through node B: node A has read nothing of the organization yet, so its write below
    // assumes no log head (a lone write that did would find the head moved at its COMMIT and run
    // again, drawing new values: postgres.ts Predictions). Writes in a group, or after a node's
    // knowledge has aged, take the head for real as this one does.
    for (let i = 0; i < 2; i++) {
      const w = await submit(b, 'create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: uniqueName('w'), accounts: [eth(0)] });
      expect(w.status, w.text).toBe(200);
      wallets.push(w.json.activity.result.createWalletResult.walletId);
    }
    const holder = new pg.Client({ connectionString: databaseUrl });
    await holder.connect();
    let first: Promise<RawReply> | undefined;
    let second: Promise<RawReply> | undefined;
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [wallets[0]]);
      // node A adds an account to the first wallet: its insert draws a sequence value, then waits
      first = submit(a, 'create_wallet_accounts', 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId: wallets[0], accounts: [eth(1)] });
      await until('node A\'s insert to wait', async () => await lockWaiters() >= 1);
      // node B adds one to the second wallet: it commits, or waits for node A's (the server's choice)
      let settled = false;
      second = submit(b, 'create_wallet_accounts', 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId: wallets[1], accounts: [eth(1)] });
      void second.finally(() => { settled = true; });
      await until('node B\'s write to commit or wait', async () => settled || await lockWaiters() >= 2);
      // a client reads the newest rows now
      const seenAccounts = await accounts(b, {});
      const seenActivities = await activities(b, {});
      await holder.query('ROLLBACK');
      for (const r of await Promise.all([first, second])) expect(r.status, r.text).toBe(200);
      // ... and later asks for what is newer than the newest it saw
      for (const [what, seen, list] of [['activities', seenActivities, activities], ['wallet accounts', seenAccounts, accounts]] as const) {
        const newer = await list(b, { before: seen[0]! });
        const all = await list(b, {});
        const missed = all.filter((id) => !seen.includes(id) && !newer.includes(id));
        expect(missed, `${what} committed after the client's read that it can never page to (listed below rows it saw)`).toEqual([]);
      }
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await Promise.allSettled([first, second]);
    }
  });

  it('list_suborgs: what is newer than the newest sub-organization a client saw holds every one committed after it read', async () => {
    const [a, b] = nodes as [RunningServer, RunningServer];
    const subOrg = (name: string) => submitBody('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7', fleet.orgId, {
      subOrganizationName: name, rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'root', apiKeys: [{ apiKeyName: 'k', publicKey: newP256Key().publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    });
    const create = async (n: RunningServer, body: string) => await rawRequest(n.url, '/public/v1/submit/create_sub_organization', body, { key: fleet.root });
    const list = async (page: object): Promise<string[]> => (await query(b, 'list_suborgs', { paginationOptions: { limit: '100', ...page } })).organizationIds;
    expect((await create(b, subOrg(uniqueName('s0')))).status).toBe(200);
    const firstBody = subOrg(uniqueName('s1'));
    const holder = new pg.Client({ connectionString: databaseUrl });
    await holder.connect();
    let first: Promise<RawReply> | undefined;
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtext('request'), hashtext($1))", [fingerprintOf(firstBody)]);
      // arrives first on node A and waits for its request lock
      first = create(a, firstBody);
      await until('node A\'s request to wait', async () => await lockWaiters() >= 1);
      await sleep(5);
      // arrives later on node B and commits
      const second = await create(b, subOrg(uniqueName('s2')));
      expect(second.status, second.text).toBe(200);
      const seen = await list({});
      expect(seen[0]).toBe(second.json.activity.result.createSubOrganizationResultV7.subOrganizationId);
      await holder.query('ROLLBACK');
      const one = await first;
      expect(one.status, one.text).toBe(200);
      const newer = await list({ before: seen[0]! });
      expect(newer, 'the sub-organization committed after the client read is newer than what it saw').toEqual([one.json.activity.result.createSubOrganizationResultV7.subOrganizationId]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await Promise.allSettled([first]);
    }
  });
});
