/** Entry of a pool worker (http/pool.ts): serves with the configuration the primary sends. */
import cluster from 'node:cluster';
import { startServer, type RunningServer } from './server.js';
import type { FailedMessage, HelloMessage, ReadyMessage, StartMessage, StopMessage } from './http/pool.js';
import { createLogger, exitOnUncaught } from './log.js';

if (!cluster.isWorker) {
  process.stderr.write('kmas: src/poolworker.js runs only as a pool worker (WORKERS > 1)\n');
  process.exit(2);
}

let running: RunningServer | undefined;
let stopping = false;
// the primary logs the exit and starts a replacement (pool.ts)
exitOnUncaught(() => running?.log ?? createLogger('info', (l) => process.stderr.write(l)));

async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  try { await running?.stop(); } finally { process.exit(code); }
}

process.on('message', (m: StartMessage | StopMessage) => {
  if (m?.type === 'kmas:start') {
    startServer({ ...m.config, workers: 1 }).then((r) => {
      running = r;
      process.send?.({ type: 'kmas:ready', port: r.port } satisfies ReadyMessage);
    }, (e: unknown) => {
      process.send?.({ type: 'kmas:failed', message: e instanceof Error ? e.message : String(e) } satisfies FailedMessage,
        undefined, undefined, () => process.exit(1));
    });
  } else if (m?.type === 'kmas:stop') {
    void stop(0);
  }
});
process.send?.({ type: 'kmas:hello' } satisfies HelloMessage);
// The primary went away: finish what is in flight, then exit.
process.on('disconnect', () => { void stop(0); });
process.on('SIGINT', () => { /* the primary coordinates shutdown */ });
process.on('SIGTERM', () => { void stop(0); });
