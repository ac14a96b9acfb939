/**
 * Worker thread of the StampVerifier (verifypool.ts): checks batches of stamps with the same
 * verifyStamp the request thread runs (its own instance of the wasm core, so its own key cache).
 * One message per batch each way.
 */
import { parentPort } from 'node:worker_threads';
import { verifyStamp, type Stamp } from './stamp.js';

export interface StampJob { id: number; stamp: Stamp; body: Uint8Array }
export interface StampReply { ids: number[]; ok: boolean[] }

const port = parentPort!;
port.on('message', (batch: StampJob[]) => {
  const ok = batch.map((j) => {
    try { return verifyStamp(j.stamp, j.body); } catch { return false; }
  });
  port.postMessage({ ids: batch.map((j) => j.id), ok } satisfies StampReply);
});
