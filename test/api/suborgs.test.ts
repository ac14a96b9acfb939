// Sub-organizations through the real clients: create_sub_organization (with root users, API keys
// and a wallet), acting inside the sub-organization with its own key, the parent's read-only view,
// list_suborgs with every filter and both cursors, delete_sub_organization, and bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptExportBundle, generateP256KeyPair } from '@turnkey/crypto';
import { mnemonicToAccount } from 'viem/accounts';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { httpClient, newP256Key, sdkClient, startTestServer, submitBody, uniqueName, type RawKey, type TestServer, onSqlite } from '../server/harness.js';
import { QUERY, SUBMIT } from '../server/checks.js';

let ts: TestServer;
beforeAll(async () => { ts = await startTestServer(); });
afterAll(async () => { await ts?.stop(); });

const ETH_PATH = "m/44'/60'/0'/0/0";
const ethAccount = (path = ETH_PATH) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }) as const;

interface Made { id: string; key: RawKey; rootUserIds: string[]; wallet?: { walletId: string; addresses: string[] } }

async function makeSubOrg(opts: { name?: string; email?: string; phone?: string; wallet?: boolean; key?: RawKey } = {}): Promise<Made> {
  const key = opts.key ?? newP256Key();
  const r: any = await ts.sdk.createSubOrganization({
    subOrganizationName: opts.name ?? uniqueName('sub'),
    rootQuorumThreshold: 1,
    rootUsers: [{
      userName: 'end user',
      ...(opts.email ? { userEmail: opts.email } : {}),
      ...(opts.phone ? { userPhoneNumber: opts.phone } : {}),
      apiKeys: [{ apiKeyName: 'end user key', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }],
      authenticators: [], oauthProviders: [],
    }],
    ...(opts.wallet ? { wallet: { walletName: 'main', accounts: [ethAccount()] } } : {}),
  } as any);
  expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  return { id: r.subOrganizationId, key, rootUserIds: r.rootUserIds, ...(r.wallet ? { wallet: r.wallet } : {}) };
}

const subClient = (m: Made) => sdkClient(ts.url, m.key, m.id);
const countActivities = async () => (await ts.http.getActivities({ organizationId: ts.orgId, paginationOptions: { limit: '100' } } as any)).activities.length;

