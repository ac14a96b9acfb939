/**
 * Worker thread of the SignPool (signpool.ts): holds its own instance of the wasm core and the
 * at-rest key (from workerData), checks the request's stamp when one comes with the job (the same
 * verifyStamp as the request thread), opens sealed keys and runs signing jobs (signjob.ts). Jobs come
 * in batches, one message per batch, and their results go back the same way. The opened key is
 * wiped after every job; nothing here logs.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openStored, type AtRestContext } from './atrest.js';
import { errorToData, runSignJob, type ErrorData, type SignJob, type SignJobResult } from './signjob.js';
import { verifyStamp, type Stamp } from './stamp.js';

export interface WorkerJob {
  id: number;
  sealed: Uint8Array;
  ctx: AtRestContext;
  job: SignJob;
  /** the request's stamp, verified over body before the job runs (signpool.ts StampCheck) */
  stamp?: { stamp: Stamp; body: Uint8Array };
}
export type WorkerResult =
  | { id: number; ok: true; value: SignJobResult; stampVerified?: true }
  /** error undefined: the stamp did not verify, and the key was not opened */
  | { id: number; ok: false; error?: ErrorData };

const atRest = workerData.atRestKey as Uint8Array;
const port = parentPort!;

port.on('message', (batch: WorkerJob[]) => {
  const out: WorkerResult[] = batch.map(({ id, sealed, ctx, job, stamp }): WorkerResult => {
    try {
      if (stamp && !verifyStamp(stamp.stamp, stamp.body)) return { id, ok: false };
      const value = runSignJob(job, () => openStored(atRest, sealed, ctx));
      return stamp ? { id, ok: true, value, stampVerified: true } : { id, ok: true, value };
    } catch (e) {
      return { id, ok: false, error: errorToData(e) };
    }
  });
  port.postMessage(out);
});
port.postMessage('ready');
