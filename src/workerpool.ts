/**
 * WorkerPool: the thread handling that the SignPool (crypto/signpool.ts) and the StampVerifier
 * (crypto/verifypool.ts) share. Each thread runs a compiled worker script that answers a message
 * holding an array of jobs with a message holding an array of replies, each carrying its job's id
 * (and may post 'ready' once it has loaded).
 *
 * - Jobs posted during one turn of the event loop go to their thread in one message, sent on
 *   setImmediate, or at once when `maxBatch` of them are waiting: under load several requests
 *   arrive per turn, and a message each way costs the event loop a good part of what the thread
 *   saves.
 * - Threads take jobs in turn.
 * - A thread that stops (an error, an exit) hands every job it has not answered to `orphan`, and is
 *   replaced, at most MAX_RESTARTS times a minute: after that the pool shrinks (a broken script
 *   cannot loop). close() ends the threads and orphans what is left.
 * - Threads are unref'd: they do not keep the process alive.
 */
import { Worker } from 'node:worker_threads';
import { poolQueueWait } from './metrics.js';

const MAX_RESTARTS = 5;

export interface WorkerPoolOptions<J, R, P> {
  /** the pool's name in metrics (kmas_worker_pool_queue_wait_seconds{pool}); default 'other' */
  name?: string;
  /** the compiled worker script; undefined: the pool has no threads */
  script: string | undefined;
  threads: number;
  workerData?: unknown;
  /** jobs per message at most (default: every job of the turn) */
  maxBatch?: number;
  /** the buffers a job's message transfers to the thread */
  transfer(job: J): ArrayBuffer[];
  /** the reply to the job posted with `p` */
  settle(p: P, reply: R): void;
  /** the job posted with `p` will get no reply: its thread stopped, or the pool was closed (`closed`) */
  orphan(p: P, closed: boolean): void;
}

/** `queued`: when each job of the outbox was posted (performance.now()). */
interface Thread<J, P> { worker: Worker; ready: boolean; pending: Map<number, P>; outbox: J[]; queued: number[] }

export class WorkerPool<J extends { id: number }, R extends { id: number }, P> {
  readonly #opts: WorkerPoolOptions<J, R, P>;
  readonly #threads: Thread<J, P>[] = [];
  /** when threads were replaced lately */
  readonly #restarts: number[] = [];
  #next = 0;
  #id = 0;
  #closed = false;

  constructor(opts: WorkerPoolOptions<J, R, P>) {
    this.#opts = opts;
    const n = opts.script ? Math.max(0, opts.threads) : 0;
    for (let i = 0; i < n; i++) this.#start();
  }

  /** Threads the pool runs now. */
  get size(): number { return this.#threads.length; }

  /** Threads that said they are ready. */
  get ready(): number { return this.#threads.filter((t) => t.ready).length; }

  /** Resolves once every thread is ready (or after timeoutMs) with the number ready. */
  async whenReady(timeoutMs = 10_000): Promise<number> {
    const end = Date.now() + timeoutMs;
    while (this.ready < this.#threads.length && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    return this.ready;
  }

  #start(): void {
    const worker = new Worker(this.#opts.script!, { workerData: this.#opts.workerData });
    worker.unref();
    const t: Thread<J, P> = { worker, ready: false, pending: new Map(), outbox: [], queued: [] };
    worker.on('message', (m: R[] | 'ready') => {
      if (m === 'ready') { t.ready = true; return; }
      for (const r of m) {
        const p = t.pending.get(r.id);
        if (p === undefined) continue;
        t.pending.delete(r.id);
        this.#opts.settle(p, r);
      }
    });
    const lost = () => {
      const i = this.#threads.indexOf(t);
      if (i < 0) return;
      this.#threads.splice(i, 1);
      this.#orphanAll(t, false);
      const now = Date.now();
      while (this.#restarts.length > 0 && now - this.#restarts[0]! > 60_000) this.#restarts.shift();
      if (!this.#closed && this.#restarts.length < MAX_RESTARTS) {
        this.#restarts.push(now);
        this.#start();
      }
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.#threads.push(t);
  }

  /**
   * Queues a job, built from the id it is given, for the next thread in turn; its reply (or its
   * loss) is handed to settle (orphan) with `p`. Returns false, queuing nothing, when the pool has
   * no thread.
   */
  post(p: P, job: (id: number) => J): boolean {
    if (this.#closed || this.#threads.length === 0) return false;
    const t = this.#threads[this.#next++ % this.#threads.length]!;
    const id = ++this.#id;
    if (t.outbox.length === 0) setImmediate(this.#flush, t);
    t.outbox.push(job(id));
    t.queued.push(performance.now());
    t.pending.set(id, p);
    // A full batch leaves now: the thread starts on it while this turn goes on.
    if (t.outbox.length >= (this.#opts.maxBatch ?? Infinity)) this.#flush(t);
    return true;
  }

  readonly #flush = (t: Thread<J, P>): void => {
    const jobs = t.outbox;
    const queued = t.queued;
    t.outbox = [];
    t.queued = [];
    if (jobs.length === 0) return;
    const now = performance.now();
    for (const q of queued) poolQueueWait.observe({ pool: this.#opts.name ?? 'other' }, (now - q) / 1000);
    // The thread stopped since: lost() orphaned these already, as they were pending.
    if (!this.#threads.includes(t)) return;
    const transfer: ArrayBuffer[] = [];
    for (const j of jobs) transfer.push(...this.#opts.transfer(j));
    t.worker.postMessage(jobs, transfer);
  };

  #orphanAll(t: Thread<J, P>, closed: boolean): void {
    const ps = [...t.pending.values()];
    t.pending.clear();
    t.outbox = [];
    t.queued = [];
    for (const p of ps) this.#opts.orphan(p, closed);
  }

  /** Ends the threads; jobs not yet answered are orphaned. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const threads = this.#threads.splice(0);
    for (const t of threads) this.#orphanAll(t, true);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }
}
