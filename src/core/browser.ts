// Browser entry of the core (no Node API): instantiate build/kmas.wasm from a URL, a fetch
// Response or the raw bytes, and get the same Core as in Node.
import { createCore, type Core } from './api.js';

export * from './api.js';

export async function loadCore(source: URL | Response | BufferSource): Promise<Core> {
  let bytes: BufferSource;
  if (source instanceof URL) {
    const res = await fetch(source);
    if (!res.ok) throw new Error(`kmas: fetching ${source.href} failed with HTTP ${res.status}`);
    bytes = await res.arrayBuffer();
  } else if (typeof Response !== 'undefined' && source instanceof Response) {
    bytes = await source.arrayBuffer();
  } else {
    bytes = source as BufferSource;
  }
  const { instance } = await WebAssembly.instantiate(bytes, {});
  return createCore(instance);
}
