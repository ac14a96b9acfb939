// TypeScript face of the wasm signing core (design §1). Environment-free: works with any
// WebAssembly.Instance of build/kmas.wasm (node.ts and browser.ts only differ in how they get it).
//
// ABI (see assembly/README.md): inputs are copied into the IN region, an exported function is
// called with a curve id and small integers, results are read from OUT; status 0 = ok.

export type CurveName = 'secp256k1' | 'p256';

export type CoreErrorCode =
  | 'INVALID_PRIVATE_KEY'
  | 'INVALID_PUBLIC_KEY'
  | 'INVALID_DIGEST'
  | 'INVALID_SIGNATURE'
  | 'INVALID_RECOVERY_ID'
  | 'INVALID_TWEAK'
  | 'INVALID_LENGTH'
  | 'SIGN_FAILED';

export class CoreError extends Error {
  readonly code: string;
  constructor(code: CoreErrorCode | string, message?: string) {
    super(message ?? code);
    this.name = 'CoreError';
    this.code = code;
  }
}

export interface RecoverableSignature {
  signature: Uint8Array; // 64 bytes r‖s, big-endian
  recovery: number; // 0 | 1 (| 2 | 3 in the astronomically rare x ≥ n case)
}

export interface CurveCore {
  readonly name: CurveName;
  sign(digest: Uint8Array, privateKey: Uint8Array, opts?: { lowS?: boolean; extraEntropy?: Uint8Array }): RecoverableSignature;
  signBatch(digests: Uint8Array[], privateKeys: Uint8Array | Uint8Array[]): RecoverableSignature[];
  /**
   * true if `signature` is valid; false for an invalid or malformed signature, digest or key.
   * `format` says how to read `signature`: 'compact' (64 bytes r‖s) or 'der' (strict DER). Without
   * it, 64 bytes are read as r‖s and any other length as DER; a 64-byte input that is also valid
   * DER (r and s short enough) could be either, and then verify throws CoreError
   * 'AMBIGUOUS_SIGNATURE' instead of guessing: pass `format` whenever DER may arrive.
   */
  verify(signature: Uint8Array, digest: Uint8Array, publicKey: Uint8Array, opts?: { lowS?: boolean; format?: 'compact' | 'der' }): boolean;
  getPublicKey(privateKey: Uint8Array, compressed?: boolean): Uint8Array;
  recoverPublicKey(digest: Uint8Array, signature: Uint8Array, recovery: number, compressed?: boolean): Uint8Array;
  ecdh(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array;
  convertPublicKey(publicKey: Uint8Array, compressed: boolean): Uint8Array;
  isValidPrivateKey(privateKey: Uint8Array): boolean;
  isValidPublicKey(publicKey: Uint8Array): boolean;
  privateKeyTweakAdd(privateKey: Uint8Array, tweak: Uint8Array): Uint8Array;
  publicKeyTweakAdd(publicKey: Uint8Array, tweak: Uint8Array, compressed?: boolean): Uint8Array;
  /** Where `verify` stands with this key: not cached, cached, or cached with a hot table (diagnostic). */
  verifyCacheState(publicKey: Uint8Array): 'none' | 'cached' | 'hot';
}

export interface Core {
  secp256k1: CurveCore;
  p256: CurveCore;
  sha256(data: Uint8Array): Uint8Array;
  hmacSha256(key: Uint8Array, data: Uint8Array): Uint8Array;
  /**
   * When `verify` gives a key its full fixed-window table: after `hotAfter` verifications under the
   * key while it is cached, at most one table build per `buildEvery` verifications (defaults 32
   * and 512). Tests use { hotAfter: 1, buildEvery: 0 }.
   */
  setVerifyCachePolicy(policy: { hotAfter: number; buildEvery: number }): void;
}

// ---- ABI constants (mirror assembly/layout.ts) ----
const IN_DIGEST = 0;
const IN_KEY = 32;
const IN_TWEAK = 96;
const IN_SIG = 128;
const IN_PUB = 256;
const IN_EXTRA = 512;
const EXTRA_MAX = 1024;
const OUT_SIG = 0;
const OUT_REC = 64;
const OUT_PUB = 128;
const OUT_SECRET = 256;
const IN_B_DIGESTS = 0;
const IN_B_KEYS = 8192;
const OUT_B_SIGS = 0;
const OUT_B_RECS = 16384;

/** Status codes returned by the wasm functions. */
const STATUS: Record<number, CoreErrorCode | 'INVALID_CURVE' | 'INVALID_ARGUMENT'> = {
  1: 'INVALID_PRIVATE_KEY',
  2: 'INVALID_PUBLIC_KEY',
  3: 'INVALID_DIGEST',
  4: 'INVALID_SIGNATURE',
  5: 'INVALID_RECOVERY_ID',
  6: 'INVALID_TWEAK',
  7: 'INVALID_LENGTH',
  8: 'SIGN_FAILED',
  9: 'INVALID_CURVE',
  10: 'INVALID_ARGUMENT',
};

const MESSAGES: Record<string, string> = {
  INVALID_PRIVATE_KEY: 'private key must be 32 bytes encoding an integer in [1, n-1]',
  INVALID_PUBLIC_KEY: 'public key must be a valid SEC1 point (33 or 65 bytes) on the curve',
  INVALID_DIGEST: 'digest must be 32 bytes',
  INVALID_SIGNATURE: 'signature is malformed or out of range',
  INVALID_RECOVERY_ID: 'recovery id must be 0, 1, 2 or 3',
  INVALID_TWEAK: 'tweak must be 32 bytes below n and must not yield zero/infinity',
  INVALID_LENGTH: 'input has an invalid length',
  SIGN_FAILED: 'signing failed',
};

function fail(code: string, detail?: string): never {
  throw new CoreError(code, detail ? `${MESSAGES[code] ?? code} (${detail})` : (MESSAGES[code] ?? code));
}

interface Exports {
  memory: WebAssembly.Memory;
  ioIn(): number;
  ioOut(): number;
  ioSize(): number;
  batchMax(): number;
  batchErrorIndex(): number;
  sign(curve: number, flags: number, extraLen: number): number;
  signBatch(curve: number, count: number, oneKey: number): number;
  verify(curve: number, flags: number, pubLen: number): number;
  getPublicKey(curve: number, compressed: number): number;
  recover(curve: number, recid: number, compressed: number): number;
  ecdh(curve: number, pubLen: number): number;
  isValidPrivateKey(curve: number): number;
  isValidPublicKey(curve: number, pubLen: number): number;
  convertPublicKey(curve: number, pubLen: number, compressed: number): number;
  privateKeyTweakAdd(curve: number): number;
  publicKeyTweakAdd(curve: number, pubLen: number, compressed: number): number;
  hashInit(mode: number, keyLen: number): number;
  hashUpdate(len: number): number;
  hashFinal(mode: number): number;
  verifyCacheState(curve: number, pubLen: number): number;
  setVerifyCachePolicy(after: number, buildEvery: number): void;
}

const isBytes = (x: unknown): x is Uint8Array => x instanceof Uint8Array;

/**
 * Strict DER (X.690 DER subset used by ECDSA): SEQUENCE { INTEGER r, INTEGER s }, short-form
 * lengths, minimal non-negative integers, no trailing bytes. Returns 64-byte r‖s or null.
 */
export function derToCompact(der: Uint8Array): Uint8Array | null {
  const len = der.length;
  if (len < 8 || len > 72 || der[0] !== 0x30 || der[1] !== len - 2) return null;
  const out = new Uint8Array(64);
  let pos = 2;
  for (let part = 0; part < 2; part++) {
    if (pos + 2 > len || der[pos] !== 0x02) return null;
    const l = der[pos + 1]!;
    pos += 2;
    if (l === 0 || l > 33 || pos + l > len) return null;
    const first = der[pos]!;
    if (first & 0x80) return null; // negative
    if (l > 1 && first === 0 && !(der[pos + 1]! & 0x80)) return null; // non-minimal
    let start = pos;
    let vl = l;
    if (first === 0 && l > 1) {
      start++;
      vl--;
    }
    if (vl > 32) return null;
    out.set(der.subarray(start, start + vl), part * 32 + 32 - vl);
    pos += l;
  }
  if (pos !== len) return null;
  return out;
}

export function createCore(instance: WebAssembly.Instance): Core {
  const x = instance.exports as unknown as Exports;
  const inPtr = x.ioIn();
  const outPtr = x.ioOut();
  const ioSize = x.ioSize();
  const batchMax = x.batchMax();
  let buf = new Uint8Array(x.memory.buffer);
  const mem = (): Uint8Array => {
    if (buf.buffer !== x.memory.buffer) buf = new Uint8Array(x.memory.buffer);
    return buf;
  };
  const put = (off: number, b: Uint8Array) => mem().set(b, inPtr + off);
  const get = (off: number, n: number) => mem().slice(outPtr + off, outPtr + off + n);
  const check = (st: number, detail?: string) => {
    if (st !== 0) fail(STATUS[st] ?? 'INVALID_ARGUMENT', detail);
  };

  function curve(name: CurveName, id: number): CurveCore {
    const needKey = (k: Uint8Array) => {
      if (!isBytes(k) || k.length !== 32) fail('INVALID_PRIVATE_KEY');
    };
    const needDigest = (d: Uint8Array) => {
      if (!isBytes(d) || d.length !== 32) fail('INVALID_DIGEST');
    };
    const needPub = (p: Uint8Array) => {
      if (!isBytes(p) || (p.length !== 33 && p.length !== 65)) fail('INVALID_PUBLIC_KEY');
    };
    const needTweak = (t: Uint8Array) => {
      if (!isBytes(t) || t.length !== 32) fail('INVALID_TWEAK');
    };
    const pubLen = (compressed: boolean | undefined) => (compressed === false ? 65 : 33);

    return {
      name,
      sign(digest, privateKey, opts) {
        needDigest(digest);
        needKey(privateKey);
        const lowS = opts?.lowS !== false;
        const extra = opts?.extraEntropy;
        let extraLen = 0;
        if (extra !== undefined) {
          if (!isBytes(extra) || extra.length > EXTRA_MAX) fail('INVALID_LENGTH', 'extraEntropy');
          extraLen = extra.length;
          put(IN_EXTRA, extra);
        }
        put(IN_DIGEST, digest);
        put(IN_KEY, privateKey);
        check(x.sign(id, lowS ? 1 : 0, extraLen));
        return { signature: get(OUT_SIG, 64), recovery: mem()[outPtr + OUT_REC]! };
      },

      signBatch(digests, privateKeys) {
        if (!Array.isArray(digests)) fail('INVALID_LENGTH', 'digests must be an array');
        const oneKey = !Array.isArray(privateKeys);
        if (oneKey) needKey(privateKeys as Uint8Array);
        else if ((privateKeys as Uint8Array[]).length !== digests.length) fail('INVALID_LENGTH', 'one key per digest');
        const keys = privateKeys as Uint8Array[];
        for (let i = 0; i < digests.length; i++) {
          needDigest(digests[i]!);
          if (!oneKey) needKey(keys[i]!);
        }
        const out: RecoverableSignature[] = [];
        for (let start = 0; start < digests.length; start += batchMax) {
          const count = Math.min(batchMax, digests.length - start);
          const m = mem();
          for (let i = 0; i < count; i++) {
            m.set(digests[start + i]!, inPtr + IN_B_DIGESTS + 32 * i);
            if (!oneKey) m.set(keys[start + i]!, inPtr + IN_B_KEYS + 32 * i);
          }
          if (oneKey) m.set(privateKeys as Uint8Array, inPtr + IN_B_KEYS);
          const st = x.signBatch(id, count, oneKey ? 1 : 0);
          if (st !== 0) check(st, `item ${start + x.batchErrorIndex()}`);
          const sigs = get(OUT_B_SIGS, 64 * count);
          const recs = get(OUT_B_RECS, count);
          for (let i = 0; i < count; i++) {
            out.push({ signature: sigs.slice(64 * i, 64 * i + 64), recovery: recs[i]! });
          }
        }
        return out;
      },

      verify(signature, digest, publicKey, opts) {
        if (!isBytes(signature) || !isBytes(digest) || !isBytes(publicKey)) return false;
        if (digest.length !== 32) return false;
        if (publicKey.length !== 33 && publicKey.length !== 65) return false;
        let compact: Uint8Array | null;
        let format = opts?.format;
        if (format === undefined) {
          // 64 bytes are r‖s unless they also parse as strict DER (r and s short enough for a
          // 64-byte DER encoding): then the caller must say which one it means.
          if (signature.length === 64 && derToCompact(signature) !== null) {
            throw new CoreError('AMBIGUOUS_SIGNATURE', 'a 64-byte signature that is also valid DER: pass format');
          }
          format = signature.length === 64 ? 'compact' : 'der';
        }
        if (format === 'compact') compact = signature.length === 64 ? signature : null;
        else compact = derToCompact(signature);
        if (!compact) return false;
        put(IN_SIG, compact);
        put(IN_DIGEST, digest);
        put(IN_PUB, publicKey);
        return x.verify(id, opts?.lowS === true ? 1 : 0, publicKey.length) === 0;
      },

      getPublicKey(privateKey, compressed = true) {
        needKey(privateKey);
        put(IN_KEY, privateKey);
        check(x.getPublicKey(id, compressed ? 1 : 0));
        return get(OUT_PUB, pubLen(compressed));
      },

      recoverPublicKey(digest, signature, recovery, compressed = true) {
        needDigest(digest);
        if (!isBytes(signature) || signature.length !== 64) fail('INVALID_SIGNATURE');
        if (!Number.isInteger(recovery) || recovery < 0 || recovery > 3) fail('INVALID_RECOVERY_ID');
        put(IN_DIGEST, digest);
        put(IN_SIG, signature);
        check(x.recover(id, recovery, compressed ? 1 : 0));
        return get(OUT_PUB, pubLen(compressed));
      },

      ecdh(privateKey, publicKey) {
        needKey(privateKey);
        needPub(publicKey);
        put(IN_KEY, privateKey);
        put(IN_PUB, publicKey);
        check(x.ecdh(id, publicKey.length));
        const r = get(OUT_SECRET, 32);
        mem().fill(0, outPtr + OUT_SECRET, outPtr + OUT_SECRET + 32);
        return r;
      },

      convertPublicKey(publicKey, compressed) {
        needPub(publicKey);
        put(IN_PUB, publicKey);
        check(x.convertPublicKey(id, publicKey.length, compressed ? 1 : 0));
        return get(OUT_PUB, pubLen(compressed));
      },

      isValidPrivateKey(privateKey) {
        if (!isBytes(privateKey) || privateKey.length !== 32) return false;
        put(IN_KEY, privateKey);
        return x.isValidPrivateKey(id) === 0;
      },

      isValidPublicKey(publicKey) {
        if (!isBytes(publicKey) || (publicKey.length !== 33 && publicKey.length !== 65)) return false;
        put(IN_PUB, publicKey);
        return x.isValidPublicKey(id, publicKey.length) === 0;
      },

      privateKeyTweakAdd(privateKey, tweak) {
        needKey(privateKey);
        needTweak(tweak);
        put(IN_KEY, privateKey);
        put(IN_TWEAK, tweak);
        check(x.privateKeyTweakAdd(id));
        const r = get(OUT_SECRET, 32);
        mem().fill(0, outPtr + OUT_SECRET, outPtr + OUT_SECRET + 32);
        return r;
      },

      publicKeyTweakAdd(publicKey, tweak, compressed = true) {
        needPub(publicKey);
        needTweak(tweak);
        put(IN_PUB, publicKey);
        put(IN_TWEAK, tweak);
        check(x.publicKeyTweakAdd(id, publicKey.length, compressed ? 1 : 0));
        return get(OUT_PUB, pubLen(compressed));
      },

      verifyCacheState(publicKey) {
        if (!isBytes(publicKey) || (publicKey.length !== 33 && publicKey.length !== 65)) return 'none';
        put(IN_PUB, publicKey);
        return (['none', 'cached', 'hot'] as const)[x.verifyCacheState(id, publicKey.length)] ?? 'none';
      },
    };
  }

  function hashAll(mode: number, data: Uint8Array): Uint8Array {
    for (let off = 0; off < data.length; off += ioSize) {
      const chunk = data.subarray(off, Math.min(data.length, off + ioSize));
      put(0, chunk);
      check(x.hashUpdate(chunk.length));
    }
    check(x.hashFinal(mode));
    return get(0, 32);
  }

  const core: Core = {
    secp256k1: curve('secp256k1', 0),
    p256: curve('p256', 1),
    sha256(data) {
      if (!isBytes(data)) fail('INVALID_LENGTH', 'data must be a Uint8Array');
      check(x.hashInit(0, 0));
      return hashAll(0, data);
    },
    hmacSha256(key, data) {
      if (!isBytes(key) || !isBytes(data)) fail('INVALID_LENGTH', 'key and data must be Uint8Arrays');
      const k = key.length > 64 ? core.sha256(key) : key;
      put(0, k);
      check(x.hashInit(1, k.length));
      const tag = hashAll(1, data);
      mem().fill(0, inPtr, inPtr + 64);
      return tag;
    },
    setVerifyCachePolicy({ hotAfter, buildEvery }) {
      const u32 = (v: number) => Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
      if (!u32(hotAfter) || !u32(buildEvery)) fail('INVALID_LENGTH', 'hotAfter and buildEvery must be integers ≥ 0');
      x.setVerifyCachePolicy(hotAfter, buildEvery);
    },
  };
  return core;
}
