// Solana transactions (src/chains/solana.ts) against @solana/web3.js and @solana/spl-token as the
// second implementation: the parser reads what web3.js serializes (legacy and v0, with address
// lookup tables), the signature lands in the right slot and verifies, the policy view names the
// transfers the instruction builders made, and malformed bytes are refused.
import { describe, it, expect } from 'vitest';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  AddressLookupTableAccount, Keypair, PublicKey, SystemProgram, Transaction, TransactionInstruction,
  TransactionMessage, VersionedTransaction, ComputeBudgetProgram,
} from '@solana/web3.js';
import {
  createTransferInstruction, createTransferCheckedInstruction, createTransferCheckedWithFeeInstruction,
  TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID,
} from '@solana/spl-token';
import {
  parseSolanaTransaction, signSolanaTransaction, solanaPolicyView, solanaSignerSlot, ADDRESS_TABLE_LOOKUP,
} from '../../src/chains/solana.js';
import { hex, unhex, err } from '../crypto/helpers.js';

const blockhash = () => Keypair.generate().publicKey.toBase58();
const key = () => Keypair.generate().publicKey;

/** A legacy transaction with several instructions, unsigned (as @turnkey/solana serializes it). */
function legacyTx(payer: PublicKey, extra: PublicKey[] = []) {
  const tx = new Transaction({ feePayer: payer, recentBlockhash: blockhash() });
  tx.add(ComputeBudgetProgram.setComputeUnitLimit({ units: 200_000 }));
  tx.add(SystemProgram.transfer({ fromPubkey: payer, toPubkey: key(), lamports: 1_000_000_007n }));
  for (const signer of extra) tx.add(SystemProgram.transfer({ fromPubkey: signer, toPubkey: key(), lamports: 5 }));
  return tx;
}

function v0Tx(payer: PublicKey, withTable: boolean) {
  const tableKeys = [key(), key(), key(), key()];
  const table = new AddressLookupTableAccount({
    key: key(),
    state: { deactivationSlot: BigInt('18446744073709551615'), lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, authority: undefined, addresses: tableKeys },
  });
  const ixs = [
    SystemProgram.transfer({ fromPubkey: payer, toPubkey: tableKeys[1]!, lamports: 42 }),
    new TransactionInstruction({ programId: key(), keys: [
      { pubkey: tableKeys[2]!, isSigner: false, isWritable: false },
      { pubkey: tableKeys[3]!, isSigner: false, isWritable: true },
      { pubkey: payer, isSigner: true, isWritable: true },
    ], data: Buffer.from([1, 2, 3]) }),
  ];
  const message = new TransactionMessage({ payerKey: payer, recentBlockhash: blockhash(), instructions: ixs })
    .compileToV0Message(withTable ? [table] : []);
  return { tx: new VersionedTransaction(message), table, tableKeys };
}

const serializedLegacy = (tx: Transaction) => hex(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));

