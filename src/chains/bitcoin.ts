/**
 * Bitcoin's formats for sign_transaction (TRANSACTION_TYPE_BITCOIN): a PSBT (BIP-174, hex, or
 * base64 as wallets pass it around), the inputs a key controls, and the policy view. As Turnkey
 * does, a SegWit v0 input the key signs must carry its previous transaction (non_witness_utxo),
 * checked against the outpoint, so that the amounts a fee policy reads are the real ones.
 * PSBT parsing is @scure/btc-signer's. crypto/bitcoin.ts signs.
 */
import { base64 } from '@scure/base';
import { Address, NETWORK, OutScript, RawTx, TEST_NETWORK, Transaction, p2pkh, p2sh, p2tr, p2wpkh } from '@scure/btc-signer';
import { bytesToHex, hexToBytes } from '../encoding/bytes.js';
import { CryptoError } from '../encoding/errors.js';
import type { View } from './view.js';

export type BitcoinNetwork = 'mainnet' | 'testnet' | 'signet' | 'regtest';
type Net = typeof NETWORK;
const NETWORKS: Record<BitcoinNetwork, Net> = {
  mainnet: NETWORK,
  testnet: TEST_NETWORK,
  signet: TEST_NETWORK,
  regtest: { ...TEST_NETWORK, bech32: 'bcrt' },
};

const OPTS = { allowUnknownOutputs: true, allowUnknownInputs: true, disableScriptCheck: false } as const;

/** Parses a PSBT given as hex (with or without 0x) or base64. */
export function parsePsbt(text: string, field = 'unsignedTransaction'): Transaction {
  const t = text.trim();
  let bytes: Uint8Array;
  if (/^(0x)?[0-9a-fA-F]+$/.test(t)) bytes = hexToBytes(t, field);
  else {
    try { bytes = base64.decode(t); } catch { throw new CryptoError('INVALID_TRANSACTION', 'must be a PSBT as hex or base64', field); }
  }
  try {
    return Transaction.fromPSBT(bytes, OPTS);
  } catch (e) {
    throw new CryptoError('INVALID_TRANSACTION', `not a valid PSBT: ${e instanceof Error ? e.message.slice(0, 160) : 'unreadable'}`, field);
  }
}

/** Display-order hex of a txid as btc-signer keeps it. */
const txidHex = (b: Uint8Array | undefined): string => (b ? bytesToHex(b) : '');

/** The previous output an input spends, from witness_utxo or non_witness_utxo. */
export function prevOut(tx: Transaction, i: number): { script: Uint8Array; amount: bigint } | undefined {
  const input = tx.getInput(i);
  if (input.witnessUtxo) return { script: input.witnessUtxo.script, amount: input.witnessUtxo.amount };
  if (input.nonWitnessUtxo && input.index !== undefined) {
    const out = input.nonWitnessUtxo.outputs[input.index];
    if (out) return { script: out.script, amount: out.amount };
  }
  return undefined;
}

/** The scripts a compressed secp256k1 public key can spend alone: P2PKH, P2WPKH, P2SH-P2WPKH, P2TR (BIP-86 key path). */
function scriptsOf(publicKey: Uint8Array): Uint8Array[] {
  return [p2pkh(publicKey).script, p2wpkh(publicKey).script, p2sh(p2wpkh(publicKey)).script, p2tr(publicKey.subarray(1)).script];
}

/**
 * The inputs the key controls (their previous output pays one of its scripts), checking that a
 * SegWit v0 one carries the previous transaction its outpoint names. 400 when there is none.
 */
