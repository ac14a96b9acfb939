// IP allowlists: set_ip_allowlist / remove_ip_allowlist / get_ip_allowlist with the real
// sdk-server client, and their enforcement on every stamped request. The server trusts the
// loopback proxy in front of it (TRUST_PROXY=loopback), so a request's X-Forwarded-For stands for
// a client elsewhere: that is how a deployment behind a reverse proxy sees its clients.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startTestServer, newP256Key, submitBody, uniqueName, allActivities, type TestServer, type RawKey } from '../server/harness.js';
import { checkAwaitsConsensus, checkError, expectFieldViolation, QUERY, SUBMIT } from '../server/checks.js';

let ts: TestServer;
let bot: { id: string; key: RawKey };

const from = (address: string) => ({ headers: { 'X-Forwarded-For': address } });

/** whoami as `key` from `address`: the HTTP status. */
async function whoamiFrom(address: string, key: RawKey | typeof ts.rootKey = ts.rootKey): Promise<number> {
  const r = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key, ...from(address) });
  return r.status;
}

async function setList(parameters: Record<string, unknown>, address = '127.0.0.1') {
  return ts.raw(SUBMIT('set_ip_allowlist'), submitBody('ACTIVITY_TYPE_SET_IP_ALLOWLIST', ts.orgId, parameters), from(address));
}

