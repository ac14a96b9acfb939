// Smart contract interfaces with the real sdk-server client: create / get / list / delete, bad
// input, and an uploaded ABI at work in eth.tx policies (function_name, function_signature,
// contract_call_args, tuples read by position). Calldata is encoded by viem, and the signed
// transactions are checked by viem (sender recovered).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { encodeFunctionData, erc20Abi, parseAbi, recoverTransactionAddress, serializeTransaction, type Hex } from 'viem';
import { startTestServer, newP256Key, submitBody, uniqueName, allActivities, type TestServer, type RawKey } from '../server/harness.js';
import { checkError, expectFieldViolation, QUERY, SUBMIT } from '../server/checks.js';

let ts: TestServer;
let signer: { id: string; key: RawKey };
let key: { id: string; address: string };

const TOKEN = '0x6B175474E89094C44Da98b954EedeAC495271d0F';
const BATCHER = '0x0000000071727De22E5E9d8BAf0edAc6f37da032';
const batchAbi = parseAbi(['function executeBatch((address target, uint256 value, bytes data)[] calls)']);

const txTo = (to: string, data: Hex) => serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 1, to: to as Hex, value: 0n, gas: 90_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n, data });

/** sign_transaction as the non-root signer (raw: sdk-server would poll an activity that waits); the activity. */
async function sign(unsignedTransaction: string): Promise<any> {
  const r = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: key.address, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction }), { key: signer.key });
  expect(r.status, r.text.slice(0, 300)).toBe(200);
  return r.json;
}

