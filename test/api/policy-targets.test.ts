// Activities that touch several targets (payloads, secrets): the policies decide each target.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { verifyTypedData } from 'viem';
import { encryptSecretToBundle, generateP256KeyPair } from '@turnkey/crypto';
import { newP256Key, submitBody, sdkClient, uniqueName, type TestServer, policySubjects, createMember, type Member, type RawKey, allowSigning } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

const SUITE = 'TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1';
let ts: TestServer;
let carol: Member;
let keyA: { id: string; address: string };

beforeAll(async () => { ({ ts, carol, keyA } = await policySubjects()); });
afterAll(async () => { await ts?.stop(); });

/** carol may sign with any key (an ALLOW policy); returns a cleanup. */
const carolSigns = (): Promise<() => Promise<void>> => allowSigning(ts, carol.id);

describe('sign_raw_payloads', () => {
  const token = '0x6B175474E89094C44Da98b954EedeAC495271d0F';
  const typed = {
    domain: { name: 'Dai Stablecoin', version: '1', chainId: 1, verifyingContract: token },
    types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }], Permit: [{ name: 'owner', type: 'address' }, { name: 'spender', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'nonce', type: 'uint256' }, { name: 'deadline', type: 'uint256' }] },
    primaryType: 'Permit',
    message: { owner: '0x0000000000000000000000000000000000000001', spender: '0x000000000000000000000000000000000000dEaD', value: '1000000', nonce: '0', deadline: '2000000000' },
  };

  // guards: each EIP-712 payload of sign_raw_payloads is bound to eth.eip_712, so a DENY on it applies
  it('an EFFECT_DENY on eth.eip_712 also stops sign_raw_payloads with PAYLOAD_ENCODING_EIP712', async () => {
    const cleanup = await carolSigns();
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('no dai permits'), effect: 'EFFECT_DENY', notes: '', consensus: '',
      condition: `eth.eip_712.domain.verifying_contract == '${token.toLowerCase()}'` });
    const params = { signWith: keyA.address, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' };
    const one = await ts.raw(SUBMIT('sign_raw_payload'), submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ts.orgId, { ...params, payload: JSON.stringify(typed) }), { key: carol.key });
    expect(one.status, one.text).toBe(403); // the singular form is denied
    const many = await ts.raw(SUBMIT('sign_raw_payloads'), submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOADS', ts.orgId, { ...params, payloads: [JSON.stringify(typed)] }), { key: carol.key });
    const sig = many.json?.activity?.result?.signRawPayloadsResult?.signatures?.[0];
    const signedIt = sig ? await verifyTypedData({ address: keyA.address as `0x${string}`, ...(typed as any), signature: `0x${sig.r}${sig.s}${(27 + Number(sig.v)).toString(16)}` }) : false;
    await ts.sdk.deletePolicy({ policyId: deny.policyId });
    await cleanup();
    expect(signedIt, 'sign_raw_payloads signed the Dai permit the DENY policy forbids').toBe(false);
    expect(many.status, many.text).toBe(403);
  });

});

