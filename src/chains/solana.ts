/**
 * Solana transactions for sign_transaction (TRANSACTION_TYPE_SOLANA): the wire format that
 * `@solana/web3.js` serializes (`Transaction.serialize({requireAllSignatures: false})` and
 * `VersionedTransaction.serialize()`), legacy and version-0 messages.
 *
 *   transaction = shortvec(n) ‖ n × 64-byte signature ‖ message
 *   message     = [0x80 | version] ‖ header(3) ‖ shortvec keys ‖ blockhash(32)
 *                 ‖ shortvec instructions ‖ (v0: shortvec address-table lookups)
 *
 * The parser is strict where a wrong byte would change what is signed: canonical shortvecs,
 * one signature slot per required signer, program ids among the static keys, every account
 * index in range, no trailing bytes. Signing puts the Ed25519 signature of the message bytes
 * into the signer's slot and changes nothing else.
 */
import { base58 } from '@scure/base';
import { bytesToHex, equalBytes, hexToBytes } from '../encoding/bytes.js';
import { CryptoError } from '../encoding/errors.js';
import type { View } from './view.js';

export interface SolanaInstruction { programIndex: number; accounts: number[]; data: Uint8Array }
export interface SolanaLookup { key: Uint8Array; writable: number[]; readonly: number[] }

export interface SolanaTransaction {
  /** the whole serialized transaction */
  bytes: Uint8Array;
  /** offset of the first signature slot in `bytes` */
  signaturesAt: number;
  signatureCount: number;
  /** the signed bytes: the serialized message */
  message: Uint8Array;
  version: 'legacy' | 0;
  requiredSignatures: number;
  readonlySigned: number;
  readonlyUnsigned: number;
  staticKeys: Uint8Array[];
  recentBlockhash: Uint8Array;
  instructions: SolanaInstruction[];
  lookups: SolanaLookup[];
}

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
/** How policies see an account that comes from an address lookup table (Turnkey's policy reference). */
export const ADDRESS_TABLE_LOOKUP = 'ADDRESS_TABLE_LOOKUP';

class Reader {
  at = 0;
  constructor(private readonly b: Uint8Array, private readonly field: string) {}
  fail(what: string): never {
    throw new CryptoError('INVALID_TRANSACTION', `not a serialized Solana transaction: ${what} (byte ${this.at})`, this.field);
  }
  byte(what: string): number {
    if (this.at >= this.b.length) this.fail(`it ends inside ${what}`);
    return this.b[this.at++]!;
  }
  bytes(n: number, what: string): Uint8Array {
    if (this.at + n > this.b.length) this.fail(`it ends inside ${what}`);
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  /** Solana's compact-u16 ("shortvec"): 7 bits a byte, at most 3 bytes, minimal encoding only. */
  shortvec(what: string): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.byte(what);
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) this.fail(`${what} has a non-minimal length encoding`);
        if (value > 0xffff) this.fail(`${what} is longer than 65535`);
        return value;
      }
    }
    this.fail(`${what} has a length encoding longer than 3 bytes`);
  }
  get left(): number { return this.b.length - this.at; }
}

