// Solana through the API with the real clients: @turnkey/solana's TurnkeySigner (on an
// @turnkey/sdk-server client and on an @turnkey/http client) signs legacy and v0 transactions
// with TRANSACTION_TYPE_SOLANA and through sign_raw_payload(s); @solana/web3.js and
// @noble/curves verify every signature. Bad requests are refused before anything is stored, and
// `solana.tx` policies decide what a non-root user may sign.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  AddressLookupTableAccount, Keypair, PublicKey, SystemProgram, Transaction, TransactionMessage, VersionedTransaction,
} from '@solana/web3.js';
import { createTransferInstruction } from '@solana/spl-token';
import { TurnkeySigner } from '@turnkey/solana';
import { serializeTransaction } from 'viem';
import {
  startTestServer, newP256Key, submitBody, httpClient, uniqueName, allActivities, type TestServer,
} from '../server/harness.js';
import { checkError, expectFieldViolation, checkAwaitsConsensus, SUBMIT } from '../server/checks.js';

let ts: TestServer;
let walletAddress: string;   // a wallet account, ADDRESS_FORMAT_SOLANA
let keyAddress: string;      // a CURVE_ED25519 private key with a Solana address
let keyId: string;
let ethKeyId: string;

const blockhash = () => Keypair.generate().publicKey.toBase58();

function transferTx(from: string, to: PublicKey, lamports: number | bigint, feePayer = from): Transaction {
  const tx = new Transaction({ feePayer: new PublicKey(feePayer), recentBlockhash: blockhash() });
  tx.add(SystemProgram.transfer({ fromPubkey: new PublicKey(from), toPubkey: to, lamports }));
  return tx;
}

const hexOf = (tx: Transaction) => Buffer.from(tx.serialize({ requireAllSignatures: false, verifySignatures: false })).toString('hex');

