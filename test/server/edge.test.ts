// Edge cases of the wire format and of robustness (wire-compat §1.1, §2.1; issue 3 "Errors").
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import {
  startTestServer, newP256Key, submitBody, stampFor, base64url, enc, signBody, uniqueName, allActivities,
  newestActivityId, rawRequest, type TestServer,
} from './harness.js';
import { checkError, checkSubmitReply, fingerprintOf, QUERY, SUBMIT } from './checks.js';
import { checkAwaitsConsensus } from './checks.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const whoBody = () => JSON.stringify({ organizationId: ts.orgId });

describe('stamp encodings', () => {
  it('accepts the stamp JSON in Go key order (publicKey, signature, scheme)', async () => {
    const body = whoBody();
    const json = `{"publicKey":"${ts.rootKey.publicKey}","signature":"${signBody(enc.encode(body), { ...ts.rootKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256' })}","scheme":"SIGNATURE_SCHEME_TK_API_P256"}`;
    const r = await ts.raw(QUERY('whoami'), body, { stamp: base64url(enc.encode(json)) });
    expect(r.status, r.text).toBe(200);
  });

  it('accepts base64url with "=" padding (padding optional)', async () => {
    // find a stamp whose unpadded length is not a multiple of 4, then pad it
    for (let i = 0; i < 20; i++) {
      const body = JSON.stringify({ organizationId: ts.orgId, n: i });
      const s = stampFor(body, ts.rootKey);
      if (s.length % 4 === 0) continue;
      const padded = s + '='.repeat(4 - (s.length % 4));
      const r = await ts.raw(QUERY('whoami'), body, { stamp: padded });
      expect(r.status, r.text).toBe(200);
      return;
    }
    throw new Error('no stamp length needing padding found');
  });

  it('accepts the X-Stamp header of a real @turnkey/api-key-stamper stamp over a body with non-ASCII UTF-8', async () => {
    const name = uniqueName('名前-😀-é');
    const r: any = await ts.sdk.createUserTag({ userTagName: name, userIds: [] });
    const list: any = await ts.sdk.listUserTags();
    expect(list.userTags.find((t: any) => t.tagId === r.userTagId).tagName).toBe(name);
    // and the fingerprint is over the raw UTF-8 bytes
    const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('ü'), userIds: [] });
    const raw = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(raw.status, raw.text).toBe(200);
    expect(raw.json.activity.fingerprint).toBe(fingerprintOf(enc.encode(body)));
  });
});

