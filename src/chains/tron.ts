/**
 * Tron transactions for sign_transaction (TRANSACTION_TYPE_TRON). The request carries the
 * transaction's `raw_data_hex` (the protobuf `Transaction.raw` TronWeb's transaction builder
 * returns); the reply is the whole signed `Transaction` protobuf as hex, which TronWeb's
 * `trx.sendHexTransaction` broadcasts:
 *
 *   Transaction = field 1 (bytes) raw_data ‖ field 2 (bytes) signature (65 bytes: r ‖ s ‖ v, v = 27 + recovery id)
 *   signature over SHA-256(raw_data) with the account's secp256k1 key.
 *
 * The raw data is parsed (a strict protobuf reader) so that bytes which are not a Tron
 * transaction are refused and policies can read `tron.tx`; a singular field that occurs twice
 * (Tron would read the last copy) is refused too, so the view is what Tron executes.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { createBase58check } from '@scure/base';
import { bytesToHex, concatBytes, hexToBytes } from '../encoding/bytes.js';
import { CryptoError } from '../encoding/errors.js';
import type { RecoverableSignature } from '../encoding/signature.js';
import type { View } from './view.js';

/** Contract types by their protobuf enum number (java-tron's Transaction.Contract.ContractType). */
const CONTRACT_TYPES: Record<number, string> = {
  0: 'AccountCreateContract', 1: 'TransferContract', 2: 'TransferAssetContract', 4: 'VoteWitnessContract',
  11: 'FreezeBalanceContract', 12: 'UnfreezeBalanceContract', 13: 'WithdrawBalanceContract',
  30: 'CreateSmartContract', 31: 'TriggerSmartContract', 46: 'AccountPermissionUpdateContract',
  54: 'FreezeBalanceV2Contract', 55: 'UnfreezeBalanceV2Contract', 56: 'WithdrawExpireUnfreezeContract',
  57: 'DelegateResourceContract', 58: 'UnDelegateResourceContract', 59: 'CancelAllUnfreezeV2Contract',
};

type Field = { n: number; wire: 0 | 2; int: bigint; bytes: Uint8Array };

/** The fields of one protobuf message (varints and length-delimited only, as Tron's raw data uses). */
function fields(b: Uint8Array, what: string, field: string): Field[] {
  const bad = (why: string): never => { throw new CryptoError('INVALID_TRANSACTION', `not a Tron transaction's raw data: ${what} ${why}`, field); };
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (at >= b.length) bad('ends inside a number');
      const byte = b[at++]!;
      v |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return v;
    }
    return bad('has a number longer than 10 bytes');
  };
  while (at < b.length) {
    const key = varint();
    const n = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (n === 0) bad('has field number 0');
    if (wire === 0) out.push({ n, wire: 0, int: varint(), bytes: new Uint8Array(0) });
    else if (wire === 2) {
      const len = Number(varint());
      if (at + len > b.length) bad('ends inside a field');
      out.push({ n, wire: 2, int: 0n, bytes: b.subarray(at, at + len) });
      at += len;
    } else bad(`uses wire type ${wire}`);
  }
  return out;
}

const first = (fs: Field[], n: number): Field | undefined => fs.find((f) => f.n === n);

/**
 * Refuses a message in which a singular field occurs twice: protobuf readers (Tron's among them)
 * take the last copy, so a view that read another could show policies what Tron does not execute.
 * `repeated`: the field numbers the message may repeat; `only`: check just these numbers.
 */
function singular(fs: Field[], what: string, field: string, { repeated = [], only }: { repeated?: number[]; only?: number[] } = {}): void {
  const seen = new Set<number>();
  for (const f of fs) {
    if (repeated.includes(f.n) || (only && !only.includes(f.n))) continue;
    if (seen.has(f.n)) throw new CryptoError('INVALID_TRANSACTION', `not a Tron transaction kmas signs: ${what} repeats field ${f.n}, which occurs once (Tron would read the last copy, not what the policies read)`, field);
    seen.add(f.n);
  }
}

/** Contract types whose value messages have only singular fields (those the policy view reads in full). */
const ALL_SINGULAR = new Set(['TransferContract', 'TransferAssetContract', 'TriggerSmartContract', 'DelegateResourceContract',
  'UnDelegateResourceContract', 'FreezeBalanceV2Contract', 'UnfreezeBalanceV2Contract']);
/** int64 fields (negative numbers are sent as 10-byte two's complement) */
const int64 = (f: Field | undefined): bigint => (f === undefined ? 0n : BigInt.asIntN(64, f.int));

const b58c = createBase58check(sha256);

/** A Tron address from its 21 raw bytes (0x41 ‖ 20-byte account), as transactions carry it. */
export function tronAddressOfRaw(raw: Uint8Array): string {
  return b58c.encode(raw);
}

/** An address field of a contract: base58 for the usual 21 bytes, hex otherwise, '' when absent. */
function addressText(bytes: Uint8Array | undefined): string {
  if (!bytes || bytes.length === 0) return '';
  return bytes.length === 21 ? tronAddressOfRaw(bytes) : bytesToHex(bytes);
}

export interface TronContract { type: string; permissionId: number; value: Field[] }
export interface TronRawData {
  raw: Uint8Array;
  refBlockBytes: string;
  refBlockHash: string;
  expiration: bigint;
  timestamp: bigint;
  data: Uint8Array;
  feeLimit: bigint;
  contracts: TronContract[];
}

