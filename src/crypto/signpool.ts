/**
 * SignPool: batch ECDSA signing split across worker threads, each holding its own wasm core, for
 * the synchronous request path. signDigests() hands slices of the batch to the ready workers,
 * signs one slice on the calling thread, then blocks (Atomics.wait) until the workers are done:
 * the caller stays synchronous while the batch uses every core. Opt-in (SIGN_WORKERS); without
 * ready workers it signs on the calling thread exactly like curves.signDigests.
 *
 * Each worker has a SharedArrayBuffer: control words, then key (32) ‖ digests (32·max) ‖
 * signatures (64·max) ‖ recovery ids (max). The key and digests are wiped after every job.
 *
 * Workers run compiled JavaScript (dist/src/crypto/signworker.js): from sources (vitest) the pool
 * uses the built file; when none exists the pool has no workers.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CryptoError } from './errors.js';
import { signDigests, type EcdsaCurve, type RecoverableSignature } from './curves.js';

export const SLOT = { state: 0, ready: 1, curve: 2, count: 3, status: 4, words: 8 } as const;
export const STATE = { idle: 0, job: 1, done: 2, exit: 3 } as const;

export function layout(max: number) {
  const key = SLOT.words * 4;
  const digests = key + 32;
  const sigs = digests + 32 * max;
  const recs = sigs + 64 * max;
  return { key, digests, sigs, recs, size: recs + max };
}

/** Below this many digests a batch is signed on the calling thread (handing off costs more). */
export const MIN_PARALLEL = 8;
const JOB_TIMEOUT_MS = 10_000;

function workerFile(): string | undefined {
  const here = fileURLToPath(new URL('./signworker.js', import.meta.url));
  if (existsSync(here)) return here;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'kmas') {
          const built = join(dir, 'dist', 'src', 'crypto', 'signworker.js');
          return existsSync(built) ? built : undefined;
        }
      } catch { /* keep walking */ }
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

interface Slot { worker: Worker; ctl: Int32Array; bytes: Uint8Array }

export class SignPool {
  readonly #slots: Slot[] = [];
  readonly #max: number;
  readonly #L: ReturnType<typeof layout>;
  #closed = false;

  /** `workers` threads, each taking up to `maxPerWorker` digests per job. */
  constructor(workers: number, maxPerWorker = 1000) {
    this.#max = maxPerWorker;
    this.#L = layout(maxPerWorker);
    const file = workerFile();
    if (!file || workers <= 0) return;
    for (let i = 0; i < workers; i++) {
      const sab = new SharedArrayBuffer(this.#L.size);
      const worker = new Worker(file, { workerData: { sab, max: maxPerWorker } });
      worker.unref();
      worker.on('error', () => { /* a dead worker is simply never ready */ });
      this.#slots.push({ worker, ctl: new Int32Array(sab, 0, SLOT.words), bytes: new Uint8Array(sab) });
    }
  }

  /** Whether a worker script was found (workers may still be starting). */
  get size(): number { return this.#slots.length; }

  /** Workers that have loaded their core. */
  get ready(): number { return this.#slots.filter((s) => Atomics.load(s.ctl, SLOT.ready) === 1).length; }

  /** Resolves once every worker is ready (or after timeoutMs). */
  async whenReady(timeoutMs = 10_000): Promise<number> {
    const end = Date.now() + timeoutMs;
    while (this.ready < this.#slots.length && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    return this.ready;
  }

  /** Same result as curves.signDigests(curve, digests, privateKey), byte for byte. */
  signDigests(curve: EcdsaCurve, digests: Uint8Array[], privateKey: Uint8Array): RecoverableSignature[] {
    const ready = this.#closed ? [] : this.#slots.filter((s) => Atomics.load(s.ctl, SLOT.ready) === 1 && Atomics.load(s.ctl, SLOT.state) === STATE.idle);
    if (ready.length === 0 || digests.length < MIN_PARALLEL) return signDigests(curve, digests, privateKey);
    if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32) return signDigests(curve, digests, privateKey);
    for (const d of digests) if (!(d instanceof Uint8Array) || d.length !== 32) return signDigests(curve, digests, privateKey);

    const parts = ready.length + 1;
    const chunk = Math.min(this.#max, Math.ceil(digests.length / parts));
    const L = this.#L;
    const jobs: { slot: Slot; start: number; count: number }[] = [];
    let next = 0;
    for (const slot of ready) {
      const count = Math.min(chunk, digests.length - next - 1);
      if (count <= 0) break;
      slot.bytes.set(privateKey, L.key);
      for (let i = 0; i < count; i++) slot.bytes.set(digests[next + i]!, L.digests + 32 * i);
      slot.ctl[SLOT.curve] = curve === 'secp256k1' ? 0 : 1;
      slot.ctl[SLOT.count] = count;
      slot.ctl[SLOT.status] = 0;
      Atomics.store(slot.ctl, SLOT.state, STATE.job);
      Atomics.notify(slot.ctl, SLOT.state);
      jobs.push({ slot, start: next, count });
      next += count;
    }
    const out: RecoverableSignature[] = new Array(digests.length);
    let failure: unknown;
    try {
      const mine = signDigests(curve, digests.slice(next), privateKey);
      mine.forEach((s, i) => { out[next + i] = s; });
    } catch (e) {
      failure = e;
    }
    for (const { slot, start, count } of jobs) {
      const deadline = Date.now() + JOB_TIMEOUT_MS;
      while (Atomics.load(slot.ctl, SLOT.state) === STATE.job && Date.now() < deadline) {
        Atomics.wait(slot.ctl, SLOT.state, STATE.job, 100);
      }
      const done = Atomics.load(slot.ctl, SLOT.state) === STATE.done;
      if (!done || slot.ctl[SLOT.status] !== 0) {
        failure ??= new CryptoError('SIGN_FAILED', done ? 'batch signing failed in a worker' : 'a signing worker did not answer');
      } else {
        for (let i = 0; i < count; i++) {
          out[start + i] = {
            signature: slot.bytes.slice(L.sigs + 64 * i, L.sigs + 64 * (i + 1)),
            recovery: slot.bytes[L.recs + i]!,
          };
        }
      }
      slot.bytes.fill(0, L.key, L.sigs);
      if (done) Atomics.store(slot.ctl, SLOT.state, STATE.idle);
    }
    if (failure) throw failure;
    return out;
  }

  /** Stops the workers. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#slots) {
      Atomics.store(s.ctl, SLOT.state, STATE.exit);
      Atomics.notify(s.ctl, SLOT.state);
      void s.worker.terminate();
    }
  }
}
