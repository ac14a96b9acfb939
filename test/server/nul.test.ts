// U+0000 in a request string: PostgreSQL's text cannot hold it and no id, name or value kmas keeps
// has one, so every engine refuses it alike with a 400 naming where it is, and stores nothing
// (found by the fuzz suite on PostgreSQL, where it was a 500).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allActivities, rawRequest, startTestServer, submitBody, type TestServer } from './harness.js';

describe('U+0000 in a request', () => {
  let ts: TestServer;
  let orgId: string;
  beforeAll(async () => {
    ts = await startTestServer();
    orgId = (await ts.sdk.getWhoami({} as any)).organizationId;
  });
  afterAll(async () => { await ts.stop(); });

  it('in organizationId, a parameter or a member name: 400 naming it, for submits and queries; nothing is stored', async () => {
    const before = (await allActivities(ts)).length;
    const cases: [string, string, string][] = [
      ['/public/v1/submit/create_users', submitBody('ACTIVITY_TYPE_CREATE_USERS_V3', '\u0000', { users: [] }), 'organizationId'],
      ['/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: 'a\u0000b', userIds: [] }), 'parameters.userTagName'],
      ['/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: 'ok', userIds: ['x', 'y\u0000'] }), 'parameters.userIds[1]'],
      ['/public/v1/query/whoami', JSON.stringify({ organizationId: orgId, ['x\u0000']: 1 }), 'x\u0000'],
      ['/public/v1/query/whoami', JSON.stringify({ organizationId: '\u0000' }), 'organizationId'],
    ];
    for (const [path, body, field] of cases) {
      const r = await rawRequest(ts.url, path, body, { key: ts.rootKey });
      expect(r.status, `${path} ${field}`).toBe(400);
      expect(r.json.code).toBe(3);
      expect(r.json.message).toContain(field);
    }
    // the six characters \u0000 as text are not U+0000
    const text = await rawRequest(ts.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: `lit\\u0000-${Date.now()}`, userIds: [] }), { key: ts.rootKey });
    expect(text.status).toBe(200);
    expect((await allActivities(ts)).length).toBe(before + 1);
  });

  it('after deeply nested JSON (which parses): still the 400 naming where it is, not a 500', async () => {
    // JSON.parse takes 50 000 levels of nesting; the search for U+0000 must too
    const depth = 50_000;
    const deep = '['.repeat(depth) + ']'.repeat(depth);
    const query = await rawRequest(ts.url, '/public/v1/query/whoami', `{"organizationId":"${orgId}","junk":${deep},"x":"\\u0000"}`, { key: ts.rootKey });
    expect(query.status, query.text.slice(0, 300)).toBe(400);
    expect(query.json.code).toBe(3);
    expect(query.json.message).toContain('x must not contain');
    const inner = `{"parameters":{"userTagName":"t","userIds":[],"junk":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}},"organizationId":"${orgId}","timestampMs":"${Date.now()}","type":"ACTIVITY_TYPE_CREATE_USER_TAG"}`;
    const submit = await rawRequest(ts.url, '/public/v1/submit/create_user_tag', inner, { key: ts.rootKey });
    expect(submit.status, submit.text.slice(0, 300)).toBe(400);
    expect(submit.json.message).toMatch(/^parameters\.junk(\[0\]){50000} must not contain/);
  });
});