/** Parses `raw_data_hex` (with or without 0x); refuses what is not a Tron transaction's raw data. */
export function parseTronRawData(hex: string, field = 'unsignedTransaction'): TronRawData {
  const raw = hexToBytes(hex, field);
  if (raw.length === 0) throw new CryptoError('INVALID_TRANSACTION', 'not a Tron transaction: empty', field);
  const fs = fields(raw, 'the raw data', field);
  // Transaction.raw repeats only auths (9) and contract (11)
  singular(fs, 'the raw data', field, { repeated: [9, 11] });
  const contracts = fs.filter((f) => f.n === 11).map((c, i) => {
    if (c.wire !== 2) throw new CryptoError('INVALID_TRANSACTION', `not a Tron transaction: contract ${i} is not a message`, field);
    const cf = fields(c.bytes, `contract ${i}`, field);
    singular(cf, `contract ${i}`, field);
    const type = CONTRACT_TYPES[Number(first(cf, 1)?.int ?? 0n)] ?? `ContractType${Number(first(cf, 1)?.int ?? 0n)}`;
    const param = first(cf, 2);
    if (!param || param.wire !== 2) throw new CryptoError('INVALID_TRANSACTION', `not a Tron transaction: contract ${i} has no parameter`, field);
    const any = fields(param.bytes, `contract ${i}'s parameter`, field);
    singular(any, `contract ${i}'s parameter`, field);
    const value = first(any, 2);
    const valueFields = value && value.wire === 2 ? fields(value.bytes, `contract ${i}'s value`, field) : [];
    // every field the view reads occurs once (owner_address, field 1, in any contract type)
    singular(valueFields, `contract ${i}'s value`, field, ALL_SINGULAR.has(type) ? {} : { only: [1] });
    return { type, permissionId: Number(first(cf, 5)?.int ?? 0n), value: valueFields };
  });
  if (contracts.length !== 1) {
    throw new CryptoError('INVALID_TRANSACTION', `not a Tron transaction: it has ${contracts.length} contracts (a transaction has exactly one)`, field);
  }
  const refBlockBytes = first(fs, 1);
  const refBlockHash = first(fs, 4);
  if (!refBlockBytes || refBlockBytes.bytes.length !== 2 || !refBlockHash || refBlockHash.bytes.length !== 8) {
    throw new CryptoError('INVALID_TRANSACTION', 'not a Tron transaction: ref_block_bytes (2 bytes) and ref_block_hash (8 bytes) are required', field);
  }
  return {
    raw,
    refBlockBytes: bytesToHex(refBlockBytes.bytes),
    refBlockHash: bytesToHex(refBlockHash.bytes),
    expiration: int64(first(fs, 8)),
    timestamp: int64(first(fs, 14)),
    data: first(fs, 10)?.bytes ?? new Uint8Array(0),
    feeLimit: int64(first(fs, 18)),
    contracts,
  };
}

/** SHA-256 of the raw data: what the key signs (and the transaction id). */
export function tronSigningDigest(tx: TronRawData): Uint8Array {
  return sha256(tx.raw);
}

function lengthDelimited(n: number, b: Uint8Array): Uint8Array {
  const len: number[] = [];
  let v = b.length;
  do { len.push((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)); v >>>= 7; } while (v > 0);
  return concatBytes(Uint8Array.of((n << 3) | 2), Uint8Array.from(len), b);
}

/** The signed Transaction protobuf as lowercase hex: raw_data and one 65-byte signature (v = 27 + recovery id, as TronWeb writes it). */
export function serializeSignedTronTransaction(tx: TronRawData, sig: RecoverableSignature): string {
  const signature = concatBytes(sig.signature.subarray(0, 64), Uint8Array.of(27 + sig.recovery));
  return bytesToHex(concatBytes(lengthDelimited(1, tx.raw), lengthDelimited(2, signature)));
}

// ---- the policy view (`tron.tx`) ------------------------------------------------------------


/** One contract as Turnkey's TronContract struct: the fields its type has, the rest zero or ''. */
function contractView(c: TronContract): { [k: string]: View } {
  const v = c.value;
  const bytesOf = (n: number) => first(v, n)?.bytes;
  const intOf = (n: number) => int64(first(v, n));
  const out: { [k: string]: View } = {
    type: c.type, permission_id: BigInt(c.permissionId), owner_address: addressText(bytesOf(1)),
    to_address: '', amount: 0n, contract_address: '', call_value: 0n, data: '', call_token_value: 0n, token_id: 0n,
  };
  switch (c.type) {
    case 'TransferContract': out.to_address = addressText(bytesOf(2)); out.amount = intOf(3); break;
    case 'TransferAssetContract': out.owner_address = addressText(bytesOf(2)); out.to_address = addressText(bytesOf(3)); out.amount = intOf(4); break;
    case 'TriggerSmartContract':
      out.contract_address = addressText(bytesOf(2)); out.call_value = intOf(3); out.data = bytesToHex(bytesOf(4) ?? new Uint8Array(0));
      out.call_token_value = intOf(5); out.token_id = intOf(6);
      break;
    case 'DelegateResourceContract': case 'UnDelegateResourceContract': out.amount = intOf(3); out.to_address = addressText(bytesOf(4)); break;
    case 'FreezeBalanceV2Contract': case 'UnfreezeBalanceV2Contract': out.amount = intOf(2); break;
    default:
  }
  return out;
}

/** `tron.tx`: ref_block_bytes, ref_block_hash, expiration, timestamp, data (the memo, as text), fee_limit, contract. */
export function tronPolicyView(tx: TronRawData): { [k: string]: View } {
  return {
    ref_block_bytes: tx.refBlockBytes, ref_block_hash: tx.refBlockHash, expiration: tx.expiration, timestamp: tx.timestamp,
    data: new TextDecoder().decode(tx.data), fee_limit: tx.feeLimit, contract: tx.contracts.map(contractView),
  };
}
