// Node entry of the core: loads build/kmas.wasm synchronously at import and exports `core`.
// The path is resolved from the package root, found by walking up from this file, so it works
// from src/core (vitest, tsx) and from dist/src/core (after tsc).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCore, type Core } from './api.js';
import { packageRoot } from '../paths.js';

export * from './api.js';

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
