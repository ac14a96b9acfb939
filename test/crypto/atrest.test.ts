import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  loadOrCreateMasterKey,
  openSecret,
  openSecretText,
  parseMasterKey,
  sealSecret,
  sealSecretText,
  type AtRestContext,
} from '../../src/crypto/atrest.js';
import { code, hex } from './helpers.js';

const mk = () => globalThis.crypto.getRandomValues(new Uint8Array(32));
const ctx: AtRestContext = { kind: 'private_key', organizationId: 'org-1', recordId: 'pk-1' };

describe('at-rest envelope', () => {
  it('round trips and has the documented layout (checked with WebCrypto)', async () => {
    const master = mk();
    const pt = globalThis.crypto.getRandomValues(new Uint8Array(32));
    const sealed = sealSecret(master, pt, ctx);
    expect(sealed[0]).toBe(1);
    expect(sealed).toHaveLength(1 + 12 + 32 + 16);
    expect(hex(openSecret(master, sealed, ctx))).toBe(hex(pt));
    // independent decryption of the documented format
    const key = hkdf(sha256, master, new Uint8Array(0), new TextEncoder().encode('kmas/at-rest/v1'), 32);
    const aad = new TextEncoder().encode(JSON.stringify(['kmas/at-rest/v1', ctx.kind, ctx.organizationId, ctx.recordId]));
    const wk = await globalThis.crypto.subtle.importKey('raw', new Uint8Array(key), 'AES-GCM', false, ['decrypt']);
    const out = await globalThis.crypto.subtle.decrypt({ name: 'AES-GCM', iv: new Uint8Array(sealed.subarray(1, 13)), additionalData: aad }, wk, new Uint8Array(sealed.subarray(13)));
    expect(hex(new Uint8Array(out))).toBe(hex(pt));
  });
  it('fresh nonce each time; the plaintext never appears in the output', () => {
    const master = mk();
    const pt = new Uint8Array(32).fill(0xab);
    const a = sealSecret(master, pt, ctx);
    const b = sealSecret(master, pt, ctx);
    expect(hex(a)).not.toBe(hex(b));
    expect(hex(a).includes(hex(pt))).toBe(false);
  });
  it('binds the record: other org / id / kind, other master key, tampering → DECRYPTION_FAILED', () => {
    const master = mk();
    const sealed = sealSecret(master, new Uint8Array(32).fill(1), ctx);
    expect(code(() => openSecret(master, sealed, { ...ctx, organizationId: 'org-2' }))).toBe('DECRYPTION_FAILED');
    expect(code(() => openSecret(master, sealed, { ...ctx, recordId: 'pk-2' }))).toBe('DECRYPTION_FAILED');
    expect(code(() => openSecret(master, sealed, { ...ctx, kind: 'wallet_mnemonic' }))).toBe('DECRYPTION_FAILED');
    expect(code(() => openSecret(mk(), sealed, ctx))).toBe('DECRYPTION_FAILED');
    const t = sealed.slice();
    t[20] ^= 1;
    expect(code(() => openSecret(master, t, ctx))).toBe('DECRYPTION_FAILED');
    const v = sealed.slice();
    v[0] = 2;
    expect(code(() => openSecret(master, v, ctx))).toBe('INVALID_CIPHERTEXT');
    expect(code(() => openSecret(master, sealed.slice(0, 20), ctx))).toBe('INVALID_CIPHERTEXT');
    expect(code(() => sealSecret(new Uint8Array(16), sealed, ctx))).toBe('INVALID_MASTER_KEY');
  });
  it('text variant', () => {
    const master = mk();
    const m = 'leaf lady until indicate praise final route toast cake minimum insect unknown';
    const s = sealSecretText(master, m, { ...ctx, kind: 'wallet_mnemonic' });
    expect(s.includes('leaf')).toBe(false);
    expect(openSecretText(master, s, { ...ctx, kind: 'wallet_mnemonic' })).toBe(m);
  });
});

describe('master key', () => {
  it('parses hex and base64', () => {
    const k = mk();
    expect(hex(parseMasterKey(hex(k)))).toBe(hex(k));
    expect(hex(parseMasterKey('0x' + hex(k).toUpperCase()))).toBe(hex(k));
    expect(hex(parseMasterKey(Buffer.from(k).toString('base64')))).toBe(hex(k));
    expect(hex(parseMasterKey(Buffer.from(k).toString('base64url')))).toBe(hex(k));
    for (const bad of ['', 'abc', hex(k).slice(2), Buffer.from(k.slice(1)).toString('base64')]) expect(code(() => parseMasterKey(bad))).toBe('INVALID_MASTER_KEY');
  });
  it('env wins; else creates DATA_DIR/master.key with mode 0600 and reuses it', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kmas-mk-')), 'data');
    try {
      const k = mk();
      const e = loadOrCreateMasterKey(dir, { KMAS_MASTER_KEY: hex(k) });
      expect(e.source).toBe('env');
      expect(hex(e.key)).toBe(hex(k));
      const c = loadOrCreateMasterKey(dir, {});
      expect(c.source).toBe('created');
      expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(dir, 'master.key'), 'utf8').trim()).toBe(hex(c.key));
      const f = loadOrCreateMasterKey(dir, {});
      expect(f.source).toBe('file');
      expect(hex(f.key)).toBe(hex(c.key));
      expect(f.warnings).toEqual([]);
      expect(code(() => loadOrCreateMasterKey(dir, { KMAS_MASTER_KEY: 'nope' }))).toBe('INVALID_MASTER_KEY');
      writeFileSync(join(dir, 'master.key'), 'garbage', { mode: 0o644 });
      expect(code(() => loadOrCreateMasterKey(dir, {}))).toBe('INVALID_MASTER_KEY');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
