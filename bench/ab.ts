// A/B of two builds of the core in one process: `node dist/bench/ab.js <base.wasm> [new.wasm]`
// (new defaults to build/kmas.wasm). Both load through the same src/core/api.ts (the ABI is
// unchanged between them), the same keys, digests and signatures feed both, and the operations
// run in interleaved rounds (AB_ROUNDS, default 9, of 150 ms CPU time each, order reversed every
// other round), so machine load hits both alike. Prints the median ops/s, new ÷ base of the
// medians, and the per-round ratios (new ÷ base within one round): their median and interquartile
// range, which resist the load spikes of a shared machine better than the medians' ratio, and the
// ratio of the best rounds (load only ever slows a round down).
// AB_SLICE_MS (default 150) sets the CPU time per operation and round; AB_OPS (a regular
// expression) keeps only the matching operations. Many short rounds (AB_ROUNDS=60 AB_SLICE_MS=25)
// pair base and new closely in time.
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createCore, type Core } from '../src/core/api.js';
import { wasmPath } from '../src/core/node.js';

const load = (p: string): Core => createCore(new WebAssembly.Instance(new WebAssembly.Module(readFileSync(p) as unknown as BufferSource), {}));
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function main(): void {
  const [basePath, newPath = wasmPath] = process.argv.slice(2);
  if (!basePath) throw new Error('usage: node dist/bench/ab.js <base.wasm> [new.wasm]');
  const A = load(basePath), B = load(newPath);
  const ops: Record<string, () => void> = {};
  for (const curve of ['secp256k1', 'p256'] as const) {
    const keys: Uint8Array[] = [], pubs: Uint8Array[] = [], digs: Uint8Array[] = [], sigs: Uint8Array[] = [];
    for (let i = 0; i < 256; i++) {
      const k = new Uint8Array(randomBytes(32));
      k[0]! &= 0x7f;
      const d = new Uint8Array(randomBytes(32));
      keys.push(k);
      pubs.push(A[curve].getPublicKey(k));
      digs.push(d);
      sigs.push(A[curve].sign(d, k).signature);
    }
    for (const [name, core] of [['base', A], ['new', B]] as const) {
      const c = core[curve];
      let i = 0;
      const next = () => (i = (i + 1) & 255);
      ops[`${curve} verify, another key every time|${name}`] = () => {
        const j = next();
        if (!c.verify(sigs[j]!, digs[j]!, pubs[j]!, { format: 'compact' })) throw new Error('verify failed');
      };
      ops[`${curve} verify, same key|${name}`] = () => {
        if (!c.verify(sigs[0]!, digs[0]!, pubs[0]!, { format: 'compact' })) throw new Error('verify failed');
      };
      ops[`${curve} sign|${name}`] = () => void c.sign(digs[next()]!, keys[i]!);
      ops[`${curve} signBatch ×100, one key (batches/s)|${name}`] = () => void c.signBatch(digs.slice(0, 100), keys[0]!);
      ops[`${curve} getPublicKey|${name}`] = () => void c.getPublicKey(keys[next()]!);
      ops[`${curve} ecdh|${name}`] = () => void c.ecdh(keys[next()]!, pubs[(i + 1) & 255]!);
    }
  }
  const only = process.env.AB_OPS ? new RegExp(process.env.AB_OPS) : null;
  if (only) for (const n of Object.keys(ops)) if (!only.test(n.split('|')[0]!)) delete ops[n];
  const slice = Number(process.env.AB_SLICE_MS ?? 150);
  for (const f of Object.values(ops)) for (let i = 0; i < 300; i++) f(); // past V8's tier-up
  const res: Record<string, number[]> = {};
  const rounds = Number(process.env.AB_ROUNDS ?? 9);
  for (let r = 0; r < rounds; r++) {
    const names = Object.keys(ops);
    for (const n of r & 1 ? names.reverse() : names) {
      const f = ops[n]!;
      let count = 0;
      const t0 = cpu();
      while (cpu() - t0 < slice) {
        for (let k = 0; k < 10; k++) f();
        count += 10;
      }
      (res[n] ??= []).push(count / ((cpu() - t0) / 1000));
    }
  }
  const med = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1]!;
  console.log(`A/B, ${rounds} interleaved rounds; base ${basePath}, new ${newPath}\n`);
  console.log('| operation | base ops/s | new ops/s | new ÷ base | per-round ratio: median (IQR), min–max | best round new ÷ best base |\n|---|--:|--:|--:|--:|--:|');
  for (const g of [...new Set(Object.keys(res).map((k) => k.split('|')[0]!))]) {
    const ra = res[g + '|base']!, rb = res[g + '|new']!;
    const a = med(ra), b = med(rb);
    const per = rb.map((x, r) => x / ra[r]!).sort((x, y) => x - y);
    const q = (f: number) => per[Math.floor(f * (per.length - 1))]!.toFixed(3);
    const span = `${q(0.5)} (${q(0.25)}–${q(0.75)}), ${q(0)}–${q(1)}`;
    console.log(`| ${g} | ${Math.round(a).toLocaleString('en-US')} | ${Math.round(b).toLocaleString('en-US')} | ${(b / a).toFixed(3)} | ${span} | ${(Math.max(...rb) / Math.max(...ra)).toFixed(3)} |`);
  }
}

main();
