/**
 * The verifiable activity log (issue 16 "Measure and report", the parts other than throughput):
 *   - proofs at 10^3, 10^5 and 10^6 entries in one organization's log, on the real SQLite store
 *     (openSqliteDb): an inclusion proof and a consistency proof, each in a db.read of its own as
 *     the query handlers run them (src/activities/handlers/log.ts), at random indexes / old sizes
 *     against the whole tree; also the inclusion query's whole execute (head, entry, proof,
 *     base64). Every proof timed is then checked with merkle.ts verifyInclusion /
 *     verifyConsistency against roots kept by the bench itself (and the stored head's root), so
 *     a wrong answer cannot be timed;
 *   - how the log is built: appendActivity (the server's own append, entry bytes and all) for
 *     every entry, in write transactions of BENCH_TLOG_BATCH entries, with synthetic
 *     sign_raw_payload activity records shaped as the engine stores them; µs per append and the
 *     database file's bytes per entry (after close, so the WAL is folded in);
 *   - `kmas log verify` on 10^5 entries: the entries exported as kmas_list_log_entries pages (its
 *     handler's own execute, 1,000 a page) and a checkpoint signed as the server signs them
 *     (LogSigner), then the real CLI as a child process (wall time, median of 3) and the
 *     in-process verifyEntries.
 *
 * Run: npm run bench:tlog   (= npm run build && node dist/bench/tlog.js)
 * Env: BENCH_TLOG_SIZES (default 1000,100000,1000000), BENCH_TLOG_PROOFS (timed proofs per kind and
 *      size, default 2000), BENCH_TLOG_BATCH (appends per write transaction, default 20000),
 *      BENCH_TLOG_VERIFY_SIZE (entries for kmas log verify, default 100000; 0 skips it),
 *      BENCH_TLOG_DIR (where the database goes; default a fresh directory under the OS temp dir,
 *      removed at the end).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base64 } from '@scure/base';
import { openSqliteDb } from '../src/storage/sqlite.js';
import type { Db, OrganizationRow } from '../src/storage/types.js';
import { appendActivity, consistencyProofOf, inclusionProofOf, LogSigner } from '../src/domain/activityLog.js';
import { consistencyProof, EMPTY_ROOT, Frontier, inclusionProof, leafHash, rootOf, verifyConsistency, verifyInclusion } from '../src/tlog/merkle.js';
import { getLogInclusionProof, listLogEntries, MAX_LOG_ENTRIES } from '../src/activities/handlers/log.js';
import type { ExecContext } from '../src/activities/types.js';
import { entriesFromJson } from '../src/logverify.js';
import { verifierFrom, verifyEntries } from '../src/tlog/verify.js';
import { timestamp } from '../src/domain/records.js';
import { useSha256 } from '../src/tlog/hash.js';
import { nativeSha256 } from '../src/crypto/nativeHash.js';

// as the server and kmas log verify hash: Node's native SHA-256
useSha256(nativeSha256);

const KMAS = fileURLToPath(new URL('../../bin/kmas.js', import.meta.url));

const sizes = (process.env.BENCH_TLOG_SIZES ?? '1000,100000,1000000').split(',').map(Number).sort((a, b) => a - b);
const PROOFS = Number(process.env.BENCH_TLOG_PROOFS ?? 2000);
const BATCH = Number(process.env.BENCH_TLOG_BATCH ?? 20000);
const VERIFY_SIZE = Number(process.env.BENCH_TLOG_VERIFY_SIZE ?? 100000);
const WARM = 200;

/** A seeded PRNG (mulberry32), so every run asks for the same indexes and sizes. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number, d = 0): string => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const equal = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * A completed sign_raw_payload activity as the engine stores it (engine.ts activityRecord and
 * resultOf: the clients' result member and the specification's nested form).
 */
