// Authentication flows raced on three nodes sharing one PostgreSQL: a recovery key
// (init_user_email_recovery) is good for one recover_user however many nodes receive it at once,
// and logins with one new client key on several nodes each answer 200 or a 4xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { p256 } from '@noble/curves/nist.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decryptCredentialBundle, generateP256KeyPair } from '@turnkey/crypto';
import type { RunningServer } from '../../src/server.js';
import { startNodes, type Fleet } from './nodes.js';
import { freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { rawRequest, sdkClient, sleep, uniqueName, type ApiKeyPair } from '../server/harness.js';
import { SoftPasskey } from '../server/softPasskey.js';

const available = postgresAvailable();
if (!available) missingPostgres('the authentication race tests (test/nodes/auth-races.test.ts)');

describe.runIf(available)('authentication flows raced on three nodes', () => {
  let fleet: Fleet | undefined;
  let nodes: RunningServer[] = [];
  let mailDir = '';
  let orgId = '';
  let root: ApiKeyPair;
  const sdk = (i: number, key: ApiKeyPair = root, org = orgId) => sdkClient(nodes[i]!.url, key, org);

  beforeAll(async () => {
    const databaseUrl = await freshDatabase();
    mailDir = mkdtempSync(join(tmpdir(), 'kmas-mail-'));
    fleet = await startNodes(3, databaseUrl, { mailDir, outboxPollMs: 200 });
    ({ nodes, orgId, root } = fleet);
  }, 90_000);
  afterAll(async () => {
    await fleet?.stop();
    if (mailDir) rmSync(mailDir, { recursive: true, force: true });
  });

  async function bundleMailedTo(to: string): Promise<string> {
    for (const t0 = Date.now(); Date.now() - t0 < 20_000; await sleep(50)) {
      for (const f of readdirSync(mailDir)) {
        const m = await simpleParser(readFileSync(join(mailDir, f)));
        if ((m.to as { text: string } | undefined)?.text !== to) continue;
        const b = /\n([1-9A-HJ-NP-Za-km-z]{100,})\n/.exec(m.text ?? '');
        if (b) { rmSync(join(mailDir, f)); return b[1]!; }
      }
    }
    throw new Error(`no mail to ${to}`);
  }

  // Guards: a recovery key is used once: of recover_user racing on three nodes, one registers its passkey, the others roll back.
  it('one recovery key registers one passkey; the other racing uses are refused', async () => {
    const counts: number[] = [];
    const replies: string[] = [];
    for (let round = 0; round < 3; round++) {
      const email = `${uniqueName('race')}@example.com`.toLowerCase();
      const sub: any = await sdk(0).createSubOrganization({
        subOrganizationName: uniqueName('race'), rootQuorumThreshold: 1,
        rootUsers: [{ userName: 'alice', userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
      } as any);
      expect(sub.activity.status, JSON.stringify(sub.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
      const subId = sub.subOrganizationId as string;
      const userId = sub.rootUserIds[0] as string;
      const target = generateP256KeyPair();
      const init: any = await sdk(1).initUserEmailRecovery({ organizationId: subId, email, targetPublicKey: target.publicKeyUncompressed, emailCustomization: { appName: 'W' } } as any);
      expect(init.activity.status, JSON.stringify(init.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
      const privateKey = decryptCredentialBundle(await bundleMailedTo(email), target.privateKey);
      const key = { privateKey, publicKey: bytesToHex(p256.getPublicKey(hexToBytes(privateKey), true)) };
      const now = Date.now();
      const rs = await Promise.all([0, 1, 2].map((i) => rawRequest(nodes[i]!.url, '/public/v1/submit/recover_user', JSON.stringify({
        type: 'ACTIVITY_TYPE_RECOVER_USER', timestampMs: String(now + i), organizationId: subId,
        parameters: { userId, authenticator: new SoftPasskey().params() },
      }), { key })));
      const passkeys: any = await sdk(2).getAuthenticators({ organizationId: subId, userId } as any);
      counts.push(passkeys.authenticators.length);
      replies.push(rs.map((r) => `${r.status} ${r.status === 200 ? r.json.activity.status : r.json.message}`).join(' | '));
    }
    expect(counts, `passkeys registered with one recovery key, per round (replies: ${replies.join('; ')})`).toEqual([1, 1, 1]);
  });

  // Guards: logins registering one new key at once on three nodes are serialized (no unique-index violation as a 500).
  it('stamp_login with one new client key raced on three nodes: each reply is 200 or a 4xx, never 500', async () => {
    const userKey = (() => { const sk = p256.utils.randomSecretKey(); return { privateKey: bytesToHex(sk), publicKey: bytesToHex(p256.getPublicKey(sk, true)) }; })();
    const sub: any = await sdk(0).createSubOrganization({
      subOrganizationName: uniqueName('login'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'bob', apiKeys: [{ apiKeyName: 'k', publicKey: userKey.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] }],
    } as any);
    expect(sub.activity.status, JSON.stringify(sub.activity.failure)).toBe('ACTIVITY_STATUS_COMPLETED');
    const bad: string[] = [];
    for (let round = 0; round < 5; round++) {
      const session = bytesToHex(p256.getPublicKey(p256.utils.randomSecretKey(), true));
      const now = Date.now();
      const rs = await Promise.all([0, 1, 2].map((i) => rawRequest(nodes[i]!.url, '/public/v1/submit/stamp_login', JSON.stringify({
        type: 'ACTIVITY_TYPE_STAMP_LOGIN', timestampMs: String(now + i), organizationId: sub.subOrganizationId, parameters: { publicKey: session },
      }), { key: userKey })));
      for (const r of rs) if (r.status >= 500) bad.push(`${r.status} ${r.text}`);
    }
    expect(bad).toEqual([]);
  });
});
