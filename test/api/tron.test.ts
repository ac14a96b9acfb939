// Tron through the API, as Turnkey's TronWeb example does it: TronWeb serializes the transaction,
// @turnkey/sdk-server's signTransaction (TRANSACTION_TYPE_TRON) signs its raw_data_hex with a
// wallet account's key, and the reply is the signed Transaction protobuf that
// trx.sendHexTransaction broadcasts. TronWeb decodes it and recovers the signer; `tron.tx`
// policies decide what a non-root user may sign.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { TronWeb, utils as tronUtils } from 'tronweb';
import { startTestServer, newP256Key, submitBody, uniqueName, allActivities, type TestServer, type RawKey } from '../server/harness.js';
import { checkAwaitsConsensus, checkError, expectFieldViolation, SUBMIT } from '../server/checks.js';

const require = createRequire(import.meta.url);
const { Transaction } = require(join(dirname(require.resolve('tronweb')), 'protocol/core/Tron_pb.cjs'));

let ts: TestServer;
let account: string; // a wallet account, ADDRESS_FORMAT_TRON
let bot: { id: string; key: RawKey };
const TO = 'TVDGpn4hCSzJ5nkHPLetk8KQBtwaTppnkr';

function unsignedTransfer(from: string, amount: number, to = TO): { raw: string; txID: string } {
  const json = { visible: false, raw_data: {
    contract: [{ parameter: { value: { owner_address: TronWeb.address.toHex(from), to_address: TronWeb.address.toHex(to), amount }, type_url: 'type.googleapis.com/protocol.TransferContract' }, type: 'TransferContract' }],
    ref_block_bytes: 'e942', ref_block_hash: '6394747da9fee421', expiration: Date.now() + 60_000, timestamp: Date.now(),
  } };
  const pb = tronUtils.transaction.txJsonToPb(json);
  return { raw: tronUtils.transaction.txPbToRawDataHex(pb).toLowerCase(), txID: tronUtils.transaction.txPbToTxID(pb).replace(/^0x/, '') };
}

/** The signer TronWeb recovers from a signed transaction hex, and its raw data. */
function recover(signedHex: string, txID: string): { signer: string; raw: string } {
  const t = Transaction.deserializeBinary(Uint8Array.from(Buffer.from(signedHex, 'hex')));
  const sig = Buffer.from(t.getSignatureList_asU8()[0]).toString('hex');
  return { signer: TronWeb.address.fromHex(tronUtils.crypto.ecRecover(txID, sig)), raw: Buffer.from(t.getRawData().serializeBinary()).toString('hex') };
}

beforeAll(async () => {
  ts = await startTestServer();
  const w: any = await ts.sdk.createWallet({
    walletName: uniqueName('tron'),
    accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/195'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_TRON' }],
  });
  account = w.addresses[0];
  expect(TronWeb.isAddress(account)).toBe(true);
  const key = newP256Key();
  const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('tron-bot'), apiKeys: [{ apiKeyName: 'b', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
  bot = { id: u.userIds[0], key };
});
afterAll(async () => { await ts?.stop(); });

describe('TRANSACTION_TYPE_TRON', () => {
  it('signs raw_data_hex into the signed Transaction protobuf; TronWeb recovers the account', async () => {
    const { raw, txID } = unsignedTransfer(account, 1_000_000);
    const r: any = await ts.sdk.signTransaction({ signWith: account, unsignedTransaction: raw, type: 'TRANSACTION_TYPE_TRON' });
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.signedTransaction).toMatch(/^[0-9a-f]+$/);
    const back = recover(r.signedTransaction, txID);
    expect(back.raw).toBe(raw);
    expect(back.signer).toBe(account);
  });

  it('refuses an Ed25519 key, bytes that are not a Tron transaction, and stores nothing', async () => {
    const k: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('ed'), curve: 'CURVE_ED25519', privateKeyTags: [], addressFormats: [] }] } as any);
    const before = (await allActivities(ts)).length;
    const { raw } = unsignedTransfer(account, 1);
    const ed = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: k.privateKeys[0].privateKeyId, unsignedTransaction: raw, type: 'TRANSACTION_TYPE_TRON' }));
    checkError(ed, 400, 'ed25519 key');
    expect(ed.json.message).toContain('CURVE_SECP256K1');
    for (const bad of ['deadbeef', raw.slice(0, 20), '']) {
      const r = await ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: account, unsignedTransaction: bad, type: 'TRANSACTION_TYPE_TRON' }));
      checkError(r, 400, bad);
      expectFieldViolation(r, 'unsignedTransaction');
    }
    expect((await allActivities(ts)).length).toBe(before);
  });

  it('tron.tx policies: a non-root user signs TRX transfers under 10 TRX at once; a larger one waits', async () => {
    const p: any = await ts.sdk.createPolicy({
      policyName: uniqueName('small trx'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${bot.id}')`,
      condition: `tron.tx.contract[0].type == 'TransferContract' && tron.tx.contract[0].amount < 10000000 && tron.tx.contract[0].to_address == '${TO}'`,
    });
    const sign = (raw: string) => ts.raw(SUBMIT('sign_transaction'), submitBody('ACTIVITY_TYPE_SIGN_TRANSACTION_V2', ts.orgId, { signWith: account, unsignedTransaction: raw, type: 'TRANSACTION_TYPE_TRON' }), { key: bot.key });
    const small = unsignedTransfer(account, 9_999_999);
    const ok = await sign(small.raw);
    expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(recover(ok.json.activity.result.signTransactionResult.signedTransaction, small.txID).signer).toBe(account);
    checkAwaitsConsensus(await sign(unsignedTransfer(account, 10_000_000).raw), '10 TRX');
    checkAwaitsConsensus(await sign(unsignedTransfer(account, 1, 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL').raw), 'another recipient');
    await ts.sdk.deletePolicy({ policyId: p.policyId });
  });
});
