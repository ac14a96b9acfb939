// Tampering with the verifiable activity log, each detected and located by `kmas log verify`
// (src/logverify.ts over the pure src/tlog/verify.ts): a changed byte of a stored log entry and of
// a stored activity, written directly into the SQLite file; a deleted row (an entry, an activity);
// an older backup restored after a client saved a newer checkpoint; a forged and a foreign
// checkpoint signature. The server is real (startTestServer on SQLite: these tests edit its file).
// The CLI itself (bin/kmas.js) runs once, offline, as a user would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { logVerify } from '../../src/logverify.js';
import { signNote } from '../../src/tlog/note.js';
import { backupDatabase } from '../../src/storage/backup.js';
import { ensureBuilt, kmasBin, root } from '../server/build.js';
import { startTestServer, uniqueName, type TestServer } from '../server/harness.js';

let ts: TestServer;
let work: string;
let keyName: string;
let verifierKey: string;
const DB = () => join(ts.dataDir, 'kmas.sqlite');
const files = () => ({ checkpoint: join(work, 'checkpoint.txt'), key: join(work, 'log-key.json'), entries: join(work, 'entries.json'), apiKey: join(work, 'api-key.json') });

beforeAll(async () => {
  ts = await startTestServer();
  work = mkdtempSync(join(tmpdir(), 'kmas-tlog-'));
  const k = await (await fetch(`${ts.url}/.well-known/kmas-log-key`)).json() as { keyName: string; verifierKey: string };
  keyName = k.keyName;
  verifierKey = k.verifierKey;
  writeFileSync(files().key, JSON.stringify(k));
  writeFileSync(files().apiKey, JSON.stringify(ts.rootKey));
  for (let i = 0; i < 12; i++) await ts.sdk.createUserTag({ userTagName: uniqueName(`t${i}`), userIds: [] });
});
afterAll(async () => { await ts?.stop(); rmSync(work, { recursive: true, force: true }); });

async function q(path: string, body: Record<string, unknown> = {}): Promise<any> {
  const r = await ts.raw(`/public/v1/query/${path}`, JSON.stringify({ organizationId: ts.orgId, ...body }));
  expect(r.status, r.text).toBe(200);
  return r.json;
}
/** saves a checkpoint of the whole log now and the entries as kmas_list_log_entries returns them */
async function exportNow(): Promise<{ size: number; note: string }> {
  const list = await q('kmas_list_log_entries', { start: '0', limit: '1000' });
  const cp = await q('kmas_get_log_checkpoint', { treeSize: list.treeSize });
  writeFileSync(files().checkpoint, cp.checkpoint);
  writeFileSync(files().entries, JSON.stringify(list));
  return { size: Number(list.treeSize), note: cp.checkpoint };
}
/** runs `kmas log verify` (in process) and returns its exit code and output */
async function verify(...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await logVerify(['--checkpoint', files().checkpoint, '--key', files().key, ...args], (l) => lines.push(l));
  return { code, out: lines.join('\n') };
}
const online = ['--url', () => ts.url, '--api-key', () => files().apiKey, '--organization', () => ts.orgId] as const;
const onlineArgs = () => online.map((x) => (typeof x === 'function' ? x() : x));
/** runs fn with the SQLite file open beside the server, as someone with the database would */
function withFile<T>(fn: (db: Database.Database) => T): T {
  const db = new Database(DB());
  try { return fn(db); } finally { db.close(); }
}
const entryRow = (idx: number) => withFile((db) => db.prepare('SELECT entry FROM log_entries WHERE organization_id = ? AND idx = ?').get(ts.orgId, idx) as { entry: Buffer });

