/**
 * Bitcoin signing for sign_transaction (TRANSACTION_TYPE_BITCOIN): the PSBT (chains/bitcoin.ts)
 * comes back with the key's signature on every input the key controls (P2PKH, P2WPKH,
 * P2SH-P2WPKH, P2TR key path); the client finalizes and extracts, as with Turnkey. BIP-143 /
 * BIP-341 sighashes and the input signatures are @scure/btc-signer's (noble's ECDSA and Schnorr,
 * not the wasm core).
 */
import { OutScript, p2wpkh, type Transaction } from '@scure/btc-signer';
import { inputsOf, prevOut } from '../chains/bitcoin.js';
import { bytesToHex } from '../encoding/bytes.js';
import { CryptoError } from '../encoding/errors.js';

/** Signs every input the key controls; the signed PSBT as hex. */
export function signPsbt(tx: Transaction, privateKey: Uint8Array, publicKey: Uint8Array, field = 'unsignedTransaction'): string {
  for (const i of inputsOf(tx, publicKey, field)) {
    // what btc-signer needs to sign and the PSBT may leave out: P2SH-P2WPKH's redeem script, P2TR's internal key
    const type = OutScript.decode(prevOut(tx, i)!.script).type;
    if (type === 'sh' && !tx.getInput(i).redeemScript) tx.updateInput(i, { redeemScript: p2wpkh(publicKey).script });
    if (type === 'tr' && !tx.getInput(i).tapInternalKey) tx.updateInput(i, { tapInternalKey: publicKey.subarray(1) });
    try {
      tx.signIdx(privateKey, i);
    } catch (e) {
      throw new CryptoError('INVALID_TRANSACTION', `input ${i} cannot be signed: ${e instanceof Error ? e.message.slice(0, 160) : 'unknown reason'}`, field);
    }
  }
  return bytesToHex(tx.toPSBT());
}
