// Solana broadcasting: sol_send_transaction signs a @solana/web3.js transfer with kmas wallet
// accounts and sends it to a Solana JSON-RPC endpoint on loopback. Behind the endpoint runs
// LiteSVM, the Solana runtime in a process: it checks the signatures and the blockhash and moves
// the lamports, so what the test reads back (balances, signature statuses) is the runtime's own
// account of the transaction. The endpoint itself only translates JSON-RPC to LiteSVM calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { LiteSVM, FailedTransactionMetadata } from 'litesvm';
import { address, getTransactionDecoder, lamports, blockhash as kitBlockhash } from '@solana/kit';
import { PublicKey, SystemProgram, Transaction, VersionedTransaction, TransactionMessage } from '@solana/web3.js';
import { base58 } from '@scure/base';
import { startTestServer, submitBody, uniqueName, allActivities, newP256Key, type TestServer } from '../server/harness.js';
import { checkError, expectFieldViolation, SUBMIT } from '../server/checks.js';

const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const ZERO_HASH = base58.encode(new Uint8Array(32));
let svm: LiteSVM;
let rpc: http.Server;
let rpcUrl: string;
let ts: TestServer;
let payer: string; // a kmas wallet account holding 10 SOL
let second: string; // another, co-signing
const seen = new Map<string, { slot: number; err: unknown }>();

/** The JSON-RPC methods kmas calls, answered from LiteSVM. */
function answer(method: string, params: any[]): unknown {
  switch (method) {
    case 'getLatestBlockhash': return { context: { slot: 1 }, value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: 1000 } };
    case 'isBlockhashValid': return { context: { slot: 1 }, value: params[0] === svm.latestBlockhash() };
    case 'getBalance': return { context: { slot: 1 }, value: Number(svm.getBalance(address(params[0])) ?? 0n) };
    case 'getSignatureStatuses': return { context: { slot: 1 }, value: (params[0] as string[]).map((sig) => {
      const s = seen.get(sig);
      return s ? { slot: s.slot, confirmations: null, err: s.err, confirmationStatus: 'finalized' } : null;
    }) };
    case 'sendTransaction': {
      const wire = Buffer.from(params[0], 'base64');
      const tx = getTransactionDecoder().decode(wire);
      const result = svm.sendTransaction(tx);
      if (result instanceof FailedTransactionMetadata) throw Object.assign(new Error(`Transaction simulation failed: ${result.toString().slice(0, 200)}`), { code: -32002 });
      const signature = base58.encode(result.signature());
      seen.set(signature, { slot: seen.size + 10, err: null });
      return signature;
    }
    default: throw Object.assign(new Error(`method ${method} not served`), { code: -32601 });
  }
}

/** A transfer of `amount` lamports from `from` to a fresh address (fee payer: `feePayer`), with a zero blockhash unless given. */
function transfer(from: string, amount: number, feePayer = from, recentBlockhash = ZERO_HASH, to = PublicKey.unique()): { hex: string; to: PublicKey } {
  const tx = new Transaction({ feePayer: new PublicKey(feePayer), recentBlockhash });
  tx.add(SystemProgram.transfer({ fromPubkey: new PublicKey(from), toPubkey: to, lamports: amount }));
  return { hex: tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('hex'), to };
}

