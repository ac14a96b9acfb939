// sol_send_transaction with several signWiths: every signing key is a policy target.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { base58 } from '@scure/base';
import { startTestServer, submitBody, uniqueName, newP256Key, type TestServer } from '../server/harness.js';
import { SUBMIT } from '../server/checks.js';

const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
let ts: TestServer;

async function newSolanaWallet(name: string): Promise<{ walletId: string; address: string }> {
  const w: any = await ts.sdk.createWallet({ walletName: uniqueName(name), accounts: [{ curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_SOLANA' }] });
  return { walletId: w.walletId, address: w.addresses[0] };
}

beforeAll(async () => {
  // no node is asked: the caller gives the blockhash (the broadcaster's later sends fail, which is not looked at)
  ts = await startTestServer({ rpcUrls: [`solana:devnet=http://127.0.0.1:9`], rpcPollMs: 60_000 } as any);
});
afterAll(async () => { await ts?.stop(); });

describe('sol_send_transaction', () => {
  // guards: a DENY on a signing key's wallet applies whichever place that key has in signWiths
  it('an EFFECT_DENY on the wallet of a signing key applies whichever place that key has in signWiths', async () => {
    const hot = await newSolanaWallet('hot');
    const cold = await newSolanaWallet('cold');
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('bot'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const type = "activity.type == 'ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2'";
    await ts.sdk.createPolicy({ policyName: uniqueName('bot sends'), effect: 'EFFECT_ALLOW', notes: '', consensus: `approvers.any(user, user.id == '${u.userIds[0]}')`, condition: type });
    await ts.sdk.createPolicy({ policyName: uniqueName('cold never'), effect: 'EFFECT_DENY', notes: '', condition: `wallet.id == '${cold.walletId}'` });
    const blockhash = base58.encode(Uint8Array.from({ length: 32 }, (_, i) => i + 1));
    // 5 SOL out of the cold wallet; the hot wallet pays the fee
    const tx = new Transaction({ feePayer: new PublicKey(hot.address), recentBlockhash: blockhash });
    tx.add(SystemProgram.transfer({ fromPubkey: new PublicKey(cold.address), toPubkey: PublicKey.unique(), lamports: 5_000_000_000 }));
    const hex = tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('hex');
    const send = (signWiths: string[]) => ts.raw(SUBMIT('sol_send_transaction'), submitBody('ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2', ts.orgId, { unsignedTransaction: hex, signWiths, caip2: DEVNET, recentBlockhash: blockhash }), { key });
    const coldFirst = await send([cold.address, hot.address]);
    expect(coldFirst.status, coldFirst.text).toBe(403); // the cold key named first: denied
    const coldSecond = await send([hot.address, cold.address]);
    expect(coldSecond.status, `the cold wallet's key signed when named second: ${coldSecond.text.slice(0, 300)}`).toBe(403);
  });
});
