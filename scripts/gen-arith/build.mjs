// Regenerates the unrolled column arithmetic of assembly/field.ts and assembly/scalar.ts from
// the templates beside this file. Usage: node scripts/gen-arith/build.mjs [outDir] (default assembly/).
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] ?? join(here, '..', '..', 'assembly');
const run = (script, ...args) => execFileSync('node', [join(here, script), ...args]).toString().replace(/\n$/, '');
const g = (what) => run('genfield.mjs', what);

const field = readFileSync(join(here, 'field.tpl'), 'utf8')
  .replaceAll('@@MULCOLS@@', run('genhybrid.mjs', '8'))
  .replaceAll('@@SQRCOLS@@', g('sqrCols'))
  .replaceAll('@@REDK1@@', g('redK1'))
  .replaceAll('@@REDP256@@', g('redP256'))
  .replaceAll('@@SQRCOLSREG@@', g('sqrColsReg'))
  .replaceAll('@@REDK1REG@@', g('redK1Reg'))
  .replaceAll('@@REDP256REG@@', g('redP256Reg'))
  .replaceAll('@@REDK1LIN@@', g('redK1Lin'))
  .replaceAll('@@REDP256LIN@@', g('redP256Lin'));
writeFileSync(join(outDir, 'field.ts'), field);
const scalar = readFileSync(join(here, 'scalar.tpl'), 'utf8')
  .replaceAll('@@MULCOLS@@', g('mulCols'))
  .replaceAll('@@REDSC@@', g('redScalar'));
writeFileSync(join(outDir, 'scalar.ts'), scalar);
