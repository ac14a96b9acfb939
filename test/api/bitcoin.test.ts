// Bitcoin through the API: bitcoinjs-lib (an implementation independent of the @scure/btc-signer
// kmas uses) builds PSBTs spending outputs of kmas keys; sign_transaction
// (TRANSACTION_TYPE_BITCOIN) returns the PSBT with signatures that bitcoinjs-lib validates against
// its own sighashes (checked with @noble/curves), finalizes and extracts. Inputs of other keys are
// left alone; bad PSBTs are refused; `bitcoin.tx` policies see outputs and the fee.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { Psbt, Transaction, address as btcAddress, initEccLib, networks } from 'bitcoinjs-lib';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { startTestServer, newP256Key, submitBody, uniqueName, allActivities, type TestServer, type RawKey } from '../server/harness.js';
import { checkAwaitsConsensus, checkError, expectFieldViolation, SUBMIT } from '../server/checks.js';

const NET = networks.testnet;

// bitcoinjs-lib's Taproot support wants an EC library; these two operations are what it uses, on @noble/curves
const big = (b: Uint8Array) => BigInt('0x' + (Buffer.from(b).toString('hex') || '0'));
initEccLib({
  isXOnlyPoint: (p: Uint8Array) => { try { return p.length === 32 && !!schnorr.utils.lift_x(big(p)); } catch { return false; } },
  xOnlyPointAddTweak: (p: Uint8Array, tweak: Uint8Array) => {
    const t = big(tweak);
    if (t >= secp256k1.Point.Fn.ORDER) return null;
    const q = schnorr.utils.lift_x(big(p)).add(t === 0n ? secp256k1.Point.ZERO : secp256k1.Point.BASE.multiply(t));
    if (q.equals(secp256k1.Point.ZERO)) return null;
    const a = q.toAffine();
    return { parity: Number(a.y & 1n) as 0 | 1, xOnlyPubkey: Uint8Array.from(Buffer.from(a.x.toString(16).padStart(64, '0'), 'hex')) };
  },
} as any);
let ts: TestServer;
let wpkh: { address: string; publicKey: string };
let pkh: { address: string; publicKey: string };
let bot: { id: string; key: RawKey };
const STRANGER = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx';

async function account(path: string, addressFormat: string) {
  const w: any = await ts.sdk.createWallet({ walletName: uniqueName('btc'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: addressFormat as any }] });
  const a: any = await ts.sdk.getWalletAccount({ walletId: w.walletId, address: w.addresses[0] } as any);
  return { address: w.addresses[0] as string, publicKey: a.account.publicKey as string };
}

/** A previous transaction paying `value` to each address, and a PSBT spending all its outputs to `to`. */
function psbtSpending(payees: { address: string; value: bigint }[], to: { address: string; value: bigint }[], opts: { witnessOnly?: boolean } = {}): Psbt {
  const prev = new Transaction();
  prev.version = 2;
  prev.addInput(Buffer.alloc(32, 7), 0);
  for (const p of payees) prev.addOutput(btcAddress.toOutputScript(p.address, NET), p.value);
  const psbt = new Psbt({ network: NET });
  payees.forEach((p, i) => {
    const script = btcAddress.toOutputScript(p.address, NET);
    const segwit = script[0] === 0x00 || script[0] === 0x51; // v0 or v1 (taproot) witness program
    psbt.addInput({
      hash: prev.getId(), index: i,
      ...(segwit ? { witnessUtxo: { script, value: p.value } } : {}),
      ...(segwit && opts.witnessOnly ? {} : { nonWitnessUtxo: prev.toBuffer() }),
    });
  });
  for (const o of to) psbt.addOutput({ address: o.address, value: o.value });
  return psbt;
}

const validator = (pubkey: Uint8Array, msghash: Uint8Array, signature: Uint8Array) => secp256k1.verify(signature, msghash, pubkey, { prehash: false, format: 'compact' });

