// Node entry of the core: loads build/kmas.wasm synchronously at import and exports `core`.
// The path is resolved from the package root, found by walking up from this file, so it works
// from src/core (vitest, tsx) and from dist/src/core (after tsc).
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCore, type Core } from './api.js';

export * from './api.js';

function isPackageRoot(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'kmas';
  } catch {
    return false;
  }
}

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && isPackageRoot(dir)) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('kmas: package root (with build/kmas.wasm) not found');
    dir = up;
  }
}

export const wasmPath: string = join(packageRoot(), 'build', 'kmas.wasm');

function load(): Core {
  let bytes: Buffer;
  try {
    bytes = readFileSync(wasmPath);
  } catch {
    throw new Error(`kmas: ${wasmPath} is missing; run \`npm run asbuild:release\``);
  }
  const module = new WebAssembly.Module(bytes as unknown as BufferSource);
  const instance = new WebAssembly.Instance(module, {});
  return createCore(instance);
}

export const core: Core = load();
