import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, dirname } from 'node:path';

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '..', 'vectors');

export function loadVector<T = any>(rel: string): T {
  return JSON.parse(readFileSync(join(VECTORS, rel), 'utf8')) as T;
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const unhex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/^0x/, ''), 'hex'));
