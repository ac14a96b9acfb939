// Comparisons that a literal's type makes impossible (src/policy/literalForms.ts, FIELD_TYPES):
// `eth.tx.value > '1000'` errs on every request, so an EFFECT_DENY written that way never fires.
// The type table is checked against what the views really bind for transactions built by
// independent libraries (viem, @solana/web3.js and @solana/spl-token, TronWeb, bitcoinjs-lib), and
// each refused comparison is shown to fail against those bound values while its fix holds.
import { describe, it, expect, beforeAll } from 'vitest';
import { encodeFunctionData, erc20Abi, serializeTransaction } from 'viem';
import {
  AddressLookupTableAccount, Keypair, PublicKey, SystemProgram, TransactionMessage, VersionedTransaction,
} from '@solana/web3.js';
import { createTransferCheckedInstruction } from '@solana/spl-token';
import { TronWeb, utils as tronUtils } from 'tronweb';
import { Psbt, Transaction as BtcTransaction, address as btcAddress, networks } from 'bitcoinjs-lib';
import { EvalError, evaluateBool, parse, type Value } from '../../src/policy/language.js';
import { FIELD_TYPES, literalFormProblems } from '../../src/policy/literalForms.js';
import { conditionScope, type PolicyTargets } from '../../src/policy/scope.js';
import { credentialValue, userValue } from '../../src/policy/decide.js';

const problems = (src: string): string[] => literalFormProblems(parse(src));

const TO = '0x6f72edb2429820c2a0606a9fc3ca364f5e9b2375';
const FROM = '0x00000000000000000000000000000000000000aa';
const ACCOUNT = '0x' + '11'.repeat(20);

