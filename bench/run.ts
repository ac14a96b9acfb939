// Benchmark entry: `node --expose-gc dist/bench/run.js [name ...]` runs the named benchmarks
// (default: every one that exists). Each benchmark module exports `run(): Promise<unknown>`.
import { existsSync } from 'node:fs';

const KNOWN = ['core', 'http', 'signing'] as const;

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const available = KNOWN.filter((n) => existsSync(new URL(`./${n}.js`, import.meta.url)));
  const wanted = args.length ? args : available;
  for (const name of wanted) {
    if (!available.includes(name as (typeof KNOWN)[number])) {
      console.error(`unknown benchmark "${name}" (available: ${available.join(', ')})`);
      process.exitCode = 2;
      return;
    }
  }
  if (!(globalThis as { gc?: unknown }).gc) console.warn('note: run with --expose-gc for steadier numbers');
  for (const name of wanted) {
    console.log(`\n## bench: ${name}\n`);
    const mod = (await import(`./${name}.js`)) as { run: () => Promise<unknown> };
    await mod.run();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
