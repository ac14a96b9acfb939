// Tron transactions (src/chains/tron.ts) against TronWeb as the second implementation: the raw
// data TronWeb serializes parses into the fields TronWeb's JSON has, kmas's signature equals
// TronWeb's own (RFC 6979 on both sides) and its signed Transaction protobuf decodes with
// TronWeb's generated protobuf classes; bytes that are not a Tron transaction are refused.
import { describe, it, expect } from 'vitest';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { TronWeb, utils as tronUtils } from 'tronweb';
import { signDigest } from '../../src/crypto/curves.js';
import { parseTronRawData, serializeSignedTronTransaction, tronPolicyView, tronSigningDigest } from '../../src/chains/tron.js';
import { hex, unhex, err } from '../crypto/helpers.js';

const require = createRequire(import.meta.url);
// TronWeb's generated protobuf classes (not in its package exports: loaded by file)
const { Transaction } = require(join(dirname(require.resolve('tronweb')), 'protocol/core/Tron_pb.cjs'));

const addr = (base58: string) => TronWeb.address.toHex(base58);
const OWNER = 'TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL';
const TO = 'TVDGpn4hCSzJ5nkHPLetk8KQBtwaTppnkr';
const USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';

function rawHexOf(contract: unknown, extra: Record<string, unknown> = {}): { json: any; raw: string } {
  const json = { visible: false, raw_data: { contract: [contract], ref_block_bytes: 'e942', ref_block_hash: '6394747da9fee421', expiration: 1752562632000, timestamp: 1752562572000, ...extra } };
  const pb = tronUtils.transaction.txJsonToPb(json);
  return { json, raw: tronUtils.transaction.txPbToRawDataHex(pb).toLowerCase() };
}

const transfer = (amount: number) => ({
  parameter: { value: { owner_address: addr(OWNER), to_address: addr(TO), amount }, type_url: 'type.googleapis.com/protocol.TransferContract' },
  type: 'TransferContract',
});
const trigger = (data: string) => ({
  parameter: { value: { owner_address: addr(OWNER), contract_address: addr(USDT), data, call_value: 5 }, type_url: 'type.googleapis.com/protocol.TriggerSmartContract' },
  type: 'TriggerSmartContract',
});
const transferData = 'a9059cbb' + '00'.repeat(12) + addr(TO).slice(2) + (1_000_000).toString(16).padStart(64, '0');

describe('parseTronRawData and tron.tx', () => {
  it('a TransferContract as TronWeb serializes it', () => {
    const { raw } = rawHexOf(transfer(18_123_456), { fee_limit: 10_000_000, data: Buffer.from('invoice 42').toString('hex') });
    const view = tronPolicyView(parseTronRawData(raw)) as any;
    expect(view).toMatchObject({ ref_block_bytes: 'e942', ref_block_hash: '6394747da9fee421', expiration: 1752562632000n, timestamp: 1752562572000n, fee_limit: 10_000_000n, data: 'invoice 42' });
    expect(view.contract).toEqual([{
      type: 'TransferContract', permission_id: 0n, owner_address: OWNER, to_address: TO, amount: 18_123_456n,
      contract_address: '', call_value: 0n, data: '', call_token_value: 0n, token_id: 0n,
    }]);
    // and TronWeb's own reading of the same bytes agrees
    const back = tronUtils.deserializeTx.deserializeTransaction('TransferContract', raw) as any;
    expect(TronWeb.address.fromHex(back.contract[0].parameter.value.to_address)).toBe(view.contract[0].to_address);
    expect(BigInt(back.contract[0].parameter.value.amount)).toBe(view.contract[0].amount);
  });

  it('a TRC-20 transfer (TriggerSmartContract): contract address and call data', () => {
    const { raw } = rawHexOf(trigger(transferData));
    const c = (tronPolicyView(parseTronRawData('0x' + raw)) as any).contract[0];
    expect(c).toMatchObject({ type: 'TriggerSmartContract', owner_address: OWNER, contract_address: USDT, call_value: 5n, data: transferData });
    expect(c.data.slice(0, 8)).toBe('a9059cbb');
  });

  it('refuses bytes that are not a Tron transaction', () => {
    const { raw } = rawHexOf(transfer(1));
    for (const bad of ['', 'zz', raw.slice(0, -2), raw + '0d00000000', '0a02e942', '1801']) {
      expect(err(() => parseTronRawData(bad)).code, bad.slice(0, 20)).toMatch(/INVALID_(TRANSACTION|HEX)/);
    }
    // two contracts
    const two = raw + raw.slice(raw.indexOf('5a'), raw.indexOf('70e0'));
    expect(err(() => parseTronRawData(two)).message).toMatch(/2 contracts|exactly one/);
  });
});

describe('signing', () => {
  it('the signature equals TronWeb\'s for the same key, and the signed protobuf decodes with TronWeb\'s classes', () => {
    for (const [i, contract] of [transfer(100), trigger(transferData)].entries()) {
      const pk = (i + 1).toString(16).padStart(2, '0').repeat(32);
      const { json, raw } = rawHexOf(contract);
      const tx = parseTronRawData(raw);
      const ours = serializeSignedTronTransaction(tx, signDigest('secp256k1', tronSigningDigest(tx), unhex(pk)));
      const txID = hex(tronSigningDigest(tx));
      expect(txID).toBe(tronUtils.transaction.txPbToTxID(tronUtils.transaction.txJsonToPb(json)).replace(/^0x/, ''));
      const theirs = tronUtils.crypto.signTransaction(pk, { ...json, raw_data_hex: raw, txID }) as any;
      const decoded = Transaction.deserializeBinary(unhex(ours));
      expect(hex(decoded.getRawData().serializeBinary())).toBe(raw);
      expect(decoded.getSignatureList_asU8().map((s: Uint8Array) => hex(s))).toEqual([theirs.signature[0].toLowerCase()]);
      expect(tronUtils.crypto.ecRecover(txID, hex(decoded.getSignatureList_asU8()[0])).toLowerCase()).toBe(TronWeb.address.toHex(TronWeb.address.fromPrivateKey(pk) as string).toLowerCase());
    }
  });
});
