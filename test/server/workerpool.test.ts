// The thread handling shared by the signing pool and the stamp threads (src/workerpool.ts): one
// message per turn of the event loop (at most maxBatch jobs), replies matched by id, jobs of a
// stopped thread orphaned, stopped threads replaced at most 5 times a minute, close() orphaning the
// rest. Runs a small worker script written for the test.
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkerPool } from '../../src/workerpool.js';

const dir = mkdtempSync(join(tmpdir(), 'kmas-workerpool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Doubles each job's value and says how many jobs its message held; a `die` job ends the thread
// before anything of its message is answered; a `hang` job is never answered.
const script = join(dir, 'echo-worker.mjs');
writeFileSync(script, `
import { parentPort, threadId } from 'node:worker_threads';
parentPort.on('message', (batch) => {
  if (batch.some((j) => j.die)) process.exit(3);
  parentPort.postMessage(batch.filter((j) => !j.hang).map((j) => ({ id: j.id, twice: j.v * 2, batch: batch.length, thread: threadId })));
});
parentPort.postMessage('ready');
`);

interface Job { id: number; v: number; die?: boolean; hang?: boolean; bytes?: Uint8Array }
interface Reply { id: number; twice: number; batch: number; thread: number }
type Outcome = { reply: Reply } | { orphaned: 'closed' | 'stopped' };
interface P { done: (o: Outcome) => void }

function pool(threads: number, maxBatch?: number) {
  const p = new WorkerPool<Job, Reply, P>({
    script, threads, maxBatch,
    transfer: (j) => (j.bytes ? [j.bytes.buffer as ArrayBuffer] : []),
    settle: (x, reply) => x.done({ reply }),
    orphan: (x, closed) => x.done({ orphaned: closed ? 'closed' : 'stopped' }),
  });
  const post = (v: number, extra: Partial<Job> = {}): Promise<Outcome> | undefined => {
    let done!: (o: Outcome) => void;
    const out = new Promise<Outcome>((r) => { done = r; });
    return p.post({ done }, (id) => ({ id, v, ...extra })) ? out : undefined;
  };
  return { p, post };
}

describe('WorkerPool', () => {
  it('answers every job by its id; the jobs of one turn share a message, at most maxBatch of them', async () => {
    const { p, post } = pool(1, 3);
    expect(await p.whenReady()).toBe(1);
    const outs = await Promise.all(Array.from({ length: 7 }, (_, i) => post(i)!));
    expect(outs.map((o) => ('reply' in o ? o.reply.twice : NaN))).toEqual([0, 2, 4, 6, 8, 10, 12]);
    expect(outs.map((o) => ('reply' in o ? o.reply.batch : 0))).toEqual([3, 3, 3, 3, 3, 3, 1]);
    const unlimited = pool(1);
    await unlimited.p.whenReady();
    const all = await Promise.all(Array.from({ length: 7 }, (_, i) => unlimited.post(i)!));
    expect(all.every((o) => 'reply' in o && o.reply.batch === 7)).toBe(true);
    await p.close();
    await unlimited.p.close();
  });

  it('takes the threads in turn and transfers the buffers a job names', async () => {
    const { p, post } = pool(2);
    expect(await p.whenReady()).toBe(2);
    const bytes = new Uint8Array(16).fill(7);
    const outs = await Promise.all([post(1, { bytes })!, post(2)!, post(3)!, post(4)!]);
    expect(bytes.byteLength, 'transferred: detached here').toBe(0);
    const threads = outs.map((o) => ('reply' in o ? o.reply.thread : -1));
    expect(new Set(threads).size).toBe(2);
    expect(threads[0]).toBe(threads[2]);
    expect(threads[1]).toBe(threads[3]);
    await p.close();
  });

  it('a thread that stops orphans its unanswered jobs and is replaced; new jobs are answered', async () => {
    const { p, post } = pool(1);
    await p.whenReady();
    const first = await Promise.all([post(1)!, post(2, { die: true })!]);
    expect(first).toEqual([{ orphaned: 'stopped' }, { orphaned: 'stopped' }]);
    expect(p.size).toBe(1);
    expect(await p.whenReady()).toBe(1);
    const again = await post(5)!;
    expect('reply' in again && again.reply.twice).toBe(10);
    await p.close();
  });

  it('replaces at most 5 stopped threads a minute; then it has no thread and post() refuses', async () => {
    const { p, post } = pool(1);
    for (let i = 0; i < 6; i++) {
      await p.whenReady();
      expect(p.size, `after ${i} stops`).toBe(1);
      expect(await post(i, { die: true })!).toEqual({ orphaned: 'stopped' });
    }
    expect(p.size).toBe(0);
    expect(post(1)).toBeUndefined();
    await p.close();
  });

  it('close() orphans the jobs still waiting, and post() refuses afterwards', async () => {
    const { p, post } = pool(1);
    await p.whenReady();
    const waiting = post(1, { hang: true })!;
    await new Promise((r) => setTimeout(r, 50));
    await p.close();
    expect(await waiting).toEqual({ orphaned: 'closed' });
    expect(p.size).toBe(0);
    expect(post(2)).toBeUndefined();
  });

  it('without a script there are no threads', () => {
    const p = new WorkerPool<Job, Reply, P>({ script: undefined, threads: 4, transfer: () => [], settle: () => {}, orphan: () => {} });
    expect(p.size).toBe(0);
    expect(p.post({ done: () => {} }, (id) => ({ id, v: 1 }))).toBe(false);
  });
});
