// A DENY policy must see what is signed. The policy views of a sign request (policy/scope.ts,
// policy/ethViews.ts, chains/solana.ts) read a payload as the signer and the chain read it:
// EIP-712 ints as viem encodes them (BigInt of the JSON value: "0X10", " 10" and 1e21 included),
// an EIP-7702 authorization's `contractAddress` as its address, Solana transfers whose instruction
// data carries bytes after its fields (the programs ignore them). What a view still cannot read is
// refused before any policy is decided, not signed past the policies. Independent truth: viem's
// typed-data digest (the same for "0X10" as for 16), @solana/web3.js and @solana/spl-token
// building the transactions.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keypair, SystemProgram, Transaction, TransactionInstruction } from '@solana/web3.js';
import { createTransferInstruction } from '@solana/spl-token';
import { decide } from '../../src/policy/decide.js';
import { conditionScope, type PolicyTargets } from '../../src/policy/scope.js';
import { typedDataDigest, authorizationDigest } from '../../src/chains/ethereum.js';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import type { Db, OrganizationRow, PolicyRow } from '../../src/storage/types.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-views-'));
const db: Db = openSqliteDb(path.join(dir, 'db.sqlite'), { synchronous: 'OFF' });
afterAll(async () => { await db.close(); fs.rmSync(dir, { recursive: true, force: true }); });

const organization = { id: 'o', name: 'o', parentId: null, rootQuorumThreshold: 1, createdMs: 0 } as unknown as OrganizationRow;
const policy = (id: string, effect: string, condition: string) => ({ id, organizationId: 'o', name: id, effect, condition, consensus: '', time: '', notes: '', createdMs: 0, updatedMs: 0 }) as unknown as PolicyRow;

/** The outcome for a non-root user under a DENY with `condition` and an ALLOW of every signing. */
async function outcome(condition: string, type: string, targets: PolicyTargets): Promise<string> {
  const scope = await db.read((tx) => conditionScope(tx, 'o', type, targets));
  const policies = [policy('deny', 'EFFECT_DENY', condition), policy('allow', 'EFFECT_ALLOW', "activity.action == 'SIGN'")];
  return decide({ organization, policies, approvers: [{ user: { id: 'u', isRoot: false }, value: { id: 'u' } }], credentials: [], condition: scope, selfService: false, nowMs: 0 } as never).outcome;
}
const RAW = 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2';
const EVIL = '0x00000000000000000000000000000000000000aa';
const permit = (value: unknown, chainId: unknown = 1) => JSON.stringify({
  types: { Permit: [{ name: 'spender', type: 'address' }, { name: 'value', type: 'uint256' }] },
  primaryType: 'Permit',
  domain: { name: 'USDC', chainId, verifyingContract: EVIL },
  message: { spender: EVIL, value },
});
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('EIP-712: every value form the signer takes is one the policies see', () => {
  const deny = `eth.eip_712.domain.verifying_contract == '${EVIL}' && eth.eip_712.message.value > 0`;
  for (const [label, payload, same] of [
    ['a plain number (the control)', permit(16), permit(16)],
    ['"0X10"', permit('0X10'), permit(16)],
    ['" 10"', permit(' 10'), permit(10)],
    ['1e21 as a JSON number', permit(1e21), permit('1000000000000000000000')],
    ['a chainId of 1e20', permit(1, 1e20), permit(1, '100000000000000000000')],
  ] as const) {
    it(`${label}: the signer reads it as the canonical form does, and the DENY fires`, async () => {
      expect(hex(typedDataDigest(payload))).toBe(hex(typedDataDigest(same)));
      expect(await outcome(deny, RAW, { typedData: payload })).toBe('OUTCOME_DENY_EXPLICIT');
    });
  }

  it('typed data the policies cannot read by its types (a number for a string) is refused, though viem would sign it', async () => {
    const odd = JSON.stringify({ types: { M: [{ name: 'note', type: 'string' }] }, primaryType: 'M', domain: { name: 'x' }, message: { note: 5 } });
    expect(typedDataDigest(odd)).toHaveLength(32);
    await expect(outcome(`eth.eip_712.primary_type == 'M'`, RAW, { typedData: odd })).rejects.toMatchObject({ code: 3, message: expect.stringContaining('EIP-712 typed data cannot be read') });
  });
});

describe('EIP-7702: the address the signer signs is the one the policies see', () => {
  it('{contractAddress, chainId, nonce}: the DENY on eth.eip_7702_authorization.address fires', async () => {
    const payload = JSON.stringify({ contractAddress: EVIL, chainId: 1, nonce: 0 });
    expect(hex(authorizationDigest(payload))).toBe(hex(authorizationDigest(JSON.stringify({ address: EVIL, chainId: 1, nonce: 0 }))));
    expect(await outcome(`eth.eip_7702_authorization.address == '${EVIL}'`, RAW, { authorization: payload })).toBe('OUTCOME_DENY_EXPLICIT');
  });
});

describe('Solana: a transfer whose instruction data carries a byte after its fields is still a transfer', () => {
  const hexOf = (tx: Transaction) => Buffer.from(tx.serialize({ requireAllSignatures: false, verifySignatures: false })).toString('hex');
  const padded = (ix: TransactionInstruction) => new TransactionInstruction({ programId: ix.programId, keys: ix.keys, data: Buffer.concat([ix.data, Buffer.from([0])]) });
  const SOL = 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2';
  it('system Transfer (13 bytes of data): solana.tx.transfers names it', async () => {
    const payer = Keypair.generate().publicKey;
    const to = Keypair.generate().publicKey;
    const ix = SystemProgram.transfer({ fromPubkey: payer, toPubkey: to, lamports: 1_000_000_000n });
    for (const data of [ix, padded(ix)]) {
      const tx = new Transaction({ feePayer: payer, recentBlockhash: Keypair.generate().publicKey.toBase58() }).add(data);
      expect(await outcome(`solana.tx.transfers.any(t, t.to == '${to.toBase58()}')`, SOL, { solanaTransaction: hexOf(tx) })).toBe('OUTCOME_DENY_EXPLICIT');
    }
  });
  it('SPL Transfer (10 bytes of data): solana.tx.spl_transfers names it', async () => {
    const payer = Keypair.generate().publicKey;
    const [src, dst] = [Keypair.generate().publicKey, Keypair.generate().publicKey];
    const ix = createTransferInstruction(src, dst, payer, 5_000n);
    for (const data of [ix, padded(ix)]) {
      const tx = new Transaction({ feePayer: payer, recentBlockhash: Keypair.generate().publicKey.toBase58() }).add(data);
      expect(await outcome(`solana.tx.spl_transfers.any(t, t.to == '${dst.toBase58()}')`, SOL, { solanaTransaction: hexOf(tx) })).toBe('OUTCOME_DENY_EXPLICIT');
    }
  });
});
