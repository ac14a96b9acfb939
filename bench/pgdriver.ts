/**
 * pg (node-postgres) against postgres (postgres.js) on the signing path (issue 15: "measure both
 * on the signing path and say why you chose"). A kmas node sets up a real database (schema,
 * organization, root key, a secp256k1 key, signed activities) and stops; then each driver replays
 * what one stamped sign_raw_payload costs the storage, statement for statement as the PostgreSQL
 * adapter sends it (captured with log_statement=all):
 *   read unit : BEGIN REPEATABLE READ READ ONLY; the API key by public key; COMMIT
 *   write unit: BEGIN; API key; organization; user; IP allow-lists (key, organization);
 *               advisory lock on the fingerprint; activity by fingerprint; private key;
 *               INSERT the activity (its record as kmas stores it); webhook feature;
 *               webhook endpoints; COMMIT
 * each statement awaited before the next, as the repositories do, with named prepared statements,
 * from 1 and 16 concurrent callers over a pool of 10. Rounds interleave the drivers. Reported:
 * signings/s, and the CPU per signing of this process (the driver's share of a node) and of
 * PostgreSQL.
 *
 * Run: npm run build && node dist/bench/pgdriver.js   (env BENCH_PGDRIVER_N, default 3000; BENCH_PGDRIVER_ROUNDS, default 3)
 */
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import pg from 'pg';
import postgres from 'postgres';
import { post, stampBody, startServerProcess } from './load.js';
import { startPgCluster, type PgCluster } from './pgcluster.js';

interface Sample { publicKey: string; org: string; user: string; privateKey: string; record: string; type: string }

interface Driver {
  name: string;
  /** one unit: BEGIN (begin), the statements in order, COMMIT */
  unit(begin: string, statements: [string, unknown[]][]): Promise<void>;
  close(): Promise<void>;
}

const INT8 = 20;

function pgDriver(url: string): Driver {
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8, 'text', (v: string) => Number(v));
  const pool = new pg.Pool({ connectionString: url, max: 10, types: types as unknown as pg.CustomTypesConfig });
  const names = new Map<string, string>();
  const name = (sql: string) => { let n = names.get(sql); if (n === undefined) names.set(sql, n = `s${names.size}`); return n; };
  return {
    name: 'pg 8 (node-postgres)',
    async unit(begin, statements) {
      const c = await pool.connect();
      try {
        await c.query(begin);
        for (const [text, values] of statements) await c.query({ name: name(text), text, values });
        await c.query('COMMIT');
      } finally { c.release(); }
    },
    close: () => pool.end(),
  };
}

function postgresJsDriver(url: string): Driver {
  const sql = postgres(url, { max: 10, prepare: true, onnotice: () => {}, types: { bigint: { to: INT8, from: [INT8], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } } });
  return {
    name: 'postgres 3 (postgres.js)',
    async unit(begin, statements) {
      // sql.begin takes the isolation as its options string ("isolation level … read only")
      const options = begin === 'BEGIN' ? '' : begin.replace(/^BEGIN\s*/i, '');
      await sql.begin(options, async (tx) => {
        for (const [text, values] of statements) await tx.unsafe(text, values as never[], { prepare: true });
      });
    },
    close: () => sql.end({ timeout: 5 }),
  };
}

function signing(s: Sample): { read: [string, unknown[]][]; write: [string, unknown[]][] } {
  const fp = `sha256:${randomBytes(32).toString('hex')}`;
  const now = Date.now();
  return {
    read: [['SELECT * FROM api_keys WHERE public_key = $1', [s.publicKey]]],
    write: [
      ['SELECT * FROM api_keys WHERE public_key = $1', [s.publicKey]],
      ['SELECT * FROM organizations WHERE id = $1', [s.org]],
      ['SELECT * FROM users WHERE organization_id = $1 AND id = $2', [s.org, s.user]],
      ['SELECT * FROM ip_allowlists WHERE organization_id = $1 AND public_key = $2', [s.org, s.publicKey]],
      ['SELECT * FROM ip_allowlists WHERE organization_id = $1 AND public_key = $2', [s.org, '']],
      ['SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', ['request', fp]],
      ['SELECT * FROM activities WHERE request_ms = $1 AND fingerprint = $2', [now, fp]],
      ['SELECT * FROM private_keys WHERE organization_id = $1 AND id = $2', [s.org, s.privateKey]],
      ['INSERT INTO activities (id, organization_id, type, status, request_ms, fingerprint, created_ms, updated_ms, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
        [randomUUID(), s.org, s.type, 'ACTIVITY_STATUS_COMPLETED', now, fp, now, now, s.record]],
      ['SELECT value FROM features WHERE organization_id = $1 AND name = $2', [s.org, 'FEATURE_NAME_WEBHOOK']],
      ['SELECT * FROM webhook_endpoints WHERE organization_id = $1 ORDER BY seq', [s.org]],
    ],
  };
}

