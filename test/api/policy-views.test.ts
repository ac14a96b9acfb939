// What the policies read of a request: EIP-7702 integers, Tron's protobuf, eth.tx.from, letter case of eth.tx.function_signature.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { serializeTransaction, recoverTransactionAddress, encodeFunctionData, erc20Abi } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { recoverAuthorizationAddress } from 'viem/utils';
import { TronWeb, utils as tronUtils } from 'tronweb';
import { newP256Key, submitBody, sdkClient, uniqueName, type TestServer, policySubjects, type Member, allowSigning } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

const require = createRequire(import.meta.url);
const tronPb = join(dirname(require.resolve('tronweb')), 'protocol/core');
const { Transaction } = require(join(tronPb, 'Tron_pb.cjs'));
const { TransferContract } = require(join(tronPb, 'contract/balance_contract_pb.cjs'));

let ts: TestServer;
let carol: Member;
let keyA: { id: string; address: string };

beforeAll(async () => { ({ ts, carol, keyA } = await policySubjects()); });
afterAll(async () => { await ts?.stop(); });

/** carol may sign with any key (an ALLOW policy); returns a cleanup. */
const carolSigns = (): Promise<() => Promise<void>> => allowSigning(ts, carol.id);

describe('eth.eip_7702_authorization', () => {
  // guards: an EIP-7702 chain id beyond 2^53-1 is signed exactly (or refused 400), never rounded nor a 500
  it('an EIP-7702 authorization whose chain id is beyond 2^53-1 is signed exactly or refused with a 400, never a 500', async () => {
    const cleanup = await carolSigns();
    const denied = 9007199254740992n; // 2^53
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('no chain 2^53'), effect: 'EFFECT_DENY', notes: '', consensus: '',
      condition: `eth.eip_7702_authorization.chain_id == ${denied}` });
    const delegate = '0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B';
    const r = await ts.raw(SUBMIT('sign_raw_payload'), submitBody('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', ts.orgId, {
      signWith: keyA.address, encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NO_OP',
      payload: JSON.stringify({ address: delegate, chainId: String(denied + 1n), nonce: 0 }),
    }), { key: carol.key });
    await ts.sdk.deletePolicy({ policyId: deny.policyId });
    await cleanup();
    expect(r.status, `a chain id beyond 2^53 must be signed or refused (400), not crash: ${r.text}`).not.toBe(500);
    const res = r.json?.activity?.result?.signRawPayloadResult;
    if (res) {
      const recovered = await recoverAuthorizationAddress({ authorization: { address: delegate as `0x${string}`, chainId: denied as any, nonce: 0 }, signature: { r: `0x${res.r}`, s: `0x${res.s}`, yParity: Number(res.v) } as any });
      expect(recovered.toLowerCase(), 'kmas signed an authorization for the chain the DENY policy names').not.toBe(keyA.address.toLowerCase());
    }
  });
});

describe('tron.tx', () => {
  // guards: a Tron transaction repeating a singular protobuf field (Tron reads the last copy) is refused, not read by its first copy
  it('a repeated protobuf field is read as Tron reads it (the last one), so an amount limit holds', async () => {
    const w: any = await ts.sdk.createWallet({ walletName: uniqueName('tron'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/195'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_TRON' }] });
    const account = w.addresses[0];
    const TO = 'TVDGpn4hCSzJ5nkHPLetk8KQBtwaTppnkr';
    const p: any = await ts.sdk.createPolicy({ policyName: uniqueName('small trx'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${carol.id}')`,
      condition: "tron.tx.contract[0].type == 'TransferContract' && tron.tx.contract[0].amount < 10000000" });
    const json = { visible: false, raw_data: {
      contract: [{ parameter: { value: { owner_address: TronWeb.address.toHex(account), to_address: TronWeb.address.toHex(TO), amount: 1 }, type_url: 'type.googleapis.com/protocol.TransferContract' }, type: 'TransferContract' }],
      ref_block_bytes: 'e942', ref_block_hash: '6394747da9fee421', expiration: Date.now() + 60_000, timestamp: Date.now(),
    } };
    const pb = tronUtils.transaction.txJsonToPb(json);
    const raw = pb.getRawData();
    const any = raw.getContractList()[0].getParameter();
    // the TransferContract's bytes, then field 3 (amount) once more: 1000 TRX
    const big = 1_000_000_000n;
    const varint: number[] = [];
    for (let v = big; ; ) { const b = Number(v & 0x7fn); v >>= 7n; if (v === 0n) { varint.push(b); break; } varint.push(b | 0x80); }
    any.setValue(Uint8Array.from([...any.getValue_asU8(), 0x18, ...varint]));
    const rawHex = Buffer.from(raw.serializeBinary()).toString('hex');
    // what Tron's protobuf reads: the last amount
    const decoded = TransferContract.deserializeBinary(Transaction.raw.deserializeBinary(Buffer.from(rawHex, 'hex')).getContractList()[0].getParameter().getValue_asU8());
    expect(decoded.getAmount()).toBe(Number(big));
    const r = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: account, unsignedTransaction: rawHex, type: 'TRANSACTION_TYPE_TRON' }), { key: carol.key });
    await ts.sdk.deletePolicy({ policyId: p.policyId });
    expect(r.json?.activity?.status, 'a 1000 TRX transfer was signed under a "less than 10 TRX" policy').not.toBe('ACTIVITY_STATUS_COMPLETED');
  });
});

