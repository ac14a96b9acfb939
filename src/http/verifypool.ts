/**
 * P-256 stamp checks on worker threads. The P-256 verify (node:crypto, ≈90–110 µs) is the largest
 * CPU cost of a request on the event loop; with a spare core it runs on a worker thread while the
 * event loop serves other requests. The event loop still parses the stamp, checks the public key's
 * form and converts the DER signature (stamp.ts derToCompact, the one lenient parser); the worker
 * only runs crypto.verify over the exact body bytes. Other schemes, and every check when the pool
 * has no threads (or a thread died), run on the calling thread through stamp.ts verifyStamp.
 * Threads run inline source (no file to build), are unref'd and ended by close().
 */
import { Worker } from 'node:worker_threads';
import { derToCompact, verifyStamp, type Stamp } from './stamp.js';

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createPublicKey, verify } = require('node:crypto');
const SPKI_P256_COMPRESSED = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex');
const keys = new Map();
function keyOf(pub) {
  let k = keys.get(pub);
  if (k === undefined) {
    try { k = createPublicKey({ key: Buffer.concat([SPKI_P256_COMPRESSED, Buffer.from(pub, 'hex')]), format: 'der', type: 'spki' }); }
    catch { k = null; }
    if (keys.size >= 10000) keys.clear();
    keys.set(pub, k);
  }
  return k;
}
parentPort.on('message', (batch) => {
  const ok = batch.map((m) => {
    const key = keyOf(m.pub);
    if (!key) return false;
    try { return verify('sha256', m.body, { key, dsaEncoding: 'ieee-p1363' }, m.sig); } catch { return false; }
  });
  parentPort.postMessage({ ids: batch.map((m) => m.id), ok });
});
`;

interface Pending { resolve: (ok: boolean) => void; stamp: Stamp; body: Uint8Array }
interface Job { id: number; pub: string; sig: Uint8Array; body: Uint8Array }
interface Thread { worker: Worker; pending: Map<number, Pending>; outbox: Job[] }

const P256_PUBLIC_KEY = /^0[23][0-9a-f]{64}$/;

export class StampVerifier {
  #threads: Thread[] = [];
  #next = 0;
  #id = 0;
  #closed = false;

  constructor(threads: number) {
    for (let i = 0; i < threads; i++) this.#start();
  }

  /** Threads currently verifying (0 = everything on the calling thread). */
  get threads(): number { return this.#threads.length; }

  #start(): void {
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.unref();
    const t: Thread = { worker, pending: new Map(), outbox: [] };
    worker.on('message', (m: { ids: number[]; ok: boolean[] }) => {
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
   * Same answer as stamp.ts verifyStamp(stamp, body). P-256 checks go to a thread when there is
   * one and `busy` says other requests are in progress; a lone request is checked on the calling
   * thread (waking a thread costs more latency than the check saves when nothing else waits).
   */
  verify(stamp: Stamp, body: Uint8Array, busy = true): boolean | Promise<boolean> {
    if (!busy || stamp.scheme !== 'SIGNATURE_SCHEME_TK_API_P256' || this.#threads.length === 0) return verifyStamp(stamp, body);
    if (!P256_PUBLIC_KEY.test(stamp.publicKey)) return false;
    const sig = derToCompact(Buffer.from(stamp.signature, 'hex'));
    if (!sig) return false;
    const t = this.#threads[this.#next++ % this.#threads.length]!;
    const id = ++this.#id;
    // A copy of exactly the body's bytes, transferred (the request's Buffer may view a larger pool).
    const copy = new Uint8Array(body);
    if (t.outbox.length === 0) setImmediate(this.#send, t);
    t.outbox.push({ id, pub: stamp.publicKey, sig, body: copy });
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
