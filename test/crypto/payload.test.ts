import { describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { getTypesForEIP712Domain, hashTypedData, recoverTypedDataAddress, serializeTypedData, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { preparePayload, signRawPayload, signRawPayloads } from '../../src/crypto/payload.js';
import { getPublicKey, type CurveId } from '../../src/crypto/curves.js';
import { ethereumAddress } from '../../src/crypto/addresses.js';
import { EIP712_MAIL_TYPES, err, hex, unhex } from './helpers.js';

const noble = { secp256k1, p256 } as const;

/** Checks a {r,s,v} result against noble: format, verification, low-s, recovery. */
function checkEcdsa(curve: 'secp256k1' | 'p256', sk: Uint8Array, digest: Uint8Array, sig: { r: string; s: string; v: string }) {
  expect(sig.r).toMatch(/^[0-9a-f]{64}$/);
  expect(sig.s).toMatch(/^[0-9a-f]{64}$/);
  expect(sig.v).toMatch(/^0[01]$/);
  const c = noble[curve];
  const compact = unhex(sig.r + sig.s);
  const pub = c.getPublicKey(sk, true);
  expect(c.verify(compact, digest, pub, { prehash: false, lowS: true })).toBe(true);
  const rec = c.Signature.fromBytes(compact, 'compact').addRecoveryBit(Number(BigInt('0x' + sig.v)));
  expect(hex(rec.recoverPublicKey(digest).toBytes(true))).toBe(hex(pub));
  // RFC 6979 deterministic: identical to noble's signature
  expect(hex(c.sign(digest, sk, { prehash: false, lowS: true }))).toBe(sig.r + sig.s);
}

describe('ECDSA digest rules', () => {
  const msg = 'hello kmas ✓';
  const msgBytes = new TextEncoder().encode(msg);
  for (const curve of ['secp256k1', 'p256'] as const) {
    const sk = noble[curve].utils.randomSecretKey();
    it(`${curve}: HEX/TEXT × SHA256/KECCAK256/NO_OP`, () => {
      const cases: [string, string, string, Uint8Array][] = [
        [hex(msgBytes), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_SHA256', sha256(msgBytes)],
        ['0x' + hex(msgBytes), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_KECCAK256', keccak_256(msgBytes)],
        ['0X' + hex(msgBytes).toUpperCase(), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_SHA256', sha256(msgBytes)],
        [msg, 'PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_SHA256', sha256(msgBytes)],
        [msg, 'PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_KECCAK256', keccak_256(msgBytes)],
        [hex(sha256(msgBytes)), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP', sha256(msgBytes)],
        ['0x' + hex(keccak_256(msgBytes)), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP', keccak_256(msgBytes)],
        ['', 'PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_SHA256', sha256(new Uint8Array(0))],
      ];
      for (const [payload, encoding, hashFunction, digest] of cases) {
        const sig = signRawPayload(curve, sk, { payload, encoding, hashFunction });
        checkEcdsa(curve, sk, digest, sig);
      }
    });
    it(`${curve}: 200 random digests, both recovery ids seen`, () => {
      const vs = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const d = globalThis.crypto.getRandomValues(new Uint8Array(32));
        const sig = signRawPayload(curve, sk, { payload: hex(d), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
        checkEcdsa(curve, sk, d, sig);
        vs.add(sig.v);
      }
      expect([...vs].sort()).toEqual(['00', '01']);
    });
    it(`${curve}: batch path equals single signatures`, () => {
      const payloads = Array.from({ length: 25 }, (_, i) => `message ${i}`);
      const batch = signRawPayloads(curve, sk, payloads, 'PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_SHA256');
      expect(batch).toHaveLength(25);
      payloads.forEach((p, i) => {
        expect(batch[i]).toEqual(signRawPayload(curve, sk, { payload: p, encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction: 'HASH_FUNCTION_SHA256' }));
        checkEcdsa(curve, sk, sha256(new TextEncoder().encode(p)), batch[i]);
      });
    });
  }
});

describe('EIP-712 and EIP-7702 encodings', () => {
  const typedData = {
    types: EIP712_MAIL_TYPES,
    primaryType: 'Mail',
    domain: { name: 'Ether Mail', version: '1', chainId: 1, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' },
    message: {
      from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' },
      to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' },
      contents: 'Hello, Bob!',
    },
  } as const;
  it('EIP-712 spec example digest; viem recovers the signer', async () => {
    const sk = secp256k1.utils.randomSecretKey();
    const p = preparePayload('secp256k1', { payload: JSON.stringify(typedData), encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' });
    // the digest from the EIP-712 specification's example
    expect(p.kind === 'digest' && hex(p.digest)).toBe('be609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2');
    expect(p.kind === 'digest' && '0x' + hex(p.digest)).toBe(hashTypedData(typedData as any));
    const sig = signRawPayload('secp256k1', sk, { payload: JSON.stringify(typedData), encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const signature = `0x${sig.r}${sig.s}${sig.v === '00' ? '1b' : '1c'}` as Hex;
    const addr = await recoverTypedDataAddress({ ...(typedData as any), signature });
    expect(addr).toBe(ethereumAddress(getPublicKey('secp256k1', sk)));
    // and it is the same signature viem's own local account makes
    expect(signature).toBe(await privateKeyToAccount(`0x${hex(sk)}`).signTypedData(typedData as any));
  });
  it('payload exactly as @turnkey/viem sends it (serializeTypedData, bigint fields) → same signature as viem', async () => {
    const sk = secp256k1.utils.randomSecretKey();
    const domain = { name: 'Permit2', chainId: 8453n, verifyingContract: '0x000000000022D473030F116dDEE9F6B43aC78BA3' as const };
    // a viem wallet client adds EIP712Domain before the account's signTypedData serializes it
    const td = {
      domain,
      types: {
        EIP712Domain: getTypesForEIP712Domain({ domain }),
        Permit: [
          { name: 'owner', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'deadline', type: 'uint48' },
          { name: 'data', type: 'bytes' },
          { name: 'ids', type: 'uint8[]' },
        ],
      },
      primaryType: 'Permit' as const,
      message: { owner: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' as const, value: 10n ** 30n, deadline: 1700000000, data: '0x0102' as const, ids: [1, 2, 3] },
    };
    const payload = serializeTypedData(td as any);
    const sig = signRawPayload('secp256k1', sk, { payload, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const signature = `0x${sig.r}${sig.s}${sig.v === '00' ? '1b' : '1c'}` as Hex;
    expect(signature).toBe(await privateKeyToAccount(`0x${hex(sk)}`).signTypedData(td as any));
    // without EIP712Domain in types the domain type is derived from the fields present,
    // also when chainId arrives as a JSON string
    const noDomainType = JSON.parse(payload);
    delete noDomainType.types.EIP712Domain;
    const p = preparePayload('secp256k1', { payload: JSON.stringify(noDomainType), encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' });
    expect(p.kind === 'digest' && '0x' + hex(p.digest)).toBe(hashTypedData(td as any));
  });

  it('EIP-7702 authorization digest equals viem signAuthorization', async () => {
    const sk = secp256k1.utils.randomSecretKey();
    const auth = { address: '0x1111111111111111111111111111111111111111', chainId: 1, nonce: 7 };
    const sig = signRawPayload('secp256k1', sk, { payload: JSON.stringify(auth), encoding: 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', hashFunction: 'HASH_FUNCTION_NO_OP' });
    const theirs = await privateKeyToAccount(`0x${hex(sk)}`).signAuthorization({ ...auth, contractAddress: auth.address } as any);
    expect(`0x${sig.r}`).toBe(theirs.r);
    expect(`0x${sig.s}`).toBe(theirs.s);
    expect(Number(BigInt('0x' + sig.v))).toBe(theirs.yParity);
  });
  it('bad typed data → INVALID_TYPED_DATA', () => {
    const sk = secp256k1.utils.randomSecretKey();
    for (const bad of ['{', '{}', JSON.stringify({ ...typedData, primaryType: 'Nope' }), JSON.stringify({ ...typedData, message: { ...typedData.message, from: { name: 'x', wallet: 'not-an-address' } } })]) {
      const e = err(() => signRawPayload('secp256k1', sk, { payload: bad, encoding: 'PAYLOAD_ENCODING_EIP712', hashFunction: 'HASH_FUNCTION_NO_OP' }));
      expect(e.code).toBe('INVALID_TYPED_DATA');
      expect(e.field).toBe('payload');
    }
  });
});

describe('Ed25519', () => {
  it('NOT_APPLICABLE signs the raw bytes; R/S halves, v "00"', () => {
    const sk = ed25519.utils.randomSecretKey();
    const pub = ed25519.getPublicKey(sk);
    const msg = globalThis.crypto.getRandomValues(new Uint8Array(100));
    const sig = signRawPayload('ed25519', sk, { payload: hex(msg), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' });
    expect(sig.v).toBe('00');
    expect(sig.r).toMatch(/^[0-9a-f]{64}$/);
    expect(ed25519.verify(unhex(sig.r + sig.s), msg, pub)).toBe(true);
    const t = signRawPayload('ed25519', sk, { payload: 'hi', encoding: 'PAYLOAD_ENCODING_TEXT_UTF8', hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' });
    expect(ed25519.verify(unhex(t.r + t.s), new TextEncoder().encode('hi'), pub)).toBe(true);
    const batch = signRawPayloads('ed25519', sk, ['aa', 'bbcc'], 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NOT_APPLICABLE');
    expect(ed25519.verify(unhex(batch[1].r + batch[1].s), unhex('bbcc'), pub)).toBe(true);
  });
});

describe('mismatched combinations and bad input → typed errors naming the field', () => {
  const k: Record<CurveId, Uint8Array> = {
    secp256k1: secp256k1.utils.randomSecretKey(),
    p256: p256.utils.randomSecretKey(),
    ed25519: ed25519.utils.randomSecretKey(),
  };
  const cases: [CurveId, string, string, string, string, string][] = [
    ['secp256k1', 'aa', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NOT_APPLICABLE', 'UNSUPPORTED_COMBINATION', 'hashFunction'],
    ['p256', 'aa', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NOT_APPLICABLE', 'UNSUPPORTED_COMBINATION', 'hashFunction'],
    ['ed25519', 'aa', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_SHA256', 'UNSUPPORTED_COMBINATION', 'hashFunction'],
    ['ed25519', 'aa', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_KECCAK256', 'UNSUPPORTED_COMBINATION', 'hashFunction'],
    ['ed25519', '{}', 'PAYLOAD_ENCODING_EIP712', 'HASH_FUNCTION_NOT_APPLICABLE', 'UNSUPPORTED_COMBINATION', 'encoding'],
    ['p256', '{}', 'PAYLOAD_ENCODING_EIP712', 'HASH_FUNCTION_NO_OP', 'UNSUPPORTED_COMBINATION', 'encoding'],
    ['secp256k1', '{}', 'PAYLOAD_ENCODING_EIP712', 'HASH_FUNCTION_SHA256', 'UNSUPPORTED_COMBINATION', 'hashFunction'],
    ['secp256k1', 'aa'.repeat(31), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP', 'INVALID_PAYLOAD', 'payload'],
    ['secp256k1', 'aa'.repeat(33), 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP', 'INVALID_PAYLOAD', 'payload'],
    ['p256', 'x'.repeat(31), 'PAYLOAD_ENCODING_TEXT_UTF8', 'HASH_FUNCTION_NO_OP', 'INVALID_PAYLOAD', 'payload'],
    ['secp256k1', 'abc', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_SHA256', 'INVALID_PAYLOAD', 'payload'],
    ['secp256k1', 'zz', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_SHA256', 'INVALID_PAYLOAD', 'payload'],
    ['ed25519', '0xg0', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NOT_APPLICABLE', 'INVALID_PAYLOAD', 'payload'],
    ['secp256k1', 'aa', 'PAYLOAD_ENCODING_BASE64', 'HASH_FUNCTION_SHA256', 'INVALID_ENCODING', 'encoding'],
    ['secp256k1', 'aa', 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_MD5', 'INVALID_HASH_FUNCTION', 'hashFunction'],
    ['secp256k1', '{"address":"0x12","chainId":1,"nonce":0}', 'PAYLOAD_ENCODING_EIP7702_AUTHORIZATION', 'HASH_FUNCTION_NO_OP', 'INVALID_PAYLOAD', 'payload'],
  ];
  it.each(cases)('%s %j %s %s → %s', (curve, payload, encoding, hashFunction, c, field) => {
    const e = err(() => signRawPayload(curve, k[curve], { payload, encoding, hashFunction }));
    expect(e.code).toBe(c);
    expect(e.field).toBe(field);
  });
  it('batch errors name the element', () => {
    const e = err(() => signRawPayloads('secp256k1', k.secp256k1, ['aa'.repeat(32), 'bb'], 'PAYLOAD_ENCODING_HEXADECIMAL', 'HASH_FUNCTION_NO_OP'));
    expect(e.field).toBe('payloads[1]');
  });
  it('bad private keys are INVALID_PRIVATE_KEY', () => {
    const req = { payload: 'aa', encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_SHA256' };
    expect(err(() => signRawPayload('secp256k1', new Uint8Array(32), req)).code).toBe('INVALID_PRIVATE_KEY');
    expect(err(() => signRawPayload('p256', new Uint8Array(31).fill(1), req)).code).toBe('INVALID_PRIVATE_KEY');
    expect(err(() => signRawPayload('ed25519', new Uint8Array(31), { ...req, hashFunction: 'HASH_FUNCTION_NOT_APPLICABLE' })).code).toBe('INVALID_PRIVATE_KEY');
  });
});