beforeAll(async () => {
  ts = await startTestServer();
  const w: any = await ts.sdk.createWallet({
    walletName: uniqueName('sol'),
    accounts: [{ curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_SOLANA' }],
  });
  walletAddress = w.addresses[0];
  const k: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('solkey'), curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_SOLANA'] }] } as any);
  keyId = k.privateKeys[0].privateKeyId;
  keyAddress = k.privateKeys[0].addresses[0].address;
  const e: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('eth'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
  ethKeyId = e.privateKeys[0].privateKeyId;
});
afterAll(async () => { await ts?.stop(); });

describe('TurnkeySigner (@turnkey/solana) against kmas', () => {
  it('signTransaction on an sdk-server client: a legacy transfer from a wallet account, verified by web3.js', async () => {
    const signer = new TurnkeySigner({ organizationId: ts.orgId, client: ts.sdk as any });
    const tx = transferTx(walletAddress, Keypair.generate().publicKey, 1_500_000_000n);
    const signed = await signer.signTransaction(tx, walletAddress) as Transaction;
    expect(signed.verifySignatures(true)).toBe(true);
    expect(signed.signatures[0]!.publicKey.toBase58()).toBe(walletAddress);
    expect(ed25519.verify(signed.signatures[0]!.signature!, signed.serializeMessage(), new PublicKey(walletAddress).toBytes())).toBe(true);
    expect(Buffer.from(signed.serializeMessage()).toString('hex')).toBe(Buffer.from(tx.serializeMessage()).toString('hex'));
    // The stored activity carries the request and the signed transaction.
    const acts = await allActivities(ts);
    const a = acts.find((x: any) => x.type === 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' && x.intent.signTransactionIntentV2.signWith === walletAddress);
    expect(a.intent.signTransactionIntentV2.type).toBe('TRANSACTION_TYPE_SOLANA');
    expect(a.result.signTransactionResult.signedTransaction).toBe(Buffer.from(signed.serialize()).toString('hex'));
  });

  it('signTransaction on an @turnkey/http client: a v0 transaction with a lookup table, signed by a private key', async () => {
    const signer = new TurnkeySigner({ organizationId: ts.orgId, client: httpClient(ts.url, ts.rootKey) as any });
    const tableKeys = [Keypair.generate().publicKey, Keypair.generate().publicKey];
    const table = new AddressLookupTableAccount({ key: Keypair.generate().publicKey, state: { deactivationSlot: BigInt('18446744073709551615'), lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, authority: undefined, addresses: tableKeys } });
    const message = new TransactionMessage({
      payerKey: new PublicKey(keyAddress), recentBlockhash: blockhash(),
      instructions: [SystemProgram.transfer({ fromPubkey: new PublicKey(keyAddress), toPubkey: tableKeys[0]!, lamports: 99 })],
    }).compileToV0Message([table]);
    const tx = new VersionedTransaction(message);
    const signed = await signer.signTransaction(tx, keyAddress) as VersionedTransaction;
    expect(signed.version).toBe(0);
    expect(signed.message.addressTableLookups).toHaveLength(1);
    expect(ed25519.verify(signed.signatures[0]!, signed.message.serialize(), new PublicKey(keyAddress).toBytes())).toBe(true);
    // by id as well as by address
    const byId: any = await ts.sdk.signTransaction({ signWith: keyId, type: 'TRANSACTION_TYPE_SOLANA', unsignedTransaction: Buffer.from(tx.serialize()).toString('hex') });
    expect(byId.signedTransaction).toBe(Buffer.from(signed.serialize()).toString('hex'));
  });

  it('two kmas keys sign one transaction in turn (fee payer and sender); web3.js verifies both', async () => {
    const signer = new TurnkeySigner({ organizationId: ts.orgId, client: ts.sdk as any });
    const tx = transferTx(walletAddress, Keypair.generate().publicKey, 5, keyAddress);
    const once = await signer.signTransaction(tx, walletAddress) as Transaction;
    expect(once.verifySignatures(true)).toBe(false);
    expect(once.verifySignatures(false)).toBe(true);
    const twice = await signer.signTransaction(once, keyAddress) as Transaction;
    expect(twice.signatures.map((s) => s.publicKey.toBase58())).toEqual([keyAddress, walletAddress]);
    expect(twice.verifySignatures(true)).toBe(true);
  });

  it('addSignature, signAllTransactions and signMessage (sign_raw_payload(s), HASH_FUNCTION_NOT_APPLICABLE)', async () => {
    const signer = new TurnkeySigner({ organizationId: ts.orgId, client: ts.sdk as any });
    const one = transferTx(walletAddress, Keypair.generate().publicKey, 7);
    await signer.addSignature(one, walletAddress);
    expect(one.verifySignatures(true)).toBe(true);
    const many = [1, 2, 3].map((n) => transferTx(keyAddress, Keypair.generate().publicKey, n));
    await signer.signAllTransactions(many, keyAddress);
    for (const t of many) expect(t.verifySignatures(true)).toBe(true);
    const text = new TextEncoder().encode('kmas signs Solana messages');
    const sig = await signer.signMessage(text, walletAddress);
    expect(ed25519.verify(sig, text, new PublicKey(walletAddress).toBytes())).toBe(true);
  });
});

describe('bad sign_transaction requests are refused and store nothing', () => {
  const attempt = async (parameters: Record<string, unknown>) => {
    const before = (await allActivities(ts)).length;
    const r = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, parameters));
    expect((await allActivities(ts)).length, 'nothing stored').toBe(before);
    return r;
  };

  it('a key that is not a signer of the transaction', async () => {
    const tx = transferTx(walletAddress, Keypair.generate().publicKey, 1);
    const r = await attempt({ signWith: keyAddress, type: 'TRANSACTION_TYPE_SOLANA', unsignedTransaction: hexOf(tx) });
    checkError(r, 400, 'not a signer');
    expectFieldViolation(r, 'signWith');
    expect(r.json.message).toContain('required signers');
  });

  it('a secp256k1 key for a Solana transaction; an Ed25519 key for an Ethereum one', async () => {
    const tx = transferTx(walletAddress, Keypair.generate().publicKey, 1);
    const r = await attempt({ signWith: ethKeyId, type: 'TRANSACTION_TYPE_SOLANA', unsignedTransaction: hexOf(tx) });
    checkError(r, 400, 'secp256k1 key');
    expect(r.json.message).toContain('CURVE_ED25519');
    const eth = serializeTransaction({ chainId: 1, nonce: 0, gasPrice: 1n, gas: 21000n, to: '0x000000000000000000000000000000000000dead', value: 1n });
    const e = await attempt({ signWith: keyId, type: 'TRANSACTION_TYPE_ETHEREUM', unsignedTransaction: eth });
    checkError(e, 400, 'ed25519 key, ethereum transaction');
    expect(e.json.message).toContain('CURVE_SECP256K1');
  });

  it('bytes that are not a Solana transaction; a message without its signature section; an unsupported type', async () => {
    const tx = transferTx(walletAddress, Keypair.generate().publicKey, 1);
    for (const unsignedTransaction of ['nothex', 'deadbeef', Buffer.from(tx.serializeMessage()).toString('hex'), hexOf(tx) + '00']) {
      const r = await attempt({ signWith: walletAddress, type: 'TRANSACTION_TYPE_SOLANA', unsignedTransaction });
      checkError(r, 400, unsignedTransaction.slice(0, 16));
      expectFieldViolation(r, 'unsignedTransaction');
    }
    const tempo = await attempt({ signWith: walletAddress, type: 'TRANSACTION_TYPE_TEMPO', unsignedTransaction: hexOf(tx) });
    checkError(tempo, 400, 'tempo');
    expectFieldViolation(tempo, 'type');
  });
});

describe('solana.tx policies', () => {
  it('a non-root user signs transfers to the allowed address at once; others wait; an explicit deny refuses', async () => {
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('sol-bot'), apiKeys: [{ apiKeyName: 'bot', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const botId = u.userIds[0];
    const allowedTo = Keypair.generate().publicKey;
    const src = Keypair.generate().publicKey;
    const allow: any = await ts.sdk.createPolicy({
      policyName: uniqueName('sol allow'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${botId}')`,
      condition: `solana.tx.transfers.count == 1 && solana.tx.transfers.all(t, t.to == '${allowedTo.toBase58()}' && t.amount <= 1000000000) && solana.tx.program_keys.all(p, p == '11111111111111111111111111111111')`,
    });
    const deny: any = await ts.sdk.createPolicy({
      policyName: uniqueName('sol deny'), effect: 'EFFECT_DENY', notes: '', consensus: '',
      condition: `solana.tx.spl_transfers.any(t, t.owner == '${walletAddress}' && t.amount > 1000)`,
    });

    // the @turnkey/http client does not poll, so an activity awaiting consensus comes back at once
    const signer = new TurnkeySigner({ organizationId: ts.orgId, client: httpClient(ts.url, key) as any });
    const ok = await signer.signTransaction(transferTx(walletAddress, allowedTo, 1_000_000_000n), walletAddress) as Transaction;
    expect(ok.verifySignatures(true)).toBe(true);

    // too much, or to another address: stored, awaiting consensus
    for (const [to, lamports] of [[allowedTo, 1_000_000_001n], [Keypair.generate().publicKey, 1n]] as const) {
      const r = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId,
        { signWith: walletAddress, type: 'TRANSACTION_TYPE_SOLANA', unsignedTransaction: hexOf(transferTx(walletAddress, to, lamports)) }), { key });
      checkAwaitsConsensus(r, `${lamports} lamports`);
    }
    // the TurnkeySigner surfaces the wait as an error, and the root user's approval signs it
    const err: any = await signer.signTransaction(transferTx(walletAddress, Keypair.generate().publicKey, 3), walletAddress).then(() => undefined, (e: unknown) => e);
    // (thrown by @turnkey/solana's own copy of @turnkey/http, hence the name rather than instanceof)
    expect(err?.constructor?.name).toBe('TurnkeyActivityConsensusNeededError');
    expect(err.activityStatus).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    const pending: any = await ts.sdk.getActivity({ activityId: err.activityId });
    const approved: any = await ts.sdk.approveActivity({ fingerprint: pending.activity.fingerprint });
    expect(approved.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const signed = Transaction.from(Buffer.from(approved.signTransactionResult.signedTransaction, 'hex'));
    expect(signed.verifySignatures(true)).toBe(true);

    // an SPL transfer owned by the wallet above the limit: denied outright, nothing stored
    const spl = new Transaction({ feePayer: new PublicKey(walletAddress), recentBlockhash: blockhash() });
    spl.add(createTransferInstruction(src, Keypair.generate().publicKey, new PublicKey(walletAddress), 5000n));
    const before = (await allActivities(ts)).length;
    const denied = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId,
      { signWith: walletAddress, type: 'TRANSACTION_TYPE_SOLANA', unsignedTransaction: hexOf(spl) }), { key });
    checkError(denied, 403, 'deny');
    expect(denied.json).toEqual({ code: 7, message: 'policy engine denied request explicitly', details: [] });
    expect((await allActivities(ts)).length).toBe(before);
    await ts.sdk.deletePolicies({ policyIds: [allow.policyId, deny.policyId] } as any);
  });
});