describe('kmas log verify', () => {
  it('verifies an honest log offline and online, and saves the newer checkpoint', async () => {
    await exportNow();
    const off = await verify('--entries', files().entries);
    expect(off.out).toMatch(/^verified: \d+ entries make the signed root/);
    expect(off.code).toBe(0);
    const on = await verify(...onlineArgs(), '--audit', '--save', join(work, 'saved.txt'));
    expect(on.out, on.out).toContain('every activity matches its latest log entry');
    expect(on.code).toBe(0);
    expect(readFileSync(join(work, 'saved.txt'), 'utf8')).toMatch(new RegExp(`^${keyName}/${ts.orgId}\\n`));
  });

  it('a forged checkpoint (its root changed) and a foreign one (another key under the same name) are refused', async () => {
    const { note } = await exportNow();
    const lines = note.split('\n');
    lines[2] = `${lines[2]![0] === 'A' ? 'B' : 'A'}${lines[2]!.slice(1)}`;
    writeFileSync(files().checkpoint, lines.join('\n'));
    const forged = await verify('--entries', files().entries);
    expect(forged.code).toBe(1);
    expect(forged.out).toMatch(/FAILED: the checkpoint does not verify .*altered or forged/);
    const text = note.slice(0, note.indexOf('\n\n') + 1);
    writeFileSync(files().checkpoint, signNote(text, keyName, ed25519.utils.randomSecretKey()));
    const foreign = await verify('--entries', files().entries);
    expect(foreign.code).toBe(1);
    expect(foreign.out).toMatch(/FAILED: the checkpoint does not verify .*no signature of/);
  });

  it('a byte of a stored entry changed in the SQLite file: offline it is detected, with the server it is located', async () => {
    const { size } = await exportNow();
    const victim = 7;
    const original = entryRow(victim).entry;
    // one hex digit of the entry's recordDigest: still a well-formed canonical entry, but not the one signed
    const text = original.toString('utf8');
    const at = text.indexOf('"recordDigest":"sha256:') + '"recordDigest":"sha256:'.length;
    const altered = Buffer.from(text.slice(0, at) + (text[at] === '0' ? '1' : '0') + text.slice(at + 1), 'utf8');
    expect(altered.length).toBe(original.length);
    withFile((db) => db.prepare('UPDATE log_entries SET entry = ? WHERE organization_id = ? AND idx = ?').run(altered, ts.orgId, victim));
    try {
      writeFileSync(files().entries, JSON.stringify(await q('kmas_list_log_entries', { start: '0', limit: String(size) })));
      const off = await verify('--entries', files().entries);
      expect(off.code).toBe(1);
      expect(off.out).toMatch(/FAILED: the \d+ entries do not make the checkpoint's root/);
      const located = await verify('--entries', files().entries, ...onlineArgs());
      expect(located.code).toBe(1);
      expect(located.out).toContain(`entry ${victim} (activity `);
      // a byte that breaks the entry's form is named offline already
      withFile((db) => db.prepare('UPDATE log_entries SET entry = ? WHERE organization_id = ? AND idx = ?').run(Buffer.concat([original, Buffer.from(' ')]), ts.orgId, victim));
      writeFileSync(files().entries, JSON.stringify(await q('kmas_list_log_entries', { start: '0', limit: String(size) })));
      const broken = await verify('--entries', files().entries);
      expect(broken.out).toMatch(new RegExp(`FAILED: entry ${victim} is damaged`));
    } finally {
      withFile((db) => db.prepare('UPDATE log_entries SET entry = ? WHERE organization_id = ? AND idx = ?').run(original, ts.orgId, victim));
    }
    expect((await verify('--entries', files().entries)).code).toBe(1); // the file still holds the damaged export
    await exportNow();
    expect((await verify('--entries', files().entries)).code).toBe(0);
  });

  it('a byte of a stored activity changed in the SQLite file: the audit names the activity and its entry', async () => {
    await exportNow();
    const list = await q('list_activities', { paginationOptions: { limit: '5' } });
    const victim = list.activities[3];
    const row = withFile((db) => db.prepare('SELECT record FROM activities WHERE id = ?').get(victim.id) as { record: string });
    const at = row.record.indexOf('"userTagName":"') + '"userTagName":"'.length;
    const altered = row.record.slice(0, at) + (row.record[at] === 'x' ? 'y' : 'x') + row.record.slice(at + 1);
    withFile((db) => db.prepare('UPDATE activities SET record = ? WHERE id = ?').run(altered, victim.id));
    try {
      const r = await verify(...onlineArgs(), '--audit');
      expect(r.code).toBe(1);
      expect(r.out).toMatch(new RegExp(`FAILED: activity ${victim.id} differs from its log entry \\d+`));
    } finally {
      withFile((db) => db.prepare('UPDATE activities SET record = ? WHERE id = ?').run(row.record, victim.id));
    }
    expect((await verify(...onlineArgs(), '--audit')).code).toBe(0);
  });

  it('a deleted row: a log entry (named offline) and an activity (named by the audit)', async () => {
    const { size } = await exportNow();
    const victim = 4;
    const saved = withFile((db) => db.prepare('SELECT * FROM log_entries WHERE organization_id = ? AND idx = ?').get(ts.orgId, victim)) as Record<string, unknown>;
    withFile((db) => db.prepare('DELETE FROM log_entries WHERE organization_id = ? AND idx = ?').run(ts.orgId, victim));
    try {
      writeFileSync(files().entries, JSON.stringify(await q('kmas_list_log_entries', { start: '0', limit: String(size) })));
      const r = await verify('--entries', files().entries);
      expect(r.code).toBe(1);
      expect(r.out).toContain(`FAILED: entry ${victim} is missing`);
    } finally {
      withFile((db) => db.prepare('INSERT INTO log_entries (organization_id, idx, activity_id, entry, created_ms) VALUES (@organization_id, @idx, @activity_id, @entry, @created_ms)').run(saved));
    }
    const act = (await q('list_activities', { paginationOptions: { limit: '3' } })).activities[2];
    const actRow = withFile((db) => db.prepare('SELECT * FROM activities WHERE id = ?').get(act.id)) as Record<string, unknown>;
    withFile((db) => db.prepare('DELETE FROM activities WHERE id = ?').run(act.id));
    try {
      const r = await verify(...onlineArgs(), '--audit');
      expect(r.code).toBe(1);
      expect(r.out).toMatch(new RegExp(`FAILED: activity ${act.id} \\(log entry \\d+\\) is missing from the activities`));
    } finally {
      const cols = Object.keys(actRow);
      withFile((db) => db.prepare(`INSERT INTO activities (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`).run(actRow));
    }
    expect((await verify(...onlineArgs(), '--audit')).code).toBe(0);
  });

  it('an older backup restored after a client saved a newer checkpoint: rolled back, then rewritten once it grows past it', async () => {
    const backup = join(work, 'older.sqlite');
    await backupDatabase(DB(), backup);
    for (let i = 0; i < 3; i++) await ts.sdk.createUserTag({ userTagName: uniqueName('after-backup'), userIds: [] });
    const { size } = await exportNow(); // the client keeps this checkpoint
    await ts.stop(true);
    for (const ext of ['', '-wal', '-shm']) rmSync(`${DB()}${ext}`, { force: true });
    copyFileSync(backup, DB());
    ts = await startTestServer({ dataDir: ts.dataDir });
    const rolled = await verify(...onlineArgs());
    expect(rolled.code).toBe(1);
    expect(rolled.out).toMatch(new RegExp(`FAILED: ROLLED BACK: the server's log has ${size - 3} entries, but it signed ${size} before`));
    // new activities on the restored database: the log grows past the saved size with another history
    for (let i = 0; i < 4; i++) await ts.sdk.createUserTag({ userTagName: uniqueName('other-history'), userIds: [] });
    // a checkpoint of the whole log now (the latest the server then gives)
    await q('kmas_get_log_checkpoint', { treeSize: String(size + 1) });
    const rewritten = await verify(...onlineArgs());
    expect(rewritten.code).toBe(1);
    expect(rewritten.out).toMatch(/FAILED: REWRITTEN: the log of \d+ entries does not contain the saved one/);
  });

  // last: building dist (ensureBuilt) blocks this process, and the server with it, for a while
  it('the CLI binary: `kmas log verify` offline, exit 0 on an honest export and 1 on a forged checkpoint', async (ctx) => {
    await exportNow();
    const why = ensureBuilt();
    if (why) ctx.skip(why);
    const run = (checkpoint: string) => spawnSync(process.execPath, [kmasBin, 'log', 'verify', '--checkpoint', checkpoint, '--key', verifierKey, '--entries', files().entries], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    const ok = run(files().checkpoint);
    expect(ok.stdout, ok.stderr).toMatch(/^verified: /);
    expect(ok.status).toBe(0);
    const note = readFileSync(files().checkpoint, 'utf8');
    writeFileSync(join(work, 'forged.txt'), note.replace(/\n(\d+)\n/, (_m, n: string) => `\n${Number(n) + 1}\n`));
    const bad = run(join(work, 'forged.txt'));
    expect(bad.stdout).toMatch(/^FAILED: the checkpoint does not verify/);
    expect(bad.status).toBe(1);
  });
});
