// list_activities pagination across more than 100 activities (issue 3; replies.md: cursors are
// activity ids, lists newest first, `before` = the newer page just before the cursor, `after` = the
// older ones just after it; limit "1".."100", default 10).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, submitBody, type TestServer } from './harness.js';
import { checkError, expectFieldViolation, QUERY, SUBMIT } from './checks.js';
import { assertDefinition } from './swagger.js';

let ts: TestServer;
const created: string[] = []; // in submission order (oldest first)
const N = 130;

beforeAll(async () => {
  ts = await startTestServer();
  for (let i = 0; i < N; i++) {
    const r = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: `page-${i}`, userIds: [] }));
    if (r.status !== 200) throw new Error(`setup submit ${i} failed: ${r.status} ${r.text}`);
    created.push(r.json.activity.id);
  }
});
afterAll(async () => { await ts?.stop(); });

async function page(opts: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const r: any = await ts.http.getActivities({ organizationId: ts.orgId, filterByType: ['ACTIVITY_TYPE_CREATE_USER_TAG'], ...extra, paginationOptions: opts } as any);
  assertDefinition('v1GetActivitiesResponse', r);
  return r.activities as any[];
}

describe('list_activities pagination', () => {
  it('walks all activities with after-cursors, 100 then the rest: no gaps, no repeats, newest first', async () => {
    const p1 = await page({ limit: '100' });
    expect(p1).toHaveLength(100);
    const p2 = await page({ limit: '100', after: p1[99].id });
    expect(p2).toHaveLength(N - 100);
    const ids = [...p1, ...p2].map((a) => a.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...created].reverse());
    const p3 = await page({ limit: '100', after: p2[p2.length - 1].id });
    expect(p3).toEqual([]);
  });

  it('walks with small pages (limit 7) through the whole list', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 100; i++) {
      const p = await page(after ? { limit: '7', after } : { limit: '7' });
      seen.push(...p.map((a) => a.id));
      if (p.length < 7) break;
      after = p[p.length - 1].id;
    }
    expect(seen).toEqual([...created].reverse());
  });

  it('createdAt is non-increasing along the list', async () => {
    const all = [...(await page({ limit: '100' })), ...(await page({ limit: '100', after: created[N - 100] }))];
    const t = (a: any) => BigInt(a.createdAt.seconds) * 1_000_000_000n + BigInt(a.createdAt.nanos);
    for (let i = 1; i < all.length; i++) expect(t(all[i - 1]) >= t(all[i])).toBe(true);
  });

  it('before-cursor returns the newer objects just before the cursor (walking back up)', async () => {
    // newest-first order; the cursor is the 50th oldest activity
    const newestFirst = [...created].reverse();
    const idx = newestFirst.indexOf(created[49]);
    const p = await page({ limit: '10', before: created[49] });
    expect(p.map((a) => a.id)).toEqual(newestFirst.slice(idx - 10, idx));
    // walking back with before until the top gives everything newer than the cursor
    const seen: string[] = [];
    let before = created[49];
    for (let i = 0; i < 100; i++) {
      const q = await page({ limit: '25', before });
      if (q.length === 0) break;
      seen.unshift(...q.map((a) => a.id));
      before = q[0].id;
      if (q.length < 25) break;
    }
    expect(seen).toEqual(newestFirst.slice(0, idx));
  });

  it('the default limit is 10 (newest ten)', async () => {
    const p = await page({});
    expect(p.map((a) => a.id)).toEqual([...created].reverse().slice(0, 10));
    const r: any = await ts.http.getActivities({ organizationId: ts.orgId, filterByType: ['ACTIVITY_TYPE_CREATE_USER_TAG'] } as any);
    expect(r.activities).toHaveLength(10);
  });

  it('limit outside "1".."100" or not a decimal string is 400 with a field violation', async () => {
    for (const limit of ['0', '101', '-1', 'ten', '1.5', 5]) {
      const r = await ts.raw(QUERY('list_activities'), JSON.stringify({ organizationId: ts.orgId, paginationOptions: { limit } }));
      checkError(r, 400, `limit ${JSON.stringify(limit)}`);
      expectFieldViolation(r, 'limit');
    }
    const ok = await ts.raw(QUERY('list_activities'), JSON.stringify({ organizationId: ts.orgId, paginationOptions: { limit: '100' } }));
    expect(ok.status).toBe(200);
    expect(ok.json.activities).toHaveLength(100);
  });

  it('an unknown cursor is refused (400/404), not an empty or wrong page', async () => {
    const r = await ts.raw(QUERY('list_activities'), JSON.stringify({ organizationId: ts.orgId, paginationOptions: { after: '00000000-0000-4000-8000-000000000000' } }));
    checkError(r, [400, 404], 'unknown cursor');
  });

  it('filters combine with pagination (filterByStatus COMPLETED)', async () => {
    const p = await page({ limit: '100' }, { filterByStatus: ['ACTIVITY_STATUS_COMPLETED'] });
    expect(p).toHaveLength(100);
    for (const a of p) expect(a.status).toBe('ACTIVITY_STATUS_COMPLETED');
  });

  it('no gaps or repeats when many activities share the same millisecond (concurrent submits), both directions', async () => {
    const M = 60;
    const bodies = Array.from({ length: M }, (_, i) => submitBody('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', ts.orgId, { privateKeyTagName: `tie-${i}`, privateKeyIds: [] }));
    const replies = await Promise.all(bodies.map((b) => ts.raw(SUBMIT('create_private_key_tag'), b)));
    for (const r of replies) expect(r.status, r.text).toBe(200);
    const ids = new Set(replies.map((r) => r.json.activity.id as string));
    expect(ids.size).toBe(M);
    const pageOf = async (opts: Record<string, unknown>) => {
      const r: any = await ts.http.getActivities({ organizationId: ts.orgId, filterByType: ['ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG'], paginationOptions: opts } as any);
      return r.activities.map((a: any) => a.id) as string[];
    };
    const full = await pageOf({ limit: '100' });
    expect(new Set(full)).toEqual(ids);
    // forward with after
    const fwd: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 50; i++) {
      const p = await pageOf(after ? { limit: '7', after } : { limit: '7' });
      fwd.push(...p);
      if (p.length < 7) break;
      after = p[p.length - 1];
    }
    expect(fwd).toEqual(full);
    // backward with before, starting from the oldest
    const oldest = full[full.length - 1]!;
    const back: string[] = [];
    let before = oldest;
    for (let i = 0; i < 50; i++) {
      const p = await pageOf({ limit: '7', before });
      if (p.length === 0) break;
      back.unshift(...p);
      before = p[0]!;
    }
    expect(back).toEqual(full.slice(0, -1));
  });
});