function syntheticRecord(organizationId: string, privateKeyId: string, nowMs: number): Record<string, unknown> {
  const r = randomBytes(97).toString('hex');
  const intent = { signWith: privateKeyId, payload: r.slice(0, 64), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' };
  const result = { r: r.slice(64, 128), s: r.slice(128, 192), v: r.slice(192, 194) };
  const type = 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2';
  return {
    id: randomUUID(),
    organizationId,
    status: 'ACTIVITY_STATUS_COMPLETED',
    type,
    timestampMs: String(nowMs - 3),
    intent: { signRawPayloadIntentV2: intent },
    result: { signRawPayloadResult: result, activity: { type, intent: { signRawPayloadIntentV2: intent }, result: { signRawPayloadResult: result } } },
    votes: [],
    fingerprint: `sha256:${randomBytes(32).toString('hex')}`,
    canApprove: false,
    canReject: false,
    createdAt: timestamp(nowMs),
    updatedAt: timestamp(nowMs),
  };
}

interface Timing { sorted: number[] }
const timing = (xs: number[]): Timing => ({ sorted: [...xs].sort((a, b) => a - b) });
const cell = (t: Timing): string => `${fmt(percentile(t.sorted, 50), 1)} / ${fmt(percentile(t.sorted, 99), 1)}`;

interface Stage {
  size: number; appendUs: number; appendCpuUs: number; bytesPerEntry: number; tables: string;
  incl: Timing; inclHashes: number; inclNodes: number;
  cons: Timing; consHashes: number; consNodes: number;
  query: Timing;
}

/** How many stored nodes a proof builder reads (what withNodes fetches in its one read). */
function nodesRead(build: (node: (level: number, index: number) => Uint8Array) => unknown): number {
  const seen = new Set<string>();
  build((level, index) => { seen.add(`${level}/${index}`); return EMPTY_ROOT; });
  return seen.size;
}

/** Bytes per table and index (SQLite's dbstat), when this SQLite has it. */
function tableSizes(file: string, entries: number): string {
  try {
    const raw = new Database(file, { readonly: true });
    try {
      const rows = raw.prepare('SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as { name: string; bytes: number }[];
      return rows.filter((r) => r.bytes > 64 * 1024).map((r) => `${r.name} ${fmt(r.bytes / entries)}`).join(', ');
    } finally { raw.close(); }
  } catch { return ''; }
}

/** What a stage asks: leaf indexes for inclusion proofs, old sizes for consistency proofs (WARM untimed first). */
interface Plan { indexes: number[]; olds: number[] }

async function timeProofs(db: Db, org: OrganizationRow, n: number, { indexes, olds }: Plan, roots: Map<number, Uint8Array>): Promise<Omit<Stage, 'size' | 'appendUs' | 'appendCpuUs' | 'bytesPerEntry' | 'tables'>> {
  const head = await db.read(async (tx) => await tx.log.head(org.id));
  if (!head || head.size !== n) throw new Error(`the stored head has ${head?.size} entries, not ${n}`);
  if (!equal(head.root, roots.get(n)!)) throw new Error(`the stored head's root at ${n} is not the root the bench computed`);
  for (const m of olds) if (!roots.has(m)) throw new Error(`no root kept for size ${m}`);

  // inclusion: the proof alone, in a read unit of its own
  const inclUs: number[] = [];
  const inclProofs: Uint8Array[][] = [];
  for (const [k, i] of indexes.entries()) {
    const t0 = performance.now();
    const p = await db.read(async (tx) => await inclusionProofOf(tx, org.id, i, n));
    const dt = (performance.now() - t0) * 1000;
    if (k >= WARM) { inclUs.push(dt); inclProofs.push(p); }
  }
  // consistency from a random older size to the whole tree
  const consUs: number[] = [];
  const consProofs: Uint8Array[][] = [];
  for (const [k, m] of olds.entries()) {
    const t0 = performance.now();
    const p = await db.read(async (tx) => await consistencyProofOf(tx, org.id, m, n));
    const dt = (performance.now() - t0) * 1000;
    if (k >= WARM) { consUs.push(dt); consProofs.push(p); }
  }
  // the inclusion query's execute (head, the entry, the proof, base64), as kmas_get_log_inclusion_proof with index and treeSize runs it
  const queryUs: number[] = [];
  const replies: Record<string, unknown>[] = [];
  for (const [k, i] of indexes.entries()) {
    const ctx = { organization: org } as ExecContext;
    const t0 = performance.now();
    const reply = await db.read(async (tx) => await getLogInclusionProof.execute({ ...ctx, tx }, { index: i, treeSize: n }) as Record<string, unknown>);
    const dt = (performance.now() - t0) * 1000;
    if (k >= WARM) { queryUs.push(dt); replies.push(reply); }
  }

  // every timed answer checked against the roots the bench kept
  const root = roots.get(n)!;
  await db.read(async (tx) => {
    for (const [k, p] of inclProofs.entries()) {
      const i = indexes[k + WARM]!;
      const [e] = await tx.log.entries(org.id, i, i + 1);
      if (!e || !verifyInclusion(leafHash(e.entry), i, n, p, root)) throw new Error(`the inclusion proof of ${i} in ${n} does not verify`);
    }
  });
  for (const [k, p] of consProofs.entries()) {
    const m = olds[k + WARM]!;
    if (!verifyConsistency(m, n, roots.get(m)!, root, p)) throw new Error(`the consistency proof ${m} → ${n} does not verify`);
  }
  for (const [k, r] of replies.entries()) {
    const i = indexes[k + WARM]!;
    const leaf = leafHash(base64.decode(r.entry as string));
    if (Number(r.index) !== i || !equal(leaf, base64.decode(r.leafHash as string)) || !verifyInclusion(leaf, i, n, (r.proof as string[]).map((x) => base64.decode(x)), root)) {
      throw new Error(`the inclusion query's reply for ${i} in ${n} does not verify`);
    }
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    incl: timing(inclUs), inclHashes: avg(inclProofs.map((p) => p.length)),
    inclNodes: avg(indexes.slice(WARM).map((i) => nodesRead((node) => inclusionProof(i, n, node)))),
    cons: timing(consUs), consHashes: avg(consProofs.map((p) => p.length)),
    consNodes: avg(olds.slice(WARM).map((m) => nodesRead((node) => consistencyProof(m, n, node)))),
    query: timing(queryUs),
  };
}

const run1 = (args: string[]): Promise<{ ms: number; code: number; stdout: string }> => new Promise((resolve) => {
  const t0 = performance.now();
  execFile(process.execPath, [KMAS, ...args], { maxBuffer: 1 << 20 }, (err, stdout) => {
    resolve({ ms: performance.now() - t0, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout });
  });
});

interface VerifyResult { n: number; fileBytes: number; exportMs: number; cliMs: number[]; versionMs: number[]; parseMs: number[]; verifyMs: number[] }

/** Exports the first n entries and a checkpoint of size n, then times kmas log verify on them. */
async function timeVerify(db: Db, org: OrganizationRow, n: number, signer: LogSigner, root: Uint8Array, dir: string): Promise<VerifyResult> {
  const t0 = performance.now();
  const pages: unknown[] = [];
  for (let start = 0; start < n; start += MAX_LOG_ENTRIES) {
    pages.push(await db.read(async (tx) => await listLogEntries.execute({ organization: org, tx } as ExecContext, { start, limit: MAX_LOG_ENTRIES })));
  }
  const entriesFile = path.join(dir, 'entries.json');
  fs.writeFileSync(entriesFile, JSON.stringify(pages));
  const cpFile = path.join(dir, 'checkpoint.txt');
  fs.writeFileSync(cpFile, signer.note(org.id, n, root));
  const exportMs = performance.now() - t0;
  const args = ['log', 'verify', '--checkpoint', cpFile, '--key', signer.verifierKey, '--entries', entriesFile];
  const cliMs: number[] = [];
  const versionMs: number[] = [];
  for (let r = 0; r < 3; r++) {
    const res = await run1(args);
    if (res.code !== 0 || !res.stdout.includes(`verified: ${n} entries`)) throw new Error(`kmas log verify did not verify (exit ${res.code}): ${res.stdout}`);
    cliMs.push(res.ms);
    versionMs.push((await run1(['--version'])).ms);
  }
  const parseMs: number[] = [];
  const verifyMs: number[] = [];
  const verifier = verifierFrom(signer.verifierKey);
  const note = fs.readFileSync(cpFile, 'utf8');
  for (let r = 0; r < 3; r++) {
    const p0 = performance.now();
    const entries = entriesFromJson(JSON.parse(fs.readFileSync(entriesFile, 'utf8')));
    const p1 = performance.now();
    const rep = await verifyEntries(entries, note, verifier);
    const p2 = performance.now();
    if (!rep.ok || rep.checkpoint?.size !== n) throw new Error(`verifyEntries did not verify: ${rep.problem?.message}`);
    parseMs.push(p1 - p0);
    verifyMs.push(p2 - p1);
  }
  return { n, fileBytes: fs.statSync(entriesFile).size, exportMs, cliMs, versionMs, parseMs, verifyMs };
}

export async function run(): Promise<string> {
  const load0 = os.loadavg()[0]!;
  const own = process.env.BENCH_TLOG_DIR === undefined;
  const dir = own ? fs.mkdtempSync(path.join(os.tmpdir(), 'kmas-tlog-bench-')) : process.env.BENCH_TLOG_DIR!;
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'kmas.sqlite');
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
  const now = Date.now();
  const org: OrganizationRow = { id: randomUUID(), name: 'bench', parentId: null, rootQuorumThreshold: 1, createdMs: now, updatedMs: now };
  const secret = randomBytes(32);
  const signer = new LogSigner(randomUUID(), Buffer.from(ed25519.getPublicKey(secret)).toString('hex'), (m) => ed25519.sign(m, secret));
  const privateKeyId = randomUUID();
  const rand = prng(16);

  // What each stage will ask, drawn first: the bench keeps the roots of those old sizes (and of
  // each stage's size) on its own, from its own frontier over the stored leaves.
  const plans = new Map<number, Plan>(sizes.map((n) => [n, {
    indexes: Array.from({ length: PROOFS + WARM }, () => Math.floor(rand() * n)),
    olds: Array.from({ length: PROOFS + WARM }, () => 1 + Math.floor(rand() * (n - 1))),
  }]));
  const wanted = new Set<number>([...sizes, ...[...plans.values()].flatMap((p) => p.olds)]);
  const roots = new Map<number, Uint8Array>();
  const mine = new Frontier();
  const firstLeaves: Uint8Array[] = [];

  const stages: Stage[] = [];
  let verify: VerifyResult | undefined;
  let db = openSqliteDb(file);
  try {
    let size = 0;
    for (const n of sizes) {
      // build up to n: the server's own append, BATCH entries a write transaction
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const from = size;
      while (size < n) {
        const upto = Math.min(n, size + BATCH);
        const made = await db.write(async (tx) => {
          const leaves: Uint8Array[] = [];
          for (let i = size; i < upto; i++) {
            const ms = now + i;
            const at = await appendActivity(tx, syntheticRecord(org.id, privateKeyId, ms), ms, ms);
            if (at !== i) throw new Error(`appendActivity put entry ${i} at ${at}`);
          }
          // the leaves, read back, for the bench's own roots
          for (const e of await tx.log.entries(org.id, size, upto)) leaves.push(leafHash(e.entry));
          return leaves;
        });
        for (const l of made) {
          mine.append(l);
          if (firstLeaves.length < 1000) firstLeaves.push(l);
          if (wanted.has(mine.size)) roots.set(mine.size, mine.root());
        }
        size = upto;
        process.stderr.write(`\r${fmt(size)} entries`);
      }
      const appendUs = ((performance.now() - t0) * 1000) / (n - from);
      const c1 = process.cpuUsage(c0);
      const appendCpuUs = (c1.user + c1.system) / (n - from);
      process.stderr.write(`\n`);
      if (n === 1000 && !equal(rootOf(firstLeaves), roots.get(1000)!)) throw new Error('the frontier and rootOf disagree at 1000');
      // the file's size with the WAL folded in
      await db.close();
      const bytesPerEntry = fs.statSync(file).size / n;
      const tables = tableSizes(file, n);
      db = openSqliteDb(file);
      const res = await timeProofs(db, org, n, plans.get(n)!, roots);
      stages.push({ size: n, appendUs, appendCpuUs, bytesPerEntry, tables, ...res });
      process.stderr.write(`${n}: incl ${cell(res.incl)} µs, cons ${cell(res.cons)} µs, query ${cell(res.query)} µs\n`);
      if (n === VERIFY_SIZE) verify = await timeVerify(db, org, n, signer, roots.get(n)!, dir);
    }
  } finally {
    await db.close();
    if (own) fs.rmSync(dir, { recursive: true, force: true });
  }

  const out: string[] = [];
  out.push('| entries | append µs/entry, wall (CPU) | DB bytes/entry | inclusion proof µs p50 / p99 | hashes (nodes read) | consistency proof µs p50 / p99 | hashes (nodes read) | inclusion query execute µs p50 / p99 |');
  out.push('|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const s of stages) {
    out.push(`| ${fmt(s.size)} | ${fmt(s.appendUs)} (${fmt(s.appendCpuUs)}) | ${fmt(s.bytesPerEntry)} | ${cell(s.incl)} | ${fmt(s.inclHashes, 1)} (${fmt(s.inclNodes, 1)}) | ${cell(s.cons)} | ${fmt(s.consHashes, 1)} (${fmt(s.consNodes, 1)}) | ${cell(s.query)} |`);
  }
  out.push('');
  for (const s of stages) if (s.tables) out.push(`- ${fmt(s.size)} entries, bytes per entry by table / index (dbstat): ${s.tables}`);
  if (verify) {
    const v = verify;
    out.push('', `| \`kmas log verify\`, ${fmt(v.n)} entries | ms (median of 3) | runs |`, '|---|--:|---|');
    out.push(`| CLI child process, wall (\`node bin/kmas.js log verify --checkpoint … --key … --entries …\`) | ${fmt(median(v.cliMs))} | ${v.cliMs.map((x) => fmt(x)).join(', ')} |`);
    out.push(`| of which process start (\`node bin/kmas.js --version\`) | ${fmt(median(v.versionMs))} | ${v.versionMs.map((x) => fmt(x)).join(', ')} |`);
    out.push(`| in process: read + JSON.parse + entriesFromJson | ${fmt(median(v.parseMs))} | ${v.parseMs.map((x) => fmt(x)).join(', ')} |`);
    out.push(`| in process: verifyEntries (signature, every entry parsed and checked, the tree recomputed) | ${fmt(median(v.verifyMs))} | ${v.verifyMs.map((x) => fmt(x)).join(', ')} |`);
    out.push('', `Export: ${fmt(v.n / MAX_LOG_ENTRIES)} kmas_list_log_entries pages (${fmt(v.fileBytes / 1e6, 1)} MB of JSON) in ${fmt(v.exportMs)} ms.`);
  }
  out.push('', `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, node ${process.version}, SQLite (better-sqlite3, WAL, synchronous=FULL); ${fmt(PROOFS)} timed proofs per kind and size after ${WARM} untimed, each in a db.read of its own, every one verified afterwards; appends in write transactions of ${fmt(BATCH)} (their time includes making the synthetic records and reading the leaves back for the bench's own roots; CPU: the process's user + system time); hashes (nodes read): the proof's length and the stored nodes withNodes fetches for it, averaged; load average ${load0.toFixed(2)} → ${os.loadavg()[0]!.toFixed(2)}.`);
  out.push(`Command: \`npm run bench:tlog\` (BENCH_TLOG_SIZES=${sizes.join(',')}).`);
  return out.join('\n');
}

run().then((md) => { process.stdout.write(`${md}\n`); }, (e: unknown) => { process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`); process.exit(1); });
