/**
 * SignPool: signing on worker threads, off the event loop. Each thread holds its own wasm core
 * and a copy of the at-rest key; it receives SEALED keys, opens them for the moment of use, signs
 * (signjob.ts, the same code the Vault runs on the calling thread) and wipes them. The request
 * thread meanwhile serves other requests: the activity engine signs before its transaction
 * (SubmitOperation.prepare) and only checks and stores the result inside it.
 *
 * Jobs asked for during one turn of the event loop go to a thread in one message (at most
 * MAX_BATCH of them), and come back in one: under load several requests arrive per turn, and a
 * message each way costs the event loop a good part of what the thread saves. A sign_raw_payloads
 * batch is split across the threads when there are several. A thread that dies fails its jobs
 * (the caller then signs on its own thread) and is replaced, at most 5 times a minute: after that
 * the pool shrinks, and with no thread left every job is signed on the calling thread.
 *
 * Workers run compiled JavaScript (dist/src/crypto/signworker.js): from sources (vitest) the pool
 * uses the built file; when none exists the pool has no threads.
 */
import { Worker } from 'node:worker_threads';
import { CryptoError } from './errors.js';
import type { AtRestContext } from './atrest.js';
import type { RawSignature } from './payload.js';
import { errorFromData, type SignJob, type SignJobResult } from './signjob.js';
import type { WorkerJob, WorkerResult } from './signworker.js';
import type { Stamp } from '../http/stamp.js';
import { builtScript } from '../paths.js';

/**
 * A request's stamp, checked on the signing thread before the job runs, so that a signing request
 * costs the event loop one thread hop rather than two (one for the stamp, one for the signature).
 * `verified` becomes true only when a thread reports that the stamp verified over `body`.
 */
export interface StampCheck { stamp: Stamp; body: Uint8Array; verified: boolean }

/** Batches at least this long are split across the threads (each slice at least half this). */
export const MIN_SPLIT = 16;
const MAX_RESTARTS = 5;
/**
 * Jobs per message at most. Under load a turn of the event loop can take a dozen requests; sent as
 * one batch, the thread idled while the turn parsed them and then answered all of them at once, so
 * requests moved through the stages together and the machine sat 25 % idle at 16 clients. Batches
 * of at most 4 overlap the stages: ≈ 7 % more signing requests/s with the raw-socket load generator
 * (bench/signing.ts; 2 did as well, 1 cost more CPU per request than it saved).
 */
const MAX_BATCH = 4;

interface Pending { resolve: (v: SignJobResult) => void; reject: (e: unknown) => void; check?: StampCheck }
interface Thread { worker: Worker; ready: boolean; pending: Map<number, Pending>; outbox: WorkerJob[] }

export class SignPool {
  readonly #threads: Thread[] = [];
  readonly #atRest: Uint8Array;
  readonly #file: string | undefined;
  /** when threads were replaced lately (at most MAX_RESTARTS a minute, so a broken script cannot loop) */
  readonly #restarts: number[] = [];
  #next = 0;
  #id = 0;
  #closed = false;

  /** `threads` worker threads signing with keys sealed under `atRestKey` (copied; the caller keeps its own). */
  constructor(threads: number, atRestKey: Uint8Array) {
    this.#atRest = new Uint8Array(atRestKey);
    this.#file = builtScript('crypto/signworker.js');
    const n = this.#file ? Math.max(0, threads) : 0;
    for (let i = 0; i < n; i++) this.#start();
  }

