// Policies written with addresses in any letter case, as users copy them from explorers: each is
// either enforced as the user meant or refused when stored (400 naming the field), never stored
// dead. The clients are the real @turnkey/viem and @turnkey/sdk-server; the transactions are
// viem's, and a signature that was allowed is checked by recovering its signer with viem.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { getAddress, parseTransaction, recoverTransactionAddress, serializeTransaction, type TransactionSerializable } from 'viem';
import { createAccount, TurnkeyConsensusNeededError } from '@turnkey/viem';
import { startTestServer, newP256Key, submitBody, sdkClient, uniqueName, allActivities, type TestServer, type RawKey } from '../server/harness.js';
import { checkError, expectFieldViolation, SUBMIT } from '../server/checks.js';

let ts: TestServer;
let bot: { id: string; key: RawKey; sdk: ReturnType<typeof sdkClient> };
let from: `0x${string}`;

// An address whose EIP-55 form mixes cases (the example), in its three spellings.
const CHECKSUMMED = '0x6F72eDB2429820c2A0606a9FC3cA364f5E9b2375';
const LOWER = CHECKSUMMED.toLowerCase();
const UPPER = `0x${CHECKSUMMED.slice(2).toUpperCase()}`;
const OTHER = getAddress('0x' + 'ab'.repeat(20));

const tx = (to: string, nonce: number): TransactionSerializable => ({
  type: 'eip1559', chainId: 11155111, nonce, to: to as `0x${string}`, value: 1000n, gas: 21000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n,
});

async function policyCount(): Promise<number> {
  return ((await ts.sdk.getPolicies({})) as any).policies.length;
}

beforeAll(async () => {
  ts = await startTestServer();
  const key = newP256Key();
  const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('bot'), apiKeys: [{ apiKeyName: 'bot', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  bot = { id: u.userIds[0], key, sdk: sdkClient(ts.url, key, ts.orgId) };
  const w: any = await ts.sdk.createWallet({ walletName: uniqueName('hot'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] } as any);
  from = w.addresses[0];
  expect(from).toBe(getAddress(from)); // kmas returns wallet accounts in EIP-55 form
});
afterAll(async () => { await ts?.stop(); });

describe('an address in a policy condition, in each letter case', () => {
  it('a checksummed or upper-case eth.tx.to is refused by create_policy, create_policies and update_policy (400 naming the field; nothing stored)', async () => {
    const activities = (await allActivities(ts)).length;
    const policies = await policyCount();
    for (const addr of [CHECKSUMMED, UPPER]) {
      for (const effect of ['EFFECT_DENY', 'EFFECT_ALLOW']) {
        const one = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, { policyName: uniqueName('p'), effect, condition: `eth.tx.to == '${addr}'`, consensus: '', notes: '' }));
        checkError(one, 400, `create_policy ${effect} ${addr}`);
        expectFieldViolation(one, 'condition');
        expect(one.json.message + JSON.stringify(one.json.details)).toContain(LOWER);
      }
      const many = await ts.raw(SUBMIT('create_policies'), submitBody('ACTIVITY_TYPE_CREATE_POLICIES', ts.orgId, { policies: [
        { policyName: uniqueName('ok'), effect: 'EFFECT_ALLOW', condition: "activity.action == 'SIGN'", consensus: '', notes: '' },
        { policyName: uniqueName('dead'), effect: 'EFFECT_DENY', condition: `eth.tx.to in ['${OTHER.toLowerCase()}', '${addr}']`, consensus: '', notes: '' },
      ] }));
      checkError(many, 400, 'create_policies');
      expectFieldViolation(many, 'policies[1].condition');
    }
    const p: any = await ts.sdk.createPolicy({ policyName: uniqueName('fine'), effect: 'EFFECT_DENY', condition: `eth.tx.to == '${OTHER.toLowerCase()}'`, consensus: '', notes: '' });
    const upd = await ts.raw(SUBMIT('update_policy'), submitBody('ACTIVITY_TYPE_UPDATE_POLICY_V2', ts.orgId, { policyId: p.policyId, policyCondition: `eth.tx.to == '${CHECKSUMMED}'` }));
    checkError(upd, 400, 'update_policy');
    expectFieldViolation(upd, 'policyCondition');
    const kept: any = await ts.sdk.getPolicy({ policyId: p.policyId });
    expect(kept.policy.condition).toBe(`eth.tx.to == '${OTHER.toLowerCase()}'`);
    await ts.sdk.deletePolicy({ policyId: p.policyId });
    expect(await policyCount()).toBe(policies);
    // the refusals stored no activity; the create/update/delete of the fine policy stored three
    expect((await allActivities(ts)).length).toBe(activities + 2);
  });

  it('a lower-case EFFECT_DENY fires for a transaction to that address, however viem spells it (@turnkey/viem)', async () => {
    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('bot signs'), effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${bot.id}')`, condition: "activity.resource == 'PRIVATE_KEY' && activity.action == 'SIGN'", notes: '' });
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('never to'), effect: 'EFFECT_DENY', consensus: '', condition: `eth.tx.to == '${LOWER}'`, notes: '' });
    const account = await createAccount({ client: bot.sdk as any, organizationId: ts.orgId, signWith: from });
    for (const spelling of [CHECKSUMMED, LOWER]) {
      const before = (await allActivities(ts)).length;
      const err: any = await account.signTransaction(tx(spelling, 0)).then(() => undefined, (e: unknown) => e);
      expect(err, `signing to ${spelling} must be denied`).toBeDefined();
      expect(String(err.message)).toContain('Turnkey error 7: policy engine denied request explicitly (Details: [])');
      expect((await allActivities(ts)).length).toBe(before);
    }
    // to any other address the allow applies
    const signed = await account.signTransaction(tx(OTHER, 1));
    expect(await recoverTransactionAddress({ serializedTransaction: signed as any })).toBe(from);
    expect(parseTransaction(signed).to).toBe(OTHER.toLowerCase());
    await ts.sdk.deletePolicies({ policyIds: [allow.policyId, deny.policyId] } as any);
  });

  it('a lower-case EFFECT_ALLOW lets a bot sign to that address only (@turnkey/sdk-server signTransaction)', async () => {
    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('pay one'), effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${bot.id}')`, condition: `eth.tx.to == '${LOWER}'`, notes: '' });
    const sign = (to: string) => bot.sdk.signTransaction({ signWith: from, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction: serializeTransaction(tx(to, 2)).slice(2) } as any);
    const ok: any = await sign(CHECKSUMMED);
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(await recoverTransactionAddress({ serializedTransaction: `0x${ok.signedTransaction}` as any })).toBe(from);
    const waits: any = await sign(OTHER);
    expect(waits.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    // @turnkey/viem sees the same as a consensus-needed error
    const account = await createAccount({ client: bot.sdk as any, organizationId: ts.orgId, signWith: from });
    const err = await account.signTransaction(tx(OTHER, 3)).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(TurnkeyConsensusNeededError);
    await ts.sdk.deletePolicy({ policyId: allow.policyId });
  });

  it('wallet_account.address is compared as kmas returns it: the EIP-55 form is enforced, the lower-case one refused', async () => {
    const dead = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, { policyName: uniqueName('p'), effect: 'EFFECT_DENY', condition: `wallet_account.address == '${from.toLowerCase()}'`, consensus: '', notes: '' }));
    checkError(dead, 400, 'wallet_account.address in lower case');
    expectFieldViolation(dead, 'condition');
    expect(JSON.stringify(dead.json)).toContain(from);
    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('bot signs'), effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${bot.id}')`, condition: "activity.resource == 'PRIVATE_KEY' && activity.action == 'SIGN'", notes: '' });
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('freeze'), effect: 'EFFECT_DENY', consensus: '', condition: `wallet_account.address == '${from}'`, notes: '' });
    const account = await createAccount({ client: bot.sdk as any, organizationId: ts.orgId, signWith: from });
    const err: any = await account.signMessage({ message: 'hello' }).then(() => undefined, (e: unknown) => e);
    expect(String(err?.message)).toContain('Turnkey error 7: policy engine denied request explicitly');
    await ts.sdk.deletePolicies({ policyIds: [allow.policyId, deny.policyId] } as any);
  });
});

