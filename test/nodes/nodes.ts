// Several in-process kmas nodes on one PostgreSQL database, for the tests of test/nodes: each node
// with a data dir of its own, one master key, rate limits off; started together, so they race for
// the root organization as a fleet starting at once does (exactly one of them creates it).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startServer, type RunningServer, type StartOptions } from '../../src/server.js';
import { freshDataDir, type ApiKeyPair } from '../server/harness.js';

export interface Fleet {
  nodes: RunningServer[];
  /** each node's data dir, in the order of nodes */
  dirs: string[];
  /** the nodes that created the root organization (exactly one is expected) */
  creators: RunningServer[];
  root: ApiKeyPair;
  orgId: string;
  rootUserId: string;
  /** stops every node and removes the data dirs */
  stop(): Promise<void>;
}

export async function startNodes(count: number, databaseUrl: string, extra: Partial<StartOptions> = {}): Promise<Fleet> {
  const masterKey = randomBytes(32).toString('hex');
  const dirs = Array.from({ length: count }, () => freshDataDir());
  const nodes = await Promise.all(dirs.map((dataDir) => startServer({
    host: '127.0.0.1', port: 0, logLevel: 'silent', dataDir, databaseUrl, masterKey, rateLimitApiKey: 0, rateLimitOrganization: 0, ...extra,
  })));
  const creators = nodes.filter((n) => n.rootApiKey !== undefined);
  const made = creators[0]!;
  return {
    nodes, dirs, creators, root: made.rootApiKey!, orgId: made.bootstrap.organizationId, rootUserId: made.bootstrap.userId,
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
