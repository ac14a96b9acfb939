// The generated sources of the core (tables, unrolled arithmetic, SHA-256 rounds) are checked in; this test
// regenerates them into a temp folder and requires the checked-in files to be identical, so a
// hand edit or a stale generator cannot slip through.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const out = mkdtempSync(join(tmpdir(), 'kmas-gen-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('generated core sources are fresh', () => {
  it('scripts/gen-tables.mjs reproduces assembly/tables/*', () => {
    execFileSync('node', [join(root, 'scripts', 'gen-tables.mjs'), out]);
    for (const f of ['secp256k1.ts', 'p256.ts']) {
      expect(readFileSync(join(out, f), 'utf8')).toBe(readFileSync(join(root, 'assembly', 'tables', f), 'utf8'));
    }
  });
  it('scripts/gen-arith/build.mjs reproduces assembly/field.ts and assembly/scalar.ts', () => {
    execFileSync('node', [join(root, 'scripts', 'gen-arith', 'build.mjs'), out]);
    for (const f of ['field.ts', 'scalar.ts']) {
      expect(readFileSync(join(out, f), 'utf8')).toBe(readFileSync(join(root, 'assembly', f), 'utf8'));
    }
  });
  it('scripts/gen-sha256/build.mjs reproduces assembly/hash/sha256.ts (rounds and constants computed)', () => {
    execFileSync('node', [join(root, 'scripts', 'gen-sha256', 'build.mjs'), out]);
    expect(readFileSync(join(out, 'sha256.ts'), 'utf8')).toBe(readFileSync(join(root, 'assembly', 'hash', 'sha256.ts'), 'utf8'));
  });
});
