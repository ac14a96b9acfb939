// Policies and consensus with the real clients (@turnkey/sdk-server, @turnkey/http): policy CRUD,
// activities that wait for approvals (ACTIVITY_STATUS_CONSENSUS_NEEDED), approve_activity /
// reject_activity, conditions on the key and the Ethereum transaction, explicit deny, a root
// quorum of two. Signatures made after an approval verify with @noble/curves.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { serializeTransaction, recoverTransactionAddress, parseEther, verifyMessage, verifyTypedData } from 'viem';
import { recoverAuthorizationAddress } from 'viem/utils';
import { createAccount, TurnkeyConsensusNeededError } from '@turnkey/viem';
import { generateP256KeyPair } from '@turnkey/crypto';
import { TurnkeyActivityError, createActivityPoller } from '@turnkey/http';
import { startTestServer, newP256Key, submitBody, sdkClient, httpClient, uniqueName, allActivities, type TestServer, type RawKey } from '../server/harness.js';
import { checkAwaitsConsensus, checkError, expectFieldViolation, SUBMIT } from '../server/checks.js';

let ts: TestServer;
interface Member { id: string; key: RawKey; sdk: ReturnType<typeof sdkClient> }
let carol: Member;
let dave: Member;
let erin: Member;
let tagId: string;
let keyA: { id: string; address: string; publicKey: string };
let keyB: { id: string; address: string };

