/**
 * The load generator as a process of its own (load.ts loadInChild runs it): the server under test
 * keeps its event loop and the load does not share it, as with any HTTP client in front of a
 * service. Reads the prepared requests from a JSON file, sends the first `warm` of them (not
 * timed), then the rest, from the same `concurrency` keep-alive connections, and prints a
 * LoadResult as JSON.
 *
 * Usage: node dist/bench/loadclient.js <requests.json> <port> <concurrency> <warm> [<expected text>]
 * A reply counts as an error unless it is a 200 (containing the expected text, when given).
 */
import { readFileSync } from 'node:fs';
import { nodeClients, type Req } from './load.js';
import { rawClients } from './rawload.js';

const [file, port, concurrency, warm, expect] = process.argv.slice(2);
const reqs = JSON.parse(readFileSync(file!, 'utf8')) as Req[];
const w = Number(warm ?? 0);
const opts = expect
  ? { ok: (status: number, body: string) => status === 200 && body.includes(expect) }
  : { readBody: false, ok: (status: number) => status === 200 };
const clients = process.env.BENCH_CLIENT === 'raw'
  ? await rawClients(Number(port), Number(concurrency), opts)
  : nodeClients(Number(port), Number(concurrency), opts);
if (w > 0) await clients.run(reqs.slice(0, w));
const r = await clients.run(reqs.slice(w));
clients.close();
process.stdout.write(JSON.stringify(r));