export function inputsOf(tx: Transaction, publicKey: Uint8Array, field = 'unsignedTransaction'): number[] {
  const mine = scriptsOf(publicKey).map(bytesToHex);
  const out: number[] = [];
  for (let i = 0; i < tx.inputsLength; i++) {
    const input = tx.getInput(i);
    const prev = prevOut(tx, i);
    if (!prev || !mine.includes(bytesToHex(prev.script))) continue;
    const type = OutScript.decode(prev.script).type;
    if (type === 'wpkh' || type === 'sh') {
      if (!input.nonWitnessUtxo) {
        throw new CryptoError('INVALID_TRANSACTION', `input ${i} is SegWit v0 and has no non_witness_utxo (its previous transaction, needed to trust its amount)`, field);
      }
      if (Transaction.fromRaw(RawTx.encode(input.nonWitnessUtxo), OPTS).id !== txidHex(input.txid)) {
        throw new CryptoError('INVALID_TRANSACTION', `input ${i}: non_witness_utxo is not the transaction its outpoint names`, field);
      }
    }
    out.push(i);
  }
  if (out.length === 0) throw new CryptoError('UNSUPPORTED_COMBINATION', 'the key controls no input of this PSBT (no witness_utxo or non_witness_utxo pays one of its P2PKH, P2WPKH, P2SH-P2WPKH or P2TR scripts)', 'signWith');
  return out;
}

// ---- the policy view (`bitcoin.tx`) ---------------------------------------------------------


const ADDRESS_TYPES: Record<string, string> = { pkh: 'P2PKH', sh: 'P2SH', wpkh: 'P2WPKH', wsh: 'P2WSH', tr: 'P2TR', unknown: 'UNKNOWN' };

/** `bitcoin.tx`: version, inputs {tx_id, vout, sequence}, outputs {value, script_pubkey, address, address_type}, locktime {amount, type}, fee (when every input's amount is known). */
export function bitcoinPolicyView(tx: Transaction, network: BitcoinNetwork): { [k: string]: View } {
  const net = NETWORKS[network];
  const inputs: View[] = [];
  for (let i = 0; i < tx.inputsLength; i++) {
    const x = tx.getInput(i);
    inputs.push({ tx_id: txidHex(x.txid), vout: BigInt(x.index ?? 0), sequence: BigInt(x.sequence ?? 0xffffffff) });
  }
  const outputs: View[] = [];
  for (let i = 0; i < tx.outputsLength; i++) {
    const o = tx.getOutput(i);
    const script = o.script ?? new Uint8Array(0);
    let type = 'UNKNOWN';
    let address = '';
    try {
      const decoded = OutScript.decode(script);
      type = script[0] === 0x6a ? 'OP_RETURN' : ADDRESS_TYPES[decoded.type] ?? decoded.type.toUpperCase();
      address = Address(net).encode(decoded);
    } catch { /* no address (OP_RETURN, bare scripts) */ }
    outputs.push({ value: o.amount ?? 0n, script_pubkey: bytesToHex(script), address, address_type: type });
  }
  const lockTime = BigInt(tx.lockTime);
  const view: { [k: string]: View } = {
    version: String(tx.version), inputs, outputs,
    locktime: { amount: lockTime, type: lockTime < 500_000_000n ? 'BLOCK_HEIGHT' : 'TIMESTAMP' },
  };
  try {
    let total = 0n;
    for (let i = 0; i < tx.inputsLength; i++) {
      const p = prevOut(tx, i);
      if (!p) throw new Error('unknown amount');
      total += p.amount;
    }
    let spent = 0n;
    for (let i = 0; i < tx.outputsLength; i++) spent += tx.getOutput(i).amount ?? 0n;
    view.fee = total - spent;
  } catch { /* fee unknown: left out */ }
  return view;
}

/** The network of an address format (ADDRESS_FORMAT_BITCOIN_<NET>_…), or undefined. */
export function bitcoinNetworkOf(addressFormat: string): BitcoinNetwork | undefined {
  const m = /^ADDRESS_FORMAT_BITCOIN_(MAINNET|TESTNET|SIGNET|REGTEST)_/.exec(addressFormat);
  return m ? (m[1]!.toLowerCase() as BitcoinNetwork) : undefined;
}