describe('parseSolanaTransaction reads what @solana/web3.js writes', () => {
  it('legacy: header, static keys, blockhash and instructions as web3.js compiles them', () => {
    for (let round = 0; round < 20; round++) {
      const payer = key();
      const others = Array.from({ length: round % 3 }, key);
      const tx = legacyTx(payer, others);
      const parsed = parseSolanaTransaction(serializedLegacy(tx));
      const m = tx.compileMessage();
      expect(parsed.version).toBe('legacy');
      expect(parsed.requiredSignatures).toBe(m.header.numRequiredSignatures);
      expect(parsed.readonlySigned).toBe(m.header.numReadonlySignedAccounts);
      expect(parsed.readonlyUnsigned).toBe(m.header.numReadonlyUnsignedAccounts);
      expect(parsed.signatureCount).toBe(1 + others.length);
      expect(parsed.staticKeys.map((k) => new PublicKey(k).toBase58())).toEqual(m.accountKeys.map((k) => k.toBase58()));
      expect(new PublicKey(parsed.recentBlockhash).toBase58()).toBe(m.recentBlockhash);
      expect(parsed.instructions.map((ix) => ({ p: ix.programIndex, a: ix.accounts, d: hex(ix.data) })))
        .toEqual(m.compiledInstructions.map((ix) => ({ p: ix.programIdIndex, a: ix.accountKeyIndexes, d: hex(ix.data) })));
      expect(hex(parsed.message)).toBe(hex(tx.serializeMessage()));
      expect(parsed.lookups).toEqual([]);
    }
  });

  it('v0 with and without an address lookup table', () => {
    for (const withTable of [false, true]) {
      const payer = key();
      const { tx } = v0Tx(payer, withTable);
      const parsed = parseSolanaTransaction('0x' + hex(tx.serialize()));
      const m = tx.message;
      expect(parsed.version).toBe(0);
      expect(parsed.staticKeys.map((k) => new PublicKey(k).toBase58())).toEqual(m.staticAccountKeys.map((k) => k.toBase58()));
      expect(parsed.instructions.map((ix) => ({ p: ix.programIndex, a: ix.accounts, d: hex(ix.data) })))
        .toEqual(m.compiledInstructions.map((ix) => ({ p: ix.programIdIndex, a: ix.accountKeyIndexes, d: hex(ix.data) })));
      expect(parsed.lookups.map((l) => ({ k: new PublicKey(l.key).toBase58(), w: l.writable, r: l.readonly })))
        .toEqual(m.addressTableLookups.map((l) => ({ k: l.accountKey.toBase58(), w: l.writableIndexes, r: l.readonlyIndexes })));
      expect(hex(parsed.message)).toBe(hex(m.serialize()));
      if (withTable) expect(parsed.lookups.length).toBe(1);
    }
  });
});

describe('signSolanaTransaction', () => {
  it('puts an Ed25519 signature of the message in the signer\'s slot; web3.js verifies it', () => {
    const payer = Keypair.generate();
    const second = Keypair.generate();
    const tx = legacyTx(payer.publicKey, [second.publicKey]);
    const parsed = parseSolanaTransaction(serializedLegacy(tx));
    expect(solanaSignerSlot(parsed, payer.publicKey.toBytes())).toBe(0);
    expect(solanaSignerSlot(parsed, second.publicKey.toBytes())).toBe(1);
    expect(solanaSignerSlot(parsed, key().toBytes())).toBe(-1);

    const sk2 = second.secretKey.slice(0, 32);
    const once = signSolanaTransaction(parsed, second.publicKey.toBytes(), (m) => ed25519.sign(m, sk2));
    const partly = Transaction.from(unhex(once));
    expect(partly.verifySignatures(false)).toBe(true);
    expect(partly.verifySignatures(true)).toBe(false); // the payer has not signed yet
    // The payer signs the half-signed transaction: both signatures verify, and the message is untouched.
    const sk1 = payer.secretKey.slice(0, 32);
    const twice = signSolanaTransaction(parseSolanaTransaction(once), payer.publicKey.toBytes(), (m) => ed25519.sign(m, sk1));
    const full = Transaction.from(unhex(twice));
    expect(full.verifySignatures(true)).toBe(true);
    expect(hex(full.serializeMessage())).toBe(hex(tx.serializeMessage()));
    // web3.js's own signature is the same bytes (Ed25519 is deterministic).
    tx.sign(payer, second);
    expect(hex(tx.serialize())).toBe(twice);
  });

  it('signs a v0 transaction that uses a lookup table', () => {
    const payer = Keypair.generate();
    const { tx } = v0Tx(payer.publicKey, true);
    const signed = signSolanaTransaction(parseSolanaTransaction(hex(tx.serialize())), payer.publicKey.toBytes(), (m) => ed25519.sign(m, payer.secretKey.slice(0, 32)));
    const back = VersionedTransaction.deserialize(unhex(signed));
    expect(ed25519.verify(back.signatures[0]!, back.message.serialize(), payer.publicKey.toBytes())).toBe(true);
    tx.sign([payer]);
    expect(hex(tx.serialize())).toBe(signed);
  });

  it('refuses a key that is not a required signer, and leaves the input alone', () => {
    const tx = legacyTx(key());
    const text = serializedLegacy(tx);
    const parsed = parseSolanaTransaction(text);
    const stranger = Keypair.generate();
    const e = err(() => signSolanaTransaction(parsed, stranger.publicKey.toBytes(), (m) => ed25519.sign(m, stranger.secretKey.slice(0, 32))));
    expect(e.code).toBe('UNSUPPORTED_COMBINATION');
    expect(e.message).toContain(stranger.publicKey.toBase58());
    expect(hex(parsed.bytes)).toBe(text);
  });
});

