// A policy stored before kmas refused comparisons that letter case makes impossible (an EFFECT_DENY
// on a checksummed eth.tx.to) keeps its row; the server names it in its log at start, so the
// operator learns that the deny never fired.
import { describe, it, expect } from 'vitest';
import { rmSync } from 'node:fs';
import { startTestServer, freshDataDir } from './harness.js';
import { ensureBuilt, spawnServe } from './build.js';
import { openDb } from '../../src/server.js';
import { loadConfig } from '../../src/config.js';
import { testStorage } from './teststorage.js';

describe('stored policies that can never match', () => {
  it('are named in the start-up log (organization, policy, why), live ones are not', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const dataDir = freshDataDir();
    try {
      const ts = await startTestServer({ dataDir });
      const live: any = await ts.sdk.createPolicy({ policyName: 'live', effect: 'EFFECT_DENY', condition: "eth.tx.to == '0x6f72edb2429820c2a0606a9fc3ca364f5e9b2375'", consensus: '', notes: '' });
      await ts.stop(true);
      // what an older kmas stored without complaint
      const db = await openDb(loadConfig({ overrides: { dataDir, ...await testStorage(dataDir) } }));
      await db.write((tx) => tx.policies.insert({ id: '11111111-1111-4111-8111-111111111111', organizationId: ts.orgId, name: 'dead deny', effect: 'EFFECT_DENY',
        condition: "eth.tx.to == '0x6F72eDB2429820c2A0606a9FC3cA364f5E9b2375'", consensus: '', time: '', notes: '', createdMs: Date.now(), updatedMs: Date.now() }));
      // and a consensus whose literal has another type than its field (it errs: the allow never applies)
      await db.write((tx) => tx.policies.insert({ id: '22222222-2222-4222-8222-222222222222', organizationId: ts.orgId, name: 'dead allow', effect: 'EFFECT_ALLOW',
        condition: '', consensus: "approvers.any(user, user.is_root == 'true')", time: '', notes: '', createdMs: Date.now(), updatedMs: Date.now() }));
      await db.close();
      const serve = await spawnServe(dataDir);
      await serve.stop();
      const warnings = serve.output().split('\n').filter((l) => l.includes('can never match')).map((l) => JSON.parse(l));
      expect(warnings).toHaveLength(2);
      const deny = warnings.find((w) => w.policyId === '11111111-1111-4111-8111-111111111111');
      expect(deny).toMatchObject({ level: expect.anything(), organizationId: ts.orgId, effect: 'EFFECT_DENY' });
      expect(deny.problem).toContain('0x6f72edb2429820c2a0606a9fc3ca364f5e9b2375');
      const allow = warnings.find((w) => w.policyId === '22222222-2222-4222-8222-222222222222');
      expect(allow).toMatchObject({ organizationId: ts.orgId, effect: 'EFFECT_ALLOW' });
      expect(allow.problem).toContain('write true');
      expect(serve.output()).not.toContain(live.policyId);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
