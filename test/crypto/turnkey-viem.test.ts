// The real @turnkey/viem account code, with our payload/transaction signing behind an in-process
// client object of the shape the sdk-server client has; viem verifies every result.
import { describe, expect, it } from 'vitest';
import { createAccount } from '@turnkey/viem';
import { recoverTransactionAddress, verifyMessage, verifyTypedData, type Hex, type TypedDataDefinition } from 'viem';
import { recoverAuthorizationAddress } from 'viem/utils';
import { generatePrivateKey, getPublicKey } from '../../src/crypto/curves.js';
import { ethereumAddress } from '../../src/crypto/addresses.js';
import { signRawPayload } from '../../src/crypto/payload.js';
import { signEthereumTransaction } from '../../src/crypto/ethereum.js';
import { EIP712_MAIL_TYPES } from './helpers.js';

const sk = generatePrivateKey('secp256k1');
const address = ethereumAddress(getPublicKey('secp256k1', sk)) as Hex;
const seen: { encoding: string; hashFunction: string; payload: string }[] = [];

const client = {
  async signRawPayload(p: { signWith: string; payload: string; encoding: string; hashFunction: string }) {
    seen.push({ encoding: p.encoding, hashFunction: p.hashFunction, payload: p.payload });
    const { r, s, v } = signRawPayload('secp256k1', sk, p);
    return { activity: { id: 'a1', status: 'ACTIVITY_STATUS_COMPLETED' }, r, s, v };
  },
  async signTransaction(p: { signWith: string; unsignedTransaction: string; type: string }) {
    expect(p.type).toBe('TRANSACTION_TYPE_ETHEREUM');
    expect(p.unsignedTransaction.startsWith('0x')).toBe(false);
    return { activity: { id: 'a2', status: 'ACTIVITY_STATUS_COMPLETED' }, signedTransaction: signEthereumTransaction(p.unsignedTransaction, sk) };
  },
};

describe('@turnkey/viem account over src/crypto', async () => {
  const account = await createAccount({ client: client as any, organizationId: 'org', signWith: address });
  const to = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as const;

  it('signMessage → viem verifyMessage', async () => {
    for (const message of ['hello', { raw: '0xdeadbeef' as Hex }]) {
      const signature = await account.signMessage({ message });
      expect(await verifyMessage({ address, message, signature })).toBe(true);
    }
    expect(seen.at(-1)).toMatchObject({ encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
  });

  it('signTypedData → viem verifyTypedData', async () => {
    const typedData = {
      domain: { name: 'Ether Mail', version: '1', chainId: 1, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' as const },
      types: { ...EIP712_MAIL_TYPES, Mail: [...EIP712_MAIL_TYPES.Mail, { name: 'amount', type: 'uint256' }] as const },
      primaryType: 'Mail' as const,
      message: {
        from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' as const },
        to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' as const },
        contents: 'Hello, Bob!',
        amount: 10n ** 24n,
      },
    };
    // (typed loosely: viem's types cannot express a domain listed in `types` as EIP712Domain)
    const definition = typedData as unknown as TypedDataDefinition;
    const signature = await account.signTypedData(definition);
    expect(seen.at(-1)).toMatchObject({ encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(await verifyTypedData({ address, ...definition, signature })).toBe(true);
  });

  it('signTransaction (EIP-1559, EIP-2930, legacy) → sender recovered by viem', async () => {
    const txs = [
      { type: 'eip1559' as const, chainId: 1, nonce: 5, maxFeePerGas: 30_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n, gas: 21000n, to, value: 10n ** 16n },
      { type: 'eip2930' as const, chainId: 10, nonce: 1, gasPrice: 1_000_000n, gas: 30000n, to, value: 1n, accessList: [] },
      { type: 'legacy' as const, chainId: 56, nonce: 2, gasPrice: 5_000_000_000n, gas: 21000n, to, value: 7n },
    ];
    for (const tx of txs) {
      const signed = await account.signTransaction(tx as any);
      expect(await recoverTransactionAddress({ serializedTransaction: signed as any })).toBe(address);
    }
  });

  it('signAuthorization (EIP-7702) → recovered by viem', async () => {
    const auth = await (account as any).signAuthorization({ contractAddress: to, chainId: 1, nonce: 3 });
    expect(seen.at(-1)).toMatchObject({ encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(await recoverAuthorizationAddress({ authorization: auth })).toBe(address);
  });
});
