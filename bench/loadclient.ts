/**
 * The load generator as a process of its own (load.ts loadInChild runs it): the server under test
 * keeps its event loop and the load does not share it, as with any HTTP client in front of a
 * service. Reads the prepared requests from a JSON file, sends the first `warm` of them (not
 * timed), then the rest from `concurrency` keep-alive clients, and prints a LoadResult as JSON.
 *
 * Usage: node dist/bench/loadclient.js <requests.json> <port> <concurrency> <warm> [<expected text>]
 * A reply counts as an error unless it is a 200 (containing the expected text, when given).
 */
import { readFileSync } from 'node:fs';
import { load, type Req } from './load.js';
import { loadRaw } from './rawload.js';

const [file, port, concurrency, warm, expect] = process.argv.slice(2);
const run = process.env.BENCH_CLIENT === 'raw' ? loadRaw : load;
const reqs = JSON.parse(readFileSync(file!, 'utf8')) as Req[];
const w = Number(warm ?? 0);
const opts = expect
  ? { ok: (status: number, body: string) => status === 200 && body.includes(expect) }
  : { readBody: false, ok: (status: number) => status === 200 };
if (w > 0) await run(Number(port), reqs.slice(0, w), Number(concurrency), opts);
const r = await run(Number(port), reqs.slice(w), Number(concurrency), opts);
process.stdout.write(JSON.stringify(r));