beforeAll(async () => {
  ts = await startTestServer();
  wpkh = await account("m/84'/1'/0'/0/0", 'ADDRESS_FORMAT_BITCOIN_TESTNET_P2WPKH');
  pkh = await account("m/44'/1'/0'/0/0", 'ADDRESS_FORMAT_BITCOIN_TESTNET_P2PKH');
  const key = newP256Key();
  const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('btc-bot'), apiKeys: [{ apiKeyName: 'b', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  bot = { id: u.userIds[0], key };
});
afterAll(async () => { await ts?.stop(); });

describe('TRANSACTION_TYPE_BITCOIN', () => {
  it('P2WPKH and P2PKH: signatures bitcoinjs-lib validates, finalizes and extracts', async () => {
    for (const acct of [wpkh, pkh]) {
      const psbt = psbtSpending([{ address: acct.address, value: 100_000n }], [{ address: STRANGER, value: 90_000n }]);
      const r: any = await ts.sdk.signTransaction({ signWith: acct.address, unsignedTransaction: psbt.toHex(), type: 'TRANSACTION_TYPE_BITCOIN' });
      expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      const signed = Psbt.fromHex(r.signedTransaction, { network: NET });
      expect(signed.data.inputs[0]!.partialSig?.map((p) => Buffer.from(p.pubkey).toString('hex'))).toEqual([acct.publicKey]);
      expect(signed.validateSignaturesOfAllInputs(validator)).toBe(true);
      signed.finalizeAllInputs();
      const tx = signed.extractTransaction();
      expect(tx.outs.map((o) => btcAddress.fromOutputScript(o.script, NET))).toEqual([STRANGER]);
      // the PSBT is also accepted as base64
      const b64: any = await ts.sdk.signTransaction({ signWith: acct.address, unsignedTransaction: psbt.toBase64(), type: 'TRANSACTION_TYPE_BITCOIN' });
      expect(b64.signedTransaction).toBe(r.signedTransaction);
    }
  });

  it('P2TR key path (BIP-86): a Schnorr signature bitcoinjs-lib validates and finalizes', async () => {
    const tr = await account("m/86'/1'/0'/0/0", 'ADDRESS_FORMAT_BITCOIN_TESTNET_P2TR');
    const psbt = psbtSpending([{ address: tr.address, value: 70_000n }], [{ address: STRANGER, value: 60_000n }], { witnessOnly: true });
    // taproot inputs carry witness_utxo only (BIP-341 commits to every input's amount)
    expect(psbt.data.inputs[0]!.nonWitnessUtxo).toBeUndefined();
    const r: any = await ts.sdk.signTransaction({ signWith: tr.address, unsignedTransaction: psbt.toHex(), type: 'TRANSACTION_TYPE_BITCOIN' });
    const signed = Psbt.fromHex(r.signedTransaction, { network: NET });
    expect(signed.data.inputs[0]!.tapKeySig).toHaveLength(64);
    expect(Buffer.from(signed.data.inputs[0]!.tapInternalKey!).toString('hex')).toBe(tr.publicKey.slice(2));
    expect(signed.validateSignaturesOfAllInputs((pubkey, msghash, signature) => schnorr.verify(signature, msghash, pubkey))).toBe(true);
    signed.finalizeAllInputs();
    expect(signed.extractTransaction().ins[0]!.witness).toHaveLength(1);
  });

  it('signs only the inputs the key controls; another key\'s input stays unsigned', async () => {
    const psbt = psbtSpending([{ address: wpkh.address, value: 50_000n }, { address: pkh.address, value: 60_000n }], [{ address: STRANGER, value: 100_000n }]);
    const r: any = await ts.sdk.signTransaction({ signWith: wpkh.address, unsignedTransaction: psbt.toHex(), type: 'TRANSACTION_TYPE_BITCOIN' });
    const once = Psbt.fromHex(r.signedTransaction, { network: NET });
    expect(once.data.inputs[0]!.partialSig).toHaveLength(1);
    expect(once.data.inputs[1]!.partialSig ?? []).toHaveLength(0);
    const r2: any = await ts.sdk.signTransaction({ signWith: pkh.address, unsignedTransaction: r.signedTransaction, type: 'TRANSACTION_TYPE_BITCOIN' });
    const both = Psbt.fromHex(r2.signedTransaction, { network: NET });
    expect(both.validateSignaturesOfAllInputs(validator)).toBe(true);
    both.finalizeAllInputs();
    expect(both.extractTransaction().ins).toHaveLength(2);
  });

  it('refuses a PSBT the key has no input in, a SegWit input without its previous transaction, and garbage; stores nothing', async () => {
    const before = (await allActivities(ts)).length;
    const attempt = (signWith: string, unsignedTransaction: string) => ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith, unsignedTransaction, type: 'TRANSACTION_TYPE_BITCOIN' }));
    const notMine = await attempt(wpkh.address, psbtSpending([{ address: pkh.address, value: 1000n }], [{ address: STRANGER, value: 500n }]).toHex());
    checkError(notMine, 400, 'no input of the key');
    expectFieldViolation(notMine, 'signWith');
    const witnessOnly = await attempt(wpkh.address, psbtSpending([{ address: wpkh.address, value: 1000n }], [{ address: STRANGER, value: 500n }], { witnessOnly: true }).toHex());
    checkError(witnessOnly, 400, 'witness_utxo only');
    expect(witnessOnly.json.message).toContain('non_witness_utxo');
    for (const bad of ['70736274ff', 'deadbeef', 'not a psbt!']) {
      const r = await attempt(wpkh.address, bad);
      checkError(r, 400, bad);
      expectFieldViolation(r, 'unsignedTransaction');
    }
    expect((await allActivities(ts)).length).toBe(before);
  });

  it('bitcoin.tx policies: outputs to one address under a fee cap are signed at once; others wait', async () => {
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('btc payouts'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${bot.id}')`,
      condition: `bitcoin.tx.outputs.all(o, o.address == '${STRANGER}' && o.address_type == 'P2WPKH') && bitcoin.tx.fee <= 10000 && bitcoin.tx.inputs.count() == 1`,
    });
    const sign = (psbt: Psbt) => ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: wpkh.address, unsignedTransaction: psbt.toHex(), type: 'TRANSACTION_TYPE_BITCOIN' }), { key: bot.key });
    const ok = await sign(psbtSpending([{ address: wpkh.address, value: 100_000n }], [{ address: STRANGER, value: 90_000n }]));
    expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(Psbt.fromHex(ok.json.activity.result.signTransactionResult.signedTransaction, { network: NET }).validateSignaturesOfAllInputs(validator)).toBe(true);
    checkAwaitsConsensus(await sign(psbtSpending([{ address: wpkh.address, value: 100_000n }], [{ address: STRANGER, value: 80_000n }])), 'fee 20000');
    checkAwaitsConsensus(await sign(psbtSpending([{ address: wpkh.address, value: 100_000n }], [{ address: pkh.address, value: 95_000n }])), 'another address');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });
});