describe('robustness', () => {
  it('deeply nested JSON in an ignored parameter is not a 500', async () => {
    const depth = 100_000;
    const deep = '['.repeat(depth) + ']'.repeat(depth);
    const body = `{"parameters":{"userTagName":"${uniqueName('deep')}","userIds":[],"junk":${deep}},"organizationId":"${ts.orgId}","timestampMs":"${Date.now()}","type":"ACTIVITY_TYPE_CREATE_USER_TAG"}`;
    const r = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(r.status, r.text.slice(0, 300)).toBeLessThan(500);
    if (r.status !== 200) checkError(r, [400, 413], 'deep JSON');
    const q = await ts.raw(QUERY('whoami'), `{"organizationId":"${ts.orgId}","junk":${deep}}`);
    expect(q.status, q.text.slice(0, 300)).toBeLessThan(500);
    expect((await ts.raw(QUERY('whoami'), whoBody())).status).toBe(200);
  });

  it('deeply nested JSON in a validated parameter is a 400, not a 500', async () => {
    const depth = 50_000;
    const deep = '['.repeat(depth) + ']'.repeat(depth);
    const body = `{"parameters":{"userTagName":"x","userIds":${deep}},"organizationId":"${ts.orgId}","timestampMs":"${Date.now()}","type":"ACTIVITY_TYPE_CREATE_USER_TAG"}`;
    const before = await newestActivityId(ts);
    const r = await ts.raw(SUBMIT('create_user_tag'), body);
    checkError(r, 400, 'deeply nested userIds');
    expect(await newestActivityId(ts)).toBe(before);
  });

  it('50 concurrent distinct submits from two clients all complete, each stored once', async () => {
    const before = (await allActivities(ts)).length;
    const bodies = Array.from({ length: 50 }, (_, i) => submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName(`c${i}`), userIds: [] }));
    const replies = await Promise.all(bodies.map((b) => ts.raw(SUBMIT('create_user_tag'), b)));
    for (const r of replies) expect(r.status, r.text).toBe(200);
    expect(new Set(replies.map((r) => r.json.activity.id)).size).toBe(50);
    expect((await allActivities(ts)).length).toBe(before + 50);
  });

  it('16 concurrent identical submits yield one activity (idempotency under concurrency)', async () => {
    const before = (await allActivities(ts)).length;
    const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('same'), userIds: [] });
    const replies = await Promise.all(Array.from({ length: 16 }, () => ts.raw(SUBMIT('create_user_tag'), body)));
    for (const r of replies) expect(r.status, r.text).toBe(200);
    expect(new Set(replies.map((r) => r.json.activity.id)).size).toBe(1);
    expect((await allActivities(ts)).length).toBe(before + 1);
  });

  it('an identical body resubmitted by another credential of the organization returns the activity as it stands (not run as that credential)', async () => {
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('eve'), apiKeys: [{ apiKeyName: 'e', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    expect(u.userIds).toHaveLength(1);
    const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('mine'), userIds: [] });
    // the non-root user sends it first: stored, waiting for approval
    const first = await ts.raw(SUBMIT('create_user_tag'), body, { key });
    checkAwaitsConsensus(first, 'non-root create_user_tag');
    // root sends the same bytes: the same activity, still waiting (not run as the root user)
    const same = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(same.status, same.text).toBe(200);
    expect(same.json.activity.id).toBe(first.json.activity.id);
    expect(same.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    // the root user's approval runs it
    const ok = await ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint: first.json.activity.fingerprint }));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  });

  it('a refused stale resubmission of a stored body is not answered with a new activity', async () => {
    const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('old'), userIds: [] }, String(Date.now() - 3_600_000));
    const r = await ts.raw(SUBMIT('create_user_tag'), body);
    checkError(r, [400, 401], 'stale');
  });

  it('whitespace-padded and duplicate-key bodies: the stamp covers the bytes, the fingerprint is of the bytes', async () => {
    const name = uniqueName('ws');
    const body = ` { "parameters" : { "userTagName" : "${name}" , "userIds" : [ ] } , "organizationId" : "${ts.orgId}" , "timestampMs" : "${Date.now()}" , "type" : "ACTIVITY_TYPE_CREATE_USER_TAG" } `;
    const r = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(r.status, r.text).toBe(200);
    checkSubmitReply('create_user_tag', r.json, { type: 'ACTIVITY_TYPE_CREATE_USER_TAG', intentKey: 'createUserTagIntent', resultKey: 'createUserTagResult' }, ts.orgId, body);
  });

  it('headers larger than the HTTP parser accepts (> 16 KiB X-Stamp) get the JSON error format, and the server keeps serving', async () => {
    // straight to the server: the recording proxy's own HTTP parser would refuse first
    const body = whoBody();
    const r = await fetch(ts.directUrl + QUERY('whoami'), { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Stamp': 'a'.repeat(20_000) }, body });
    const text = await r.text();
    expect(r.status, text).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    let json: any;
    try { json = JSON.parse(text); } catch { json = undefined; }
    expect(json, `HTTP ${r.status} with body ${JSON.stringify(text)}: every failure is {code, message, details} (issue 3 "Errors")`).toMatchObject({ code: expect.any(Number), message: expect.any(String), details: expect.any(Array) });
    expect((await rawRequest(ts.directUrl, QUERY('whoami'), body, { key: ts.rootKey })).status).toBe(200);
  });

  it('the server answers over a second connection while a slow client trickles a body', async () => {
    const { request } = await import('node:http');
    const u = new URL(ts.directUrl); // straight to the server, not through the recording proxy
    const slow = request({ host: u.hostname, port: u.port, method: 'POST', path: QUERY('whoami'), headers: { 'Content-Type': 'application/json', 'Content-Length': '1000' } });
    slow.on('error', () => {});
    slow.write('{"organizationId":');
    const r = await rawRequest(ts.directUrl, QUERY('whoami'), whoBody(), { key: ts.rootKey });
    expect(r.status).toBe(200);
    slow.destroy();
  });
});

