/**
 * Worker thread of the StampVerifier (verifypool.ts): checks batches of stamps with the same
 * verifyStamp the request thread runs (its own instance of the wasm core, so its own key cache).
 * One message per batch each way (../workerpool.ts).
 */
import { parentPort } from 'node:worker_threads';
import { verifyStamp, type Stamp } from './stamp.js';

export interface StampJob { id: number; stamp: Stamp; body: Uint8Array }
export interface StampReply { id: number; ok: boolean }

const port = parentPort!;
port.on('message', (batch: StampJob[]) => {
  port.postMessage(batch.map(({ id, stamp, body }): StampReply => {
    try { return { id, ok: verifyStamp(stamp, body) }; } catch { return { id, ok: false }; }
  }));
});
port.postMessage('ready');