describe('create_sub_organization', () => {
  it('makes an organization under the parent with root users, their API keys and a wallet whose mnemonic gives the addresses', async () => {
    const m = await makeSubOrg({ wallet: true, email: 'Ada@Example.com' });
    expect(m.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(m.rootUserIds).toHaveLength(1);
    expect(m.wallet!.addresses).toHaveLength(1);

    const sub = subClient(m);
    const who: any = await sub.getWhoami();
    expect(who.organizationId).toBe(m.id);
    expect(who.userId).toBe(m.rootUserIds[0]);
    const org: any = await httpClient(ts.url, m.key).getOrganization({ organizationId: m.id });
    expect(org.organizationData.rootQuorum.threshold).toBe(1);
    expect(org.organizationData.rootQuorum.userIds).toEqual(m.rootUserIds);
    const users: any = await sub.getUsers();
    expect(users.users.map((u: any) => [u.userId, u.userEmail, u.apiKeys.length])).toEqual([[m.rootUserIds[0], 'Ada@Example.com', 1]]);

    // Independent truth: export the mnemonic (decrypted by @turnkey/crypto) and derive with viem.
    const kp = generateP256KeyPair();
    const ex: any = await sub.exportWallet({ walletId: m.wallet!.walletId, targetPublicKey: kp.publicKeyUncompressed });
    const mnemonic = await decryptExportBundle({
      exportBundle: ex.exportBundle, embeddedKey: kp.privateKey, organizationId: m.id, returnMnemonic: true,
      dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey!,
    });
    expect(mnemonic.split(' ')).toHaveLength(12);
    expect(mnemonicToAccount(mnemonic, { path: ETH_PATH }).address).toBe(m.wallet!.addresses[0]);
  });

  it('the sub-organization signs with its own key; the signature recovers the wallet address', async () => {
    const m = await makeSubOrg({ wallet: true });
    const digest = keccak_256(new TextEncoder().encode('from a sub-organization'));
    const sig: any = await subClient(m).signRawPayload({
      signWith: m.wallet!.addresses[0]!, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP',
    });
    const pub = secp256k1.Signature.fromBytes(hexToBytes(sig.r + sig.s)).addRecoveryBit(Number(sig.v)).recoverPublicKey(digest).toBytes(false);
    const address = `0x${bytesToHex(keccak_256(pub.slice(1)).slice(-20))}`;
    expect(address).toBe(m.wallet!.addresses[0]!.toLowerCase());
  });

  it('whoami naming the parent with the sub-organization key answers with the sub-organization', async () => {
    const m = await makeSubOrg();
    const who: any = await sdkClient(ts.url, m.key, ts.orgId).getWhoami();
    expect(who.organizationId).toBe(m.id);
    expect(who.userId).toBe(m.rootUserIds[0]);
  });

  it('the parent reads the sub-organization but cannot change it; the sub-organization cannot read the parent', async () => {
    const m = await makeSubOrg({ wallet: true });
    const wallets: any = await ts.sdk.getWallets({ organizationId: m.id });
    expect(wallets.wallets.map((w: any) => w.walletId)).toEqual([m.wallet!.walletId]);
    const org: any = await ts.http.getOrganization({ organizationId: m.id });
    expect(org.organizationData.organizationId).toBe(m.id);

    const n0 = (await subClient(m).getWallets()).wallets.length;
    const r = await ts.raw(SUBMIT('create_wallet'), submitBody('ACTIVITY_TYPE_CREATE_WALLET', m.id, { walletName: 'x', accounts: [] }));
    expect(r.status, r.text).toBe(403);
    expect((await subClient(m).getWallets()).wallets.length).toBe(n0);

    // Turnkey's answer: the key is not in the organization nor its parent
    const up = await ts.raw(QUERY('get_organization'), JSON.stringify({ organizationId: ts.orgId }), { key: m.key });
    expect(up.status, up.text).toBe(401);
    expect(up.json.message).toBe('could not find public key in organization or its parent organization');
  });

  it('one public key may hold root users in several sub-organizations', async () => {
    const shared = newP256Key();
    const a = await makeSubOrg({ key: shared });
    const b = await makeSubOrg({ key: shared });
    expect((await sdkClient(ts.url, shared, a.id).getWhoami() as any).organizationId).toBe(a.id);
    expect((await sdkClient(ts.url, shared, b.id).getWhoami() as any).organizationId).toBe(b.id);
  });

  it('a sub-organization cannot create sub-organizations, and a non-root user of the parent cannot either', async () => {
    const m = await makeSubOrg();
    const params = { subOrganizationName: 'nested', rootQuorumThreshold: 1, rootUsers: [{ userName: 'u', apiKeys: [], authenticators: [], oauthProviders: [] }] };
    const nested = await ts.raw(SUBMIT('create_sub_organization'), submitBody('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8', m.id, params), { key: m.key });
    expect(nested.status, nested.text).toBe(400);
    expect(nested.json.message).toMatch(/sub-organization cannot create/);

    const plain = newP256Key();
    await ts.sdk.createUsers({ users: [{ userName: uniqueName('plain'), apiKeys: [{ apiKeyName: 'k', publicKey: plain.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const before = (await ts.sdk.getSubOrgIds({ paginationOptions: { limit: '100' } } as any)).organizationIds.length;
    const r = await ts.raw(SUBMIT('create_sub_organization'), submitBody('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8', ts.orgId, params), { key: plain });
    expect(r.status, r.text).toBe(403);
    expect((await ts.sdk.getSubOrgIds({ paginationOptions: { limit: '100' } } as any)).organizationIds.length).toBe(before);
  });

  it('accepts the V7 type the specification lists and answers under createSubOrganizationResultV7', async () => {
    const key = newP256Key();
    const r = await ts.raw(SUBMIT('create_sub_organization'), submitBody('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7', ts.orgId, {
      subOrganizationName: 'v7', rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'u', apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    }));
    expect(r.status, r.text).toBe(200);
    const res = r.json.activity.result;
    expect(res.createSubOrganizationResultV7.subOrganizationId).toBe(res.activity.result.createSubOrganizationResultV7.subOrganizationId);
    expect(res.createSubOrganizationResultV7.wallet).toBeUndefined();
    expect(r.json.activity.intent.createSubOrganizationIntentV7.subOrganizationName).toBe('v7');
  });

  it('refuses bad input field by field and stores nothing', async () => {
    const key = newP256Key();
    const user = (extra: object = {}) => ({ userName: 'u', apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], ...extra });
    const base = { subOrganizationName: 'bad', rootQuorumThreshold: 1, rootUsers: [user()] };
    const cases: [string, object, string][] = [
      ['no name', { ...base, subOrganizationName: '' }, 'subOrganizationName'],
      ['no root users', { ...base, rootUsers: [] }, 'rootUsers'],
      ['threshold 0', { ...base, rootQuorumThreshold: 0 }, 'rootQuorumThreshold'],
      ['threshold above the root users', { ...base, rootQuorumThreshold: 2 }, 'rootQuorumThreshold'],
      ['threshold not an integer', { ...base, rootQuorumThreshold: 1.5 }, 'rootQuorumThreshold'],
      ['bad e-mail', { ...base, rootUsers: [user({ userEmail: 'nope' })] }, 'rootUsers[0].userEmail'],
      ['bad phone', { ...base, rootUsers: [user({ userPhoneNumber: '555' })] }, 'rootUsers[0].userPhoneNumber'],
      ['bad public key', { ...base, rootUsers: [user({ apiKeys: [{ apiKeyName: 'k', publicKey: '02ab', curveType: 'API_KEY_CURVE_P256' }] })] }, 'rootUsers[0].apiKeys[0].publicKey'],
      ['one key for two root users', { ...base, rootUsers: [user(), user()] }, 'rootUsers'],
      ['an authenticator without its attestation', { ...base, rootUsers: [user({ authenticators: [{ authenticatorName: 'a', challenge: 'c' }] })] }, 'rootUsers[0].authenticators[0].attestation'],
      ['a wallet account on the wrong curve', { ...base, wallet: { walletName: 'w', accounts: [{ ...ethAccount(), curve: 'CURVE_ED25519' }] } }, 'wallet.accounts[0]'],
      ['a bad mnemonic length', { ...base, wallet: { walletName: 'w', accounts: [], mnemonicLength: 13 } }, 'wallet.mnemonicLength'],
      ['a verification token', { ...base, verificationToken: 'eyJ...' }, 'verificationToken'],
    ];
    const subs0 = (await ts.sdk.getSubOrgIds({ paginationOptions: { limit: '100' } } as any)).organizationIds.length;
    const acts0 = await countActivities();
    for (const [what, params, field] of cases) {
      const r = await ts.raw(SUBMIT('create_sub_organization'), submitBody('ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8', ts.orgId, params));
      expect(r.status, `${what}: ${r.text}`).toBe(400);
      const fields = r.json.details.flatMap((d: any) => (d.fieldViolations ?? []).map((v: any) => v.field));
      expect(fields.some((f: string) => f.startsWith(field)), `${what}: ${JSON.stringify(fields)}`).toBe(true);
    }
    expect((await ts.sdk.getSubOrgIds({ paginationOptions: { limit: '100' } } as any)).organizationIds.length).toBe(subs0);
    expect(await countActivities()).toBe(acts0);
  });
});

describe('list_suborgs', () => {
  let made: Made[];
  let parentA: Made;
  beforeAll(async () => {
    // A fresh parent of its own, so that the listing holds exactly these.
    const rootKey = newP256Key();
    await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName('lister'), publicKey: rootKey.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    parentA = { id: ts.orgId, key: rootKey, rootUserIds: [] };
    made = [];
    made.push(await makeSubOrg({ name: 'alpha', email: 'alpha@example.com', phone: '+14155550101', wallet: true }));
    made.push(await makeSubOrg({ name: 'beta', email: 'beta@example.com', phone: '+14155550102' }));
    made.push(await makeSubOrg({ name: 'gamma', email: 'gamma@example.com', phone: '+14155550103', wallet: true }));
  });

  const list = async (body: object) => {
    const r = await ts.raw(QUERY('list_suborgs'), JSON.stringify({ organizationId: ts.orgId, ...body }), { key: parentA.key });
    expect(r.status, r.text).toBe(200);
    return r.json.organizationIds as string[];
  };

  it('without a filter lists every sub-organization newest first, and the cursors page through them without gaps', async () => {
    const all = (await ts.sdk.getSubOrgIds({ paginationOptions: { limit: '100' } } as any)).organizationIds;
    const ours = made.map((m) => m.id).reverse();
    expect(all.filter((id: string) => ours.includes(id))).toEqual(ours);
    expect(all.indexOf(ours[0]!)).toBeLessThan(all.indexOf(ours[2]!));
    const walked: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await list({ paginationOptions: after ? { limit: '2', after } : { limit: '2' } });
      walked.push(...page);
      if (page.length < 2) break;
      after = page[page.length - 1];
    }
    expect(walked).toEqual(all);
    const before = await list({ paginationOptions: { limit: '1', before: all[2] } });
    expect(before).toEqual([all[1]]);
  });

  it('filters by name, user name, e-mail (any case), phone number, public key and wallet account address', async () => {
    const [a, b, c] = made as [Made, Made, Made];
    expect(await list({ filterType: 'NAME', filterValue: 'beta' })).toEqual([b.id]);
    expect(await list({ filterType: 'EMAIL', filterValue: 'GAMMA@example.COM' })).toEqual([c.id]);
    expect(await list({ filterType: 'PHONE_NUMBER', filterValue: '+14155550101' })).toEqual([a.id]);
    expect(await list({ filterType: 'PUBLIC_KEY', filterValue: b.key.publicKey.toUpperCase() })).toEqual([b.id]);
    expect(await list({ filterType: 'WALLET_ACCOUNT_ADDRESS', filterValue: c.wallet!.addresses[0]!.toLowerCase() })).toEqual([c.id]);
    const byUser = await list({ filterType: 'USERNAME', filterValue: 'end user' });
    expect(made.every((m) => byUser.includes(m.id))).toBe(true);
    expect(await list({ filterType: 'NAME', filterValue: 'delta' })).toEqual([]);
    expect(await list({ filterType: 'CREDENTIAL_ID', filterValue: 'abc' })).toEqual([]);
  });

  it('refuses a bad filter or an unknown cursor with 400', async () => {
    for (const body of [
      { filterType: 'SHOE_SIZE', filterValue: '42' },
      { filterType: 'EMAIL' },
      { filterValue: 'alpha' },
      { paginationOptions: { after: 'not-a-sub-organization' } },
      { paginationOptions: { limit: '0' } },
    ]) {
      const r = await ts.raw(QUERY('list_suborgs'), JSON.stringify({ organizationId: ts.orgId, ...body }));
      expect(r.status, JSON.stringify(body) + r.text).toBe(400);
    }
  });
});

describe('delete_sub_organization', () => {
  it.runIf(onSqlite)('refuses while a wallet was never exported; with deleteWithoutExport removes everything but the activities', async () => {
    const m = await makeSubOrg({ wallet: true, name: 'to-delete' });
    const sub = subClient(m);
    const refused = await ts.raw(SUBMIT('delete_sub_organization'), submitBody('ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION', m.id, {}), { key: m.key });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.message).toMatch(/never exported/);
    expect((await sub.getWhoami() as any).organizationId).toBe(m.id);

    const r: any = await sub.deleteSubOrganization({ deleteWithoutExport: true });
    expect(r.subOrganizationUuid).toBe(m.id);
    expect((await ts.sdk.getSubOrgIds({ paginationOptions: { limit: '100' } } as any)).organizationIds).not.toContain(m.id);
    // Its key was registered only there: it no longer authenticates.
    const who = await ts.raw(QUERY('whoami'), JSON.stringify({ organizationId: m.id }), { key: m.key });
    expect(who.status, who.text).toBe(401);
    const gone = await ts.raw(QUERY('get_organization'), JSON.stringify({ organizationId: m.id }));
    expect(gone.status, gone.text).toBe(404);

    const db = new Database(join(ts.dataDir, 'kmas.sqlite'), { readonly: true });
    try {
      for (const table of ['users', 'api_keys', 'wallets', 'wallet_accounts', 'features', 'tags']) {
        expect((db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE organization_id = ?`).get(m.id) as any).n, table).toBe(0);
      }
      expect((db.prepare('SELECT COUNT(*) AS n FROM activities WHERE organization_id = ?').get(m.id) as any).n).toBeGreaterThan(0);
    } finally {
      db.close();
    }
  });

  it('deletes once everything was exported; the root organization and the parent cannot delete', async () => {
    const m = await makeSubOrg({ wallet: true });
    const kp = generateP256KeyPair();
    await subClient(m).exportWallet({ walletId: m.wallet!.walletId, targetPublicKey: kp.publicKeyUncompressed });

    const byParent = await ts.raw(SUBMIT('delete_sub_organization'), submitBody('ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION', m.id, {}));
    expect(byParent.status, byParent.text).toBe(403);
    const root = await ts.raw(SUBMIT('delete_sub_organization'), submitBody('ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION', ts.orgId, { deleteWithoutExport: true }));
    expect(root.status, root.text).toBe(400);
    expect((await ts.sdk.getWhoami() as any).organizationId).toBe(ts.orgId);

    const r: any = await subClient(m).deleteSubOrganization({});
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.subOrganizationUuid).toBe(m.id);
  });

  it('a key shared with the parent keeps working in the parent after the sub-organization is deleted', async () => {
    const shared = newP256Key();
    await ts.sdk.createApiKeys({ userId: ts.rootUserId, apiKeys: [{ apiKeyName: uniqueName('shared'), publicKey: shared.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    const m = await makeSubOrg({ key: shared });
    await sdkClient(ts.url, shared, m.id).deleteSubOrganization({ deleteWithoutExport: true });
    expect((await sdkClient(ts.url, shared, ts.orgId).getWhoami() as any).organizationId).toBe(ts.orgId);
  });
});
