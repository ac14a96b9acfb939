/**
 * A lean HTTP/1.1 load generator (the way wrk or autocannon work): one keep-alive TCP connection
 * per client, every request encoded to bytes before the clock starts, replies parsed only as far
 * as the status line, Content-Length and the body. It spends a few tens of µs per request where
 * node:http's client spends ≈ 200 µs, so on a 2-core machine it leaves the server the CPU that a
 * heavier client takes, and its own queueing adds little to the latency it reports.
 *
 * Connections are opened before timing and kept from one run to the next. A request counts as an
 * error when its reply is not a success (`ok`) or never comes: a closed connection, an unparsable
 * reply or one without Content-Length ends that connection, and the others send the rest.
 */
import net from 'node:net';
import type { LoadResult, LoadSession, Req } from './load.js';

export interface RawLoadOptions {
  /** whether a reply counts as a success (default: status 200); body is '' when readBody is false */
  ok?: (status: number, body: string) => boolean;
  readBody?: boolean;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** The request as the bytes a client sends (Host, Content-Length and keep-alive added). */
export function encodeRequest(port: number, r: Req): Buffer {
  const body = Buffer.from(r.body, 'utf8');
  let head = `POST ${r.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n`;
  for (const [k, v] of Object.entries(r.headers)) head += `${k}: ${v}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Parsed head of a reply: status, header length (through the blank line), body length. */
function parseHead(buf: Buffer, end: number): { status: number; bodyLength: number } | undefined {
  const head = buf.toString('latin1', 0, end);
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  if (!m) return undefined;
  const cl = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
  if (!cl) return undefined;
  return { status: Number(m[1]), bodyLength: Number(cl[1]) };
}

/** Opens one connection (resolves when connected). */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port, noDelay: true }, () => { s.off('error', reject); resolve(s); });
    s.once('error', reject);
  });
}

/**
 * `concurrency` keep-alive connections, opened now (before any timing). Each run() sends every
 * request it is given once over the connections still open and reports its wall time and
 * per-request latency in ms; a warm-up run and the timed run share the connections, so the timed
 * requests meet no connection set-up. close() ends them.
 */
export async function rawClients(port: number, concurrency: number, opts: RawLoadOptions = {}): Promise<LoadSession> {
  const readBody = opts.readBody ?? opts.ok !== undefined;
  const ok = opts.ok ?? ((status: number) => status === 200);
  let sockets = await Promise.all(Array.from({ length: concurrency }, () => connect(port)));
  const run = async (reqs: Req[]): Promise<LoadResult> => {
    const wire = reqs.map((r) => encodeRequest(port, r));
    const lat: number[] = new Array(reqs.length).fill(NaN);
    let next = 0;
    let badReplies = 0;
    const broken = new Set<net.Socket>();
    const t0 = process.hrtime.bigint();
    await Promise.all(sockets.map((socket) => new Promise<void>((resolve) => {
      let current = -1;
      let started = 0n;
      let pending: Buffer = Buffer.alloc(0);
      let head: { status: number; bodyLength: number; headLength: number } | undefined;
      let done = false;
      // ends this client's part of the run; a broken connection (its request in flight, if any,
      // stays unanswered: an error) is closed and not used again
      const finish = (fault: boolean) => {
        if (done) return;
        done = true;
        socket.removeAllListeners('data');
        socket.removeAllListeners('error');
        socket.removeAllListeners('close');
        if (fault) { broken.add(socket); socket.destroy(); }
        resolve();
      };
      const send = () => {
        current = next++;
        if (current >= wire.length) { finish(false); return; }
        started = process.hrtime.bigint();
        socket.write(wire[current]!);
      };
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        if (!head) {
          const end = pending.indexOf(CRLFCRLF);
          if (end < 0) return;
          const h = parseHead(pending, end);
          if (!h) { finish(true); return; }
          head = { ...h, headLength: end + 4 };
        }
        const total = head.headLength + head.bodyLength;
        if (pending.length < total) return;
        lat[current] = Number(process.hrtime.bigint() - started) / 1e6;
        if (!ok(head.status, readBody ? pending.toString('utf8', head.headLength, total) : '')) badReplies++;
        pending = pending.subarray(total);
        head = undefined;
        send();
      });
      socket.on('error', () => finish(true));
      socket.on('close', () => finish(true));
      if (socket.destroyed) finish(true); else send();
    })));
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    sockets = sockets.filter((s) => !broken.has(s));
    const answered = lat.filter((x) => !Number.isNaN(x));
    return { wallMs, lat: answered, errors: badReplies + (lat.length - answered.length) };
  };
  return { run, close: () => { for (const s of sockets) s.destroy(); sockets = []; } };
}
