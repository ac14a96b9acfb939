// Graceful shutdown (issue 17): `kmas serve` gets SIGTERM while clients keep submitting. Every
// request the server accepted is answered (none is cut off), the process exits 0, every line it
// wrote is JSON (the shutdown lines included), and after a restart exactly the answered activities
// are stored: none was cut off mid-commit, none half-stored.
import { describe, it, expect } from 'vitest';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, spawnServe } from './build.js';
import { freshDataDir, startTestServer, stampFor, submitBody, uniqueName, rootOf } from './harness.js';
import { SUBMIT } from './checks.js';

type Outcome = { kind: 'answered'; status: number; name: string } | { kind: 'refused' } | { kind: 'reset'; name: string } | { kind: 'cut'; error: string; name: string };

/** One POST on a connection of its own (no keep-alive race): answered, refused at connect, or cut off. */
function post(url: string, path: string, body: string, stamp: string, name: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.request(url + path, {
      method: 'POST', agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'X-Stamp': stamp, Connection: 'close' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ kind: 'answered', status: res.statusCode ?? 0, name }));
      res.on('error', (e) => resolve({ kind: 'cut', error: e.message, name }));
    });
    // A reset before any answer is either a connection the kernel had queued when the listener
    // closed (the server never saw it) or an accepted request cut off: the server's own log and
    // store tell which (below: it must have neither logged nor stored it).
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED' ? { kind: 'refused' }
      : e.code === 'ECONNRESET' ? { kind: 'reset', name } : { kind: 'cut', error: `${e.code ?? ''} ${e.syscall ?? ''} ${e.message}`, name }));
    req.end(body);
  });
}

describe('SIGTERM', () => {
  it('under load: every accepted request is answered, exit 0, JSON lines only, exactly the answered activities stored', async (ctx) => {
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const dataDir = freshDataDir();
    try {
      const serve = await spawnServe(dataDir, { env: { SHUTDOWN_TIMEOUT_MS: '10000' } });
      const { key, orgId } = rootOf(dataDir);
      const outcomes: Outcome[] = [];
      let signalled = false;
      let answeredBeforeSignal = 0;
      // 6 clients, each submitting until the server refuses connections (bounded: 400 requests each)
      const client = async () => {
        for (let i = 0; i < 400; i++) {
          const name = uniqueName('sd');
          const body = submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: name, userIds: [] });
          const o = await post(serve.url, SUBMIT('create_user_tag'), body, stampFor(body, key), name);
          outcomes.push(o);
          if (o.kind === 'answered' && !signalled) answeredBeforeSignal++;
          if (o.kind !== 'answered') return;
        }
      };
      const clients = Array.from({ length: 6 }, client);
      // signal once the load is under way
      while (answeredBeforeSignal < 30 && outcomes.every((o) => o.kind === 'answered') && outcomes.length < 2400) await new Promise((r) => setTimeout(r, 10));
      signalled = true;
      const exited = new Promise<number | null>((r) => serve.child.once('exit', (code) => r(code)));
      serve.child.kill('SIGTERM');
      await Promise.all(clients);
      const code = await exited;
      expect(code, serve.output().slice(-2000)).toBe(0);

      const cut = outcomes.filter((o) => o.kind === 'cut');
      expect(cut, 'requests cut off after they were accepted').toEqual([]);
      const answered = outcomes.filter((o): o is Extract<Outcome, { kind: 'answered' }> => o.kind === 'answered');
      expect(answered.length).toBeGreaterThan(30);
      expect(answered.filter((o) => o.status !== 200), 'answers other than 200').toEqual([]);
      expect(outcomes.some((o) => o.kind === 'refused' || o.kind === 'reset'), 'the server stopped accepting').toBe(true);
      const reset = outcomes.filter((o): o is Extract<Outcome, { kind: 'reset' }> => o.kind === 'reset');

      // every line JSON, the shutdown's included
      const lines = serve.output().split('\n').filter((l) => l.trim() !== '');
      for (const l of lines) expect(() => JSON.parse(l), `not a JSON line: ${l.slice(0, 200)}`).not.toThrow();
      const msgs = lines.map((l) => JSON.parse(l).msg);
      expect(msgs).toContain('listening');
      expect(msgs).toContain('stopping');
      expect(msgs).toContain('stopped');
      expect(msgs.filter((m) => m === 'request').length).toBe(answered.length);

      // after a restart: exactly the answered tags exist
      const again = await startTestServer({ dataDir });
      try {
        const tags: any[] = ((await again.sdk.listUserTags()) as any).userTags;
        const names = new Set(tags.map((t) => t.tagName));
        const sdNames = [...names].filter((n) => n.startsWith('sd-'));
        expect(sdNames.length).toBe(answered.length);
        for (const o of answered) expect(names.has(o.name), `${o.name} was answered 200 but is not stored`).toBe(true);
        // a reset connection was never accepted: nothing of it was logged (checked above) or stored
        for (const o of reset) expect(names.has(o.name), `${o.name} was reset, yet stored: an accepted request cut off`).toBe(false);
      } finally {
        await again.stop(true);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('an error nothing caught, in a serving process', () => {
  // Loaded into `kmas serve` with --import: on SIGUSR2 it throws from a callback, or rejects a
  // promise nobody awaits — what a bug in kmas or a library would do while it serves.
  const FAULT = `process.on('SIGUSR2', () => {
  if (process.env.KMAS_TEST_FAULT === 'exception') setImmediate(() => { throw new Error('stray fault of a test'); });
  else void Promise.reject(new Error('stray fault of a test'));
});\n`;

  for (const fault of ['rejection', 'exception'] as const) {
    it(`an unhandled ${fault}: one JSON error line naming it (no stack trace), then exit 70 for the supervisor to restart`, async (ctx) => {
      const why = ensureBuilt();
      if (why) ctx.skip(why);
      const dataDir = freshDataDir();
      const faultDir = mkdtempSync(join(tmpdir(), 'kmas-fault-'));
      try {
        const preload = join(faultDir, 'fault.mjs');
        writeFileSync(preload, FAULT);
        const serve = await spawnServe(dataDir, { env: { KMAS_TEST_FAULT: fault, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(preload).href}`.trim() } });
        expect((await fetch(serve.url + '/healthz')).status).toBe(200);
        const exited = new Promise<number | null>((r) => serve.child.once('exit', (code) => r(code)));
        serve.child.kill('SIGUSR2');
        const code = await Promise.race([exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 15_000))]);
        if (code === 'running') await serve.stop('SIGKILL');
        await new Promise((r) => setTimeout(r, 100));
        const out = serve.output();
        expect(out, 'no stack trace').not.toMatch(/\n\s+at /);
        const lines = out.split('\n').filter((l) => l.trim() !== '');
        for (const l of lines) expect(() => JSON.parse(l), `not a JSON line: ${l.slice(0, 200)}`).not.toThrow();
        const last = JSON.parse(lines[lines.length - 1]!);
        expect(last).toMatchObject({ level: 'error', kind: fault === 'rejection' ? 'unhandledRejection' : 'uncaughtException' });
        expect(last.error).toBe('Error: stray fault of a test');
        expect(code, out.slice(-1000)).toBe(70);
      } finally {
        rmSync(faultDir, { recursive: true, force: true });
        rmSync(dataDir, { recursive: true, force: true });
      }
    }, 90_000);
  }
});