describe('the policy view (solana.tx)', () => {
  it('native transfers, SPL Transfer / TransferChecked / TransferCheckedWithFee, flags and program keys', () => {
    const payer = key();
    const to = key();
    const base = key();
    const seeded = key();
    const [src, dst, mint, owner, cosigner] = [key(), key(), key(), key(), key()];
    const tx = new Transaction({ feePayer: payer, recentBlockhash: blockhash() });
    tx.add(SystemProgram.transfer({ fromPubkey: payer, toPubkey: to, lamports: 123_456_789_012n }));
    tx.add(SystemProgram.transfer({ fromPubkey: seeded, basePubkey: base, toPubkey: to, lamports: 77, seed: 'vault', programId: SystemProgram.programId }));
    tx.add(createTransferInstruction(src, dst, owner, 5_000n));
    tx.add(createTransferInstruction(src, dst, owner, 6n, [cosigner]));
    tx.add(createTransferCheckedInstruction(src, mint, dst, owner, 10n ** 18n, 9, [], TOKEN_2022_PROGRAM_ID));
    tx.add(createTransferCheckedWithFeeInstruction(src, mint, dst, owner, 700n, 6, 3n, [], TOKEN_2022_PROGRAM_ID));
    tx.add(new TransactionInstruction({ programId: TOKEN_PROGRAM_ID, keys: [{ pubkey: src, isSigner: false, isWritable: true }], data: Buffer.from([9]) }));
    const m = tx.compileMessage();
    const view = solanaPolicyView(parseSolanaTransaction(serializedLegacy(tx))) as any;

    expect(view.account_keys).toEqual(m.accountKeys.map((k) => k.toBase58()));
    expect(view.recent_blockhash).toBe(m.recentBlockhash);
    expect(view.program_keys).toEqual([SystemProgram.programId.toBase58(), TOKEN_PROGRAM_ID.toBase58(), TOKEN_2022_PROGRAM_ID.toBase58()]);
    expect(view.transfers).toEqual([
      { from: payer.toBase58(), to: to.toBase58(), amount: 123_456_789_012n },
      { from: seeded.toBase58(), to: to.toBase58(), amount: 77n },
    ]);
    expect(view.spl_transfers).toEqual([
      { from: src.toBase58(), to: dst.toBase58(), owner: owner.toBase58(), amount: 5_000n, signers: [], token_mint: '' },
      { from: src.toBase58(), to: dst.toBase58(), owner: owner.toBase58(), amount: 6n, signers: [cosigner.toBase58()], token_mint: '' },
      { from: src.toBase58(), to: dst.toBase58(), owner: owner.toBase58(), amount: 10n ** 18n, signers: [], token_mint: mint.toBase58() },
      { from: src.toBase58(), to: dst.toBase58(), owner: owner.toBase58(), amount: 700n, signers: [], token_mint: mint.toBase58() },
    ]);
    expect(view.instructions).toHaveLength(7);
    view.instructions.forEach((ix: any, i: number) => {
      const c = m.compiledInstructions[i]!;
      expect(ix.program_key).toBe(m.accountKeys[c.programIdIndex]!.toBase58());
      expect(ix.instruction_data_hex).toBe(hex(c.data));
      expect(ix.accounts).toEqual(c.accountKeyIndexes.map((k) => ({
        account_key: m.accountKeys[k]!.toBase58(), signer: m.isAccountSigner(k), writable: m.isAccountWritable(k),
      })));
      expect(ix.address_table_lookups).toEqual([]);
    });
  });

  it('accounts from a lookup table read ADDRESS_TABLE_LOOKUP, with their writability', () => {
    const payer = key();
    const { tx, table } = v0Tx(payer, true);
    const m = tx.message;
    const view = solanaPolicyView(parseSolanaTransaction(hex(tx.serialize()))) as any;
    const lookup = m.addressTableLookups[0]!;
    const expected = { address_table_key: table.key.toBase58(), writable_indexes: lookup.writableIndexes.map(BigInt), readonly_indexes: lookup.readonlyIndexes.map(BigInt) };
    expect(view.address_table_lookups).toEqual([expected]);
    expect(view.transfers).toEqual([{ from: payer.toBase58(), to: ADDRESS_TABLE_LOOKUP, amount: 42n }]);
    const keys = m.getAccountKeys({ addressLookupTableAccounts: [table] });
    view.instructions.forEach((ix: any, i: number) => {
      const c = m.compiledInstructions[i]!;
      expect(ix.accounts).toEqual(c.accountKeyIndexes.map((k) => ({
        account_key: k < m.staticAccountKeys.length ? keys.get(k)!.toBase58() : ADDRESS_TABLE_LOOKUP,
        signer: m.isAccountSigner(k), writable: m.isAccountWritable(k),
      })));
      expect(ix.address_table_lookups).toEqual([expected]);
    });
  });
});