/**
 * One exchange over a fresh TCP connection straight to the server: writes `head`, then calls
 * `more` with what arrived each time something does (it may write the body); resolves with all
 * that arrived once the server closes the connection or `ms` have passed.
 */
async function exchangeRaw(head: string, more: (sock: import('node:net').Socket, got: string) => void, ms: number): Promise<{ got: string; closedByServer: boolean; elapsedMs: number }> {
  const net = await import('node:net');
  const u = new URL(ts.directUrl);
  const t0 = Date.now();
  return await new Promise((resolve) => {
    const sock = net.connect(Number(u.port), u.hostname);
    let got = '';
    const end = (closedByServer: boolean) => { clearTimeout(timer); sock.destroy(); resolve({ got, closedByServer, elapsedMs: Date.now() - t0 }); };
    const timer = setTimeout(() => end(false), ms);
    sock.on('data', (d: Buffer) => { got += d.toString('latin1'); more(sock, got); });
    sock.on('end', () => end(true));
    sock.on('error', () => end(true));
    sock.write(head);
  });
}

describe('Expect: 100-continue', () => {
  it('a declared Content-Length over BODY_LIMIT is answered 413 at once: no 100 Continue, no upload read, the connection closed', async () => {
    const declared = 50 * 1024 * 1024;
    const r = await exchangeRaw(`POST ${QUERY('whoami')} HTTP/1.1\r\nHost: kmas\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\nExpect: 100-continue\r\n\r\n`, () => {}, 10_000);
    expect(r.got, 'no 100 Continue for a body the server will refuse').not.toMatch(/^HTTP\/1\.1 100/);
    expect(r.got.slice(0, 40), `answered within the wait: ${JSON.stringify(r.got.slice(0, 200))}`).toMatch(/^HTTP\/1\.1 413 /);
    const body = JSON.parse(r.got.slice(r.got.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ code: 8, message: expect.any(String), details: expect.any(Array) });
    expect(r.closedByServer, 'the server closes the connection: the client never sends the body it announced').toBe(true);
    expect(r.elapsedMs).toBeLessThan(5_000);
  });

  it('a body within the limit gets 100 Continue, then the reply', async () => {
    const body = whoBody();
    let sent = false;
    const r = await exchangeRaw(
      `POST ${QUERY('whoami')} HTTP/1.1\r\nHost: kmas\r\nContent-Type: application/json\r\nX-Stamp: ${stampFor(body, ts.rootKey)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      (sock, got) => { if (!sent && /^HTTP\/1\.1 100 Continue\r\n\r\n/.test(got)) { sent = true; sock.write(body); } },
      10_000,
    );
    expect(r.got).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    expect(JSON.parse(r.got.slice(r.got.lastIndexOf('\r\n\r\n') + 4))).toMatchObject({ organizationId: ts.orgId });
  });
});

describe('organizationId spelling', () => {
  it('a UUID organizationId in upper case names the same organization (RFC 9562: case-insensitive on input); replies carry the lower-case id', async () => {
    const upper = ts.orgId.toUpperCase();
    expect(upper).not.toBe(ts.orgId);
    const who = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: upper }));
    expect(who.status, who.text).toBe(200);
    expect(who.json.organizationId).toBe(ts.orgId);
    const name = uniqueName('upper');
    const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', upper, { userTagName: name, userIds: [] });
    const r = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.organizationId).toBe(ts.orgId);
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const tags: any = await ts.sdk.listUserTags();
    expect(tags.userTags.filter((t: any) => t.tagName === name)).toHaveLength(1);
    expect(await newestActivityId(ts)).toBe(r.json.activity.id);
    // the same body again is the same activity
    const again = await ts.raw(SUBMIT('create_user_tag'), body);
    expect(again.json.activity.id).toBe(r.json.activity.id);
  });

  it('an organizationId that is no UUID is still 400, and an unknown UUID in any case 404, nothing stored', async () => {
    const before = await newestActivityId(ts);
    const unknown = '0000000A-0000-4000-8000-0000000000DD';
    for (const [id, status] of [[`${ts.orgId}X`, 400], [unknown, 404], [unknown.toLowerCase(), 404]] as const) {
      const r = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', id, { userTagName: uniqueName('no'), userIds: [] }));
      checkError(r, status, id);
    }
    expect(await newestActivityId(ts)).toBe(before);
  });
});
