// `node scripts/clean.mjs dir…`: removes build output directories (used by `prepack`, so that a
// tarball never carries a file whose source was deleted).
import { rmSync } from 'node:fs';

for (const dir of process.argv.slice(2)) rmSync(new URL(`../${dir}`, import.meta.url), { recursive: true, force: true });
