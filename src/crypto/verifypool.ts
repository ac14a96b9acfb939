/**
 * Stamp checks on worker threads. The stamp check (P-256 ≈ 50 µs for a key that stamps often,
 * ≈ 165 µs for a new one) is the largest CPU cost of a query on the event loop; with a spare core it
 * runs on a worker thread while the event loop serves other requests. The threads run the same
 * stamp.ts verifyStamp (stampworker.ts, compiled: dist/src/crypto/stampworker.js); without the
 * build, checks run on the calling thread.
 *
 * Threads, batching and replacement are the WorkerPool's (../workerpool.ts): the checks asked for
 * during one turn of the event loop go to a thread in one message and come back in one (under load
 * several requests arrive per turn, and a message each way costs the event loop about as much as a
 * third of the check it saves). Checks that a stopped thread left unanswered are made on the
 * calling thread instead.
 */
import { verifyStamp, type Stamp } from './stamp.js';
import type { StampJob, StampReply } from './stampworker.js';
import { builtScript } from '../paths.js';
import { WorkerPool } from '../workerpool.js';

interface Pending { resolve: (ok: boolean) => void; stamp: Stamp; body: Uint8Array }

export class StampVerifier {
  readonly #pool: WorkerPool<StampJob, StampReply, Pending>;

  constructor(threads: number) {
    this.#pool = new WorkerPool<StampJob, StampReply, Pending>({
      name: 'stamp',
      script: builtScript('crypto/stampworker.js'),
      threads,
      transfer: (j) => [j.body.buffer as ArrayBuffer],
      settle: (p, r) => p.resolve(r.ok),
      orphan: (p) => p.resolve(verifyStamp(p.stamp, p.body)),
    });
  }

  /** Threads currently verifying (0 = everything on the calling thread). */
  get threads(): number { return this.#pool.size; }

  /**
   * Same answer as stamp.ts verifyStamp(stamp, body). The check goes to a thread when there is
   * one and `busy` says other requests are in progress; a lone request is checked on the calling
   * thread (waking a thread costs more latency than the check saves when nothing else waits).
   */
  verify(stamp: Stamp, body: Uint8Array, busy = true): boolean | Promise<boolean> {
    if (!busy || this.#pool.size === 0) return verifyStamp(stamp, body);
    return new Promise<boolean>((resolve) => {
      // A copy of exactly the body's bytes, transferred (the request's Buffer may view a larger pool).
      const posted = this.#pool.post({ resolve, stamp, body }, (id) => ({ id, stamp, body: new Uint8Array(body) }));
      if (!posted) resolve(verifyStamp(stamp, body));
    });
  }

  close(): Promise<void> { return this.#pool.close(); }
}