describe('malformed transactions are refused', () => {
  const good = () => unhex(serializedLegacy(legacyTx(key())));
  const bad = (b: Uint8Array | string) => err(() => parseSolanaTransaction(typeof b === 'string' ? b : hex(b)));

  it('not hex, empty, truncated, trailing bytes', () => {
    expect(bad('zz').code).toBe('INVALID_HEX');
    expect(bad('abc').code).toBe('INVALID_HEX');
    expect(bad('').code).toBe('INVALID_TRANSACTION');
    const g = good();
    for (const n of [1, 30, 65, 70, 100, g.length - 1]) expect(bad(g.subarray(0, n)).code).toBe('INVALID_TRANSACTION');
    const e = bad(Uint8Array.from([...g, 0]));
    expect(e.message).toContain('1 bytes follow the message');
    expect(e.field).toBe('unsignedTransaction');
  });

  it('signature slots that do not match the header; a message alone', () => {
    const g = good();
    const noSlots = Uint8Array.from([0, ...g.subarray(65)]);
    expect(bad(noSlots).message).toContain('0 signature slots');
    // The message without the signature section (what serializeMessage gives) is not a transaction.
    expect(bad(g.subarray(65)).code).toBe('INVALID_TRANSACTION');
  });

  it('non-minimal shortvec, unknown message version, program from a lookup table, index out of range', () => {
    const g = good();
    expect(bad(Uint8Array.from([0x81, 0x00, ...g.subarray(1)])).message).toContain('non-minimal');
    const { tx } = v0Tx(key(), true);
    const v = tx.serialize();
    const v1 = Uint8Array.from(v);
    v1[65] = 0x81;
    expect(bad(v1).message).toContain('version 1');
    // Point the first instruction's program index at the first looked-up account.
    const parsed = parseSolanaTransaction(hex(v));
    const at = 65 + 1 + 3 + 1 + 32 * parsed.staticKeys.length + 32 + 1;
    const viaTable = Uint8Array.from(v);
    viaTable[at] = parsed.staticKeys.length;
    expect(bad(viaTable).message).toContain('comes from an address lookup table');
    viaTable[at] = 250;
    expect(bad(viaTable).message).toContain('out of range');
  });
});
