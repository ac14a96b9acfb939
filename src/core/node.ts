// Node entry of the core: loads build/kmas.wasm synchronously at import and exports `core`.
// The path is resolved from the package root, found by walking up from this file, so it works
// from src/core (vitest, tsx) and from dist/src/core (after tsc).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCore, type Core } from './api.js';
import { packageRoot } from '../paths.js';

export * from './api.js';

export const wasmPath: string = join(packageRoot(), 'build', 'kmas.wasm');

/** A fresh instance of build/kmas.wasm (its raw exports: benchmarks that call the ABI directly). */
export function instantiate(): WebAssembly.Instance {
  let bytes: Buffer;
  try {
    bytes = readFileSync(wasmPath);
  } catch {
    throw new Error(`kmas: ${wasmPath} is missing; run \`npm run asbuild:release\``);
  }
  const module = new WebAssembly.Module(bytes as unknown as BufferSource);
  return new WebAssembly.Instance(module, {});
}

function load(): Core {
  return createCore(instantiate());
}

export const core: Core = load();

/** build/debug.wasm: the same core unoptimised, with the representation checks of
 *  assembly/debug.ts compiled in; a failed check throws an Error naming it. For tests only. */
export const debugWasmPath: string = join(packageRoot(), 'build', 'debug.wasm');

export function loadDebugCore(): Core {
  return createCore(instantiateDebug());
}

/** The instance under loadDebugCore (tests that look into its memory). */
export function instantiateDebug(): WebAssembly.Instance {
  const module = new WebAssembly.Module(readFileSync(debugWasmPath) as unknown as BufferSource);
  let memory: WebAssembly.Memory | undefined;
  // an AssemblyScript string: UTF-16LE, its byte length in the word before it
  const text = (p: number): string => {
    if (!p || !memory) return '?';
    const len = new Uint32Array(memory.buffer, p - 4, 1)[0]!;
    return Buffer.from(memory.buffer, p, len).toString('utf16le');
  };
  const instance = new WebAssembly.Instance(module, {
    env: {
      abort(msg: number, file: number, line: number, col: number): never {
        throw new Error(`kmas debug core: ${text(msg)} (${text(file)}:${line}:${col})`);
      },
    },
  });
  memory = instance.exports.memory as WebAssembly.Memory;
  return instance;
}
