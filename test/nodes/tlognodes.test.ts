// The verifiable activity log with three nodes on one PostgreSQL: the log key is created once and
// shared (every node serves the same key, bootstrap.json records it), and activities submitted to
// all three nodes at once are one log: consecutive indexes without a gap or a double (the
// organization's log lock, an advisory lock, and log_entries' primary key), every activity's latest
// entry matching it, the tree recomputing to a checkpoint signed by one node and consistent with
// one signed by another.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server.js';
import { startNodes, type Fleet } from './nodes.js';
import { compareActivities, verifierFrom, verifyEntries } from '../../src/tlog/verify.js';
import { fetchActivities, fetchEntries, remoteLog } from '../../src/tlog/remote.js';
import { verifyConsistency } from '../../src/tlog/merkle.js';
import { openCheckpoint } from '../../src/tlog/note.js';
import { freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { sdkClient, uniqueName, type ApiKeyPair } from '../server/harness.js';

const available = postgresAvailable();
if (!available) missingPostgres('the log on several nodes (test/nodes)');

describe.runIf(available)('the log on three nodes', () => {
  let fleet: Fleet;
  let nodes: RunningServer[] = [];
  let orgId = '';
  let root: ApiKeyPair;

  beforeAll(async () => {
    fleet = await startNodes(3, await freshDatabase());
    ({ nodes, orgId, root } = fleet);
  });
  afterAll(async () => { await fleet?.stop(); });

  it('one log key for every node, and activities sent to all three at once make one gapless log that verifies', async () => {
    const keys = await Promise.all(nodes.map(async (n) => (await fetch(`${n.url}/.well-known/kmas-log-key`)).json() as Promise<{ verifierKey: string; publicKey: string }>));
    for (const k of keys) expect(k).toEqual(keys[0]);
    for (const d of fleet.dirs) expect(JSON.parse(readFileSync(join(d, 'bootstrap.json'), 'utf8')).logPublicKey).toBe(keys[0]!.publicKey);
    const verifier = verifierFrom(keys[0]!.verifierKey);

    const logs = nodes.map((n) => remoteLog(n.url, root, orgId));
    const before = openCheckpoint((await logs[0]!.query('kmas_get_log_checkpoint', {})).checkpoint, verifier);
    await Promise.all(nodes.flatMap((n) => Array.from({ length: 4 }, async () => {
      const c = sdkClient(n.url, root, orgId);
      for (let i = 0; i < 6; i++) await c.createUserTag({ userTagName: uniqueName('nodes'), userIds: [] });
    })));

    const size = Number((await logs[1]!.query('kmas_list_log_entries', { limit: '1' })).treeSize);
    expect(size).toBeGreaterThanOrEqual(before.size + 72);
    const signed = await logs[1]!.query('kmas_get_log_checkpoint', { treeSize: String(size) });
    const report = await verifyEntries(await fetchEntries(logs[2]!, size), signed.checkpoint, verifier, logs[0]);
    expect(report.problem?.message).toBeUndefined();
    expect(report.entries.map((e) => e.index)).toEqual(Array.from({ length: size }, (_, i) => i));
    expect(compareActivities(report.entries, await fetchActivities(logs[0]!))).toBeUndefined();
    // a checkpoint node 0 signed before is a prefix of the one node 1 signed now (a proof node 2 gives)
    const cons = await logs[2]!.consistency(before.size, size);
    expect(verifyConsistency(before.size, size, before.root, openCheckpoint(signed.checkpoint, verifier).root, cons)).toBe(true);
  });
});
