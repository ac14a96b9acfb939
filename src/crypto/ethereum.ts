/** Ethereum transaction signing: the format is chains/ethereum.ts's, the signature the wasm core's (curves.ts). */
import { parseUnsignedTransaction, serializeSignedTransaction, transactionSigningDigest } from '../chains/ethereum.js';
import { signDigest } from './curves.js';

/**
 * sign_transaction (TRANSACTION_TYPE_ETHEREUM): legacy (pre- and post-EIP-155), EIP-2930,
 * EIP-1559 and EIP-7702 unsigned transactions (hex, 0x optional) → signed transaction hex without 0x.
 */
export function signEthereumTransaction(unsignedTransaction: string, privateKey: Uint8Array, field = 'unsignedTransaction'): string {
  const tx = parseUnsignedTransaction(unsignedTransaction, field);
  const sig = signDigest('secp256k1', transactionSigningDigest(tx), privateKey);
  return serializeSignedTransaction(tx, sig);
}