async function newSolanaAccount(name: string): Promise<string> {
  const w: any = await ts.sdk.createWallet({ walletName: uniqueName(name), accounts: [{ curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_SOLANA' }] });
  return w.addresses[0];
}

async function until(id: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const s: any = await ts.sdk.getSendTransactionStatus({ sendTransactionStatusId: id } as any);
    if (s.txStatus === 'INCLUDED' || s.txStatus === 'FAILED') return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`transaction ${id} never settled`);
}

beforeAll(async () => {
  svm = new LiteSVM();
  rpc = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { id, method, params } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      let reply: unknown;
      try { reply = { jsonrpc: '2.0', id, result: answer(method, params ?? []) }; } catch (e) {
        reply = { jsonrpc: '2.0', id, error: { code: (e as { code?: number }).code ?? -32000, message: (e as Error).message } };
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => rpc.listen(0, '127.0.0.1', resolve));
  rpcUrl = `http://127.0.0.1:${(rpc.address() as { port: number }).port}`;
  ts = await startTestServer({ rpcUrls: [`solana:devnet=${rpcUrl}`], rpcPollMs: 50 } as any);
  payer = await newSolanaAccount('payer');
  second = await newSolanaAccount('second');
  svm.airdrop(address(payer), lamports(10_000_000_000n));
  svm.airdrop(address(second), lamports(1_000_000_000n));
});
afterAll(async () => { await ts?.stop(); await new Promise<void>((resolve) => rpc?.close(() => resolve())); });

describe('sol_send_transaction', () => {
  it('puts in a fresh blockhash, signs with the kmas account and sends; the runtime moves the lamports', async () => {
    const { hex, to } = transfer(payer, 1_000_000);
    const r: any = await ts.sdk.solSendTransaction({ unsignedTransaction: hex, signWiths: [payer], caip2: 'solana:devnet' } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.activity.intent.solSendTransactionIntentV2.caip2).toBe(DEVNET);
    const done = await until(r.sendTransactionStatusId);
    expect(done.txStatus).toBe('INCLUDED');
    expect(seen.has(done.solana.signature)).toBe(true);
    expect(svm.getBalance(address(to.toBase58()))).toBe(1_000_000n);
  });

  it('two kmas accounts sign one transaction (a co-signed transfer with the caller\'s blockhash)', async () => {
    const blockhash = svm.latestBlockhash();
    const { hex, to } = transfer(second, 2_000_000, payer, blockhash);
    const before = svm.getBalance(address(payer))!;
    const r: any = await ts.sdk.solSendTransaction({ unsignedTransaction: hex, signWiths: [payer, second], caip2: DEVNET, recentBlockhash: blockhash } as any);
    const done = await until(r.sendTransactionStatusId);
    expect(done.txStatus).toBe('INCLUDED');
    expect(svm.getBalance(address(to.toBase58()))).toBe(2_000_000n);
    expect(svm.getBalance(address(payer))).toBeLessThan(before); // the fee payer paid the fee
  });

  it('a v0 transaction works too', async () => {
    const to = PublicKey.unique();
    const message = new TransactionMessage({ payerKey: new PublicKey(payer), recentBlockhash: ZERO_HASH, instructions: [SystemProgram.transfer({ fromPubkey: new PublicKey(payer), toPubkey: to, lamports: 3_000_000 })] }).compileToV0Message();
    const hex = Buffer.from(new VersionedTransaction(message).serialize()).toString('hex');
    const r: any = await ts.sdk.solSendTransaction({ unsignedTransaction: hex, signWiths: [payer], caip2: DEVNET } as any);
    expect((await until(r.sendTransactionStatusId)).txStatus).toBe('INCLUDED');
    expect(svm.getBalance(address(to.toBase58()))).toBe(3_000_000n);
  });

  it('a transaction the runtime refuses (more lamports than the account has) is FAILED with its reason', async () => {
    const { hex, to } = transfer(second, 50_000_000_000);
    const r: any = await ts.sdk.solSendTransaction({ unsignedTransaction: hex, signWiths: [second], caip2: DEVNET } as any);
    const done = await until(r.sendTransactionStatusId);
    expect(done.txStatus).toBe('FAILED');
    expect(done.error.message).toMatch(/refused/);
    expect(svm.getBalance(address(to.toBase58()))).toBeNull();
  });

  it('policies read the transaction with the blockhash kmas puts in, not the zeros it was given', async () => {
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('sol bot'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const bot = u.userIds[0] as string;
    const type = "activity.type == 'ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2'";
    const allow: any = await ts.sdk.createPolicy({ policyName: uniqueName('sol sends'), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(user, user.id == '${bot}')`, condition: type });
    // the blockhash the endpoint will hand out next, which kmas puts in for the all-zero one
    const deny: any = await ts.sdk.createPolicy({ policyName: uniqueName('no fresh'), effect: 'EFFECT_DENY', notes: '', condition: `${type} && solana.tx.recent_blockhash == '${svm.latestBlockhash()}'` });
    try {
      const { hex, to } = transfer(payer, 1_000_000);
      const send = () => ts.raw(SUBMIT('sol_send_transaction'), submitBody('ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2', ts.orgId, { unsignedTransaction: hex, signWiths: [payer], caip2: DEVNET }), { key });
      const count = (await allActivities(ts)).length;
      checkError(await send(), 403, 'denied on the blockhash kmas would put in');
      expect((await allActivities(ts)).length).toBe(count);
      await ts.sdk.deletePolicy({ policyId: deny.policyId });
      const ok = await send();
      expect(ok.status, ok.text).toBe(200);
      expect((await until(ok.json.activity.result.solSendTransactionResultV2.sendTransactionStatusId)).txStatus).toBe('INCLUDED');
      expect(svm.getBalance(address(to.toBase58()))).toBe(1_000_000n);
    } finally {
      await ts.sdk.deletePolicy({ policyId: allow.policyId });
      await ts.sdk.deletePolicy({ policyId: deny.policyId }).catch(() => undefined);
    }
  });

  it('refuses what it cannot sign or send, with a 400 naming the field, and stores nothing', async () => {
    const other = await newSolanaAccount('bystander');
    const evm: any = await ts.sdk.createWallet({ walletName: uniqueName('evm'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] });
    const { hex } = transfer(payer, 1);
    const coSigned = transfer(second, 1, payer).hex;
    const count = (await allActivities(ts)).length;
    const cases: [Record<string, unknown>, string][] = [
      [{ unsignedTransaction: hex, signWiths: [other], caip2: DEVNET }, 'signWiths[0]'],
      [{ unsignedTransaction: hex, signWiths: [evm.addresses[0]], caip2: DEVNET }, 'signWiths[0]'],
      [{ unsignedTransaction: hex, signWiths: [], caip2: DEVNET }, 'signWiths'],
      [{ unsignedTransaction: hex, signWiths: [payer, payer], caip2: DEVNET }, 'signWiths'],
      [{ unsignedTransaction: coSigned, signWiths: [payer], caip2: DEVNET }, 'signWiths'],
      [{ unsignedTransaction: 'deadbeef', signWiths: [payer], caip2: DEVNET }, 'unsignedTransaction'],
      [{ unsignedTransaction: hex, signWiths: [payer], caip2: 'solana:mainnet' }, 'caip2'],
      [{ unsignedTransaction: hex, signWiths: [payer], caip2: 'eip155:1' }, 'caip2'],
      [{ unsignedTransaction: hex, signWiths: [payer], caip2: DEVNET, sponsor: true }, 'sponsor'],
      [{ unsignedTransaction: hex, signWiths: [payer], caip2: DEVNET, recentBlockhash: 'not-base58!' }, 'recentBlockhash'],
    ];
    for (const [params, field] of cases) {
      const r = await ts.raw(SUBMIT('sol_send_transaction'), submitBody('ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2', ts.orgId, params));
      checkError(r, 400, JSON.stringify(params).slice(0, 120));
      expectFieldViolation(r, field);
    }
    expect((await allActivities(ts)).length).toBe(count);
  });

  it('get_wallet_address_balances and list_supported_assets: a Solana wallet account\'s lamports, as the runtime holds them', async () => {
    const b: any = await ts.sdk.getWalletAddressBalances({ address: second, caip2: 'solana:devnet' } as any);
    const held = svm.getBalance(address(second))!;
    expect(b.balances).toEqual([{ caip19: `${DEVNET}/slip44:501`, symbol: 'SOL', name: 'Solana', balance: held.toString(), decimals: 9, display: { crypto: String(Number(held) / 1e9) } }]);
    const a: any = await ts.sdk.listSupportedAssets({ caip2: DEVNET } as any);
    expect(a.assets).toEqual([{ caip19: `${DEVNET}/slip44:501`, symbol: 'SOL', name: 'Solana', decimals: 9, stable: false }]);
  });

  it('a blockhash that has expired by the time the transaction is sent makes it FAILED', async () => {
    const blockhash = svm.latestBlockhash();
    svm.expireBlockhash();
    const { hex } = transfer(payer, 1, payer, kitBlockhash(blockhash));
    const r: any = await ts.sdk.solSendTransaction({ unsignedTransaction: hex, signWiths: [payer], caip2: DEVNET } as any);
    const done = await until(r.sendTransactionStatusId);
    expect(done.txStatus).toBe('FAILED');
    expect(done.error.message).toMatch(/refused.*(blockhash|Blockhash)/i);
  });
});
