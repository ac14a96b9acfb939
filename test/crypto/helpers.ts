import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, dirname } from 'node:path';
import { CryptoError } from '../../src/encoding/errors.js';

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '..', 'vectors');

export function loadVector<T = any>(rel: string): T {
  return JSON.parse(readFileSync(join(VECTORS, rel), 'utf8')) as T;
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/^0x/, ''), 'hex'));

/** The CryptoError code `fn` throws, `other: …` for any other throw, undefined when it returns. */
export const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e instanceof CryptoError ? e.code : `other: ${String(e)}`;
  }
  return undefined;
};

/** The CryptoError `fn` throws; any other throw is rethrown, and returning is a failure. */
export const err = (fn: () => unknown): CryptoError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof CryptoError) return e;
    throw e;
  }
  throw new Error('expected a CryptoError');
};

/** The types of the EIP-712 specification's "Ether Mail" example. */
export const EIP712_MAIL_TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
  Person: [
    { name: 'name', type: 'string' },
    { name: 'wallet', type: 'address' },
  ],
  Mail: [
    { name: 'from', type: 'Person' },
    { name: 'to', type: 'Person' },
    { name: 'contents', type: 'string' },
  ],
} as const;
