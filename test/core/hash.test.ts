// SHA-256 / HMAC-SHA256 inside wasm against node:crypto (independent implementation).
import { describe, it, expect } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { core } from './build.js';
import { Rng, hex } from './util.js';

const nodeSha = (d: Uint8Array) => createHash('sha256').update(d).digest('hex');
const nodeHmac = (k: Uint8Array, d: Uint8Array) => createHmac('sha256', k).update(d).digest('hex');

describe('core.sha256', () => {
  it('matches FIPS 180-4 examples', () => {
    expect(hex(core.sha256(new Uint8Array(0)))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hex(core.sha256(new TextEncoder().encode('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hex(core.sha256(new TextEncoder().encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')))).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('matches node:crypto for every length 0..300 and around block boundaries', () => {
    const rng = new Rng(0x5a256);
    const lengths = [...Array(301).keys(), 447, 448, 511, 512, 513, 1023, 1024, 1025, 4096, 65537];
    let n = 0;
    for (const len of lengths) {
      for (let rep = 0; rep < 2; rep++) {
        const d = rng.bytes(len);
        expect(hex(core.sha256(d)), `len ${len}`).toBe(nodeSha(d));
        n++;
      }
    }
    expect(n).toBe(lengths.length * 2);
  });

  it('hashes subarray views without reading outside them', () => {
    const rng = new Rng(7);
    const big = rng.bytes(300);
    for (const [a, b] of [[1, 2], [3, 67], [64, 128], [17, 299]]) {
      const view = big.subarray(a, b);
      expect(hex(core.sha256(view))).toBe(nodeSha(Uint8Array.from(view)));
    }
  });
});

describe('core.hmacSha256', () => {
  it('matches RFC 4231 test case 2', () => {
    const key = new TextEncoder().encode('Jefe');
    const data = new TextEncoder().encode('what do ya want for nothing?');
    expect(hex(core.hmacSha256(key, data))).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });

  it('matches node:crypto for key lengths 0..200 and message lengths 0..300', () => {
    const rng = new Rng(0x4d4143);
    const keyLens = [0, 1, 16, 31, 32, 33, 55, 56, 63, 64, 65, 100, 128, 129, 200];
    for (const kl of keyLens) {
      for (let ml = 0; ml <= 300; ml += kl % 7 === 0 ? 1 : 13) {
        const k = rng.bytes(kl);
        const d = rng.bytes(ml);
        expect(hex(core.hmacSha256(k, d)), `key ${kl} msg ${ml}`).toBe(nodeHmac(k, d));
      }
    }
  });

  it('returns fresh arrays (results are not views of wasm memory that later calls overwrite)', () => {
    const a = core.sha256(new Uint8Array([1]));
    const snapshot = hex(a);
    core.sha256(new Uint8Array([2]));
    core.hmacSha256(new Uint8Array([3]), new Uint8Array([4]));
    expect(hex(a)).toBe(snapshot);
  });
});
