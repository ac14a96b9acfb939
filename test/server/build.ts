// The CLI (bin/kmas.js) runs the compiled dist/src/cli.js: tests that spawn it (re)build dist
// with tsc when it is missing or older than src/.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
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