  /** Threads the pool runs (0 when the worker script is missing). */
  get size(): number { return this.#threads.length; }

  /** Threads that have loaded their core. */
  get ready(): number { return this.#threads.filter((t) => t.ready).length; }

  /** Resolves once every thread is ready (or after timeoutMs) with the number ready. */
  async whenReady(timeoutMs = 10_000): Promise<number> {
    const end = Date.now() + timeoutMs;
    while (this.ready < this.#threads.length && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    return this.ready;
  }

  #start(): void {
    const worker = new Worker(this.#file!, { workerData: { atRestKey: this.#atRest } });
    worker.unref();
    const t: Thread = { worker, ready: false, pending: new Map(), outbox: [] };
    worker.on('message', (m: WorkerResult[] | 'ready') => {
      if (m === 'ready') { t.ready = true; return; }
      for (const r of m) {
        const p = t.pending.get(r.id);
        if (!p) continue;
        t.pending.delete(r.id);
        if (r.ok) {
          if (p.check && r.stampVerified === true) p.check.verified = true;
          p.resolve(r.value);
        } else {
          p.reject(r.error ? errorFromData(r.error) : new CryptoError('SIGN_FAILED', 'the request stamp did not verify'));
        }
      }
    });
    const lost = () => {
      const i = this.#threads.indexOf(t);
      if (i < 0) return;
      this.#threads.splice(i, 1);
      const failure = new CryptoError('SIGN_FAILED', 'a signing thread stopped');
      for (const p of t.pending.values()) p.reject(failure);
      t.pending.clear();
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
   * Runs a job on a thread: the key opened there from `sealed` under `ctx`. Rejects with the
   * CryptoError the Vault would throw for the same job, or SIGN_FAILED when no thread can do it.
   */
  run(sealed: Uint8Array, ctx: AtRestContext, job: SignJob, check?: StampCheck): Promise<SignJobResult> {
    if (this.#closed || this.#threads.length === 0) return Promise.reject(new CryptoError('SIGN_FAILED', 'no signing thread'));
    if (job.op === 'payloads' && this.#threads.length > 1 && job.payloads.length >= MIN_SPLIT) return this.#split(sealed, ctx, job, check);
    return this.#send(this.#threads[this.#next++ % this.#threads.length]!, sealed, ctx, job, check);
  }

  /** A batch in slices, one per thread; the first slice carries the stamp check (any failure fails the whole). */
  #split(sealed: Uint8Array, ctx: AtRestContext, job: Extract<SignJob, { op: 'payloads' }>, check?: StampCheck): Promise<SignJobResult> {
    const parts = Math.min(this.#threads.length, Math.floor(job.payloads.length / (MIN_SPLIT / 2)));
    const size = Math.ceil(job.payloads.length / parts);
    const slices: Promise<SignJobResult>[] = [];
    for (let i = 0; i < parts; i++) {
      const start = i * size;
      const payloads = job.payloads.slice(start, start + size);
      slices.push(this.#send(this.#threads[(this.#next + i) % this.#threads.length]!, sealed, ctx, { ...job, payloads, firstIndex: (job.firstIndex ?? 0) + start }, i === 0 ? check : undefined));
    }
    this.#next += parts;
    return Promise.all(slices).then((all) => (all as RawSignature[][]).flat());
  }

  #send(t: Thread, sealed: Uint8Array, ctx: AtRestContext, job: SignJob, check?: StampCheck): Promise<SignJobResult> {
    const id = ++this.#id;
    if (t.outbox.length === 0) setImmediate(this.#flush, t);
    // The sealed key (and the body) are copied: the message owns (and transfers) its bytes.
    const w: WorkerJob = { id, sealed: new Uint8Array(sealed), ctx, job };
    if (check) w.stamp = { stamp: check.stamp, body: new Uint8Array(check.body) };
    t.outbox.push(w);
    // A full batch leaves now: the thread starts on it while this turn goes on parsing requests.
    if (t.outbox.length >= MAX_BATCH) this.#flush(t);
    return new Promise<SignJobResult>((resolve, reject) => { t.pending.set(id, check ? { resolve, reject, check } : { resolve, reject }); });
  }

  readonly #flush = (t: Thread): void => {
    const jobs = t.outbox;
    t.outbox = [];
    if (jobs.length === 0) return;
    if (!this.#threads.includes(t)) {
      const failure = new CryptoError('SIGN_FAILED', 'a signing thread stopped');
      for (const j of jobs) { t.pending.get(j.id)?.reject(failure); t.pending.delete(j.id); }
      return;
    }
    const transfer: ArrayBuffer[] = [];
    for (const j of jobs) {
      transfer.push(j.sealed.buffer as ArrayBuffer);
      if (j.stamp) transfer.push(j.stamp.body.buffer as ArrayBuffer);
    }
    t.worker.postMessage(jobs, transfer);
  };

  /** Stops the threads; jobs not yet answered fail. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#atRest.fill(0);
    const threads = this.#threads.splice(0);
    const failure = new CryptoError('SIGN_FAILED', 'the signing pool is closed');
    for (const t of threads) {
      for (const p of t.pending.values()) p.reject(failure);
      t.pending.clear();
      void t.worker.terminate();
    }
  }
}