/** Parses a serialized transaction given as hex (with or without 0x). */
export function parseSolanaTransaction(hex: string, field = 'unsignedTransaction'): SolanaTransaction {
  const bytes = hexToBytes(hex, field);
  const r = new Reader(bytes, field);
  const signatureCount = r.shortvec('the signature count');
  const signaturesAt = r.at;
  r.bytes(64 * signatureCount, 'the signatures');
  const messageAt = r.at;

  let version: 'legacy' | 0 = 'legacy';
  let requiredSignatures = r.byte('the message header');
  if (requiredSignatures & 0x80) {
    const v = requiredSignatures & 0x7f;
    if (v !== 0) r.fail(`message version ${v} is not supported (legacy and version 0 are)`);
    version = 0;
    requiredSignatures = r.byte('the message header');
  }
  const readonlySigned = r.byte('the message header');
  const readonlyUnsigned = r.byte('the message header');
  const keyCount = r.shortvec('the account keys');
  const staticKeys: Uint8Array[] = [];
  for (let i = 0; i < keyCount; i++) staticKeys.push(r.bytes(32, 'the account keys'));
  if (requiredSignatures === 0) r.fail('the message requires no signature');
  if (requiredSignatures > keyCount) r.fail(`the header requires ${requiredSignatures} signatures but there are ${keyCount} account keys`);
  if (readonlySigned >= requiredSignatures) r.fail('the fee payer must be a writable signer');
  if (readonlyUnsigned > keyCount - requiredSignatures) r.fail('the header counts more read-only unsigned accounts than there are');
  if (signatureCount !== requiredSignatures) {
    r.fail(`it has ${signatureCount} signature slots but its message requires ${requiredSignatures} signatures`);
  }
  const recentBlockhash = r.bytes(32, 'the recent blockhash');

  const instructions: SolanaInstruction[] = [];
  const instructionCount = r.shortvec('the instructions');
  for (let i = 0; i < instructionCount; i++) {
    const programIndex = r.byte(`instruction ${i}`);
    const n = r.shortvec(`instruction ${i}'s accounts`);
    const accounts = Array.from(r.bytes(n, `instruction ${i}'s accounts`));
    const data = r.bytes(r.shortvec(`instruction ${i}'s data`), `instruction ${i}'s data`);
    instructions.push({ programIndex, accounts, data });
  }

  const lookups: SolanaLookup[] = [];
  if (version === 0) {
    const lookupCount = r.shortvec('the address table lookups');
    for (let i = 0; i < lookupCount; i++) {
      const key = r.bytes(32, `address table lookup ${i}`);
      const writable = Array.from(r.bytes(r.shortvec(`lookup ${i}'s writable indexes`), `lookup ${i}'s writable indexes`));
      const readonly = Array.from(r.bytes(r.shortvec(`lookup ${i}'s read-only indexes`), `lookup ${i}'s read-only indexes`));
      lookups.push({ key, writable, readonly });
    }
  }
  if (r.left !== 0) r.fail(`${r.left} bytes follow the message`);

  const total = keyCount + lookups.reduce((n, l) => n + l.writable.length + l.readonly.length, 0);
  if (total > 256) r.fail('the message addresses more than 256 accounts');
  instructions.forEach((ix, i) => {
    if (ix.programIndex >= keyCount) {
      r.fail(ix.programIndex < total
        ? `instruction ${i}'s program id comes from an address lookup table`
        : `instruction ${i}'s program index ${ix.programIndex} is out of range`);
    }
    if (ix.programIndex === 0) r.fail(`instruction ${i}'s program is the fee payer`);
    const bad = ix.accounts.find((a) => a >= total);
    if (bad !== undefined) r.fail(`instruction ${i}'s account index ${bad} is out of range`);
  });

  return {
    bytes, signaturesAt, signatureCount, message: bytes.subarray(messageAt), version,
    requiredSignatures, readonlySigned, readonlyUnsigned, staticKeys, recentBlockhash, instructions, lookups,
  };
}

/** The signature slot of a 32-byte public key, or -1 when it is not a required signer. */
export function solanaSignerSlot(tx: SolanaTransaction, publicKey: Uint8Array): number {
  for (let i = 0; i < tx.requiredSignatures; i++) {
    if (equalBytes(tx.staticKeys[i]!, publicKey)) return i;
  }
  return -1;
}

/**
 * The transaction with `publicKey`'s signature (made by `sign` over the message) in its slot,
 * as lowercase hex. The input bytes are not modified.
 */
export function signSolanaTransaction(tx: SolanaTransaction, publicKey: Uint8Array, sign: (message: Uint8Array) => Uint8Array, field = 'signWith'): string {
  const slot = solanaSignerSlot(tx, publicKey);
  if (slot < 0) {
    throw new CryptoError('UNSUPPORTED_COMBINATION',
      `the key ${base58.encode(publicKey)} is not one of the transaction's ${tx.requiredSignatures} required signers`, field);
  }
  const out = tx.bytes.slice();
  out.set(sign(tx.message), tx.signaturesAt + 64 * slot);
  return bytesToHex(out);
}

/**
 * The transaction with another recent blockhash, as lowercase hex. Its signatures are zeroed:
 * they were over the old message.
 */
export function withRecentBlockhash(tx: SolanaTransaction, blockhash: Uint8Array): string {
  if (blockhash.length !== 32) throw new CryptoError('INVALID_TRANSACTION', 'a recent blockhash is 32 bytes', 'recentBlockhash');
  const out = tx.bytes.slice();
  out.fill(0, tx.signaturesAt, tx.signaturesAt + 64 * tx.signatureCount);
  const n = tx.staticKeys.length;
  const shortvecLength = n < 0x80 ? 1 : n < 0x4000 ? 2 : 3;
  const at = (tx.bytes.length - tx.message.length) + (tx.version === 0 ? 1 : 0) + 3 + shortvecLength + 32 * n;
  out.set(blockhash, at);
  return bytesToHex(out);
}

// ---- the policy view (`solana.tx`) ------------------------------------------------------------


/** Account `i` of the message: its address (or ADDRESS_TABLE_LOOKUP), signer and writable flags. */
function account(tx: SolanaTransaction, i: number): { key: string; signer: boolean; writable: boolean } {
  const n = tx.staticKeys.length;
  if (i < n) {
    const signer = i < tx.requiredSignatures;
    const writable = signer ? i < tx.requiredSignatures - tx.readonlySigned : i < n - tx.readonlyUnsigned;
    return { key: base58.encode(tx.staticKeys[i]!), signer, writable };
  }
  // Loaded accounts follow the static keys: every table's writable indexes, then every table's read-only ones.
  const writableCount = tx.lookups.reduce((s, l) => s + l.writable.length, 0);
  return { key: ADDRESS_TABLE_LOOKUP, signer: false, writable: i - n < writableCount };
}

