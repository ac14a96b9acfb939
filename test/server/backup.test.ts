// `kmas backup` (src/storage/backup.ts) taken while the server serves and commits: the copy,
// with the same master key, starts a server that holds the same wallets and signs with them.
import { afterAll, describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { main } from '../../src/cli.js';
import { freshDataDir, onSqlite, startTestServer, uniqueName, type TestServer } from './harness.js';

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** Runs the CLI in this process, capturing what it writes. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const w1 = process.stdout.write.bind(process.stdout);
  const w2 = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((c: string) => { out += c; return true; }) as typeof process.stdout.write;
  process.stderr.write = ((c: string) => { err += c; return true; }) as typeof process.stderr.write;
  try {
    const code = await main(args, {});
    return { code, out, err };
  } finally {
    process.stdout.write = w1;
    process.stderr.write = w2;
  }
}

describe('kmas backup', () => {
  // kmas backup copies the embedded SQLite file; with PostgreSQL, backups are pg_dump's (README).
  it.runIf(onSqlite)('copies the database while the server keeps committing; the copy restores wallets that sign as before', async () => {
    const first = await startTestServer();
    const out = join(mkdtempSync(join(tmpdir(), 'kmas-backup-')), 'kmas-backup.sqlite');
    dirs.push(join(out, '..'));
    let restored: TestServer | undefined;
    try {
      const w: any = await first.sdk.createWallet({ walletName: 'kept', accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] } as any);
      const address = w.addresses[0];
      // Writes go on during the backup.
      let writing = true;
      const writer = (async () => { let n = 0; while (writing) await first.sdk.createUserTag({ userTagName: uniqueName(`t${n++}`), userIds: [] } as any); })();
      const r = await cli(['backup', out, '--data-dir', first.dataDir]);
      writing = false;
      await writer;
      expect(r.code, r.err).toBe(0);
      const summary = JSON.parse(r.out);
      expect(summary.file).toBe(out);
      expect(summary.organizations).toBe(1);
      expect(summary.activities).toBeGreaterThan(0);
      expect(summary.bytes).toBe(statSync(out).size);
      expect(statSync(out).mode & 0o777).toBe(0o600);
      // one self-contained file: no temporary copy, -wal or -shm beside it
      expect(readdirSync(join(out, '..'))).toEqual(['kmas-backup.sqlite']);

      // Another backup to the same file is refused and leaves it alone.
      const again = await cli(['backup', out, '--data-dir', first.dataDir]);
      expect(again.code).not.toBe(0);
      expect(again.err).toMatch(/exists/);
      expect(statSync(out).size).toBe(summary.bytes);
      await first.stop(true);

      // Restore: the copy as kmas.sqlite, with the same master key (and, for this client, the root key file).
      const dataDir = freshDataDir();
      dirs.push(dataDir, first.dataDir);
      copyFileSync(out, join(dataDir, 'kmas.sqlite'));
      writeFileSync(join(dataDir, 'master.key'), readFileSync(join(first.dataDir, 'master.key')), { mode: 0o600 });
      copyFileSync(join(first.dataDir, 'root-api-key.json'), join(dataDir, 'root-api-key.json'));
      restored = await startTestServer({ dataDir });
      expect(restored.orgId).toBe(first.orgId);
      const wallets: any = await restored.sdk.getWallets();
      expect(wallets.wallets.map((x: any) => x.walletId)).toContain(w.walletId);
      const digest = keccak_256(new TextEncoder().encode('after restore'));
      const sig: any = await restored.sdk.signRawPayload({ signWith: address, payload: bytesToHex(digest), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
      const pub = secp256k1.Signature.fromBytes(hexToBytes(sig.r + sig.s)).addRecoveryBit(Number(sig.v)).recoverPublicKey(digest).toBytes(false);
      expect(`0x${bytesToHex(keccak_256(pub.slice(1)).slice(-20))}`).toBe(address.toLowerCase());
    } finally {
      await first.stop(true);
      await restored?.stop();
    }
  }, 60_000);

  it('says what is wrong: no file argument, no database', async () => {
    const none = await cli(['backup']);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/backup needs the file/);
    const empty = freshDataDir();
    dirs.push(empty);
    const missing = await cli(['backup', join(empty, 'x.sqlite'), '--data-dir', empty]);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no database/);
    expect(existsSync(join(empty, 'x.sqlite'))).toBe(false);
  });
});
