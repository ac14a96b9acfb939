// The debug build is the release build plus the representation checks of assembly/debug.ts:
// the release module imports nothing (the checks are compiled out), the debug module imports
// only `env.abort`, and a broken invariant in the debug build stops the operation with the
// check's message instead of computing on. Runs in the vitest project `core-debug`.
import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { createCore, instantiateDebug, wasmPath, debugWasmPath } from '../../src/core/node.js';
import { Rng } from './util.js';

const importsOf = (path: string) => WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(path) as unknown as BufferSource));

describe('debug build', () => {
  it('release imports nothing; debug imports only env.abort (its failed checks)', () => {
    expect(importsOf(wasmPath)).toEqual([]);
    expect(importsOf(debugWasmPath)).toEqual([{ module: 'env', name: 'abort', kind: 'function' }]);
  });

  it('a field element out of its limb bounds is caught (a corrupted cached key)', () => {
    const instance = instantiateDebug();
    const core = createCore(instance);
    const mem = () => new Uint8Array((instance.exports.memory as WebAssembly.Memory).buffer);
    const rng = new Rng(18);
    const key = rng.privateKey('p256');
    const pub = core.p256.getPublicKey(key, false);
    const digest = rng.bytes(32);
    const { signature } = core.p256.sign(digest, key);
    expect(core.p256.verify(signature, digest, pub)).toBe(true); // cached, P-256 state 1
    // the cache entry: curve 1, length 65 and state 1 before the encoded key (assembly/mult.ts QCTX_*)
    const m = mem();
    const dv = new DataView(m.buffer);
    let entry = -1;
    for (let i = 16; i + 65 <= m.length; i++) {
      if (m[i] !== pub[0] || m[i + 1] !== pub[1]) continue;
      if (!pub.every((b, j) => m[i + j] === b)) continue;
      const c = i - 16;
      if (dv.getUint32(c, true) === 1 && dv.getUint32(c + 4, true) === 65 && dv.getUint32(c + 8, true) === 1) entry = c;
    }
    expect(entry).toBeGreaterThan(0);
    dv.setUint32(entry + 96, 0xffffffff, true); // limb 0 of Q.x ≥ 2^29
    // the second verification builds the 2^128·Q table from Q: the first field operation objects
    expect(() => core.p256.verify(signature, digest, pub)).toThrow(/kmas debug core: field element/);
  });
});
