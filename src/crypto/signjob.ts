/**
 * The signing activities as plain data: one description of the work, one function that does it
 * with an opened key. The Vault runs jobs on the calling thread; the SignPool (signpool.ts) runs
 * the same jobs on worker threads. Both paths share this code, so they cannot drift apart.
 */
import { CryptoError, type CryptoErrorCode } from '../encoding/errors.js';
import { getPublicKey, signDigest, signEd25519, type CurveId } from './curves.js';
import { signRawPayload, signRawPayloads, type RawPayloadRequest, type RawSignature } from './payload.js';
import { parseUnsignedTransaction, serializeSignedTransaction, transactionSigningDigest } from '../chains/ethereum.js';
import { parseSolanaTransaction, signSolanaTransaction } from '../chains/solana.js';
import { parseTronRawData, serializeSignedTronTransaction, tronSigningDigest } from '../chains/tron.js';
import { parsePsbt } from '../chains/bitcoin.js';
import { signPsbt } from './bitcoin.js';

export type SignJob =
  /** sign_raw_payload */
  | { op: 'payload'; curve: CurveId; request: RawPayloadRequest }
  /** sign_raw_payloads (ECDSA through the core's batch path); errors name `${fieldPrefix}[i]` */
  | { op: 'payloads'; curve: CurveId; payloads: string[]; encoding: string; hashFunction: string; fieldPrefix?: string; firstIndex?: number }
  /** sign_transaction, TRANSACTION_TYPE_ETHEREUM (secp256k1); hex without 0x */
  | { op: 'transaction'; curve: CurveId; unsignedTransaction: string; field?: string }
  /** sign_transaction, TRANSACTION_TYPE_SOLANA (Ed25519): the serialized transaction with the key's signature in its slot */
  | { op: 'solana'; curve: CurveId; unsignedTransaction: string; field?: string }
  /** sign_transaction, TRANSACTION_TYPE_TRON (secp256k1): raw_data_hex in, the signed Transaction protobuf out */
  | { op: 'tron'; curve: CurveId; unsignedTransaction: string; field?: string }
  /** sign_transaction, TRANSACTION_TYPE_BITCOIN (secp256k1): a PSBT in, the PSBT with the key's input signatures out */
  | { op: 'bitcoin'; curve: CurveId; unsignedTransaction: string; field?: string };

export type SignJobResult = RawSignature | RawSignature[] | string;

/**
 * Checks what can be checked without the key (the transaction's curve and form), then opens the
 * key with `open`, does the job and wipes the key (open's result is owned here).
 */
export function runSignJob(job: SignJob, open: () => Uint8Array): SignJobResult {
  switch (job.op) {
    case 'payload':
      return withKey(open, (sk) => signRawPayload(job.curve, sk, job.request));
    case 'payloads':
      return withKey(open, (sk) => signRawPayloads(job.curve, sk, job.payloads, job.encoding, job.hashFunction, job.fieldPrefix ?? 'payloads', job.firstIndex));
    case 'transaction': {
      if (job.curve !== 'secp256k1') throw new CryptoError('UNSUPPORTED_COMBINATION', 'TRANSACTION_TYPE_ETHEREUM needs a CURVE_SECP256K1 key', 'signWith');
      const tx = parseUnsignedTransaction(job.unsignedTransaction, job.field ?? 'unsignedTransaction');
      const digest = transactionSigningDigest(tx);
      const sig = withKey(open, (sk) => signDigest('secp256k1', digest, sk));
      return serializeSignedTransaction(tx, sig);
    }
    case 'bitcoin': {
      if (job.curve !== 'secp256k1') throw new CryptoError('UNSUPPORTED_COMBINATION', 'TRANSACTION_TYPE_BITCOIN needs a CURVE_SECP256K1 key', 'signWith');
      const tx = parsePsbt(job.unsignedTransaction, job.field ?? 'unsignedTransaction');
      return withKey(open, (sk) => signPsbt(tx, sk, getPublicKey('secp256k1', sk, true), job.field ?? 'unsignedTransaction'));
    }
    case 'tron': {
      if (job.curve !== 'secp256k1') throw new CryptoError('UNSUPPORTED_COMBINATION', 'TRANSACTION_TYPE_TRON needs a CURVE_SECP256K1 key', 'signWith');
      const tx = parseTronRawData(job.unsignedTransaction, job.field ?? 'unsignedTransaction');
      const sig = withKey(open, (sk) => signDigest('secp256k1', tronSigningDigest(tx), sk));
      return serializeSignedTronTransaction(tx, sig);
    }
    case 'solana': {
      if (job.curve !== 'ed25519') throw new CryptoError('UNSUPPORTED_COMBINATION', 'TRANSACTION_TYPE_SOLANA needs a CURVE_ED25519 key', 'signWith');
      const tx = parseSolanaTransaction(job.unsignedTransaction, job.field ?? 'unsignedTransaction');
      return withKey(open, (sk) => signSolanaTransaction(tx, getPublicKey('ed25519', sk), (message) => signEd25519(message, sk)));
    }
  }
}

function withKey<T>(open: () => Uint8Array, fn: (sk: Uint8Array) => T): T {
  const sk = open();
  try {
    return fn(sk);
  } finally {
    sk.fill(0);
  }
}

/** A CryptoError as data (to cross a thread boundary) and back. */
export interface ErrorData { code: CryptoErrorCode; message: string; field?: string }

export function errorToData(e: unknown): ErrorData {
  if (e instanceof CryptoError) return e.field === undefined ? { code: e.code, message: e.message } : { code: e.code, message: e.message, field: e.field };
  // Anything else is the server's failure; its message may describe internals, so it stays here.
  return { code: 'SIGN_FAILED', message: 'signing failed in a worker thread' };
}

export function errorFromData(d: ErrorData): CryptoError {
  return new CryptoError(d.code, d.message, d.field);
}
