/**
 * Stamp checks on worker threads. The stamp check (P-256 ≈ 50 µs for a key that stamps often,
 * ≈ 165 µs for a new one) is the largest CPU cost of a query on the event loop; with a spare core it
 * runs on a worker thread while the event loop serves other requests. The threads run the same
 * stamp.ts verifyStamp (stampworker.ts, compiled: dist/src/http/stampworker.js); without the
 * build, and when a thread died, checks run on the calling thread. Threads are unref'd and ended
 * by close().
 */
import { Worker } from 'node:worker_threads';
import { verifyStamp, type Stamp } from './stamp.js';
import type { StampJob, StampReply } from './stampworker.js';
import { builtScript } from '../paths.js';

interface Pending { resolve: (ok: boolean) => void; stamp: Stamp; body: Uint8Array }
interface Thread { worker: Worker; pending: Map<number, Pending>; outbox: StampJob[] }

export class StampVerifier {
  #threads: Thread[] = [];
  #next = 0;
  #id = 0;
  #closed = false;

  readonly #file: string | undefined;

  constructor(threads: number) {
    this.#file = builtScript('http/stampworker.js');
    if (this.#file) for (let i = 0; i < threads; i++) this.#start();
  }

  /** Threads currently verifying (0 = everything on the calling thread). */
  get threads(): number { return this.#threads.length; }

  #start(): void {
    const worker = new Worker(this.#file!);
    worker.unref();
    const t: Thread = { worker, pending: new Map(), outbox: [] };
    worker.on('message', (m: StampReply) => {
      for (let i = 0; i < m.ids.length; i++) {
        const p = t.pending.get(m.ids[i]!);
        if (!p) continue;
        t.pending.delete(m.ids[i]!);
        p.resolve(m.ok[i] === true);
      }
    });
    const lost = () => {
      const i = this.#threads.indexOf(t);
      if (i >= 0) this.#threads.splice(i, 1);
      // Whatever it had not answered is checked here instead.
      for (const p of t.pending.values()) p.resolve(verifyStamp(p.stamp, p.body));
      t.pending.clear();
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.#threads.push(t);
  }

  /**
   * Same answer as stamp.ts verifyStamp(stamp, body). The check goes to a thread when there is
   * one and `busy` says other requests are in progress; a lone request is checked on the calling
   * thread (waking a thread costs more latency than the check saves when nothing else waits).
   */
  verify(stamp: Stamp, body: Uint8Array, busy = true): boolean | Promise<boolean> {
    if (!busy || this.#threads.length === 0) return verifyStamp(stamp, body);
    const t = this.#threads[this.#next++ % this.#threads.length]!;
    const id = ++this.#id;
    // A copy of exactly the body's bytes, transferred (the request's Buffer may view a larger pool).
    const copy = new Uint8Array(body);
    if (t.outbox.length === 0) setImmediate(this.#send, t);
    t.outbox.push({ id, stamp, body: copy });
    return new Promise<boolean>((resolve) => { t.pending.set(id, { resolve, stamp, body }); });
  }

  /**
   * The checks asked for during one turn of the event loop go to the thread in one message (and
   * come back in one): under load several requests arrive per turn, and a message each way costs
   * the event loop about as much as a third of the check it saves.
   */
  readonly #send = (t: Thread): void => {
    const jobs = t.outbox;
    t.outbox = [];
    if (!this.#threads.includes(t)) {
      for (const j of jobs) { const p = t.pending.get(j.id); t.pending.delete(j.id); p?.resolve(verifyStamp(p.stamp, p.body)); }
      return;
    }
    t.worker.postMessage(jobs, jobs.map((j) => j.body.buffer as ArrayBuffer));
  };

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const threads = this.#threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }
}
