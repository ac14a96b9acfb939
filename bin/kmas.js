#!/usr/bin/env node
// kmas CLI entry: the compiled TypeScript lives in dist/ (in a published package it is shipped;
// in a clone, `npm run build`, `npm start` or `npm test` make it).
let main;
try {
  ({ main } = await import('../dist/src/cli.js'));
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes('dist/src/cli.js')) throw e;
  process.stderr.write('kmas: dist/src/cli.js is missing: in a clone of kmas, run `npm run build` first\n');
  process.exit(1);
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
