/**
 * Where the package's files are, from wherever this module runs: src/ (vitest, tsx) or dist/src/
 * (after tsc), in a checkout or installed under node_modules. Environment-free except for
 * node:fs / node:path (Node only; the browser build of the core does not use it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function isPackageRoot(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'kmas';
  } catch {
    return false;
  }
}

let root: string | undefined;

/** The directory of kmas's package.json (throws when there is none above this file). */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && isPackageRoot(dir)) return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error('kmas: package root (with build/kmas.wasm) not found');
    dir = up;
  }
}

/**
 * The compiled JavaScript of a source module, e.g. builtScript('crypto/signworker.js') →
 * <root>/dist/src/crypto/signworker.js, or undefined when it has not been built. Worker threads
 * run these: from sources (vitest) there is no JavaScript to give a Worker.
 */
export function builtScript(fromSrc: string): string | undefined {
  let file: string;
  try { file = join(packageRoot(), 'dist', 'src', fromSrc); } catch { return undefined; }
  return existsSync(file) ? file : undefined;
}
