// The build of the core that the core tests run against: build/kmas.wasm (release) by default,
// build/debug.wasm (unoptimised, representation checks of assembly/debug.ts on) when
// KMAS_CORE_BUILD=debug, which the vitest project `core-debug` sets (vitest.config.ts).
import { core as releaseCore, loadDebugCore, type Core } from '../../src/core/node.js';

export const BUILD: 'release' | 'debug' = process.env.KMAS_CORE_BUILD === 'debug' ? 'debug' : 'release';
export const core: Core = BUILD === 'debug' ? loadDebugCore() : releaseCore;
