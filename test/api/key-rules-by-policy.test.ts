// The rules of the key operations (export before delete, no account twice in a wallet, one level of
// sub-organizations) hold for a user whom a policy admits, not only for root users: a non-root
// user's authorize stops at the permission rule, so what it checks after that must hold in execute.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptWalletToBundle } from '@turnkey/crypto';
import { createMember, newP256Key, sdkClient, startTestServer, submitBody, uniqueName, type Member, type TestServer } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

let ts: TestServer;
let mia: Member;
beforeAll(async () => {
  ts = await startTestServer();
  mia = await createMember(ts, uniqueName('mia'));
  // mia may do anything with wallets and private keys, and create sub-organizations
  for (const [resource, name] of [['WALLET', 'wallets'], ['PRIVATE_KEY', 'keys'], ['ORGANIZATION', 'organizations']]) {
    await ts.sdk.createPolicy({ policyName: uniqueName(`mia ${name}`), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(u, u.id == '${mia.id}')`, condition: `activity.resource == '${resource}'` } as any);
  }
});
afterAll(async () => { await ts?.stop(); });

const eth = (path: string) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });
const asMia = (op: string, type: string, parameters: object, organizationId = ts.orgId, key = mia.key) => ts.raw(SUBMIT(op), submitBody(type, organizationId, parameters), { key });
const completed = (r: { status: number; json: any }) => r.status === 200 && r.json?.activity?.status === 'ACTIVITY_STATUS_COMPLETED';
const accountsOf = async (walletId: string) => (await ts.sdk.getWalletAccounts({ walletId, paginationOptions: { limit: '100' } } as any)).accounts as any[];

describe('export before delete', () => {
  // guards: delete_wallets refuses a never-exported wallet without deleteWithoutExport, whoever asks
  it('delete_wallets by a user a policy admits keeps a never-exported wallet when deleteWithoutExport is not set', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('never exported'), accounts: [eth("m/44'/60'/0'/0/0")] } as any);
    const root = await ts.raw(SUBMIT('delete_wallets'), submitBody('ACTIVITY_TYPE_DELETE_WALLETS', ts.orgId, { walletIds: [w.walletId] }));
    expect(completed(root), `a root user: ${root.text}`).toBe(false);
    const r = await asMia('delete_wallets', 'ACTIVITY_TYPE_DELETE_WALLETS', { walletIds: [w.walletId] });
    const left = (await ts.sdk.getWallets({} as any)).wallets.map((x: any) => x.walletId);
    expect(left, `the never-exported wallet was deleted without deleteWithoutExport: ${r.text.slice(0, 200)}`).toContain(w.walletId);
    expect(completed(r)).toBe(false);
  });

  // guards: delete_private_keys refuses a never-exported key without deleteWithoutExport, whoever asks
  it('delete_private_keys by a user a policy admits keeps a never-exported key when deleteWithoutExport is not set', async () => {
    const made: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('never exported'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] } as any);
    const id = made.privateKeys[0].privateKeyId;
    const r = await asMia('delete_private_keys', 'ACTIVITY_TYPE_DELETE_PRIVATE_KEYS', { privateKeyIds: [id] });
    const left = (await ts.sdk.getPrivateKeys({} as any)).privateKeys.map((x: any) => x.privateKeyId);
    expect(left, `the never-exported private key was deleted without deleteWithoutExport: ${r.text.slice(0, 200)}`).toContain(id);
    expect(completed(r)).toBe(false);
    const ok = await asMia('delete_private_keys', 'ACTIVITY_TYPE_DELETE_PRIVATE_KEYS', { privateKeyIds: [id], deleteWithoutExport: true });
    expect(completed(ok), ok.text).toBe(true);
  });
});

describe('no account twice in a wallet', () => {
  // guards: create_wallet_accounts refuses an account the wallet already has, whoever asks
  it('create_wallet_accounts by a user a policy admits does not add an account the wallet already has', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('w'), accounts: [eth("m/44'/60'/0'/0/0")] } as any);
    const r = await asMia('create_wallet_accounts', 'ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS', { walletId: w.walletId, accounts: [eth("m/44'/60'/0'/0/0")] });
    expect((await accountsOf(w.walletId)).length, `the account was stored twice: ${r.text.slice(0, 200)}`).toBe(1);
    expect(completed(r)).toBe(false);
  });

  // guards: create_wallet and import_wallet refuse one account named twice, whoever asks
  it('create_wallet and import_wallet by a user a policy admits refuse one account named twice', async () => {
    const twice = [eth("m/44'/60'/0'/0/0"), eth("m/44'/60'/0'/0/0")];
    const before = (await ts.sdk.getWallets({} as any)).wallets.length;
    const c = await asMia('create_wallet', 'ACTIVITY_TYPE_CREATE_WALLET', { walletName: uniqueName('twice'), accounts: twice });
    const init = await asMia('init_import_wallet', 'ACTIVITY_TYPE_INIT_IMPORT_WALLET', { userId: mia.id });
    expect(completed(init), init.text).toBe(true);
    const encryptedBundle = await encryptWalletToBundle({
      mnemonic: 'test test test test test test test test test test test junk', importBundle: init.json.activity.result.initImportWalletResult.importBundle,
      userId: mia.id, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: ts.server.bootstrap.signerPublicKey!,
    });
    const i = await asMia('import_wallet', 'ACTIVITY_TYPE_IMPORT_WALLET', { userId: mia.id, walletName: uniqueName('twice'), encryptedBundle, accounts: twice });
    expect((await ts.sdk.getWallets({} as any)).wallets.length, `a wallet with one account twice was stored: ${c.text.slice(0, 150)} / ${i.text.slice(0, 150)}`).toBe(before);
    expect(completed(c)).toBe(false);
    expect(completed(i)).toBe(false);
  });
});

describe('one level of sub-organizations', () => {
  // guards: a sub-organization never creates sub-organizations, even for a user its policies admit
  it('create_sub_organization by a user of a sub-organization whose policy admits it is refused and stores nothing', async () => {
    const rootKey = newP256Key();
    const so: any = await ts.sdk.createSubOrganization({ subOrganizationName: uniqueName('sub'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'root', apiKeys: [{ apiKeyName: 'k', publicKey: rootKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }] } as any);
    const subId = so.subOrganizationId;
    const subRoot = sdkClient(ts.url, rootKey as any, subId);
    const memberKey = newP256Key();
    const u: any = await subRoot.createUsers({ users: [{ userName: 'member', apiKeys: [{ apiKeyName: 'm', publicKey: memberKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    await subRoot.createPolicy({ policyName: 'member makes organizations', effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(u, u.id == '${u.userIds[0]}')`, condition: "activity.resource == 'ORGANIZATION'" } as any);
    const r = await asMia('create_sub_organization', 'ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7', { subOrganizationName: uniqueName('grandchild'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'x', apiKeys: [], authenticators: [], oauthProviders: [] }] }, subId, memberKey);
    const grandchildren = await ts.raw('/public/v1/query/list_suborgs', JSON.stringify({ organizationId: subId }), { key: rootKey });
    expect(completed(r), `a sub-organization created a sub-organization: ${r.text.slice(0, 300)}`).toBe(false);
    expect(grandchildren.json?.organizationIds ?? [], grandchildren.text).toEqual([]);
  });
});
