// A software WebAuthn authenticator (ES256) built from the WebAuthn data formats: keys and
// signatures from @noble/curves, CBOR from @simplewebauthn. Used by the passkey and recovery tests.
import { randomBytes } from 'node:crypto';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import { TurnkeyClient } from '@turnkey/http';

export const b64u = (b: Uint8Array | string) => Buffer.from(b).toString('base64url');
export const enc = new TextEncoder();

/** A software WebAuthn authenticator (ES256) for one RP. */
export class SoftPasskey {
  readonly sk = p256.utils.randomSecretKey();
  readonly credId = new Uint8Array(randomBytes(16));
  counter = 0;
  constructor(readonly origin = 'https://wallet.example.com', readonly rpId = 'example.com', readonly counting = false) {}
  get publicKey(): string { return bytesToHex(p256.getPublicKey(this.sk, true)); }
  get credentialId(): string { return b64u(this.credId); }

  #authData(attested: boolean): Uint8Array {
    const flags = 0x01 | 0x04 | (attested ? 0x40 : 0);
    if (this.counting) this.counter++;
    const head = new Uint8Array([...sha256(enc.encode(this.rpId)), flags, 0, 0, (this.counter >> 8) & 0xff, this.counter & 0xff]);
    if (!attested) return head;
    const pub = p256.getPublicKey(this.sk, false);
    const cose = isoCBOR.encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, pub.slice(1, 33)], [-3, pub.slice(33)]]));
    return new Uint8Array([...head, ...new Uint8Array(16), 0, this.credId.length, ...this.credId, ...cose]);
  }

  #sign(authData: Uint8Array, clientData: Uint8Array): Uint8Array {
    return p256.sign(new Uint8Array([...authData, ...sha256(clientData)]), this.sk, { format: 'der', lowS: false });
  }

  /** v1AuthenticatorParamsV2 for a registration under `challenge`. */
  params(challenge = b64u(randomBytes(32)), opts: { fmt?: 'none' | 'packed' | 'badpacked'; type?: string; origin?: string; clientChallenge?: string } = {}) {
    const clientData = enc.encode(JSON.stringify({ type: opts.type ?? 'webauthn.create', challenge: opts.clientChallenge ?? challenge, origin: opts.origin ?? this.origin }));
    const authData = this.#authData(true);
    const fmt = opts.fmt === 'badpacked' ? 'packed' : opts.fmt ?? 'none';
    const attStmt = fmt === 'none' ? new Map() : new Map<string, number | Uint8Array>([['alg', -7], ['sig', opts.fmt === 'badpacked' ? this.#sign(authData, enc.encode('{}')) : this.#sign(authData, clientData)]]);
    const attestationObject = isoCBOR.encode(new Map<string, unknown>([['fmt', fmt], ['attStmt', attStmt], ['authData', authData]]) as never);
    return {
      authenticatorName: 'soft passkey', challenge,
      attestation: { credentialId: this.credentialId, clientDataJson: b64u(clientData), attestationObject: b64u(attestationObject), transports: ['AUTHENTICATOR_TRANSPORT_INTERNAL'] },
    };
  }

  /** The X-Stamp-Webauthn value for `body` (wire-compat §1.2). */
  stamp(body: string, opts: { origin?: string; challengeOf?: string } = {}): string {
    const challenge = b64u(bytesToHex(sha256(enc.encode(opts.challengeOf ?? body))));
    const clientData = enc.encode(JSON.stringify({ type: 'webauthn.get', challenge, origin: opts.origin ?? this.origin }));
    const authData = this.#authData(false);
    return JSON.stringify({ authenticatorData: b64u(authData), clientDataJson: b64u(clientData), credentialId: this.credentialId, signature: b64u(this.#sign(authData, clientData)) });
  }

  /** A TurnkeyClient stamper signing with this passkey. */
  client(url: string): TurnkeyClient {
    return new TurnkeyClient({ baseUrl: url }, { stamp: async (payload: string) => ({ stampHeaderName: 'X-Stamp-Webauthn', stampHeaderValue: this.stamp(payload) }) });
  }
}

