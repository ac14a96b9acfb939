// kill -9 during a stream of activities: after a restart the verifiable log and the activities
// agree. A real `kmas serve` child takes submits from several concurrent clients and is sent
// SIGKILL mid-stream; a fresh server on the same data (SQLite file, or the PostgreSQL database in
// the `postgres` project) must then show: every acknowledged activity stored and logged, every
// stored activity's latest entry carrying its exact record digest, no entry for an activity that
// is not stored, no gap in the indexes, and a tree that recomputes to a signed checkpoint.
import { describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { compareActivities, verifierFrom, verifyEntries } from '../../src/tlog/verify.js';
import { fetchActivities, fetchEntries, remoteLog } from '../../src/tlog/remote.js';
import { ensureBuilt, spawnServe, type ServeProcess } from './build.js';
import { freshDataDir, sdkClient, startTestServer, type TestServer, rootOf } from './harness.js';

describe('the log after kill -9', () => {
  it('a server killed during a stream of activities restarts with its log and its activities in agreement', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const dataDir = freshDataDir();
    let serve: ServeProcess | undefined;
    let after: TestServer | undefined;
    try {
      serve = await spawnServe(dataDir);
      const { key, orgId } = rootOf(dataDir);
      const c = sdkClient(serve.url, key, orgId);
      const acknowledged: string[] = [];
      let stop = false;
      const client = async (n: number) => {
        for (let i = 0; !stop; i++) {
          try {
            const r: any = await c.createUserTag({ userTagName: `crash-${n}-${i}`, userIds: [] });
            acknowledged.push(r.activity.id);
          } catch { return; } // the server is gone
        }
      };
      const clients = Array.from({ length: 6 }, (_, n) => client(n));
      // kill once the stream is well under way (polled: the machine may be slow)
      for (let i = 0; i < 600 && acknowledged.length < 40; i++) await new Promise((r) => setTimeout(r, 25));
      await serve.stop('SIGKILL');
      stop = true;
      await Promise.all(clients);
      expect(acknowledged.length).toBeGreaterThanOrEqual(40);

      after = await startTestServer({ dataDir });
      const log = remoteLog(after.url, key, orgId);
      const verifier = verifierFrom(JSON.stringify(await (await fetch(`${after.url}/.well-known/kmas-log-key`)).json()));
      const size = Number((await log.query('kmas_list_log_entries', { limit: '1' })).treeSize);
      const cp = await log.query('kmas_get_log_checkpoint', { treeSize: String(size) });
      const entries = await fetchEntries(log, size);
      const report = await verifyEntries(entries, cp.checkpoint, verifier, log);
      expect(report.problem?.message).toBeUndefined();
      expect(report.ok).toBe(true);
      const activities = await fetchActivities(log);
      expect(compareActivities(report.entries, activities)).toBeUndefined();
      const stored = new Set(activities.map((a) => String(a.id)));
      for (const id of acknowledged) expect(stored.has(id), `acknowledged activity ${id} survived`).toBe(true);
      // and the log goes on from where it stopped
      const more: any = await after.sdk.createUserTag({ userTagName: 'after-the-crash', userIds: [] });
      const p = await log.query('kmas_get_log_inclusion_proof', { activityId: more.activity.id, treeSize: String(size + 1) });
      expect(Number(p.index)).toBe(size);
    } finally {
      await serve?.stop('SIGKILL');
      await after?.stop();
      if (!after) rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
