/**
 * P-256 API key pair generation for the root credential and `kmas api-key`, in the form
 * @turnkey/api-key-stamper takes (compressed public key hex, 32-byte private key hex).
 * (Candidate to move behind src/crypto once that door exists.)
 */
import { generateKeyPairSync } from 'node:crypto';

export interface ApiKeyPair { publicKey: string; privateKey: string }

export function generateP256ApiKeyPair(): ApiKeyPair {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const jwk = privateKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  const d = Buffer.from(jwk.d!, 'base64url');
  const prefix = (y[y.length - 1]! & 1) === 1 ? '03' : '02';
  return {
    publicKey: prefix + x.toString('hex').padStart(64, '0'),
    privateKey: d.toString('hex').padStart(64, '0'),
  };
}