/** A read-only transaction holding one private key, one wallet with one account, and an ERC-20 ABI for TO. */
const store = {
  keys: {
    privateKeys: { get: async () => ({ id: 'pk-1', name: 'hot', imported: false, exported: true, curve: 'CURVE_SECP256K1', addresses: [{ format: 'ADDRESS_FORMAT_ETHEREUM', address: FROM }] }) },
    accounts: { byAddress: async () => ({ address: ACCOUNT, curve: 'CURVE_SECP256K1', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM', walletId: 'w-1' }) },
    wallets: { get: async (_org: string, id: string) => ({ id, name: `wallet ${id}`, imported: true, exported: false }) },
  },
  tags: { tagsOf: async () => ['tag-1'] },
  contractInterfaces: { byAddress: async () => ({ interface: JSON.stringify(erc20Abi) }) },
};
const scopeOf = (type: string, targets: PolicyTargets, intent?: unknown): Promise<Map<string, Value>> =>
  conditionScope(store as never, 'org', type, targets, intent);

function solanaTransaction(): string {
  const payer = Keypair.generate().publicKey;
  const mint = Keypair.generate().publicKey;
  // the mint (read-only) and a transfer's recipient (writable) come from a lookup table
  const tableKeys = [Keypair.generate().publicKey, mint];
  const table = new AddressLookupTableAccount({ key: Keypair.generate().publicKey, state: { deactivationSlot: BigInt('18446744073709551615'), lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, authority: undefined, addresses: tableKeys } });
  const message = new TransactionMessage({
    payerKey: payer, recentBlockhash: Keypair.generate().publicKey.toBase58(),
    instructions: [
      SystemProgram.transfer({ fromPubkey: payer, toPubkey: tableKeys[0]!, lamports: 99 }),
      createTransferCheckedInstruction(Keypair.generate().publicKey, mint, Keypair.generate().publicKey, Keypair.generate().publicKey, 5n, 6, [payer]),
    ],
  }).compileToV0Message([table]);
  return Buffer.from(new VersionedTransaction(message).serialize()).toString('hex');
}

function tronTransaction(): string {
  const hex = (b58: string) => TronWeb.address.toHex(b58);
  const json = {
    visible: false,
    raw_data: {
      contract: [{ parameter: { value: { owner_address: hex('TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL'), to_address: hex('TVDGpn4hCSzJ5nkHPLetk8KQBtwaTppnkr'), amount: 1000 }, type_url: 'type.googleapis.com/protocol.TransferContract' }, type: 'TransferContract' }],
      ref_block_bytes: 'e942', ref_block_hash: '6394747da9fee421', expiration: 1752562632000, timestamp: 1752562572000, fee_limit: 10, data: Buffer.from('memo').toString('hex'),
    },
  };
  return tronUtils.transaction.txPbToRawDataHex(tronUtils.transaction.txJsonToPb(json)).toLowerCase();
}

function bitcoinTransaction(): string {
  const payTo = 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4';
  const script = btcAddress.toOutputScript(payTo, networks.bitcoin);
  const prev = new BtcTransaction();
  prev.addInput(Buffer.alloc(32, 7), 0);
  prev.addOutput(script, 50_000n as never);
  const psbt = new Psbt({ network: networks.bitcoin });
  psbt.addInput({ hash: prev.getId(), index: 0, witnessUtxo: { script, value: 50_000n as never } });
  psbt.addOutput({ address: payTo, value: 40_000n as never });
  return psbt.toHex();
}

/** Every (path, value) the scope binds, lists and map entries written `[]` as `pathOf` writes them. */
function leaves(v: Value | undefined, path: string, out: Map<string, Set<string>>): void {
  if (v === undefined) return;
  if (Array.isArray(v)) { for (const x of v) leaves(x, `${path}[]`, out); return; }
  if (typeof v === 'object' && v !== null && v.constructor === Object) {
    const map = path.endsWith('static_properties') || path.endsWith('contract_call_args') || path.endsWith('.message');
    for (const [k, x] of Object.entries(v)) leaves(x, map ? `${path}[]` : `${path}.${k}`, out);
    return;
  }
  const type = typeof v === 'bigint' ? 'int' : typeof v === 'boolean' ? 'bool' : typeof v === 'string' ? 'string' : 'other';
  if (!out.has(path)) out.set(path, new Set());
  out.get(path)!.add(type);
}

let bound: Map<string, Set<string>>;
let ethScope: Map<string, Value>;

beforeAll(async () => {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [FROM, 5n] });
  const ethTx = serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 3, to: TO, value: 1000n, gas: 21000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n, data }).slice(2);
  ethScope = await scopeOf('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', { privateKeyId: 'pk-1', walletAccountAddress: ACCOUNT, ethereumTransaction: ethTx });
  const typedData = JSON.stringify({
    types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }], Permit: [{ name: 'value', type: 'uint256' }] },
    primaryType: 'Permit', domain: { name: 'USDC', version: '2', chainId: 1, verifyingContract: TO }, message: { value: '5' },
  });
  const scopes = [
    ethScope,
    await scopeOf('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { privateKeyId: 'pk-1', typedData }),
    await scopeOf('ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { privateKeyId: 'pk-1', authorization: JSON.stringify({ address: TO, chainId: 1, nonce: 0 }) }),
    await scopeOf('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', { privateKeyId: 'pk-1', solanaTransaction: solanaTransaction() }),
    await scopeOf('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', { privateKeyId: 'pk-1', tronTransaction: tronTransaction() }),
    await scopeOf('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', { privateKeyId: 'pk-1', bitcoinTransaction: bitcoinTransaction() }),
    await scopeOf('ACTIVITY_TYPE_DELETE_WALLETS', { walletId: 'w-1', walletIds: ['w-1', 'w-2'] }),
    await scopeOf('ACTIVITY_TYPE_EXPORT_SECRETS', { secretProperties: [{ key: 'env', value: 'prod' }] }),
    new Map<string, Value>([
      ['approvers', [userValue({ id: 'u-1', name: 'alice', email: 'a@example.com', isRoot: true } as never, ['tag-1'])]],
      ['credentials', [credentialValue({ id: 'k-1', userId: 'u-1', publicKey: '02ab', credentialType: 'CREDENTIAL_TYPE_API_KEY_P256' } as never),
        credentialValue({ id: 'a-1', userId: 'u-1', publicKey: '04ab', credentialId: 'cred' } as never)]],
    ]),
  ];
  bound = new Map();
  for (const scope of scopes) for (const [name, v] of scope) leaves(v, name, bound);
});