async function createUser(name: string, tags: string[] = []): Promise<Member> {
  const key = newP256Key();
  const r: any = await ts.sdk.createUsers({ users: [{ userName: name, apiKeys: [{ apiKeyName: name, publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: tags }] } as any);
  return { id: r.userIds[0], key, sdk: sdkClient(ts.url, key, ts.orgId) };
}

async function ethKey(name: string) {
  const r: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName(name), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
  const pk = r.privateKeys[0];
  const got: any = await ts.sdk.getPrivateKey({ privateKeyId: pk.privateKeyId });
  return { id: pk.privateKeyId as string, address: pk.addresses[0].address as string, publicKey: got.privateKey.publicKey as string };
}

const digest = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex');
const signParams = (signWith: string, payload = digest()) => ({ signWith, payload, encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });

async function policyIds(): Promise<string[]> {
  const r: any = await ts.sdk.getPolicies({});
  return r.policies.map((p: any) => p.policyId);
}

beforeAll(async () => {
  ts = await startTestServer();
  const t: any = await ts.sdk.createUserTag({ userTagName: uniqueName('signers'), userIds: [] });
  tagId = t.userTagId;
  carol = await createUser(uniqueName('carol'), [tagId]);
  dave = await createUser(uniqueName('dave'), [tagId]);
  erin = await createUser(uniqueName('erin'));
  keyA = await ethKey('a');
  keyB = await ethKey('b');
});
afterAll(async () => { await ts?.stop(); });

describe('policy records', () => {
  it('create_policy, get_policy, list_policies, update_policy, delete_policy with the sdk-server client', async () => {
    const c: any = await ts.sdk.createPolicy({ policyName: 'p1', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${erin.id}')`, condition: "activity.resource == 'WALLET'", notes: 'n' });
    expect(c.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(c.policyId).toMatch(/^[0-9a-f-]{36}$/);
    const g: any = await ts.sdk.getPolicy({ policyId: c.policyId });
    expect(g.policy).toMatchObject({ policyId: c.policyId, policyName: 'p1', effect: 'EFFECT_ALLOW', notes: 'n', condition: "activity.resource == 'WALLET'" });
    await ts.sdk.updatePolicy({ policyId: c.policyId, policyName: 'p1b', policyEffect: 'EFFECT_DENY' } as any);
    const g2: any = await ts.sdk.getPolicy({ policyId: c.policyId });
    expect(g2.policy).toMatchObject({ policyName: 'p1b', effect: 'EFFECT_DENY', notes: 'n', consensus: `approvers.any(user, user.id == '${erin.id}')` });
    const many: any = await ts.sdk.createPolicies({ policies: [
      { policyName: 'p2', effect: 'EFFECT_ALLOW', condition: '', consensus: '', notes: '' },
      { policyName: 'p3', effect: 'EFFECT_DENY', condition: "activity.action == 'EXPORT'", consensus: `approvers.any(user, user.id == '${erin.id}')`, notes: '' },
    ] } as any);
    expect(many.policyIds).toHaveLength(2);
    expect(await policyIds()).toEqual(expect.arrayContaining([c.policyId, ...many.policyIds]));
    await ts.sdk.deletePolicy({ policyId: c.policyId });
    await ts.sdk.deletePolicies({ policyIds: many.policyIds } as any);
    expect(await policyIds()).toEqual([]);
  });

  it('a policy that does not parse, or uses a keyword its field does not have, is a 400 naming the field and stores nothing', async () => {
    const before = (await allActivities(ts)).length;
    const bad: [Record<string, unknown>, string][] = [
      [{ condition: "activity.type == 'x" }, 'condition'],
      [{ condition: 'approvers.count() > 1' }, 'condition'],
      [{ consensus: "activity.type == 'x'" }, 'consensus'],
      [{ consensus: 'approvers.any(user, user.id ==)' }, 'consensus'],
      [{ effect: 'EFFECT_MAYBE' }, 'effect'],
    ];
    for (const [over, field] of bad) {
      const r = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, { policyName: 'bad', effect: 'EFFECT_ALLOW', notes: '', ...over }));
      checkError(r, 400, field);
      expectFieldViolation(r, field);
    }
    const u = await ts.raw(SUBMIT('update_policy'), submitBody('ACTIVITY_TYPE_UPDATE_POLICY_V2', ts.orgId, { policyId: 'nope', policyCondition: '((' }));
    checkError(u, 400, 'update_policy');
    expect((await allActivities(ts)).length).toBe(before);
    expect(await policyIds()).toEqual([]);
  });
});

describe('consensus', () => {
  it('a non-root user\'s signature waits for approval; the root user approves it and it is signed', async () => {
    const r: any = await carol.sdk.signRawPayload(signParams(keyA.id) as any);
    // sdk-server returns a non-terminal activity as it stands after its polls.
    expect(r.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    expect(r.activity.result).toEqual({});
    expect(r.activity.votes).toHaveLength(1);
    expect(r.activity.votes[0]).toMatchObject({ userId: carol.id, selection: 'VOTE_SELECTION_APPROVED', publicKey: carol.key.publicKey });
    const payload = r.activity.intent.signRawPayloadIntentV2.payload;

    const a: any = await ts.sdk.approveActivity({ fingerprint: r.activity.fingerprint });
    expect(a.activity.id).toBe(r.activity.id);
    expect(a.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(a.activity.votes.map((v: any) => v.userId)).toEqual([carol.id, ts.rootUserId]);
    const sig = a.signRawPayloadResult;
    expect(secp256k1.verify(hexToBytes(sig.r + sig.s), hexToBytes(payload), hexToBytes(keyA.publicKey), { prehash: false })).toBe(true);
    const got: any = await ts.sdk.getActivity({ activityId: r.activity.id });
    expect(got.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(got.activity.result.signRawPayloadResult).toEqual(sig);

    // settled: a second vote finds nothing awaiting consensus
    const again = await ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint: r.activity.fingerprint }), { key: dave.key });
    checkError(again, 404, 'approve a settled activity');
  });

  it('@turnkey/http\'s createActivityPoller throws TurnkeyActivityError for an activity awaiting consensus', async () => {
    const client = httpClient(ts.url, carol.key);
    const poll = createActivityPoller({ client, requestFn: client.createWallet });
    const err = await poll({ type: 'ACTIVITY_TYPE_CREATE_WALLET', timestampMs: String(Date.now()), organizationId: ts.orgId, parameters: { walletName: uniqueName('w'), accounts: [] } } as any)
      .then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(TurnkeyActivityError);
    expect((err as TurnkeyActivityError).activityStatus).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
  });

  it('a @turnkey/viem account of a non-root user throws TurnkeyConsensusNeededError; once approved, the signature verifies with viem', async () => {
    const account = await createAccount({ client: carol.sdk as any, organizationId: ts.orgId, signWith: keyA.address });
    const message = `pay 1 to ${erin.id}`;
    const err: any = await account.signMessage({ message }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(TurnkeyConsensusNeededError);
    expect(err.activityStatus).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const pending: any = await ts.sdk.getActivity({ activityId: err.activityId });
    const approved: any = await ts.sdk.approveActivity({ fingerprint: pending.activity.fingerprint });
    expect(approved.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const { r, s: sv, v } = approved.signRawPayloadResult;
    const signature = `0x${r}${sv}${(27 + Number(v)).toString(16)}` as `0x${string}`;
    expect(await verifyMessage({ address: keyA.address as `0x${string}`, message, signature })).toBe(true);
  });

  it('an activity whose requesting key was deleted since is not run by a later approval (FAILED)', async () => {
    const frank = await createUser(uniqueName('frank'));
    const r = await ts.raw(SUBMIT('create_user_tag'), submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', ts.orgId, { userTagName: uniqueName('late'), userIds: [] }), { key: frank.key });
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const keys: any = await ts.sdk.getApiKeys({ userId: frank.id } as any);
    await ts.sdk.deleteApiKeys({ userId: frank.id, apiKeyIds: keys.apiKeys.map((k: any) => k.apiKeyId) } as any);
    const a: any = await ts.sdk.approveActivity({ fingerprint: r.json.activity.fingerprint });
    expect(a.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(a.activity.failure.message).toMatch(/deleted since/);
    const tags: any = await ts.sdk.listUserTags({});
    expect(tags.userTags.map((t: any) => t.userTagName)).not.toContain(r.json.activity.intent.createUserTagIntent.userTagName);
  });

  it('a policy lets a user sign with one key at once; another key still waits', async () => {
    const p: any = await ts.sdk.createPolicy({ policyName: 'carol signs with A', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: `activity.action == 'SIGN' && private_key.id == '${keyA.id}'`, notes: '' });
    const ok: any = await carol.sdk.signRawPayload(signParams(keyA.address) as any);
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const ev: any = await ts.sdk.getPolicyEvaluations({ activityId: ok.activity.id } as any);
    expect(ev.policyEvaluations).toHaveLength(1);
    expect(ev.policyEvaluations[0]).toMatchObject({ activityId: ok.activity.id, organizationId: ts.orgId, voteId: '' });
    expect(ev.policyEvaluations[0].policyEvaluations).toEqual([{ policyId: p.policyId, outcome: 'OUTCOME_ALLOW' }]);
    const waiting: any = await carol.sdk.signRawPayload(signParams(keyB.id) as any);
    expect(waiting.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const other: any = await dave.sdk.signRawPayload(signParams(keyA.id) as any);
    expect(other.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('eth.tx conditions (from, to, value, chain_id): a transaction to the allowed address is signed at once, one elsewhere waits', async () => {
    const allowed = '0x000000000000000000000000000000000000dead';
    const p: any = await ts.sdk.createPolicy({ policyName: 'to dead only', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: `eth.tx.from == '${keyA.address.toLowerCase()}' && eth.tx.to == '${allowed}' && eth.tx.value <= ${parseEther('1')} && eth.tx.chain_id == 1 && eth.tx.type == 'TYPE_2' && eth.tx.gas_price == 1000000000`, notes: '' });
    const tx = (to: `0x${string}`, value: bigint) => serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 0, to, value, gas: 21000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n });
    const ok: any = await carol.sdk.signTransaction({ signWith: keyA.address, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction: tx(allowed, parseEther('0.5')) } as any);
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect((await recoverTransactionAddress({ serializedTransaction: `0x${ok.signedTransaction}` as any })).toLowerCase()).toBe(keyA.address.toLowerCase());
    const tooMuch: any = await carol.sdk.signTransaction({ signWith: keyA.address, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction: tx(allowed, parseEther('2')) } as any);
    expect(tooMuch.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const elsewhere: any = await carol.sdk.signTransaction({ signWith: keyA.address, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction: tx('0x000000000000000000000000000000000000beef', 1n) } as any);
    expect(elsewhere.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    // a legacy transaction is TYPE LEGACY, not TYPE_2
    const legacy = serializeTransaction({ chainId: 1, nonce: 0, to: allowed, value: 1n, gas: 21000n, gasPrice: 10n ** 9n });
    const old: any = await carol.sdk.signTransaction({ signWith: keyA.address, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction: legacy } as any);
    expect(old.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    // sign_raw_payload has no eth.tx: the policy does not apply to it
    const raw: any = await carol.sdk.signRawPayload(signParams(keyA.id) as any);
    expect(raw.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('time windows: a policy outside its window is skipped (OUTCOME_TIME_INACTIVE); moved into it, it allows', async () => {
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('carol in 2019'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: "activity.action == 'SIGN'",
      time: "time.now < Timestamp('2020-01-01T00:00:00Z')",
    } as any);
    const g: any = await ts.sdk.getPolicy({ policyId: p.policyId });
    expect(g.policy.time).toBe("time.now < Timestamp('2020-01-01T00:00:00Z')");
    const waiting: any = await carol.sdk.signRawPayload(signParams(keyA.id) as any);
    expect(waiting.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const ev: any = await ts.sdk.getPolicyEvaluations({ activityId: waiting.activity.id } as any);
    expect(ev.policyEvaluations[0].policyEvaluations).toContainEqual({ policyId: p.policyId, outcome: 'OUTCOME_TIME_INACTIVE' });
    // this week's window, every day of it: open now
    await ts.sdk.updatePolicy({ policyId: p.policyId, time: "time.now >= Timestamp('2020-01-01T00:00:00Z') && CronSpan('0 0 * * *', '1d', 'UTC')" } as any);
    const ok: any = await carol.sdk.signRawPayload(signParams(keyA.id) as any);
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    // bad time expressions are refused where they are stored
    for (const [time, hint] of [["CronSpan('*/5 * * * *', '1h', 'UTC')", /minute/], ["time.now < Timestamp('2026-01-01T00:00:00+01:00')", /UTC/], ['activity.type == 1', /time may use only/]] as const) {
      const r = await ts.raw(SUBMIT('update_policy'), submitBody('ACTIVITY_TYPE_UPDATE_POLICY_V2', ts.orgId, { policyId: p.policyId, time }));
      checkError(r, 400, time);
      expectFieldViolation(r, 'time');
      expect(r.json.message).toMatch(hint);
    }
    const inCondition = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId,
      { policyName: uniqueName('x'), effect: 'EFFECT_ALLOW', notes: '', condition: "time.now < Timestamp('2030-01-01T00:00:00Z')" }));
    expectFieldViolation(inCondition, 'condition');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('activity.kind / activity.params and eth.eip_712: a policy lets a user sign small EIP-2612 permits for one token (viem verifies); a large one waits', async () => {
    const token = '0x6B175474E89094C44Da98b954EedeAC495271d0F';
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('small permits'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${carol.id}')`,
      condition: `activity.kind == 'SIGN_RAW_PAYLOAD' && activity.params.encoding == 'PAYLOAD_ENCODING_EIP712' && eth.eip_712.primary_type == 'Permit' && eth.eip_712.domain.verifying_contract == '${token.toLowerCase()}' && eth.eip_712.domain.chain_id == 1 && eth.eip_712.message['value'] <= 1000 && eth.eip_712.message['spender'] == '0x000000000000000000000000000000000000dead'`,
    });
    const account = await createAccount({ client: carol.sdk as any, organizationId: ts.orgId, signWith: keyA.address });
    const permit = (value: bigint) => ({
      domain: { name: 'Dai Stablecoin', version: '1', chainId: 1, verifyingContract: token as `0x${string}` },
      // with EIP712Domain listed: @turnkey/viem sends viem's serializeTypedData, which drops a domain without it
      types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }], Permit: [{ name: 'owner', type: 'address' }, { name: 'spender', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'nonce', type: 'uint256' }, { name: 'deadline', type: 'uint256' }] },
      primaryType: 'Permit' as const,
      message: { owner: keyA.address as `0x${string}`, spender: '0x000000000000000000000000000000000000dEaD' as `0x${string}`, value, nonce: 0n, deadline: 2_000_000_000n },
    });
    const small = permit(1000n);
    const signature = await account.signTypedData(small as any);
    expect(await verifyTypedData({ address: keyA.address as `0x${string}`, ...small, signature } as any)).toBe(true);
    const big: any = await account.signTypedData(permit(1001n) as any).then(() => undefined, (e: unknown) => e);
    expect(big).toBeInstanceOf(TurnkeyConsensusNeededError);
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('eth.eip_7702_authorization: a delegation to one contract is signed at once, another waits', async () => {
    const delegate = '0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B';
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('one delegate'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${carol.id}')`,
      condition: `eth.eip_7702_authorization.address == '${delegate.toLowerCase()}' && eth.eip_7702_authorization.chain_id == 1`,
    });
    const auth = (address: string) => ({ signWith: keyA.address, payload: JSON.stringify({ address, chainId: 1, nonce: 0 }), encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const ok: any = await carol.sdk.signRawPayload(auth(delegate) as any);
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const { r, s: sv, v } = ok;
    const recovered = await recoverAuthorizationAddress({ authorization: { address: delegate as `0x${string}`, chainId: 1, nonce: 0 }, signature: { r: `0x${r}`, s: `0x${sv}`, yParity: Number(v) } as any });
    expect(recovered.toLowerCase()).toBe(keyA.address.toLowerCase());
    const other = await ts.raw(SUBMIT('sign_raw_payload'), submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ts.orgId, auth('0x1111111111111111111111111111111111111111')), { key: carol.key });
    expect(other.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('credentials: a policy that needs an approval made with one particular API key', async () => {
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('dave key'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `credentials.any(c, c.user_id == '${dave.id}' && c.public_key == '${dave.key.publicKey}' && c.type == 'CREDENTIAL_TYPE_API_KEY_P256') && credentials[0].user_id == '${carol.id}'`,
      condition: "activity.kind == 'CREATE_PRIVATE_KEY_TAG'",
    });
    const r = await ts.raw(SUBMIT('create_private_key_tag'), submitBody('ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG', ts.orgId, { privateKeyTagName: uniqueName('hot'), privateKeyIds: [] }), { key: carol.key });
    checkAwaitsConsensus(r, 'carol alone');
    const e: any = await erin.sdk.approveActivity({ fingerprint: r.json.activity.fingerprint });
    expect(e.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const d: any = await dave.sdk.approveActivity({ fingerprint: r.json.activity.fingerprint });
    expect(d.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('wallet / wallets: a user may export one wallet and delete scratch wallets; others wait', async () => {
    const mk = async (name: string) => ((await ts.sdk.createWallet({ walletName: name, accounts: [] } as any)) as any).walletId as string;
    const shared = await mk(uniqueName('shared-export'));
    const other = await mk(uniqueName('vault'));
    const tmp1 = await mk(uniqueName('tmp-a'));
    const tmp2 = await mk(uniqueName('tmp-b'));
    const exportP: any = await ts.sdk.createPolicy({ policyName: uniqueName('export one'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: `activity.kind == 'EXPORT_WALLET' && wallet.id == '${shared}' && !wallet.imported` });
    const deleteP: any = await ts.sdk.createPolicy({ policyName: uniqueName('delete scratch'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: "activity.kind == 'DELETE_WALLETS' && wallets.all(w, w.label.startsWith('tmp-'))" });
    const target = generateP256KeyPair().publicKeyUncompressed;
    const ex = (walletId: string) => ts.raw(SUBMIT('export_wallet'), submitBody('ACTIVITY_TYPE_EXPORT_WALLET', ts.orgId, { walletId, targetPublicKey: target }), { key: carol.key });
    expect((await ex(shared)).json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    checkAwaitsConsensus(await ex(other), 'another wallet');
    const del = (walletIds: string[]) => ts.raw(SUBMIT('delete_wallets'), submitBody('ACTIVITY_TYPE_DELETE_WALLETS', ts.orgId, { walletIds, deleteWithoutExport: true }), { key: carol.key });
    checkAwaitsConsensus(await del([tmp1, other]), 'a non-scratch wallet among them');
    expect((await del([tmp1, tmp2])).json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await ts.sdk.deletePolicies({ policyIds: [exportP.policyId, deleteP.policyId] } as any);
  });

  it('two users of a tag must approve: the second approval creates the wallet', async () => {
    const p: any = await ts.sdk.createPolicy({ policyName: 'two signers create wallets', effect: 'EFFECT_ALLOW', consensus: `approvers.filter(user, user.tags.contains('${tagId}')).count() >= 2`, condition: "activity.resource == 'WALLET' && activity.action == 'CREATE'", notes: '' });
    const name = uniqueName('shared');
    const w: any = await carol.sdk.createWallet({ walletName: name, accounts: [] } as any);
    expect(w.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    // erin is not in the tag: her approval is recorded and does not settle it
    const e: any = await erin.sdk.approveActivity({ fingerprint: w.activity.fingerprint });
    expect(e.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const dup = await ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint: w.activity.fingerprint }), { key: erin.key });
    checkError(dup, 409, 'second vote');
    const d: any = await dave.sdk.approveActivity({ fingerprint: w.activity.fingerprint });
    expect(d.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(d.createWalletResult.walletId).toBeTruthy();
    // one evaluation per decision: at submit (carol), erin's vote, dave's vote
    const ev: any = await ts.sdk.getPolicyEvaluations({ activityId: w.activity.id } as any);
    expect(ev.policyEvaluations.map((x: any) => x.policyEvaluations[0].outcome)).toEqual(['OUTCOME_REQUIRES_CONSENSUS', 'OUTCOME_REQUIRES_CONSENSUS', 'OUTCOME_ALLOW']);
    expect(ev.policyEvaluations.map((x: any) => x.voteId)).toEqual(d.activity.votes.map((v: any) => v.id));
    const list: any = await ts.sdk.getWallets({});
    expect(list.wallets.map((x: any) => x.walletName)).toContain(name);
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('a rejection by the root user settles the activity as REJECTED and changes nothing', async () => {
    const name = uniqueName('never');
    const w: any = await carol.sdk.createWallet({ walletName: name, accounts: [] } as any);
    expect(w.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const r: any = await ts.sdk.rejectActivity({ fingerprint: w.activity.fingerprint });
    expect(r.activity.status).toBe('ACTIVITY_STATUS_REJECTED');
    expect(r.activity.votes.map((v: any) => v.selection)).toEqual(['VOTE_SELECTION_APPROVED', 'VOTE_SELECTION_REJECTED']);
    const late = await ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint: w.activity.fingerprint }), { key: dave.key });
    checkError(late, 404, 'approve a rejected activity');
    const list: any = await ts.sdk.getWallets({});
    expect(list.wallets.map((x: any) => x.walletName)).not.toContain(name);
  });

  it('an unknown or malformed fingerprint is refused and stores nothing', async () => {
    const before = (await allActivities(ts)).length;
    const unknown = await ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', ts.orgId, { fingerprint: `sha256:${'0'.repeat(64)}` }));
    checkError(unknown, 404, 'unknown fingerprint');
    const bad = await ts.raw(SUBMIT('reject_activity'), submitBody('ACTIVITY_TYPE_REJECT_ACTIVITY', ts.orgId, { fingerprint: 'abc' }));
    checkError(bad, 400, 'malformed fingerprint');
    expectFieldViolation(bad, 'fingerprint');
    expect((await allActivities(ts)).length).toBe(before);
  });
});

describe('explicit deny and the root quorum', () => {
  it('an EFFECT_DENY policy refuses with 403 and stores nothing; it does not bind the root quorum', async () => {
    const allow: any = await ts.sdk.createPolicy({ policyName: 'carol tags', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: "activity.type == 'ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG'", notes: '' });
    const deny: any = await ts.sdk.createPolicy({ policyName: 'no deletes', effect: 'EFFECT_DENY', consensus: '', condition: "activity.action == 'DELETE'", notes: '' });
    const made: any = await carol.sdk.createPrivateKeyTag({ privateKeyTagName: uniqueName('t'), privateKeyIds: [] });
    expect(made.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const before = (await allActivities(ts)).length;
    const r = await ts.raw(SUBMIT('delete_private_key_tags'), submitBody('ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS', ts.orgId, { privateKeyTagIds: [made.privateKeyTagId] }), { key: carol.key });
    checkError(r, 403, 'denied by policy');
    // Turnkey's reply, byte for byte; the policy's id is in get_policy_evaluations and the log line
    expect(r.json).toEqual({ code: 7, message: 'policy engine denied request explicitly', details: [] });
    expect((await allActivities(ts)).length).toBe(before);
    const root: any = await ts.sdk.deletePrivateKeyTags({ privateKeyTagIds: [made.privateKeyTagId] });
    expect(root.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await ts.sdk.deletePolicies({ policyIds: [allow.policyId, deny.policyId] } as any);
  });

  it('a policy cannot open a root-quorum-only activity (update_root_quorum) to a non-root user', async () => {
    const p: any = await ts.sdk.createPolicy({ policyName: 'carol runs the quorum', effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${carol.id}')`, condition: '', notes: '' });
    const r = await ts.raw(SUBMIT('update_root_quorum'), submitBody('ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', ts.orgId, { threshold: 1, userIds: [carol.id] }), { key: carol.key });
    expect(r.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    // the same policy does let carol create a user tag at once
    const t: any = await carol.sdk.createUserTag({ userTagName: uniqueName('by-policy'), userIds: [] });
    expect(t.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    // policy names are unique in an organization
    const dup = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, { policyName: 'carol runs the quorum', effect: 'EFFECT_DENY', notes: '' }));
    expect(dup.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(dup.json.activity.failure.message).toMatch(/unique/);
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('with a root quorum of two, a root user\'s activity waits for the second root user', async () => {
    // a quorum of two with only one root user able to sign in would lock the organization out
    const keyless: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('keyless'), apiKeys: [], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const lock = await ts.raw(SUBMIT('update_root_quorum'), submitBody('ACTIVITY_TYPE_UPDATE_ROOT_QUORUM', ts.orgId, { threshold: 2, userIds: [ts.rootUserId, keyless.userIds[0]] }));
    expect(lock.json.activity.status).toBe('ACTIVITY_STATUS_FAILED');
    expect(lock.json.activity.failure.message).toMatch(/fewer than the root quorum's threshold of 2/);
    const bob = await createUser(uniqueName('bob'));
    const q: any = await ts.sdk.updateRootQuorum({ threshold: 2, userIds: [ts.rootUserId, bob.id] } as any);
    expect(q.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const t: any = await ts.sdk.createUserTag({ userTagName: uniqueName('q2'), userIds: [] });
    expect(t.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const ok: any = await bob.sdk.approveActivity({ fingerprint: t.activity.fingerprint });
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(ok.createUserTagResult.userTagId).toBeTruthy();
    // back to one root user, which itself needs both
    const back: any = await bob.sdk.updateRootQuorum({ threshold: 1, userIds: [ts.rootUserId] } as any);
    expect(back.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const done: any = await ts.sdk.approveActivity({ fingerprint: back.activity.fingerprint });
    expect(done.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const cfg: any = await ts.sdk.getOrganizationConfigs({ organizationId: ts.orgId });
    expect(cfg.configs.quorum).toEqual({ threshold: 1, userIds: [ts.rootUserId] });
  });

  it('a sub-organization created with rootQuorumThreshold 2 runs an activity once both root users approved', async () => {
    const [k1, k2] = [newP256Key(), newP256Key()];
    const rootUser = (name: string, key: RawKey) => ({ userName: name, apiKeys: [{ apiKeyName: name, publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] });
    const sub: any = await ts.sdk.createSubOrganization({ subOrganizationName: uniqueName('two-keys'), rootQuorumThreshold: 2, rootUsers: [rootUser('one', k1), rootUser('two', k2)] } as any);
    expect(sub.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const subId = sub.subOrganizationId;
    const name = uniqueName('vault');
    const w = await ts.raw(SUBMIT('create_wallet'), submitBody('ACTIVITY_TYPE_CREATE_WALLET', subId, { walletName: name, accounts: [] }), { key: k1 });
    expect(w.json.activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const ok = await ts.raw(SUBMIT('approve_activity'), submitBody('ACTIVITY_TYPE_APPROVE_ACTIVITY', subId, { fingerprint: w.json.activity.fingerprint }), { key: k2 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const wallets: any = await sdkClient(ts.url, k2, subId).getWallets({});
    expect(wallets.wallets.map((x: any) => x.walletName)).toEqual([name]);
  });
});
