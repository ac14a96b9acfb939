// Which of the Vault's key-making calls run while a write transaction is open. The server's own
// SQLite unit of work is wrapped to count open write callbacks (a test sends one request at a time,
// so nothing else runs meanwhile) and each named Vault method records, when it is called, whether
// one was open and how long it took. Installed in beforeAll, removed in afterAll.
import { afterAll, beforeAll } from 'vitest';
import { SqliteUnits } from '../../src/storage/sqliteUnit.js';
import { Vault } from '../../src/crypto/vault.js';

export interface KeyMakingCall { what: string; insideWrite: boolean; ms: number }

type Fn = (...a: unknown[]) => unknown;

/** Registers the hooks; the returned list fills with one entry per call of the named methods. */
export function probeKeyMaking(names: readonly (keyof Vault & string)[]): KeyMakingCall[] {
  const calls: KeyMakingCall[] = [];
  const restore: (() => void)[] = [];
  let openWrites = 0;
  const patch = <T extends object>(proto: T, name: string, wrap: (orig: Fn) => Fn): void => {
    const target = proto as Record<string, unknown>;
    const orig = target[name] as Fn;
    target[name] = wrap(orig);
    restore.push(() => { target[name] = orig; });
  };
  beforeAll(() => {
    patch(SqliteUnits.prototype, 'write', (orig) => function (this: unknown, ...a: unknown[]) {
      const fn = a[0] as (tx: unknown) => Promise<unknown>;
      return orig.call(this, async (tx: unknown) => { openWrites++; try { return await fn(tx); } finally { openWrites--; } });
    });
    for (const name of names) {
      patch(Vault.prototype, name, (orig) => function (this: unknown, ...a: unknown[]) {
        const insideWrite = openWrites > 0;
        const t = performance.now();
        try { return orig.apply(this, a); } finally { calls.push({ what: name, insideWrite, ms: performance.now() - t }); }
      });
    }
  });
  afterAll(() => { for (const r of restore.splice(0).reverse()) r(); });
  return calls;
}
