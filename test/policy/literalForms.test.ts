// Comparisons that letter case makes impossible (src/policy/literalForms.ts), each checked against
// what the policy engine really binds: the literal the checker lets through matches the bound
// value, the one it refuses does not. Addresses come from viem (getAddress: EIP-55), @solana/web3.js
// keys and @scure/btc-signer, independent of the checker.
import { describe, it, expect } from 'vitest';
import { getAddress, serializeTransaction } from 'viem';
import { Keypair } from '@solana/web3.js';
import { parse, evaluateBool } from '../../src/policy/language.js';
import { literalFormProblems } from '../../src/policy/literalForms.js';
import { conditionScope } from '../../src/policy/scope.js';

const CHECKSUMMED = '0x6F72eDB2429820c2A0606a9FC3cA364f5E9b2375';
const LOWER = CHECKSUMMED.toLowerCase();
const UPPER = '0x' + CHECKSUMMED.slice(2).toUpperCase();

const problems = (src: string) => literalFormProblems(parse(src));

describe('policy literals that letter case makes impossible', () => {
  it('the issue\'s example: eth.tx.to == a checksummed address is refused and names the lower-case fix', () => {
    expect(getAddress(LOWER)).toBe(CHECKSUMMED);
    const p = problems(`eth.tx.to == '${CHECKSUMMED}'`);
    expect(p).toHaveLength(1);
    expect(p[0]).toContain('eth.tx.to');
    expect(p[0]).toContain(`'${LOWER}'`);
  });

  it.each([
    [`eth.tx.to == '${UPPER}'`],
    [`eth.tx.to != '${CHECKSUMMED}'`],
    [`'${CHECKSUMMED}' == eth.tx.to`],
    [`eth.tx.to in ['${LOWER}', '${CHECKSUMMED}']`],
    [`['${CHECKSUMMED}'].contains(eth.tx.from)`],
    [`eth.tx.data[0..10] == '0xA9059CBB'`],
    [`eth.tx.data.startsWith('0xA9059cbb')`],
    [`eth.tx.contract_call_args['to'] == '${LOWER}'`],
    [`eth.tx.contract_call_args['to'] == '${UPPER}'`],
    [`eth.tx.contract_call_args['data'] == '0xABCD'`],
    [`eth.eip_712.message['spender'] == '${CHECKSUMMED}'`],
    [`eth.eip_712.domain.verifying_contract == '${CHECKSUMMED}'`],
    [`eth.eip_7702_authorization.address == '${CHECKSUMMED}'`],
    [`activity.type == 'X' && (eth.tx.to == '${LOWER}' || eth.tx.to == '${CHECKSUMMED}')`],
    [`wallet_account.address == '${LOWER}'`],
    [`solana.tx.transfers.all(t, t.to == '0OIl${'1'.repeat(40)}')`],
    [`solana.tx.account_keys.contains('not-a-key')`],
    [`solana.tx.instructions.any(i, i.instruction_data_hex == '02000000AB')`],
    [`bitcoin.tx.outputs.all(o, o.address == 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4')`],
    [`bitcoin.tx.inputs[0].tx_id == 'ABCDEF'`],
    [`tron.tx.contract[0].data == 'A9059CBB'`],
    [`eth.tx.to == wallet_account.address`],
    [`eth.tx.contract_call_args['to'] != eth.tx.from`],
  ])('refuses %s', (src) => {
    expect(problems(src).length).toBeGreaterThan(0);
  });

  it.each([
    [`eth.tx.to == '${LOWER}'`],
    [`eth.tx.to in ['${LOWER}']`],
    [`eth.tx.data[0..10] == '0xa9059cbb'`],
    [`eth.tx.contract_call_args['memo'] == 'Hello World'`], // free text in a call argument
    [`eth.tx.contract_call_args['dst'] == '${CHECKSUMMED}'`], // Turnkey's own example writes the EIP-55 form
    [`eth.tx.contract_call_args['data'] == '0xabcd'`],
    [`eth.eip_712.domain.name == 'USD Coin'`],
    [`eth.eip_712.primary_type == 'Permit'`],
    [`wallet_account.address == '${CHECKSUMMED}'`],
    [`solana.tx.transfers.all(t, t.to == '${Keypair.generate().publicKey.toBase58()}')`],
    [`solana.tx.spl_transfers.all(t, t.token_mint == '')`],
    [`bitcoin.tx.outputs.all(o, o.address == 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4')`],
    [`bitcoin.tx.outputs.all(o, o.address == '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2')`], // base58: case is the address
    [`activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2'`],
    [`private_key.tags.contains('ABC')`],
    [`eth.tx.to != eth.tx.from`],
  ])('accepts %s', (src) => {
    expect(problems(src)).toEqual([]);
  });

  it('what it accepts matches the bound transaction, and what it refuses would never have matched', async () => {
    const tx = serializeTransaction({ type: 'eip1559', chainId: 1, nonce: 0, to: CHECKSUMMED, value: 1n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n, gas: 21000n, data: '0xA9059CBB' });
    const scope = await conditionScope({ contractInterfaces: { byAddress: () => undefined } } as never, 'org', 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2', { ethereumTransaction: tx.slice(2) });
    for (const lit of [LOWER, CHECKSUMMED, UPPER]) {
      const src = `eth.tx.to == '${lit}'`;
      expect(evaluateBool(parse(src), scope)).toBe(problems(src).length === 0);
    }
    for (const lit of ['0xa9059cbb', '0xA9059CBB']) {
      const src = `eth.tx.data[0..10] == '${lit}'`;
      expect(evaluateBool(parse(src), scope)).toBe(problems(src).length === 0);
    }
  });
});
