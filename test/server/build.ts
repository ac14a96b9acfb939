// The CLI (bin/kmas.js) runs the compiled dist/src/cli.js: tests that spawn it (re)build dist
// with tsc when it is missing or older than src/.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { storageEnv } from './teststorage.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));
export const cliJs = join(root, 'dist/src/cli.js');
export const kmasBin = join(root, 'bin/kmas.js');

export function newestMtime(dir: string, ext: string): number {
  let m = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) m = Math.max(m, newestMtime(p, ext));
    else if (e.name.endsWith(ext)) m = Math.max(m, statSync(p).mtimeMs);
  }
  return m;
}

/** Returns why the CLI cannot be built, or undefined when dist is current. */
export function ensureBuilt(): string | undefined {
  if (existsSync(cliJs) && statSync(cliJs).mtimeMs >= newestMtime(join(root, 'src'), '.ts') && newestMtime(join(root, 'dist/src'), '.js') >= newestMtime(join(root, 'src'), '.ts')) return undefined;
  // serialized: several test files may ask at once
  const b = spawnSync('flock', ['/tmp/kmas-test-tsc.lock', 'npx', 'tsc', '-p', 'tsconfig.json'], { cwd: root, encoding: 'utf8', timeout: 180_000 });
  if (!existsSync(cliJs)) return `dist/src/cli.js could not be built: ${(b.stdout + b.stderr).slice(0, 300)}`;
  return undefined;
}

export interface ServeProcess {
  child: ChildProcess;
  /** The URL the server logged. */
  url: string;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM (or the signal given) unless it has exited; resolves on exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Spawns `node bin/kmas.js serve` (or the `bin` given, e.g. an installed package's, run from
 * `cwd`) on a free loopback port with DATA_DIR `dataDir`, logging at info (more settings in
 * `env`), and resolves once it has logged its URL (bootstrap.json is written before that). Waits
 * on the child's output events, not a polling timer, and a failure says how the child ended (code
 * or signal, after its output was read to the end) and how long it had run.
 */
export async function spawnServe(dataDir: string, opts: { timeoutMs?: number; bin?: string; cwd?: string; env?: Record<string, string> } = {}): Promise<ServeProcess> {
  const timeoutMs = opts.timeoutMs ?? 45_000;
  const storage = await storageEnv(dataDir);
  const child = spawn(process.execPath, [opts.bin ?? kmasBin, 'serve'], { cwd: opts.cwd ?? root, env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...storage, ...opts.env } });
  const t0 = Date.now();
  let out = '';
  const ended = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await ended;
  };
  return new Promise<ServeProcess>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`kmas serve did not start: ${why} after ${Date.now() - t0} ms; output: ${out.slice(0, 800) || '(none)'}`));
    };
    const check = () => {
      const m = /(https?:\/\/[\d.]+:\d+)/.exec(out);
      if (!m || !existsSync(join(dataDir, 'bootstrap.json'))) return;
      clearTimeout(timer);
      child.off('close', onClose);
      resolve({ child, url: m[1]!, output: () => out, stop });
    };
    const onData = (d: Buffer) => { out += d.toString('utf8'); check(); };
    // 'close' comes after the exit and the last of stdout/stderr, so the output is whole.
    const onClose = (code: number | null, signal: string | null) => fail(`it exited (code ${code}, signal ${signal})`);
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('close', onClose);
    child.once('error', (e) => fail(`spawn failed (${e.message})`));
    const timer = setTimeout(() => { fail('no URL logged'); void stop('SIGKILL'); }, timeoutMs);
  });
}
