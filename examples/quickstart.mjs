// kmas quick start: through @turnkey/sdk-server, make a wallet, sign a message with it, and check
// the signature with Node's own crypto against the account's public key.
//
//   npm install @turnkey/sdk-server          (in the folder of this file)
//   node quickstart.mjs [KMAS_URL] [DATA_DIR]
//
// KMAS_URL and DATA_DIR may also come from the environment; the defaults are
// http://127.0.0.1:8080 and ./data. DATA_DIR is the server's: bootstrap.json and root-api-key.json.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ECDH, createPublicKey, verify } from 'node:crypto';
import { Turnkey } from '@turnkey/sdk-server';

const url = process.argv[2] ?? process.env.KMAS_URL ?? 'http://127.0.0.1:8080';
const dataDir = resolve(process.argv[3] ?? process.env.DATA_DIR ?? 'data');
const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
const key = JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8'));

const client = new Turnkey({
  apiBaseUrl: url,
  apiPublicKey: key.publicKey,
  apiPrivateKey: key.privateKey,
  defaultOrganizationId: boot.organizationId,
}).apiClient();

const { walletId, addresses } = await client.createWallet({
  walletName: `quickstart ${new Date().toISOString()}`,
  accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }],
});
const message = 'hello from kmas';
const { r, s, v } = await client.signRawPayload({
  signWith: addresses[0], payload: message,
  encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction: 'HASH_FUNCTION_SHA256',
});

// The check: ECDSA over SHA-256(message) with the account's secp256k1 key, by node:crypto.
const { accounts } = await client.getWalletAccounts({ walletId });
const { publicKey } = accounts[0];
const point = Buffer.from(ECDH.convertKey(publicKey, 'secp256k1', 'hex', 'hex', 'uncompressed'), 'hex');
const jwk = { kty: 'EC', crv: 'secp256k1', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') };
const verified = verify('sha256', Buffer.from(message), { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(r + s, 'hex'));

console.log(JSON.stringify({ address: addresses[0], publicKey, message, signature: { r, s, v }, verified }, null, 2));
if (!verified) process.exitCode = 1;