describe('eth.tx.from', () => {
  // guards: eth.tx.from is derived from the secp256k1 public key of a key with no Ethereum address stored
  it('is the Ethereum sender of the transaction also when the signing key has no ADDRESS_FORMAT_ETHEREUM address', async () => {
    const r: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('bare'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] } as any);
    const id = r.privateKeys[0].privateKeyId;
    const got: any = await ts.sdk.getPrivateKey({ privateKeyId: id });
    const sender = publicKeyToAddress(`0x${got.privateKey.publicKey.length === 66 ? uncompress(got.privateKey.publicKey) : got.privateKey.publicKey}` as `0x${string}`).toLowerCase();
    const cleanup = await carolSigns();
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('frozen sender'), effect: 'EFFECT_DENY', notes: '', consensus: '', condition: `eth.tx.from == '${sender}'` });
    const unsigned = serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 0, to: '0x000000000000000000000000000000000000dEaD', value: 10n ** 18n, gas: 21000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n });
    const s = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: id, unsignedTransaction: unsigned, type: 'TRANSACTION_TYPE_ETHEREUM' }), { key: carol.key });
    await ts.sdk.deletePolicy({ policyId: deny.policyId });
    await cleanup();
    const signed = s.json?.activity?.result?.signTransactionResult?.signedTransaction;
    if (signed) {
      const from = (await recoverTransactionAddress({ serializedTransaction: `0x${signed}` as any })).toLowerCase();
      expect(from, 'the transaction is sent from the address the DENY names').not.toBe(sender);
    }
    expect(s.status, s.text).toBe(403);
  });
});

import { secp256k1 } from '@noble/curves/secp256k1.js';
function uncompress(hex: string): string {
  return Buffer.from(secp256k1.Point.fromHex(hex).toBytes(false)).toString('hex');
}

describe('literal forms', () => {
  // guards: eth.tx.function_signature is lower-case hex, so an upper-case selector in a DENY is refused when stored (or fires)
  it('eth.tx.function_signature is lower-case hex: a DENY that writes the selector in upper case is refused when stored, or fires', async () => {
    const token = '0x6B175474E89094C44Da98b954EedeAC495271d0F';
    await ts.sdk.createSmartContractInterface({ smartContractAddress: token, smartContractInterface: JSON.stringify(erc20Abi), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: uniqueName('dai'), notes: '' } as any);
    const cleanup = await carolSigns();
    const c = await ts.raw(SUBMIT('create_policy'), submitBody('ACTIVITY_TYPE_CREATE_POLICY_V3', ts.orgId, {
      policyName: uniqueName('no transfers'), effect: 'EFFECT_DENY', notes: '', consensus: '', condition: "eth.tx.function_signature == '0xA9059CBB'" }));
    const stored = c.status === 200 && c.json.activity.status === 'ACTIVITY_STATUS_COMPLETED';
    let signed = false;
    if (stored) {
      const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: ['0x000000000000000000000000000000000000dEaD', 10n ** 24n] });
      const unsigned = serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 0, to: token, value: 0n, data, gas: 100000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n });
      const s = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: keyA.id, unsignedTransaction: unsigned, type: 'TRANSACTION_TYPE_ETHEREUM' }), { key: carol.key });
      signed = s.json?.activity?.status === 'ACTIVITY_STATUS_COMPLETED';
      await ts.sdk.deletePolicy({ policyId: c.json.activity.result.createPolicyResult.policyId });
    }
    await cleanup();
    expect(stored && signed, 'the DENY on the transfer selector was stored and never fired: the ERC-20 transfer was signed').toBe(false);
  });
});
