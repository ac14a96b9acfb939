// Log hygiene (issue 3 "Errors", helper rules): the server's log lines never carry key material,
// stamps, request bodies or stack traces — also for failing, malformed and hostile requests.
// The in-process server logs through process.stdout.write (src/log.ts), captured here.
import { describe, it, expect, afterAll } from 'vitest';
import { captureLogLines, startTestServer, submitBody, stampFor, newP256Key, uniqueName, replyViolations, type TestServer } from './harness.js';
import { QUERY, SUBMIT } from './checks.js';


let ts: TestServer | undefined;
afterAll(async () => { await ts?.stop(); });

describe('server log lines', () => {
  it('are JSON lines without key material, stamps, bodies or stack traces', async () => {
    const { lines, restore } = captureLogLines();
    const marker = uniqueName('BODY-MARKER');
    const userKey = newP256Key();
    let stamps: string[] = [];
    try {
      ts = await startTestServer({ logLevel: 'debug' });
      const org = ts.orgId;
      const body = submitBody('ACTIVITY_TYPE_CREATE_USERS_V4', org, { users: [{ userName: marker, userEmail: `${marker.toLowerCase()}@example.com`, apiKeys: [{ apiKeyName: marker, publicKey: userKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] });
      const st = stampFor(body, ts.rootKey);
      stamps.push(st);
      expect((await ts.raw(SUBMIT('create_users'), body, { stamp: st })).status).toBe(200);
      const q = JSON.stringify({ organizationId: org, note: marker });
      const st2 = stampFor(q, userKey);
      stamps.push(st2);
      expect((await ts.raw(QUERY('whoami'), q, { stamp: st2 })).status).toBe(200);
      // failures of every kind
      await ts.raw(QUERY('whoami'), q, { stamp: 'garbage-' + marker });
      await ts.raw(QUERY('whoami'), q, { key: newP256Key() });
      await ts.raw(SUBMIT('create_user_tag'), `{"parameters":{"userTagName":"${marker}"`);
      await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', org, { userTagName: 42, note: marker }));
      await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', org, { userTagName: marker, userIds: ['00000000-0000-4000-8000-000000000001'] }));
      await ts.raw(QUERY('whoami'), q, { headers: { 'Content-Encoding': 'gzip' } });
      replyViolations.splice(0); // its 5xx is reported by probes.test.ts; here only its log line matters
      await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: org, pad: marker + 'x'.repeat(1_100_000) }));
      await ts.raw('/public/v1/query/no-such-op', q);
    } finally {
      restore();
    }
    const text = lines.join('');
    expect(text.length, 'the server logged something at debug level').toBeGreaterThan(0);
    const secrets: [string, string][] = [
      ['root private key', ts!.rootKey.privateKey],
      ['user private key', userKey.privateKey],
      ['a request body / parameter value', marker],
      ...stamps.map((s, i) => [`stamp ${i}`, s.slice(0, 40)] as [string, string]),
    ];
    for (const [what, s] of secrets) expect(text.includes(s), `${what} appears in the log`).toBe(false);
    expect(text, 'stack trace in the log').not.toMatch(/\n\s+at |node:internal|\.js:\d+:\d+/);
    for (const line of text.split('\n').filter((l) => l.trim() !== '')) {
      expect(() => JSON.parse(line), `not a JSON line: ${line.slice(0, 200)}`).not.toThrow();
    }
  });
});

describe('request log lines (issue 17 "Logs")', () => {
  it('carry the request id (kept from X-Request-Id or made, and echoed), client, operation, organization, activity, status, gRPC code, duration and a refusal\'s reason', async () => {
    const { lines, restore } = captureLogLines();
    let s: TestServer | undefined;
    const given = uniqueName('req-id');
    let made: string | null = null;
    let activityId: string | undefined;
    let denyId = '';
    try {
      s = await startTestServer({ logLevel: 'info' });
      const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', s.orgId, { userTagName: uniqueName('log'), userIds: [] });
      const ok = await s.raw(SUBMIT('create_user_tag'), body, { headers: { 'X-Request-Id': given } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe(given);
      activityId = ok.json.activity.id;
      const refused = await s.raw(QUERY('whoami'), JSON.stringify({ organizationId: s.orgId }), { key: newP256Key() });
      expect(refused.status).toBe(401);
      made = refused.headers.get('x-request-id');
      expect(made).toMatch(/^[0-9a-f-]{36}$/);
      // an explicit deny answers in Turnkey's words; the log line names the policy
      const botKey = newP256Key();
      await s.sdk.createUsers({ users: [{ userName: uniqueName('bot'), apiKeys: [{ apiKeyName: 'k', publicKey: botKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
      const deny: any = await s.sdk.createPolicy({ policyName: uniqueName('no tags'), effect: 'EFFECT_DENY', condition: "activity.resource == 'USER'", consensus: '', notes: '' });
      denyId = deny.policyId;
      const denied = await s.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', s.orgId, { userTagName: uniqueName('x'), userIds: [] }), { key: botKey, headers: { 'X-Request-Id': `${given}-deny` } });
      expect(denied.json).toEqual({ code: 7, message: 'policy engine denied request explicitly', details: [] });
      // an unusable X-Request-Id (control characters, too long) is replaced
      const long = await s.raw(QUERY('whoami'), JSON.stringify({ organizationId: s.orgId }), { headers: { 'X-Request-Id': 'x'.repeat(200) } });
      expect(long.headers.get('x-request-id')).not.toBe('x'.repeat(200));
      await s.stop();
    } finally {
      restore();
      await s?.stop();
    }
    const parsed = lines.join('').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
    for (const p of parsed) {
      expect(typeof p.time).toBe('string');
      expect(['debug', 'info', 'warn', 'error']).toContain(p.level);
    }
    expect(parsed.some((p) => p.msg === 'listening'), 'the start-up line').toBe(true);
    expect(parsed.some((p) => p.msg === 'stopped'), 'the shutdown line').toBe(true);
    const okLine = parsed.find((p) => p.msg === 'request' && p.requestId === given);
    expect(okLine).toMatchObject({
      client: '127.0.0.1', method: 'POST', path: '/public/v1/submit/create_user_tag', operation: 'submit/create_user_tag',
      organizationId: s!.orgId, activityId, status: 200,
    });
    expect(typeof okLine.durationMs).toBe('number');
    expect(okLine.reason).toBeUndefined();
    const refusedLine = parsed.find((p) => p.msg === 'request' && p.requestId === made);
    expect(refusedLine).toMatchObject({ operation: 'query/whoami', status: 401, code: 16, reason: expect.stringMatching(/\S/) });
    const deniedLine = parsed.find((p) => p.msg === 'request' && p.requestId === `${given}-deny`);
    expect(deniedLine).toMatchObject({ status: 403, code: 7, reason: expect.stringContaining(denyId) });
  });
});
