// Browser entry of the core (`kmas/core/browser`, no Node API): instantiate build/kmas.wasm and
// get the same Core as in Node. Where the .wasm comes from is the caller's choice:
//   loadCore()                         the package's own build/kmas.wasm, found from this module's
//                                      URL (unbundled, and bundlers that follow
//                                      `new URL(…, import.meta.url)`: Vite, webpack 5, Parcel)
//   loadCore(url)                      a URL (or URL string) the page serves it at, e.g. the file
//                                      a bundler emitted for `import wasmUrl from 'kmas/kmas.wasm'`
//   loadCore(response | bytes | module) a fetch Response, the raw bytes or a compiled module
import { CoreError, createCore, type Core } from './api.js';

export * from './api.js';

export type WasmSource = URL | string | Response | BufferSource | WebAssembly.Module;

/** The package's kmas.wasm, relative to this file (dist/src/core/browser.js → build/kmas.wasm). */
export function defaultWasmUrl(): URL {
  return new URL('../../../build/kmas.wasm', import.meta.url);
}

async function instantiate(res: Response, where: string): Promise<WebAssembly.Instance> {
  if (!res.ok) {
    throw new CoreError('WASM_NOT_FOUND', `fetching ${where} failed with HTTP ${res.status}: serve kmas.wasm (the package's build/kmas.wasm, export "kmas/kmas.wasm") and pass its URL to loadCore`);
  }
  // Streaming compilation needs the application/wasm type; any other type still works, buffered.
  if (typeof WebAssembly.instantiateStreaming === 'function' && (res.headers.get('content-type') ?? '').split(';')[0]!.trim() === 'application/wasm') {
    return (await WebAssembly.instantiateStreaming(res, {})).instance;
  }
  return (await WebAssembly.instantiate(await res.arrayBuffer(), {})).instance;
}

export async function loadCore(source: WasmSource = defaultWasmUrl()): Promise<Core> {
  let instance: WebAssembly.Instance;
  if (source instanceof URL || typeof source === 'string') {
    const url = source instanceof URL ? source : new URL(source, globalThis.location?.href);
    instance = await instantiate(await fetch(url), url.href);
  } else if (typeof Response !== 'undefined' && source instanceof Response) {
    instance = await instantiate(source, source.url || 'the response');
  } else if (source instanceof WebAssembly.Module) {
    instance = await WebAssembly.instantiate(source, {});
  } else {
    instance = (await WebAssembly.instantiate(source as BufferSource, {})).instance;
  }
  return createCore(instance);
}
