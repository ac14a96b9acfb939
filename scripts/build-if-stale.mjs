// `prestart`: builds (npm run build) when build/kmas.wasm or dist/ is missing or older than the
// sources, so that `npm install && npm start` works from a fresh clone and after a pull, and a
// second `npm start` starts at once.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Newest modification time of the files under dir ending in ext (0 when there are none). */
function newest(dir, ext) {
  let m = 0;
  if (!existsSync(dir)) return m;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) m = Math.max(m, newest(p, ext));
    else if (e.name.endsWith(ext)) m = Math.max(m, statSync(p).mtimeMs);
  }
  return m;
}

const mtime = (f) => (existsSync(f) ? statSync(f).mtimeMs : 0);
const wasm = mtime(join(root, 'build', 'kmas.wasm'));
const js = newest(join(root, 'dist', 'src'), '.js');
const stale = wasm === 0 || wasm < newest(join(root, 'assembly'), '.ts') || js === 0 || js < newest(join(root, 'src'), '.ts');
if (stale) {
  process.stderr.write('kmas: building (build/kmas.wasm, dist/) first\n');
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exitCode = r.status ?? 1;
}
