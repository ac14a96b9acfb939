// Consensus edge cases: who may settle an activity awaiting approvals.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, sdkClient, uniqueName, type TestServer, createMember, type Member } from '../server/harness.js';
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
});
