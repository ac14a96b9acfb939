/**
 * The one error type src/crypto throws for bad input. `code` is stable (callers map it to an
 * HTTP status), `field` names the request field at fault when the function knows it.
 * Messages never contain key bytes, seeds, mnemonics or plaintexts.
 */
import type { CoreErrorCode } from '../core/api.js';

export type CryptoErrorCode =
  // passed through from the wasm core (design §1)
  | CoreErrorCode
  // src/crypto's own
  | 'UNSUPPORTED_CURVE'
  | 'INVALID_PATH'
  | 'INVALID_SEED'
  | 'INVALID_MNEMONIC'
  | 'INVALID_EXTENDED_KEY'
  | 'UNSUPPORTED_ADDRESS_FORMAT'
  | 'ADDRESS_FORMAT_CURVE_MISMATCH'
  | 'INVALID_ENCODING'
  | 'INVALID_HASH_FUNCTION'
  | 'UNSUPPORTED_COMBINATION'
  | 'INVALID_PAYLOAD'
  | 'INVALID_TYPED_DATA'
  | 'INVALID_TRANSACTION'
  | 'INVALID_HEX'
  | 'INVALID_BUNDLE'
  | 'DECRYPTION_FAILED'
  | 'INVALID_MASTER_KEY'
  | 'INVALID_CIPHERTEXT';

export class CryptoError extends Error {
  readonly code: CryptoErrorCode;
  readonly field?: string;
  constructor(code: CryptoErrorCode, message: string, field?: string) {
    super(message);
    this.name = 'CryptoError';
    this.code = code;
    if (field !== undefined) this.field = field;
  }
}

export function isCryptoError(e: unknown): e is CryptoError {
  return e instanceof CryptoError;
}