describe('policy literals of a type the field never has', () => {
  it('the type table agrees with what the views bind, and every entry of it is bound by some real transaction', () => {
    for (const keyword of ['eth', 'solana', 'tron', 'bitcoin', 'private_key', 'wallet', 'wallets', 'wallet_account', 'secret']) {
      expect([...bound.keys()].some((p) => p.startsWith(`${keyword}.`) || p.startsWith(`${keyword}[]`)), `${keyword} bound`).toBe(true);
    }
    const wrong: string[] = [];
    for (const [path, type] of FIELD_TYPES) {
      const seen = bound.get(path);
      if (!seen) wrong.push(`${path}: never bound`);
      else if (seen.size !== 1 || !seen.has(type)) wrong.push(`${path}: table says ${type}, bound ${[...seen].join('/')}`);
    }
    expect(wrong).toEqual([]);
    // and the table leaves out only what depends on the request (activity.params, decoded call arguments, EIP-712 messages)
    const missing = [...bound.keys()].filter((p) => !FIELD_TYPES.has(p) && !/^activity\.params\.|contract_call_args|eip_712\.message/.test(p));
    expect(missing).toEqual([]);
  });

  it.each([
    ['eth.tx.value > \'1000\'', 'eth.tx.value > 999'],
    ['eth.tx.value == \'1000\'', 'eth.tx.value == 1000'],
    ['\'1\' == eth.tx.chain_id', '1 == eth.tx.chain_id'],
    ['eth.tx.nonce in [\'3\', \'4\']', 'eth.tx.nonce in [3, 4]'],
    ['eth.tx.to == 1', `eth.tx.to == '${TO}'`],
    ['eth.tx.type == 2', 'eth.tx.type == \'TYPE_2\''],
    ['eth.tx.to > \'0x00\'', `eth.tx.to == '${TO}'`],
    ['private_key.exported == \'true\'', 'private_key.exported == true'],
    ['1 in private_key.tags', '\'tag-1\' in private_key.tags'],
    ['wallet_account.address_format != 1', 'wallet_account.address_format != \'ADDRESS_FORMAT_SOLANA\''],
    ['eth.tx.function_name == true', 'eth.tx.function_name == \'transfer\''],
  ])('refuses %s (it fails on a real transaction) and accepts %s (it holds)', (bad, good) => {
    const refused = problems(bad);
    expect(refused.length, bad).toBeGreaterThan(0);
    expect(refused[0]).toMatch(/is (an int|a string|a bool)/);
    expect(() => evaluateBool(parse(bad), ethScope)).toThrow(EvalError);
    expect(problems(good)).toEqual([]);
    expect(evaluateBool(parse(good), ethScope)).toBe(true);
  });

  it('names the fix in the field\'s type', () => {
    expect(problems("eth.tx.value > '1000'")[0]).toContain('write 1000');
    expect(problems('eth.tx.type == 2')[0]).toContain("write '2'");
    expect(problems("private_key.exported == 'true'")[0]).toContain('write true');
  });

  it('checks consensus expressions and items of a list as well, through lambdas', () => {
    expect(problems("approvers.any(user, user.is_root == 'true')").length).toBe(1);
    expect(problems('approvers.any(user, user.is_root == true)')).toEqual([]);
    expect(problems("solana.tx.transfers.all(t, t.amount < '5')").length).toBe(1);
    expect(problems('solana.tx.transfers.all(t, t.amount < 5)')).toEqual([]);
    expect(problems("bitcoin.tx.outputs.all(o, o.value <= '1')").length).toBe(1);
    expect(problems("tron.tx.contract[0].amount > '0'").length).toBe(1);
  });

  it('leaves alone what it cannot type: request parameters, decoded call arguments, EIP-712 messages, unknown fields', () => {
    for (const src of ["activity.params.otp_length == '6'", "eth.tx.contract_call_args['amount'] > 1", "eth.eip_712.message['value'] == '5'", "eth.tx.unknown == 1"]) {
      expect(problems(src), src).toEqual([]);
    }
  });
});
