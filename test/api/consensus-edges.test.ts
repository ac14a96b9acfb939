// Consensus edge cases: who may settle an activity awaiting approvals, and votes sent again.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, sdkClient, uniqueName, allActivities, type TestServer, createMember, type Member } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

let ts: TestServer;
let carol: Member;

const createUser = (name: string): Promise<Member> => createMember(ts, name);

beforeAll(async () => {
  ts = await startTestServer();
  carol = await createUser(uniqueName('carol'));
});
afterAll(async () => { await ts?.stop(); });

describe('consensus', () => {
  // guards: the requester's reject_activity settles its own pending activity REJECTED (not 409 ALREADY_VOTED)
  it('the requester may reject its own activity (docs/server.md: reject_activity from a root user or from the requester settles it as REJECTED)', async () => {
    const name = uniqueName('mine');
    const w = await ts.raw(SUBMIT('create_wallet'), submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: name, accounts: [] }), { key: carol.key });
    expect(w.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const r = await ts.raw(SUBMIT('reject_activity'), submitBody('ACTIVITY_TYPE_REJECT_ACTIVITY', ts.orgId, { fingerprint: w.json.activity.fingerprint }), { key: carol.key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_REJECTED');
  });

  // guards: a vote's body sent again (a client retrying the same bytes) is answered with the voted-on activity as it stands, never a second vote, a 409 or a 404
  it('an approve_activity or reject_activity body sent again gets the activity it voted on, as it stands: no second vote, before or after it settled', async () => {
    const erin = await createUser(uniqueName('erin'));
    const w = await ts.raw(SUBMIT('create_wallet'), submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: uniqueName('twice'), accounts: [] }), { key: carol.key });
    expect(w.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const fingerprint = w.json.activity.fingerprint;
    const count = (await allActivities(ts)).length;

    // erin's approval does not settle it (no policy counts her); the same bytes again, while it still waits
    const at = Date.now();
    const byErin = submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint }, String(at));
    const first = await ts.raw(SUBMIT('approve_activity'), byErin, { key: erin.key });
    expect(first.status, first.text).toBe(200);
    expect(first.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const again = await ts.raw(SUBMIT('approve_activity'), byErin, { key: erin.key });
    expect(again.status, again.text).toBe(200);
    expect(again.json).toEqual(first.json);

    // the root user's approval settles it; the same bytes again once it has
    const byRoot = submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint }, String(at + 1));
    const settled = await ts.raw(SUBMIT('approve_activity'), byRoot);
    expect(settled.status, settled.text).toBe(200);
    expect(settled.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(settled.json.activity.votes.map((v: any) => v.userId)).toEqual([carol.id, erin.id, ts.rootUserId]);
    for (const body of [byRoot, byErin]) {
      const resent = await ts.raw(SUBMIT('approve_activity'), body, { key: body === byErin ? erin.key : ts.rootKey });
      expect(resent.status, resent.text).toBe(200);
      expect(resent.json).toEqual(settled.json);
    }
    const got: any = await ts.sdk.getActivity({ activityId: w.json.activity.id });
    expect(got.activity.votes).toHaveLength(3);
    expect((await ts.sdk.getWallets({})).wallets.filter((x: any) => x.walletName === w.json.activity.intent.createWalletIntent.walletName)).toHaveLength(1);
    expect((await allActivities(ts)).length).toBe(count);

    // a rejection sent again after it settled the activity
    const r = await ts.raw(SUBMIT('create_wallet'), submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: uniqueName('no'), accounts: [] }), { key: carol.key });
    const reject = submitBody('ACTIVITY_TYPE_REJECT_ACTIVITY', ts.orgId, { fingerprint: r.json.activity.fingerprint });
    const rejected = await ts.raw(SUBMIT('reject_activity'), reject);
    expect(rejected.json.activity.status).toBe('ACTIVITY_STATUS_REJECTED');
    const rejectedAgain = await ts.raw(SUBMIT('reject_activity'), reject);
    expect(rejectedAgain.status, rejectedAgain.text).toBe(200);
    expect(rejectedAgain.json).toEqual(rejected.json);
  });
});