beforeAll(async () => {
  ts = await startTestServer({ trustProxy: ['loopback'] });
  const key = newP256Key();
  const r: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('bot'), apiKeys: [{ apiKeyName: 'bot', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  bot = { id: r.userIds[0], key };
});
afterAll(async () => { await ts?.stop(); });

describe('IP allowlists', () => {
  it('none at first: get_ip_allowlist answers an empty, disabled list and every address is let in', async () => {
    const r: any = await ts.sdk.getIpAllowlist({} as any);
    expect(r.allowlist).toEqual({ organizationId: ts.orgId, rules: [], enabled: false, onEvaluationError: 'DENY' });
    expect(await whoamiFrom('198.51.100.7')).toBe(200);
  });

  it('a list that would shut out the request setting it is refused, and nothing is stored', async () => {
    const before = (await allActivities(ts)).length;
    const r = await setList({ rules: [{ cidr: '10.0.0.0/8' }] }, '127.0.0.1');
    checkError(r, 400, 'lock-out');
    expectFieldViolation(r, 'rules');
    expect(r.json.message).toContain('127.0.0.1');
    expect((await allActivities(ts)).length).toBe(before);
    expect((await ts.sdk.getIpAllowlist({} as any) as any).allowlist.rules).toEqual([]);
  });

  it('bad rules and fields name the field', async () => {
    for (const [params, field] of [
      [{ rules: [{ cidr: '10.0.0.0/33' }] }, 'rules[0].cidr'],
      [{ rules: [{ cidr: '10.0.0/8' }] }, 'rules[0].cidr'],
      [{ rules: [{ cidr: 'example.com' }] }, 'rules[0].cidr'],
      [{ rules: [{ label: 'no cidr' }] }, 'rules[0].cidr'],
      [{ rules: 'x' }, 'rules'],
      [{ onEvaluationError: 'MAYBE' }, 'onEvaluationError'],
      [{ publicKey: 'zz' }, 'publicKey'],
    ] as const) {
      const r = await setList(params as any);
      checkError(r, 400, JSON.stringify(params));
      expectFieldViolation(r, field);
    }
    const unknownKey = await setList({ publicKey: '02' + 'ab'.repeat(32), rules: [] });
    checkError(unknownKey, 404, 'unknown API key');
  });

  it('an organization list admits its blocks (IPv4, IPv6, single addresses) and refuses the rest with 403, storing nothing', async () => {
    const s: any = await ts.sdk.setIpAllowlist({ rules: [
      { cidr: '127.0.0.0/8', label: 'loopback' }, { cidr: '10.1.0.0/16', label: 'office' }, { cidr: '2001:db8::/32' }, { cidr: '203.0.113.9' },
    ] } as any);
    expect(s.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(s.activity.type).toBe('ACTIVITY_TYPE_SET_IP_ALLOWLIST');
    const g: any = await ts.sdk.getIpAllowlist({} as any);
    expect(g.allowlist).toMatchObject({ organizationId: ts.orgId, enabled: true, onEvaluationError: 'DENY' });
    expect(g.allowlist.rules.map((r: any) => [r.cidr, r.label])).toEqual([['127.0.0.0/8', 'loopback'], ['10.1.0.0/16', 'office'], ['2001:db8::/32', ''], ['203.0.113.9', '']]);
    for (const r of g.allowlist.rules) expect(Number(r.createdAt)).toBeGreaterThan(Date.now() - 60_000);

    for (const ok of ['10.1.2.3', '::ffff:10.1.200.1', '2001:db8:1::5', '203.0.113.9', '127.0.0.1']) expect(await whoamiFrom(ok), ok).toBe(200);
    for (const no of ['10.2.0.1', '203.0.113.10', '2001:db9::1', '192.0.2.1']) expect(await whoamiFrom(no), no).toBe(403);
    // the bot's key too (the organization's list covers all its credentials)
    expect(await whoamiFrom('10.2.0.1', bot.key)).toBe(403);

    const before = (await allActivities(ts)).length;
    const refused = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('t'), userIds: [] }), from('192.0.2.1'));
    checkError(refused, 403, 'submit from outside');
    expect(refused.json.message).toContain('192.0.2.1');
    expect(refused.json.message).toContain('IP allowlist');
    expect((await allActivities(ts)).length).toBe(before);
    // X-Forwarded-For is believed only from a trusted proxy: the last untrusted hop counts
    expect(await whoamiFrom('10.1.2.3, 192.0.2.1')).toBe(403);
    expect(await whoamiFrom('192.0.2.1, 10.1.2.3')).toBe(200);
  });

  it('an API key\'s own list replaces the organization\'s for that key', async () => {
    const s: any = await ts.sdk.setIpAllowlist({ publicKey: bot.key.publicKey, rules: [{ cidr: '192.0.2.0/24', label: 'bot runner' }] } as any);
    expect(s.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const g: any = await ts.sdk.getIpAllowlist({ publicKey: bot.key.publicKey } as any);
    expect(g.allowlist).toMatchObject({ organizationId: ts.orgId, publicKey: bot.key.publicKey, onEvaluationError: 'DENY' });
    expect(g.allowlist.enabled).toBeUndefined();
    expect(await whoamiFrom('192.0.2.44', bot.key)).toBe(200);
    expect(await whoamiFrom('10.1.2.3', bot.key)).toBe(403);
    expect(await whoamiFrom('10.1.2.3')).toBe(200);
    expect(await whoamiFrom('192.0.2.44')).toBe(403);
    // enabled: false means nothing for a key's list
    const bad = await setList({ publicKey: bot.key.publicKey, enabled: false });
    expectFieldViolation(bad, 'enabled');
  });

  it('an address that cannot be evaluated follows onEvaluationError; a disabled list lets everyone in', async () => {
    expect(await whoamiFrom('not-an-address')).toBe(403);
    await ts.sdk.setIpAllowlist({ onEvaluationError: 'ALLOW' } as any);
    expect(await whoamiFrom('not-an-address')).toBe(200);
    const g: any = await ts.sdk.getIpAllowlist({} as any);
    expect(g.allowlist.rules).toHaveLength(4); // rules omitted: kept
    expect(g.allowlist.onEvaluationError).toBe('ALLOW');
    await ts.sdk.setIpAllowlist({ enabled: false } as any);
    expect(await whoamiFrom('192.0.2.1')).toBe(200);
    expect(await whoamiFrom('10.9.9.9', bot.key)).toBe(403); // the key's own list still applies
    await ts.sdk.setIpAllowlist({ enabled: true } as any);
    expect(await whoamiFrom('192.0.2.1')).toBe(403);
  });

  it('a non-root user\'s list waits for the root quorum; any member reads the lists', async () => {
    const r = await ts.raw(SUBMIT('set_ip_allowlist'), submitBody('ACTIVITY_TYPE_SET_IP_ALLOWLIST', ts.orgId, { rules: [{ cidr: '0.0.0.0/0' }] }), { key: bot.key, ...from('192.0.2.1') });
    // as for every root-quorum activity: it waits for the root quorum, and changes nothing meanwhile
    checkAwaitsConsensus(r, 'non-root sets a list');
    const g: any = await ts.raw(QUERY('get_ip_allowlist'), JSON.stringify({ organizationId: ts.orgId }), { key: bot.key, ...from('192.0.2.1') });
    expect(g.status).toBe(200);
    expect(g.json.allowlist.rules).toHaveLength(4);
  });

  it('remove_ip_allowlist: the organization\'s list, then 404; deleting an API key removes its list', async () => {
    const rm: any = await ts.sdk.removeIpAllowlist({} as any);
    expect(rm.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await whoamiFrom('198.51.100.1')).toBe(200);
    const again = await ts.raw(SUBMIT('remove_ip_allowlist'), submitBody('ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST', ts.orgId, {}));
    checkError(again, 404, 'nothing to remove');
    const keys: any = await ts.sdk.getApiKeys({ userId: bot.id } as any);
    await ts.sdk.deleteApiKeys({ userId: bot.id, apiKeyIds: keys.apiKeys.map((k: any) => k.apiKeyId) } as any);
    // the same public key registered again starts without the old list
    await ts.sdk.createApiKeys({ userId: bot.id, apiKeys: [{ apiKeyName: 'again', publicKey: bot.key.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    expect(await whoamiFrom('10.9.9.9', bot.key)).toBe(200);
    const g: any = await ts.sdk.getIpAllowlist({ publicKey: bot.key.publicKey } as any);
    expect(g.allowlist.rules).toEqual([]);
  });
});
