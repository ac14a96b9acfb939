/**
 * Worker thread of the SignPool (signpool.ts): holds its own instance of the wasm core and signs
 * slices of a batch. Jobs arrive through a SharedArrayBuffer (layout in signpool.ts); the worker
 * blocks in Atomics.wait between jobs and wipes the key and digests it copied after each job.
 */
import { workerData } from 'node:worker_threads';
import { core } from '../core/node.js';
import { SLOT, STATE, layout } from './signpool.js';

const sab = workerData.sab as SharedArrayBuffer;
const max = workerData.max as number;
const L = layout(max);
const ctl = new Int32Array(sab, 0, SLOT.words);
const bytes = new Uint8Array(sab);

Atomics.store(ctl, SLOT.ready, 1);
Atomics.notify(ctl, SLOT.ready);

for (;;) {
  Atomics.wait(ctl, SLOT.state, STATE.idle);
  const state = Atomics.load(ctl, SLOT.state);
  if (state === STATE.exit) break;
  if (state !== STATE.job) continue;
  const count = ctl[SLOT.count]!;
  const curve = ctl[SLOT.curve] === 0 ? core.secp256k1 : core.p256;
  const key = bytes.slice(L.key, L.key + 32);
  const digests: Uint8Array[] = [];
  try {
    for (let i = 0; i < count; i++) digests.push(bytes.slice(L.digests + 32 * i, L.digests + 32 * (i + 1)));
    const sigs = curve.signBatch(digests, key);
    for (let i = 0; i < count; i++) {
      bytes.set(sigs[i]!.signature, L.sigs + 64 * i);
      bytes[L.recs + i] = sigs[i]!.recovery;
    }
    ctl[SLOT.status] = 0;
  } catch {
    ctl[SLOT.status] = 1;
  } finally {
    key.fill(0);
    for (const d of digests) d.fill(0);
  }
  Atomics.store(ctl, SLOT.state, STATE.done);
  Atomics.notify(ctl, SLOT.state);
}