describe('a literal of another type than its field', () => {
  // guards: `eth.tx.value > '1000'` errs on every request, so such an EFFECT_DENY was stored and never fired
  it('a DENY comparing eth.tx.value with a string is refused (400 naming the field, nothing stored); written with an int it fires (@turnkey/viem)', async () => {
    const activities = (await allActivities(ts)).length;
    const policies = await policyCount();
    const bad = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, { policyName: uniqueName('cap'), effect: 'EFFECT_DENY', condition: "eth.tx.value > '999'", consensus: '', notes: '' }));
    checkError(bad, 400, 'create_policy with a string amount');
    expectFieldViolation(bad, 'condition');
    expect(bad.json.message + JSON.stringify(bad.json.details)).toContain('write 999');
    const consensus = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, { policyName: uniqueName('roots'), effect: 'EFFECT_ALLOW', condition: '', consensus: "approvers.any(user, user.is_root == 'true')", notes: '' }));
    checkError(consensus, 400, 'create_policy with a string bool');
    expectFieldViolation(consensus, 'consensus');
    expect(await policyCount()).toBe(policies);
    expect((await allActivities(ts)).length).toBe(activities);

    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('bot signs'), effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${bot.id}')`, condition: "activity.resource == 'PRIVATE_KEY' && activity.action == 'SIGN'", notes: '' });
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('cap'), effect: 'EFFECT_DENY', consensus: '', condition: 'eth.tx.value > 999', notes: '' });
    const account = await createAccount({ client: bot.sdk as any, organizationId: ts.orgId, signWith: from });
    const err: any = await account.signTransaction(tx(OTHER, 4)).then(() => undefined, (e: unknown) => e); // value 1000
    expect(err, 'a transfer above the cap must be denied').toBeDefined();
    expect(String(err.message)).toContain('policy engine denied request explicitly');
    const signed = await account.signTransaction({ ...tx(OTHER, 5), value: 999n });
    expect(await recoverTransactionAddress({ serializedTransaction: signed as any })).toBe(from);
    await ts.sdk.deletePolicies({ policyIds: [allow.policyId, deny.policyId] } as any);
  });
});
