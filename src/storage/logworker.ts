/**
 * The thread that seals the SQLite adapter's later log entries (logSeal.ts): each job is one
 * organization's run of consecutive entries from a known frontier; the reply carries their rows
 * (packed: logSeal.ts packSealed) and the frontier after them. Hashing with node:crypto, as the request thread does. Nothing here
 * touches the database: the request thread stores the rows.
 */
import { parentPort } from 'node:worker_threads';
import { useSha256 } from '../tlog/hash.js';
import { nativeLogHashing } from '../crypto/nativeHash.js';
import { decodeLater, packSealed, sealEntries, type PackedRows } from './logSeal.js';

/** items: encodeLater's string of the entries */
export interface SealJob { id: number; size: number; frontier: Uint8Array; items: string }
export type SealReply = { id: number; ok: true; rows: PackedRows; frontier: Uint8Array } | { id: number; ok: false; error: string };

useSha256(...nativeLogHashing);
const port = parentPort!;

port.on('message', (batch: SealJob[]) => {
  const transfer: ArrayBuffer[] = [];
  const replies = batch.map((job): SealReply => {
    try {
      const { rows, frontier } = sealEntries(job.size, job.frontier, decodeLater(job.items));
      // the rows' bytes in one buffer, moved, not copied
      const packed = packSealed(rows);
      transfer.push(packed.bytes.buffer as ArrayBuffer);
      return { id: job.id, ok: true, rows: packed, frontier };
    } catch (e) {
      return { id: job.id, ok: false, error: e instanceof Error ? e.message : String(e) };
    }
  });
  port.postMessage(replies, transfer);
});
port.postMessage('ready');
