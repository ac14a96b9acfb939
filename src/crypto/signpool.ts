/**
 * SignPool: signing on worker threads, off the event loop. Each thread holds its own wasm core
 * and a copy of the at-rest key; it receives SEALED keys, opens them for the moment of use, signs
 * (signjob.ts, the same code the Vault runs on the calling thread) and wipes them. The request
 * thread meanwhile serves other requests: the activity engine signs before its transaction
 * (SubmitOperation.prepare) and only checks and stores the result inside it.
 *
 * Threads, batching and replacement are the WorkerPool's (../workerpool.ts): the jobs of one turn of
 * the event loop go to a thread in one message (at most MAX_BATCH of them) and come back in one. A
 * sign_raw_payloads batch is split across the threads when there are several. A thread that dies
 * fails its jobs (the caller then signs on its own thread) and is replaced, at most 5 times a
 * minute: after that the pool shrinks, and with no thread left every job is signed on the calling
 * thread.
 *
 * Workers run compiled JavaScript (dist/src/crypto/signworker.js): from sources (vitest) the pool
 * uses the built file; when none exists the pool has no threads.
 */
import { CryptoError } from '../encoding/errors.js';
import type { AtRestContext } from './atrest.js';
import type { RawSignature } from './payload.js';
import { errorFromData, type SignJob, type SignJobResult } from './signjob.js';
import type { WorkerJob, WorkerResult } from './signworker.js';
import type { Stamp } from './stamp.js';
import { builtScript } from '../paths.js';
import { WorkerPool } from '../workerpool.js';

/**
 * A request's stamp, checked on the signing thread before the job runs, so that a signing request
 * costs the event loop one thread hop rather than two (one for the stamp, one for the signature).
 * `verified` becomes true only when a thread reports that the stamp verified over `body`.
 */
export interface StampCheck { stamp: Stamp; body: Uint8Array; verified: boolean }

/** Batches at least this long are split across the threads (each slice at least half this). */
export const MIN_SPLIT = 16;
/**
 * Jobs per message at most. Under load a turn of the event loop can take a dozen requests; sent as
 * one batch, the thread idled while the turn parsed them and then answered all of them at once, so
 * requests moved through the stages together and the machine sat 25 % idle at 16 clients. Batches
 * of at most 4 overlap the stages: ≈ 7 % more signing requests/s with the raw-socket load generator
 * (bench/signing.ts; 2 did as well, 1 cost more CPU per request than it saved).
 */
const MAX_BATCH = 4;

interface Pending { resolve: (v: SignJobResult) => void; reject: (e: unknown) => void; check?: StampCheck }

export class SignPool {
  readonly #pool: WorkerPool<WorkerJob, WorkerResult, Pending>;
  readonly #atRest: Uint8Array;

  /** `threads` worker threads signing with keys sealed under `atRestKey` (copied; the caller keeps its own). */
  constructor(threads: number, atRestKey: Uint8Array) {
    this.#atRest = new Uint8Array(atRestKey);
    this.#pool = new WorkerPool<WorkerJob, WorkerResult, Pending>({
      name: 'sign',
      script: builtScript('crypto/signworker.js'),
      threads,
      workerData: { atRestKey: this.#atRest },
      maxBatch: MAX_BATCH,
      transfer: (j) => (j.stamp ? [j.sealed.buffer as ArrayBuffer, j.stamp.body.buffer as ArrayBuffer] : [j.sealed.buffer as ArrayBuffer]),
      settle: (p, r) => {
        if (r.ok) {
          if (p.check && r.stampVerified === true) p.check.verified = true;
          p.resolve(r.value);
        } else {
          p.reject(r.error ? errorFromData(r.error) : new CryptoError('SIGN_FAILED', 'the request stamp did not verify'));
        }
      },
      orphan: (p, closed) => p.reject(new CryptoError('SIGN_FAILED', closed ? 'the signing pool is closed' : 'a signing thread stopped')),
    });
  }

  /** Threads the pool runs (0 when the worker script is missing). */
  get size(): number { return this.#pool.size; }

  /** Threads that have loaded their core. */
  get ready(): number { return this.#pool.ready; }

  /** Resolves once every thread is ready (or after timeoutMs) with the number ready. */
  whenReady(timeoutMs = 10_000): Promise<number> { return this.#pool.whenReady(timeoutMs); }

  /**
   * Runs a job on a thread: the key opened there from `sealed` under `ctx`. Rejects with the
   * CryptoError the Vault would throw for the same job, or SIGN_FAILED when no thread can do it.
   */
  run(sealed: Uint8Array, ctx: AtRestContext, job: SignJob, check?: StampCheck): Promise<SignJobResult> {
    if (job.op === 'payloads' && this.#pool.size > 1 && job.payloads.length >= MIN_SPLIT) return this.#split(sealed, ctx, job, check);
    return this.#send(sealed, ctx, job, check);
  }

  /**
   * A batch in slices, one per thread (the pool takes threads in turn); the first slice carries
   * the stamp check (any failure fails the whole).
   */
  #split(sealed: Uint8Array, ctx: AtRestContext, job: Extract<SignJob, { op: 'payloads' }>, check?: StampCheck): Promise<SignJobResult> {
    const parts = Math.min(this.#pool.size, Math.floor(job.payloads.length / (MIN_SPLIT / 2)));
    const size = Math.ceil(job.payloads.length / parts);
    const slices: Promise<SignJobResult>[] = [];
    for (let i = 0; i < parts; i++) {
      const start = i * size;
      const payloads = job.payloads.slice(start, start + size);
      slices.push(this.#send(sealed, ctx, { ...job, payloads, firstIndex: (job.firstIndex ?? 0) + start }, i === 0 ? check : undefined));
    }
    return Promise.all(slices).then((all) => (all as RawSignature[][]).flat());
  }

  #send(sealed: Uint8Array, ctx: AtRestContext, job: SignJob, check?: StampCheck): Promise<SignJobResult> {
    return new Promise<SignJobResult>((resolve, reject) => {
      const p: Pending = check ? { resolve, reject, check } : { resolve, reject };
      // The sealed key (and the body) are copied: the message owns (and transfers) its bytes.
      const posted = this.#pool.post(p, (id) => {
        const w: WorkerJob = { id, sealed: new Uint8Array(sealed), ctx, job };
        if (check) w.stamp = { stamp: check.stamp, body: new Uint8Array(check.body) };
        return w;
      });
      if (!posted) reject(new CryptoError('SIGN_FAILED', 'no signing thread'));
    });
  }

  /** Stops the threads; jobs not yet answered fail. */
  close(): void {
    this.#atRest.fill(0);
    void this.#pool.close();
  }
}