function u64le(b: Uint8Array, at: number): bigint | undefined {
  if (b.length < at + 8) return undefined;
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(b[at + i]!);
  return v;
}

function u32le(b: Uint8Array, at: number): number | undefined {
  return b.length < at + 4 ? undefined : (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)) + b[at + 3]! * 0x1000000;
}

/**
 * `solana.tx` as Turnkey's policy language describes it: account_keys, program_keys,
 * instructions (program_key, accounts, instruction_data_hex, address_table_lookups), native SOL
 * transfers and SPL token transfers made directly by top-level instructions, recent_blockhash and
 * address_table_lookups.
 */
export function solanaPolicyView(tx: SolanaTransaction): { [k: string]: View } {
  const keyOf = (i: number): string => account(tx, i).key;
  const lookups = tx.lookups.map((l) => ({
    address_table_key: base58.encode(l.key),
    writable_indexes: l.writable.map(BigInt),
    readonly_indexes: l.readonly.map(BigInt),
  }));
  const programKeys: string[] = [];
  const transfers: View[] = [];
  const splTransfers: View[] = [];
  const instructions = tx.instructions.map((ix) => {
    const program = keyOf(ix.programIndex);
    if (!programKeys.includes(program)) programKeys.push(program);
    const accounts = ix.accounts.map((a) => {
      const acc = account(tx, a);
      return { account_key: acc.key, signer: acc.signer, writable: acc.writable };
    });
    const at = (k: number): string => (ix.accounts[k] === undefined ? '' : keyOf(ix.accounts[k]!));
    if (program === SYSTEM_PROGRAM) {
      const kind = u32le(ix.data, 0);
      // the programs read their fields and ignore bytes after them: so does this view (a transfer
      // padded with a byte must not drop out of the transfers a policy sees)
      if (kind === 2 && ix.data.length >= 12 && ix.accounts.length >= 2) {
        // Transfer { lamports: u64 }: [from, to]
        transfers.push({ from: at(0), to: at(1), amount: u64le(ix.data, 4)! });
      } else if (kind === 11 && ix.accounts.length >= 3) {
        // TransferWithSeed { lamports: u64, seed: string, owner: pubkey }: [from, base, to]
        const lamports = u64le(ix.data, 4);
        if (lamports !== undefined) transfers.push({ from: at(0), to: at(2), amount: lamports });
      }
    } else if (program === TOKEN_PROGRAM || program === TOKEN_2022_PROGRAM) {
      const spl = splTransfer(ix, at);
      if (spl) splTransfers.push(spl);
    }
    return {
      program_key: program,
      accounts,
      instruction_data_hex: bytesToHex(ix.data),
      // the tables this instruction's accounts come from
      address_table_lookups: lookups.filter((_, t) => ix.accounts.some((a) => lookupOf(tx, a) === t)),
    };
  });
  return {
    account_keys: tx.staticKeys.map((k) => base58.encode(k)),
    program_keys: programKeys,
    instructions,
    transfers,
    spl_transfers: splTransfers,
    recent_blockhash: base58.encode(tx.recentBlockhash),
    address_table_lookups: lookups,
  };
}

/** Which lookup table account `i` comes from (-1: a static key). */
function lookupOf(tx: SolanaTransaction, i: number): number {
  let k = i - tx.staticKeys.length;
  if (k < 0) return -1;
  for (const pass of ['writable', 'readonly'] as const) {
    for (let t = 0; t < tx.lookups.length; t++) {
      const n = tx.lookups[t]![pass].length;
      if (k < n) return t;
      k -= n;
    }
  }
  return -1;
}

/**
 * SPL Token / Token-2022 Transfer (3), TransferChecked (12) and Token-2022's
 * TransferCheckedWithFee (26, 1). Accounts after the owner are the multisig signers.
 */
function splTransfer(ix: SolanaInstruction, at: (k: number) => string): View | undefined {
  const d = ix.data;
  const signers = (from: number): string[] => ix.accounts.slice(from).map((_, k) => at(from + k));
  if (d[0] === 3 && d.length >= 9 && ix.accounts.length >= 3) {
    return { from: at(0), to: at(1), owner: at(2), amount: u64le(d, 1)!, signers: signers(3), token_mint: '' };
  }
  if (d[0] === 12 && d.length >= 10 && ix.accounts.length >= 4) {
    return { from: at(0), to: at(2), owner: at(3), amount: u64le(d, 1)!, signers: signers(4), token_mint: at(1) };
  }
  if (d[0] === 26 && d[1] === 1 && d.length >= 19 && ix.accounts.length >= 4) {
    return { from: at(0), to: at(2), owner: at(3), amount: u64le(d, 2)!, signers: signers(4), token_mint: at(1) };
  }
  return undefined;
}
