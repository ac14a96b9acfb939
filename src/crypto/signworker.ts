/**
 * Worker thread of the SignPool (signpool.ts): holds its own instance of the wasm core and the
 * at-rest key (from workerData), opens sealed keys and runs signing jobs (signjob.ts). Jobs come
 * in batches, one message per batch, and their results go back the same way. The opened key is
 * wiped after every job; nothing here logs.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openStored, type AtRestContext } from './atrest.js';
import { errorToData, runSignJob, type ErrorData, type SignJob, type SignJobResult } from './signjob.js';

export interface WorkerJob { id: number; sealed: Uint8Array; ctx: AtRestContext; job: SignJob }
export type WorkerResult = { id: number; ok: true; value: SignJobResult } | { id: number; ok: false; error: ErrorData };

const atRest = workerData.atRestKey as Uint8Array;
const port = parentPort!;

port.on('message', (batch: WorkerJob[]) => {
  const out: WorkerResult[] = batch.map(({ id, sealed, ctx, job }): WorkerResult => {
    try {
      return { id, ok: true, value: runSignJob(job, () => openStored(atRest, sealed, ctx)) };
    } catch (e) {
      return { id, ok: false, error: errorToData(e) };
    }
  });
  port.postMessage(out);
});
port.postMessage('ready');