beforeAll(async () => {
  ts = await startTestServer();
  const k = newP256Key();
  const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('treasurer'), apiKeys: [{ apiKeyName: 't', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  signer = { id: u.userIds[0], key: k };
  const pk: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('hot'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
  key = { id: pk.privateKeys[0].privateKeyId, address: pk.privateKeys[0].addresses[0].address };
});
afterAll(async () => { await ts?.stop(); });

describe('smart contract interfaces', () => {
  it('create, get, list and delete with the sdk-server client', async () => {
    const c: any = await ts.sdk.createSmartContractInterface({ smartContractAddress: TOKEN, smartContractInterface: JSON.stringify(erc20Abi), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'DAI', notes: 'stablecoin' });
    expect(c.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const id = c.smartContractInterfaceId;
    const g: any = await ts.sdk.getSmartContractInterface({ smartContractInterfaceId: id });
    expect(g.smartContractInterface).toMatchObject({
      organizationId: ts.orgId, smartContractInterfaceId: id, smartContractAddress: TOKEN, type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'DAI', notes: 'stablecoin',
    });
    expect(JSON.parse(g.smartContractInterface.smartContractInterface)).toEqual(JSON.parse(JSON.stringify(erc20Abi)));
    const sol: any = await ts.sdk.createSmartContractInterface({ smartContractAddress: 'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4', smartContractInterface: JSON.stringify({ version: '0.1.0', name: 'jupiter', instructions: [] }), type: 'SMART_CONTRACT_INTERFACE_TYPE_SOLANA', label: 'Jupiter' });
    const l: any = await ts.sdk.getSmartContractInterfaces({});
    expect(l.smartContractInterfaces.map((x: any) => x.smartContractInterfaceId)).toEqual([sol.smartContractInterfaceId, id]);
    const d: any = await ts.sdk.deleteSmartContractInterface({ smartContractInterfaceId: sol.smartContractInterfaceId });
    expect(d.smartContractInterfaceId).toBe(sol.smartContractInterfaceId);
    const gone = await ts.raw(QUERY('get_smart_contract_interface'), JSON.stringify({ organizationId: ts.orgId, smartContractInterfaceId: sol.smartContractInterfaceId }));
    checkError(gone, 404, 'deleted');
  });

  it('bad input names the field and stores nothing; one interface per address', async () => {
    const before = (await allActivities(ts)).length;
    const T = 'ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE';
    const ok = { smartContractAddress: BATCHER, smartContractInterface: JSON.stringify(batchAbi), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'batcher' };
    for (const [params, field] of [
      [{ ...ok, smartContractAddress: '0x1234' }, 'smartContractAddress'],
      [{ ...ok, type: 'SMART_CONTRACT_INTERFACE_TYPE_SOLANA' }, 'smartContractAddress'],
      [{ ...ok, smartContractInterface: '{not json' }, 'smartContractInterface'],
      [{ ...ok, smartContractInterface: '{"abi": []}' }, 'smartContractInterface'],
      [{ ...ok, smartContractInterface: '[{"type":"function","name":"f","inputs":[{"type":"uint7"}]}]' }, 'smartContractInterface'],
      [{ ...ok, smartContractInterface: '[{"type":"event","name":"E","inputs":[]}]' }, 'smartContractInterface'],
      [{ ...ok, type: 'SMART_CONTRACT_INTERFACE_TYPE_EVM' }, 'type'],
      [{ ...ok, label: undefined }, 'label'],
    ] as const) {
      const r = await ts.raw(SUBMIT('create_smart_contract_interface'), submitBody(T, ts.orgId, params));
      checkError(r, 400, JSON.stringify(params).slice(0, 120));
      expectFieldViolation(r, field);
    }
    const dup = await ts.raw(SUBMIT('create_smart_contract_interface'), submitBody(T, ts.orgId, { ...ok, smartContractAddress: TOKEN.toLowerCase() }));
    checkError(dup, 409, 'second interface for the token');
    expect((await allActivities(ts)).length).toBe(before);
  });

  it('an uploaded ABI lets eth.tx policies read the call (argument names as the ABI gives them): ERC-20 transfers below a limit to one recipient are signed at once', async () => {
    const recipient = '0x08d2b0a37F869FF76BACB5Bab3278E26ab7067B7';
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('dai transfers'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${signer.id}')`,
      condition: `eth.tx.to == '${TOKEN.toLowerCase()}' && eth.tx.function_name == 'transfer' && eth.tx.function_signature == '0xa9059cbb' && eth.tx.contract_call_args['recipient'] == '${recipient}' && eth.tx.contract_call_args['amount'] < 1000000000000000000`,
    });
    const transfer = (to: Hex, amount: bigint) => txTo(TOKEN, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }));
    const ok = await sign(transfer(recipient, 10n ** 17n));
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const signed = ok.activity.result.signTransactionResult.signedTransaction;
    expect((await recoverTransactionAddress({ serializedTransaction: `0x${signed}` as any })).toLowerCase()).toBe(key.address.toLowerCase());
    for (const [what, tx] of [
      ['too much', transfer(recipient, 10n ** 18n)],
      ['someone else', transfer('0x000000000000000000000000000000000000dEaD', 1n)],
      ['approve, not transfer', txTo(TOKEN, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [recipient, 1n] }))],
      // the same call to a contract without an uploaded ABI: no function_name, the policy does not apply
      ['another token', txTo('0x1111111111111111111111111111111111111111', encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [recipient, 1n] }))],
    ] as const) {
      const r = await sign(tx);
      expect(r.activity.status, what).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    }
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });

  it('arrays of tuples are lists read by position (Turnkey\'s executeBatch example)', async () => {
    await ts.sdk.createSmartContractInterface({ smartContractAddress: BATCHER, smartContractInterface: JSON.stringify(batchAbi), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: 'batcher' });
    const target = '0x2222222222222222222222222222222222222222';
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('batches'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${signer.id}')`,
      condition: `eth.tx.function_name == 'executeBatch' && eth.tx.contract_call_args['calls'].count() <= 2 && eth.tx.contract_call_args['calls'].all(call, call[0] == '${target}' && call[1] == 0)`,
    });
    const batch = (calls: { target: Hex; value: bigint; data: Hex }[]) => txTo(BATCHER, encodeFunctionData({ abi: batchAbi, functionName: 'executeBatch', args: [calls] }));
    const ok = await sign(batch([{ target, value: 0n, data: '0x' }, { target, value: 0n, data: '0xabcdef' }]));
    expect(ok.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect((await sign(batch([{ target, value: 1n, data: '0x' }]))).activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    expect((await sign(batch([{ target, value: 0n, data: '0x' }, { target, value: 0n, data: '0x' }, { target, value: 0n, data: '0x' }]))).activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });
});
