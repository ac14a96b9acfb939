#!/usr/bin/env node
// kmas CLI entry: the compiled TypeScript lives in dist/ (built by `npm install` via `prepare`).
import { main } from '../dist/src/cli.js';

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
