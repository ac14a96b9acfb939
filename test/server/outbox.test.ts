// The outbox loop at shutdown (issue 17 "Graceful shutdown"): close() claims no more rows, waits
// for the work under way, and after its grace releases what is still running, so that the rows
// are due again at once (for another process or the next start) instead of after their lease.
// Driven against the real SQLite store and its webhook_deliveries rows. And the loop after a
// failed look at the store: it keeps looking every pollMs (README, OUTBOX_POLL_MS).
import { describe, it, expect } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteDb } from '../../src/storage/sqlite.js';
import { Outbox } from '../../src/outbox.js';
import { createLogger } from '../../src/log.js';
import type { WebhookDeliveryRow } from '../../src/storage/types.js';
import { freshDataDir } from './harness.js';

describe('Outbox.close', () => {
  it('releases the rows whose work outlives the grace; takes no new rows once closed', async () => {
    const dir = freshDataDir();
    const db = openSqliteDb(join(dir, 'outbox.sqlite'), { synchronous: 'NORMAL' });
    try {
      const now = Date.now();
      const row = (id: string): WebhookDeliveryRow => ({ id, organizationId: 'o', activityId: 'a', eventType: 'ACTIVITY_UPDATES', url: 'https://example.invalid/h', body: '{}', attempts: 0, nextAttemptMs: now - 1, createdMs: now });
      await db.write((tx) => tx.webhooks.enqueue(row('slow')));
      const started: string[] = [];
      let finishSlow: (() => void) | undefined;
      const outbox = new Outbox<WebhookDeliveryRow>(db, {
        due: (t, limit) => db.read((tx) => tx.webhooks.due(t, limit)),
        claim: (r, until) => db.write((tx) => tx.webhooks.claim(r.id, r.nextAttemptMs, until)),
        nextDueMs: () => db.read((tx) => tx.webhooks.nextDueMs()),
        release: async (r, until) => { await db.write((tx) => tx.webhooks.claim(r.id, until, Date.now())); },
      }, (r) => { started.push(r.id); return new Promise<void>((res) => { finishSlow = res; }); }, createLogger('silent'), { what: 'test', maxInFlight: 4, leaseMs: 3_600_000, pollMs: 3_600_000 });
      outbox.kick();
      for (let i = 0; i < 200 && started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(started).toEqual(['slow']);
      // claimed: not due for an hour
      expect(await db.read((tx) => tx.webhooks.due(Date.now(), 10))).toEqual([]);

      await outbox.close(50);
      // released: due again now, for whoever takes it next
      expect((await db.read((tx) => tx.webhooks.due(Date.now(), 10))).map((r) => r.id)).toEqual(['slow']);
      // closed: a new due row is not taken
      await db.write((tx) => tx.webhooks.enqueue(row('later')));
      outbox.kick();
      await new Promise((r) => setTimeout(r, 50));
      expect(started).toEqual(['slow']);
      finishSlow?.();
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Outbox after the store failed', () => {
  it('a failed look at the store (a lost connection, a timed-out statement) does not stop the loop: it looks again within pollMs', async () => {
    const dir = freshDataDir();
    const db = openSqliteDb(join(dir, 'outbox.sqlite'), { synchronous: 'NORMAL' });
    const logged: string[] = [];
    try {
      const now = Date.now();
      // due shortly after the first look, which fails
      await db.write((tx) => tx.webhooks.enqueue({ id: 'later', organizationId: 'o', activityId: 'a', eventType: 'ACTIVITY_UPDATES', url: 'https://example.invalid/h', body: '{}', attempts: 0, nextAttemptMs: now + 300, createdMs: now }));
      let failures = 1;
      const done: string[] = [];
      const log = { ...createLogger('silent'), error: (msg: string) => { logged.push(msg); } } as ReturnType<typeof createLogger>;
      const outbox = new Outbox<WebhookDeliveryRow>(db, {
        due: (t, limit) => {
          if (failures > 0) { failures--; return Promise.reject(new Error('Connection terminated unexpectedly')); }
          return db.read((tx) => tx.webhooks.due(t, limit));
        },
        claim: (r, until) => db.write((tx) => tx.webhooks.claim(r.id, r.nextAttemptMs, until)),
        nextDueMs: () => db.read((tx) => tx.webhooks.nextDueMs()),
        release: async (r, until) => { await db.write((tx) => tx.webhooks.claim(r.id, until, Date.now())); },
      }, async (r) => { done.push(r.id); await db.write((tx) => tx.webhooks.remove(r.id)); }, log, { what: 'test', maxInFlight: 4, leaseMs: 60_000, pollMs: 200 });
      outbox.kick();
      // no further kick: only the loop's own timer can take the row
      for (let i = 0; i < 300 && done.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      await outbox.close();
      expect(logged).toEqual(['test stopped']);
      expect(done).toEqual(['later']);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Outbox.close while a row is being claimed', () => {
  it('a row whose claim was under way when close() came is not started: it is given back, due again at once', async () => {
    const dir = freshDataDir();
    const db = openSqliteDb(join(dir, 'outbox.sqlite'), { synchronous: 'NORMAL' });
    try {
      const now = Date.now();
      await db.write((tx) => tx.webhooks.enqueue({ id: 'racing', organizationId: 'o', activityId: 'a', eventType: 'ACTIVITY_UPDATES', url: 'https://example.invalid/h', body: '{}', attempts: 0, nextAttemptMs: now - 1, createdMs: now }));
      const started: string[] = [];
      let claiming: (() => void) | undefined;
      const outbox = new Outbox<WebhookDeliveryRow>(db, {
        due: (t, limit) => db.read((tx) => tx.webhooks.due(t, limit)),
        // the claim's write is slow (a busy store): close() comes meanwhile
        claim: async (r, until) => {
          const won = await db.write((tx) => tx.webhooks.claim(r.id, r.nextAttemptMs, until));
          await new Promise<void>((res) => { claiming = res; });
          return won;
        },
        nextDueMs: () => db.read((tx) => tx.webhooks.nextDueMs()),
        release: async (r, until) => { await db.write((tx) => tx.webhooks.claim(r.id, until, Date.now())); },
      }, async (r) => { started.push(r.id); }, createLogger('silent'), { what: 'test', maxInFlight: 4, leaseMs: 3_600_000, pollMs: 3_600_000 });
      outbox.kick();
      for (let i = 0; i < 200 && !claiming; i++) await new Promise((r) => setTimeout(r, 10));
      expect(claiming).toBeDefined();
      const closed = outbox.close(5_000);
      claiming!();
      await closed;
      await new Promise((r) => setTimeout(r, 50));
      // closed: nothing started after close(), and the row is not left under an hour's lease
      expect(started).toEqual([]);
      expect((await db.read((tx) => tx.webhooks.due(Date.now(), 10))).map((r) => r.id)).toEqual(['racing']);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Outbox when a row outlives its lease in its own process', () => {
  it('does not look at the store again and again while that row is still under way here (it is not taken twice either)', async () => {
    const dir = freshDataDir();
    const db = openSqliteDb(join(dir, 'outbox.sqlite'), { synchronous: 'NORMAL' });
    try {
      const now = Date.now();
      await db.write((tx) => tx.webhooks.enqueue({ id: 'long', organizationId: 'o', activityId: 'a', eventType: 'ACTIVITY_UPDATES', url: 'https://example.invalid/h', body: '{}', attempts: 0, nextAttemptMs: now - 1, createdMs: now }));
      let looks = 0;
      const started: string[] = [];
      let finish: (() => void) | undefined;
      const outbox = new Outbox<WebhookDeliveryRow>(db, {
        due: (t, limit) => { looks++; return db.read((tx) => tx.webhooks.due(t, limit)); },
        claim: (r, until) => db.write((tx) => tx.webhooks.claim(r.id, r.nextAttemptMs, until)),
        nextDueMs: () => db.read((tx) => tx.webhooks.nextDueMs()),
        release: async (r, until) => { await db.write((tx) => tx.webhooks.claim(r.id, until, Date.now())); },
      }, (r) => { started.push(r.id); return new Promise<void>((res) => { finish = res; }); }, createLogger('silent'), { what: 'test', maxInFlight: 4, leaseMs: 50, pollMs: 1_000 });
      outbox.kick();
      for (let i = 0; i < 200 && started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const before = looks;
      // the lease (50 ms) ends while the work goes on for 600 ms more
      await new Promise((r) => setTimeout(r, 600));
      expect(started).toEqual(['long']);
      // a look every pollMs (1 s) at most, not one per turn of the event loop
      expect(looks - before).toBeLessThanOrEqual(2);
      finish?.();
      await outbox.close();
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
