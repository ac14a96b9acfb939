// src/crypto: the only door to key material in the host. See each module for details.
export * from '../encoding/errors.js';
export * from './curves.js';
export * from './hd.js';
export * from './addresses.js';
export * from './hpke.js';
export * from './bundles.js';
export * from './atrest.js';
export * from './ethereum.js';
export * from './payload.js';
export * from './bitcoin.js';
export * from './wallets.js';
export * from './vault.js';
export { bytesToHex, equalBytes, hexToBytes, wipe } from '../encoding/bytes.js';