/** A real kmas database: the node creates it, signs a few payloads, and is stopped. */
async function sample(cluster: PgCluster): Promise<Sample> {
  const node = await startServerProcess([], undefined, { env: { DATABASE_URL: cluster.url, KMAS_MASTER_KEY: randomBytes(32).toString('hex') } });
  const agent = new http.Agent({ keepAlive: true });
  const submit = async (path: string, type: string, parameters: unknown) => {
    const body = JSON.stringify({ parameters, organizationId: node.organizationId, timestampMs: String(Date.now()), type });
    return JSON.parse((await post(agent, node.port, { path: `/public/v1/submit/${path}`, body, headers: { 'Content-Type': 'application/json', 'X-Stamp': stampBody(body, node.rootKey) } })).body);
  };
  try {
    const made = await submit('create_private_keys', 'ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2', { privateKeys: [{ privateKeyName: 'k', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: [] }] });
    const privateKey = made.activity.result.createPrivateKeysResultV2.privateKeys[0].privateKeyId as string;
    for (let i = 0; i < 20; i++) {
      await submit('sign_raw_payload', 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2', { signWith: privateKey, payload: randomBytes(32).toString('hex'), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
    }
    const c = new pg.Client({ connectionString: cluster.url });
    await c.connect();
    const key = (await c.query('SELECT public_key, user_id FROM api_keys WHERE organization_id = $1 LIMIT 1', [node.organizationId])).rows[0] as { public_key: string; user_id: string };
    const act = (await c.query("SELECT type, record FROM activities WHERE type = 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' LIMIT 1")).rows[0] as { type: string; record: unknown };
    await c.end();
    return { publicKey: key.public_key, org: node.organizationId, user: key.user_id, privateKey, type: act.type, record: typeof act.record === 'string' ? act.record : JSON.stringify(act.record) };
  } finally {
    agent.destroy();
    await node.stop();
  }
}

async function round(d: Driver, s: Sample, cluster: PgCluster, n: number, callers: number): Promise<{ rate: number; clientUs: number; pgUs: number }> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const pg0 = cluster.cpuSeconds();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: callers }, async () => {
    while (next++ < n) {
      const one = signing(s);
      await d.unit('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', one.read);
      await d.unit('BEGIN', one.write);
    }
  }));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { rate: (n / ms) * 1000, clientUs: (cpu.user + cpu.system) / n, pgUs: ((cluster.cpuSeconds() - pg0) * 1e6) / n };
}

async function run(): Promise<string> {
  const n = Number(process.env.BENCH_PGDRIVER_N ?? 3000);
  const rounds = Number(process.env.BENCH_PGDRIVER_ROUNDS ?? 3);
  const cluster = await startPgCluster();
  const drivers = [pgDriver(cluster.url), postgresJsDriver(cluster.url)];
  try {
    const s = await sample(cluster);
    for (const d of drivers) await round(d, s, cluster, 500, 16);
    const out = ['| driver | callers | signings/s (median of rounds) | driver CPU µs / signing | PostgreSQL CPU µs / signing |', '|---|---|---|---|---|'];
    for (const callers of [1, 16]) {
      const per = drivers.map(() => [] as Awaited<ReturnType<typeof round>>[]);
      for (let r = 0; r < rounds; r++) for (const [i, d] of drivers.entries()) per[i]!.push(await round(d, s, cluster, callers === 1 ? Math.ceil(n / 4) : n, callers));
      for (const [i, d] of drivers.entries()) {
        const m = [...per[i]!].sort((a, b) => a.rate - b.rate)[Math.floor(rounds / 2)]!;
        out.push(`| ${d.name} | ${callers} | ${Math.round(m.rate)} | ${Math.round(m.clientUs)} | ${Math.round(m.pgUs)} |`);
        process.stderr.write(`${out[out.length - 1]}\n`);
      }
    }
    out.push('', `${cpus().length} × ${cpus()[0]?.model ?? '?'}, node ${process.version}; ${rounds} rounds interleaved, ${n} signings per round at 16 callers (a quarter at 1); PostgreSQL with fsync on.`);
    return out.join('\n');
  } finally {
    for (const d of drivers) await d.close();
    cluster.destroy();
  }
}

run().then((md) => { process.stdout.write(`${md}\n`); }, (e: unknown) => { process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`); process.exit(1); });
