/**
 * Ethereum's formats: message and typed-data digests, EIP-7702 authorization digests, and
 * unsigned transactions parsed, hashed for signing and serialized with a signature. Parsing, RLP
 * and hashing come from viem. No key is handled here: crypto/ethereum.ts signs.
 */
import {
  hashMessage,
  hashTypedData,
  keccak256,
  parseTransaction,
  serializeTransaction,
  type Hex,
  type TransactionSerializable,
  type TypedDataDefinition,
} from 'viem';
import { hashAuthorization } from 'viem/utils';
import { CryptoError } from '../encoding/errors.js';
import { bytesToHex, hexToBytes } from '../encoding/bytes.js';
import type { RecoverableSignature } from '../encoding/signature.js';

const toHex0x = (b: Uint8Array): Hex => `0x${bytesToHex(b)}`;

/** EIP-191 personal_sign digest: keccak256("\x19Ethereum Signed Message:\n" + len + message). */
export function personalMessageDigest(message: Uint8Array | string): Uint8Array {
  const m = typeof message === 'string' ? message : { raw: toHex0x(message) };
  return hexToBytes(hashMessage(m));
}

/** EIP-712 digest of typed-data JSON `{types, primaryType, domain, message}` (EIP712Domain in types optional). */
export function typedDataDigest(typedData: string | Record<string, unknown>, field = 'payload'): Uint8Array {
  let td: Record<string, unknown>;
  try {
    td = typeof typedData === 'string' ? JSON.parse(typedData) : typedData;
  } catch {
    throw new CryptoError('INVALID_TYPED_DATA', 'typed data is not valid JSON', field);
  }
  if (!td || typeof td !== 'object' || typeof td.types !== 'object' || td.types === null || typeof td.primaryType !== 'string')
    throw new CryptoError('INVALID_TYPED_DATA', 'typed data needs types and primaryType', field);
  const domain = (td.domain ?? {}) as Record<string, unknown>;
  const types = { ...(td.types as Record<string, unknown>) };
  // Without an explicit EIP712Domain type, derive it from the fields present (EIP-712 order),
  // also when values arrive as JSON strings (e.g. chainId "1").
  if (!types.EIP712Domain && domain && typeof domain === 'object') {
    const spec: [string, string][] = [
      ['name', 'string'],
      ['version', 'string'],
      ['chainId', 'uint256'],
      ['verifyingContract', 'address'],
      ['salt', 'bytes32'],
    ];
    types.EIP712Domain = spec.filter(([n]) => domain[n] !== undefined && domain[n] !== null).map(([name, type]) => ({ name, type }));
  }
  try {
    return hexToBytes(
      hashTypedData({
        domain: domain as TypedDataDefinition['domain'],
        types: types as TypedDataDefinition['types'],
        primaryType: td.primaryType,
        message: (td.message ?? {}) as Record<string, unknown>,
      } as TypedDataDefinition),
    );
  } catch (e) {
    throw new CryptoError('INVALID_TYPED_DATA', `typed data does not encode: ${shortReason(e)}`, field);
  }
}

/** EIP-7702 authorization digest keccak256(0x05 ‖ rlp([chainId, address, nonce])) of JSON `{address, chainId, nonce}`. */
export function authorizationDigest(json: string | Record<string, unknown>, field = 'payload'): Uint8Array {
  let a: Record<string, unknown>;
  try {
    a = typeof json === 'string' ? JSON.parse(json) : json;
  } catch {
    throw new CryptoError('INVALID_PAYLOAD', 'authorization is not valid JSON', field);
  }
  const address = (a?.address ?? a?.contractAddress) as unknown;
  const chainId = a?.chainId as unknown;
  const nonce = a?.nonce as unknown;
  if (typeof address !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new CryptoError('INVALID_PAYLOAD', 'authorization needs a 20-byte hex address', field);
  const asInt = (x: unknown) => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0) || (typeof x === 'string' && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(x));
  if (!asInt(chainId) || !asInt(nonce)) throw new CryptoError('INVALID_PAYLOAD', 'authorization needs integer chainId and nonce', field);
  // exact integers (the policies read them as such): a chain id is a uint256, a nonce a uint64 (EIP-7702)
  const chain = BigInt(chainId as string | number);
  const n = BigInt(nonce as string | number);
  if (chain >= 1n << 256n) throw new CryptoError('INVALID_PAYLOAD', 'authorization chainId must be below 2^256', field);
  if (n >= 1n << 64n) throw new CryptoError('INVALID_PAYLOAD', 'authorization nonce must be below 2^64', field);
  // viem's types say number; its encoding (numberToHex) takes a bigint exactly
  return hexToBytes(hashAuthorization({ address: address as Hex, chainId: chain as unknown as number, nonce: n as unknown as number }));
}

const SUPPORTED_TX_TYPES = new Set(['legacy', 'eip2930', 'eip1559', 'eip7702']);

/** Parse an unsigned (or signed: the signature is dropped) transaction; INVALID_TRANSACTION otherwise. */
export function parseUnsignedTransaction(unsignedTransaction: string, field = 'unsignedTransaction'): TransactionSerializable {
  if (typeof unsignedTransaction !== 'string' || !/^(0x)?([0-9a-fA-F]{2})+$/.test(unsignedTransaction))
    throw new CryptoError('INVALID_TRANSACTION', 'transaction must be non-empty hex', field);
  const raw = (unsignedTransaction.startsWith('0x') ? unsignedTransaction : `0x${unsignedTransaction}`).toLowerCase() as Hex;
  let tx: Record<string, unknown>;
  try {
    tx = { ...(parseTransaction(raw) as Record<string, unknown>) };
  } catch (e) {
    throw new CryptoError('INVALID_TRANSACTION', `cannot parse transaction: ${shortReason(e)}`, field);
  }
  if (!SUPPORTED_TX_TYPES.has(String(tx.type)))
    throw new CryptoError('INVALID_TRANSACTION', `unsupported transaction type ${String(tx.type)}`, field);
  delete tx.r;
  delete tx.s;
  delete tx.v;
  delete tx.yParity;
  return tx as TransactionSerializable;
}

/** keccak256 of the unsigned serialization (EIP-155 form for legacy transactions with a chain id). */
export function transactionSigningDigest(tx: TransactionSerializable): Uint8Array {
  return hexToBytes(keccak256(serializeTransaction(tx)));
}

/** Serialize a transaction with a (recoverable) secp256k1 signature; hex without 0x. */
export function serializeSignedTransaction(tx: TransactionSerializable, sig: RecoverableSignature): string {
  if (sig.recovery !== 0 && sig.recovery !== 1) throw new CryptoError('SIGN_FAILED', 'unexpected recovery id');
  const signed = serializeTransaction(tx, {
    r: toHex0x(sig.signature.subarray(0, 32)),
    s: toHex0x(sig.signature.subarray(32)),
    v: 27n + BigInt(sig.recovery),
    yParity: sig.recovery,
  });
  return signed.slice(2);
}

function shortReason(e: unknown): string {
  const m = e instanceof Error ? (e as { shortMessage?: string }).shortMessage ?? e.message : String(e);
  return m.split('\n')[0].slice(0, 200);
}
