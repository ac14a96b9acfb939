// WORKERS > 1 (src/http/pool.ts): node:cluster workers share one port and one SQLite database.
// Submits through several processes are all stored exactly once, each process sees the others'
// writes at once (also a deleted API key, despite the per-process key cache), and stop() ends
// the workers. The workers run the compiled build, so this file (re)builds dist first.
import { describe, it, expect } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { rmSync } from 'node:fs';
import { startServer } from '../../src/server.js';
import { freshDataDir, newP256Key, stampFor, submitBody, uniqueName, type ApiKeyPair } from './harness.js';
import { ensureBuilt } from './build.js';

/** One request on a fresh connection (so cluster's round-robin spreads them over the workers). */
function post(port: number, path: string, body: string, key: ApiKeyPair): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false,
      headers: { 'Content-Type': 'application/json', 'X-Stamp': stampFor(body, key), 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: any;
        try { json = JSON.parse(text); } catch { json = text; }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

describe('process pool (WORKERS=2)', () => {
  it('serves from several processes over one database, consistently, and stops them', async () => {
    const why = ensureBuilt();
    expect(why, why).toBeUndefined();
    const dataDir = freshDataDir();
    const server = await startServer({ host: '127.0.0.1', port: 0, dataDir, logLevel: 'silent', workers: 2 });
    try {
      const root = server.rootApiKey!;
      const org = server.bootstrap.organizationId;
      const port = server.port;

      // concurrent distinct submits on separate connections: all stored, each once
      const names = Array.from({ length: 30 }, (_, i) => uniqueName(`pool${i}`));
      const replies = await Promise.all(names.map((n) => post(port, '/public/v1/submit/create_user_tag',
        submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', org, { userTagName: n, userIds: [] }), root)));
      for (const r of replies) expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(new Set(replies.map((r) => r.json.activity.id)).size).toBe(30);
      // an identical body sent again through any process: the same activity
      const again = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', org, { userTagName: uniqueName('same'), userIds: [] });
      const same = await Promise.all(Array.from({ length: 6 }, () => post(port, '/public/v1/submit/create_user_tag', again, root)));
      for (const r of same) expect(r.status).toBe(200);
      expect(new Set(same.map((r) => r.json.activity.id)).size).toBe(1);
      // every process sees every tag
      for (let i = 0; i < 4; i++) {
        const list = await post(port, '/public/v1/query/list_user_tags', JSON.stringify({ organizationId: org }), root);
        expect(list.status).toBe(200);
        const got = new Set(list.json.userTags.map((t: any) => t.tagName));
        for (const n of names) expect(got.has(n), n).toBe(true);
      }

      // a user's key, used through every process (filling each process's key cache), then deleted
      const key = newP256Key();
      const u = await post(port, '/public/v1/submit/create_users', submitBody('ACTIVITY_TYPE_CREATE_USERS_V3', org, {
        users: [{ userName: uniqueName('pooluser'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], userTags: [] }],
      }), root);
      expect(u.status, JSON.stringify(u.json)).toBe(200);
      const userId = u.json.activity.result.createUsersResult.userIds[0];
      const who = JSON.stringify({ organizationId: org });
      for (let i = 0; i < 6; i++) expect((await post(port, '/public/v1/query/whoami', who, key)).status).toBe(200);
      const keys = await post(port, '/public/v1/query/get_api_keys', JSON.stringify({ organizationId: org, userId }), root);
      const apiKeyId = keys.json.apiKeys[0].apiKeyId;
      const del = await post(port, '/public/v1/submit/delete_api_keys', submitBody('ACTIVITY_TYPE_DELETE_API_KEYS', org, { userId, apiKeyIds: [apiKeyId] }), root);
      expect(del.status, JSON.stringify(del.json)).toBe(200);
      expect(del.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      for (let i = 0; i < 6; i++) {
        const r = await post(port, '/public/v1/query/whoami', who, key);
        expect(r.status, `request ${i} after the delete`).toBe(401);
      }
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect(await portOpen(server.port)).toBe(false);
  });
});
