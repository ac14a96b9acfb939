import { describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  parseTransaction,
  recoverMessageAddress,
  recoverTransactionAddress,
  serializeTransaction,
  type Hex,
  type TransactionSerializable,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { personalMessageDigest, typedDataDigest } from '../../src/chains/ethereum.js';
import { signEthereumTransaction } from '../../src/crypto/ethereum.js';
import { signRawPayload } from '../../src/crypto/payload.js';
import { ethereumAddress } from '../../src/crypto/addresses.js';
import { getPublicKey } from '../../src/crypto/curves.js';
import { CryptoError } from '../../src/encoding/errors.js';
import { hex } from './helpers.js';

const sk = secp256k1.utils.randomSecretKey();
const account = privateKeyToAccount(`0x${hex(sk)}`);
const address = ethereumAddress(getPublicKey('secp256k1', sk));
const to = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as const;

describe('EIP-191 personal messages', () => {
  it('digest + raw signing (as @turnkey/viem does it) recovers the signer in viem', async () => {
    expect(address).toBe(account.address);
    for (const message of ['hello', '', 'ünïcödé ✓', 'x'.repeat(1000)]) {
      const digest = personalMessageDigest(message);
      const sig = signRawPayload('secp256k1', sk, { payload: '0x' + hex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
      const signature = `0x${sig.r}${sig.s}${sig.v === '00' ? '1b' : '1c'}` as Hex;
      expect(await recoverMessageAddress({ message, signature })).toBe(address);
      expect(signature).toBe(await account.signMessage({ message }));
    }
    const raw = new Uint8Array([0, 1, 2, 255]);
    const d = personalMessageDigest(raw);
    const sig = signRawPayload('secp256k1', sk, { payload: hex(d), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(await recoverMessageAddress({ message: { raw }, signature: `0x${sig.r}${sig.s}${sig.v === '00' ? '1b' : '1c'}` })).toBe(address);
  });
});

describe('transaction signing', () => {
  const txs: [string, TransactionSerializable][] = [
    ['legacy pre-EIP-155', { type: 'legacy', nonce: 0, gasPrice: 20_000_000_000n, gas: 21000n, to, value: 10n ** 18n }],
    ['legacy EIP-155 chain 1', { type: 'legacy', chainId: 1, nonce: 9, gasPrice: 20_000_000_000n, gas: 21000n, to, value: 10n ** 18n }],
    ['legacy EIP-155 big chain id', { type: 'legacy', chainId: 11155111, nonce: 1, gasPrice: 1n, gas: 50000n, to, value: 0n, data: '0xdeadbeef' }],
    [
      'EIP-2930',
      {
        type: 'eip2930',
        chainId: 1,
        nonce: 3,
        gasPrice: 5n,
        gas: 60000n,
        to,
        value: 1n,
        accessList: [{ address: to, storageKeys: ['0x0000000000000000000000000000000000000000000000000000000000000001'] }],
      },
    ],
    ['EIP-1559', { type: 'eip1559', chainId: 8453, nonce: 42, maxFeePerGas: 3_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n, gas: 21000n, to, value: 123n }],
    ['EIP-1559 contract creation', { type: 'eip1559', chainId: 1, nonce: 0, maxFeePerGas: 3n, maxPriorityFeePerGas: 1n, gas: 100000n, value: 0n, data: '0x6080604052' }],
    [
      'EIP-7702',
      {
        type: 'eip7702',
        chainId: 1,
        nonce: 1,
        maxFeePerGas: 3n,
        maxPriorityFeePerGas: 1n,
        gas: 100000n,
        to,
        authorizationList: [
          { address: to, chainId: 1, nonce: 2, r: '0x' + '11'.repeat(32), s: '0x' + '22'.repeat(32), yParity: 1 } as any,
        ],
      },
    ],
  ];
  for (const [name, tx] of txs) {
    it(name, async () => {
      const unsigned = serializeTransaction(tx);
      for (const input of [unsigned.slice(2), unsigned]) {
        const signed = signEthereumTransaction(input, sk);
        expect(signed).toMatch(/^[0-9a-f]+$/);
        const signedHex = `0x${signed}` as Hex;
        expect(await recoverTransactionAddress({ serializedTransaction: signedHex as any })).toBe(address);
        // byte-identical to viem's own local signer (RFC 6979 is deterministic)
        expect(signedHex).toBe(await account.signTransaction(tx as any));
        const p = parseTransaction(signedHex);
        expect(p.type).toBe(tx.type);
        expect(p.nonce ?? 0).toBe(tx.nonce ?? 0);
      }
    });
  }
  it('re-signs an already-signed transaction (signature dropped first)', async () => {
    const tx = txs[4][1];
    const other = privateKeyToAccount(`0x${hex(secp256k1.utils.randomSecretKey())}`);
    const signedByOther = await other.signTransaction(tx as any);
    const signed = signEthereumTransaction(signedByOther, sk);
    expect(await recoverTransactionAddress({ serializedTransaction: `0x${signed}` as any })).toBe(address);
  });
  it('bad input → INVALID_TRANSACTION naming unsignedTransaction', () => {
    for (const bad of ['', '0x', 'zz', '0x02', 'c0', '0xf8', '05c0', 'deadbeef']) {
      try {
        signEthereumTransaction(bad, sk);
        expect.unreachable(bad);
      } catch (e) {
        expect(e, bad).toBeInstanceOf(CryptoError);
        expect((e as CryptoError).code).toBe('INVALID_TRANSACTION');
        expect((e as CryptoError).field).toBe('unsignedTransaction');
      }
    }
  });
  it('bad key → INVALID_PRIVATE_KEY', () => {
    const unsigned = serializeTransaction(txs[4][1]);
    try {
      signEthereumTransaction(unsigned, new Uint8Array(32));
      expect.unreachable();
    } catch (e) {
      expect((e as CryptoError).code).toBe('INVALID_PRIVATE_KEY');
    }
  });
});

describe('typed data digest accepts objects and strings alike', () => {
  it('same digest', () => {
    const td = { types: { A: [{ name: 'x', type: 'uint256' }] }, primaryType: 'A', domain: { name: 'n' }, message: { x: '5' } };
    expect(hex(typedDataDigest(td))).toBe(hex(typedDataDigest(JSON.stringify(td))));
  });
});
