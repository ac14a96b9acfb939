// An API key's own IP allowlist and the keys it asks for. A key limited to some addresses that logs
// in (stamp_login) or opens a read-write session makes keys limited to the same addresses: else the
// list is stepped around by minting a key once from inside them. And a key logged in with again
// keeps the list it had (its registration is replaced, its list is not dropped with it). As in
// ipAllowlist.test.ts, the server trusts the loopback proxy, so X-Forwarded-For is the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newP256Key, startTestServer, submitBody, uniqueName, type RawKey, type TestServer } from '../server/harness.js';
import { QUERY, SUBMIT } from '../server/checks.js';

let ts: TestServer;
let bot: RawKey;
let botUserId: string;
const from = (address: string) => ({ headers: { 'X-Forwarded-For': address } });
const whoami = async (key: RawKey, address: string) => (await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: ts.orgId }), { key, ...from(address) })).status;
const login = (key: RawKey, publicKey: string, address: string) =>
  ts.raw(SUBMIT('stamp_login'), submitBody('ACTIVITY_TYPE_STAMP_LOGIN', ts.orgId, { publicKey }), { key, ...from(address) });

beforeAll(async () => {
  ts = await startTestServer({ trustProxy: ['loopback'] });
  bot = newP256Key();
  const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('office bot'), apiKeys: [{ apiKeyName: 'bot', publicKey: bot.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  botUserId = u.userIds[0];
  // the bot's key is for the office's addresses only
  await ts.sdk.setIpAllowlist({ publicKey: bot.publicKey, rules: [{ cidr: '203.0.113.0/24', label: 'office' }] } as any);
});
afterAll(async () => { await ts?.stop(); });

describe('keys made by a key with an IP allowlist of its own', () => {
  it('a stamp_login session key is limited to the same addresses', async () => {
    expect(await whoami(bot, '198.51.100.7')).toBe(403);
    const session = newP256Key();
    const r = await login(bot, session.publicKey, '203.0.113.5');
    expect(r.status, r.text).toBe(200);
    expect(await whoami(session, '203.0.113.9')).toBe(200);
    expect(await whoami(session, '198.51.100.7')).toBe(403); // not a way out of the office's list
  });

  it('a read-write session key too', async () => {
    const target = newP256Key();
    const r = await ts.raw(SUBMIT('create_read_write_session'), submitBody('ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', ts.orgId, { targetPublicKey: target.publicKey }), { key: bot, ...from('203.0.113.5') });
    expect(r.status, r.text).toBe(200);
    const keyId = r.json.activity.result.createReadWriteSessionResultV2.apiKeyId as string;
    const made: any = await ts.sdk.getApiKey({ apiKeyId: keyId } as any);
    const { allowlist }: any = await ts.sdk.getIpAllowlist({ publicKey: made.apiKey.credential.publicKey } as any);
    expect(allowlist.rules.map((x: any) => x.cidr)).toEqual(['203.0.113.0/24']);
  });

  // guards: create_api_keys gives the keys a key with a list of its own makes that list, as sessions get it
  it('an API key it makes for its own user with create_api_keys too', async () => {
    const made = newP256Key();
    const r = await ts.raw(SUBMIT('create_api_keys'), submitBody('ACTIVITY_TYPE_CREATE_API_KEYS_V2', ts.orgId, {
      userId: botUserId, apiKeys: [{ apiKeyName: 'anywhere', publicKey: made.publicKey, curveType: 'API_KEY_CURVE_P256' }],
    }), { key: bot, ...from('203.0.113.5') });
    expect(r.status, r.text).toBe(200);
    expect(r.json.activity.status, r.text).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await whoami(made, '203.0.113.9')).toBe(200);
    expect(await whoami(made, '198.51.100.7'), 'a key the office-only key made works from outside the office').toBe(403);
  });

  it('a key logged in with again keeps its own list', async () => {
    const session = newP256Key();
    expect((await login(bot, session.publicKey, '203.0.113.5')).status).toBe(200);
    // narrowed by the root user to one address of the office
    await ts.sdk.setIpAllowlist({ publicKey: session.publicKey, rules: [{ cidr: '203.0.113.9/32' }] } as any);
    expect((await login(bot, session.publicKey, '203.0.113.5')).status).toBe(200);
    expect(await whoami(session, '203.0.113.9')).toBe(200);
    expect(await whoami(session, '203.0.113.10')).toBe(403);
  });

  it('a key without a list of its own makes keys under the organization\'s rules only (none here)', async () => {
    const root = ts.rootKey as unknown as RawKey;
    const session = newP256Key();
    expect((await login(root, session.publicKey, '198.51.100.7')).status).toBe(200);
    expect(await whoami(session, '192.0.2.44')).toBe(200);
  });
});