describe('secret.static_properties', () => {
  // guards: export_secrets binds `secret` to every exported secret, so a DENY on one stops an export of several
  it('a DENY on a secret\'s properties also stops an export that names it together with another secret', async () => {
    const signer = ts.server.bootstrap.signerPublicKey!;
    const t: any = await ts.http.initImportSecrets({ type: 'ACTIVITY_TYPE_INIT_IMPORT_SECRETS', organizationId: ts.orgId, timestampMs: String(Date.now()), parameters: { encryptionSuite: SUITE, numSecrets: 2 } } as any);
    const msgs = t.activity.result.initImportSecretsResult.enclaveTargetMessages;
    const seal = (plaintext: string, ingressTargetBundle: string) => encryptSecretToBundle({ plaintext, ingressTargetBundle, organizationId: ts.orgId, dangerouslyOverrideSignerPublicKey: signer });
    const a = await seal('prod database password', msgs[0]);
    const b = await seal('a test value', msgs[1]);
    const r: any = await ts.sdk.importSecrets({ secrets: [
      { secretPayload: a.secretPayload, targetPublicKey: a.targetPublicKey, encryptionSuite: SUITE, staticProperties: [{ key: 'tier', value: 'prod' }] },
      { secretPayload: b.secretPayload, targetPublicKey: b.targetPublicKey, encryptionSuite: SUITE, staticProperties: [{ key: 'tier', value: 'test' }] },
    ] } as any);
    const [prodId, testId] = r.secretIds;
    const key: RawKey = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('agent'), apiKeys: [{ apiKeyName: 'p', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    await ts.sdk.createPolicy({ policyName: uniqueName('agent exports'), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(u, u.id == '${u.userIds[0]}')`, condition: "activity.type == 'ACTIVITY_TYPE_EXPORT_SECRETS'" });
    await ts.sdk.createPolicy({ policyName: uniqueName('never prod'), effect: 'EFFECT_DENY', notes: '', consensus: '', condition: "secret.static_properties['tier'] == 'prod'" });
    const kp = generateP256KeyPair();
    const ex = (ids: string[]) => ts.raw(SUBMIT('export_secrets'), submitBody('ACTIVITY_TYPE_EXPORT_SECRETS', ts.orgId, { secrets: ids.map((secretId) => ({ secretId, targetPublicKey: kp.publicKeyUncompressed, encryptionSuite: SUITE })) }), { key });
    const alone = await ex([prodId]);
    expect(alone.status, alone.text).toBe(403); // alone: denied
    const together = await ex([testId, prodId]);
    expect(together.status, `the prod secret was exported next to another one: ${together.json?.activity?.status}`).toBe(403);
  });
});

describe('deletions of keys and wallet accounts', () => {
  // guards: delete_private_keys binds `private_key` to every key it names (as delete_wallets binds `wallet`),
  // so a DENY on a key stops a user whom a policy lets delete private keys from deleting that one
  it('an EFFECT_DENY on private_key.id stops delete_private_keys naming that key, alone or with another', async () => {
    const dave = await createMember(ts, uniqueName('dave'));
    const made: any = await ts.sdk.createPrivateKeys({ privateKeys: ['treasury', 'scratch'].map((n) => ({ privateKeyName: uniqueName(n), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] })) } as any);
    const [treasury, scratch] = made.privateKeys.map((k: any) => k.privateKeyId as string);
    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('dave deletes keys'), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(u, u.id == '${dave.id}')`, condition: "activity.resource == 'PRIVATE_KEY' && activity.action == 'DELETE'" });
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('keep the treasury'), effect: 'EFFECT_DENY', notes: '', consensus: '', condition: `private_key.id == '${treasury}'` });
    const del = (ids: string[]) => ts.raw(SUBMIT('delete_private_keys'), submitBody('ACTIVITY_TYPE_DELETE_PRIVATE_KEYS', ts.orgId, { privateKeyIds: ids, deleteWithoutExport: true }), { key: dave.key });
    const together = await del([scratch, treasury]);
    const alone = await del([treasury]);
    const left = (await ts.sdk.getPrivateKeys({} as any)).privateKeys.map((k: any) => k.privateKeyId);
    const other = await del([scratch]);
    await ts.sdk.deletePolicy({ policyId: deny.policyId });
    await ts.sdk.deletePolicy({ policyId: allow.policyId });
    expect(left, 'the private key the DENY policy protects was deleted').toContain(treasury);
    expect(together.status, together.text).toBe(403);
    expect(alone.status, alone.text).toBe(403);
    expect(other.status, other.text).toBe(200); // the ALLOW still applies to the other key
  });

  // guards: delete_wallet_accounts binds `wallet_account` and its `wallet` to every account it names
  it('an EFFECT_DENY on wallet.id stops delete_wallet_accounts of an account of that wallet', async () => {
    const erin = await createMember(ts, uniqueName('erin'));
    const eth = (path: string) => ({ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' });
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('vault'), accounts: [eth("m/44'/60'/0'/0/0"), eth("m/44'/60'/0'/0/1")] } as any);
    const accounts = (await ts.sdk.getWalletAccounts({ walletId: w.walletId } as any)).accounts as any[];
    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('erin deletes accounts'), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(u, u.id == '${erin.id}')`, condition: "activity.resource == 'WALLET' && activity.action == 'DELETE'" });
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('keep the vault'), effect: 'EFFECT_DENY', notes: '', consensus: '', condition: `wallet.id == '${w.walletId}'` });
    const denyPath: any = await ts.sdk.createPolicy({ policyName: uniqueName('keep account 1'), effect: 'EFFECT_DENY', notes: '', consensus: '', condition: "wallet_account.path.endsWith('/0/1')" });
    const del = (ids: string[]) => ts.raw(SUBMIT('delete_wallet_accounts'), submitBody('ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS', ts.orgId, { walletAccountIds: ids, deleteWithoutExport: true }), { key: erin.key });
    const r = await del([accounts[0].walletAccountId]);
    await ts.sdk.deletePolicy({ policyId: deny.policyId });
    const byPath = await del([accounts.find((a) => a.path === "m/44'/60'/0'/0/1").walletAccountId]);
    const left = ((await ts.sdk.getWalletAccounts({ walletId: w.walletId } as any)).accounts as any[]).length;
    await ts.sdk.deletePolicy({ policyId: denyPath.policyId });
    await ts.sdk.deletePolicy({ policyId: allow.policyId });
    expect(left, 'accounts of the wallet the DENY policies protect were deleted').toBe(2);
    expect(r.status, r.text).toBe(403);
    expect(byPath.status, byPath.text).toBe(403);
  });
});
