/** `kmas` command line: serve, init, migrate, migrate-store, backup, api-key, --help, --version. */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from './paths.js';
import { ConfigError, loadConfig, settingsHelp } from './config.js';
import { createLogger, exitOnUncaught, type Logger } from './log.js';
import { generateP256ApiKeyPair } from './domain/keypair.js';
// The server, the stores and the bootstrap are imported by the commands that use them: `kmas log
// verify`, `api-key` and `--help` start without loading them.
const server = () => import('./server.js');

const USAGE = `kmas — self-hostable key-management service (Turnkey wire-compatible)

Usage:
  kmas serve [options]     start the API server (creates the root organization on first start)
  kmas init [options]      create DATA_DIR and the root organization (or find it: DATABASE_URL), print
                           bootstrap.json, exit
  kmas migrate [options]   apply the storage's pending migrations (DATABASE_URL, else DATA_DIR/kmas.sqlite)
                           and print the schema version; a node does this itself at start
  kmas migrate-store --from <DATA_DIR> --to postgres://…
                           move an embedded installation (DATA_DIR/kmas.sqlite, its server keys
                           included) into an EMPTY PostgreSQL database in one transaction; --from
                           defaults to DATA_DIR, --to to DATABASE_URL. KMAS_MASTER_KEY is required and
                           must be the installation's master key (DATA_DIR/master.key): nothing is
                           re-sealed. Stop the server first; the source is only read. Checks row
                           counts and that moved keys still sign; prints a JSON summary
  kmas backup <file> [--data-dir <dir>]
                           copy DATA_DIR/kmas.sqlite to a new file while the server may keep
                           serving (SQLite online backup, integrity-checked); keep the master key
                           (DATA_DIR/master.key or KMAS_MASTER_KEY) safe separately: the copy needs it
  kmas log verify --checkpoint <file> --key <verifier key|file> (--entries <file> [--activities <file>]
                  [--organization <id>] | --url <server> --api-key <file> --organization <id> [--audit] [--save <file>])
                           check an organization's verifiable activity log: offline, exported entries
                           (kmas_list_log_entries replies) against a signed checkpoint, naming the
                           first entry that does not match; online, a saved checkpoint against the
                           server's latest: kept, rewritten or rolled back (--audit: every entry and
                           activity too). Exit 0 verified, 1 a problem found
  kmas api-key             print a new P-256 API key pair as JSON {publicKey, privateKey}
                           (compressed public key hex, 32-byte private key hex: @turnkey/api-key-stamper's form)
  kmas --help              this text
  kmas --version           the version of kmas

Options (flag / environment variable / meaning):
${settingsHelp()}

Bad values stop start-up with a one-line message and exit code 2.
`;

export async function main(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === '--version' || cmd === '-v' || cmd === 'version') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  let serving = false;
  if (cmd === undefined || cmd === '--help' || cmd === '-h' || cmd === 'help' || rest.includes('--help')) {
    process.stdout.write(USAGE);
    return cmd === undefined ? 1 : 0;
  }
  try {
    switch (cmd) {
      case 'log': {
        if (rest[0] !== 'verify') throw new ConfigError('kmas log: the command is "kmas log verify" (see kmas --help)');
        const { logVerify } = await import('./logverify.js');
        return await logVerify(rest.slice(1), (line) => process.stdout.write(`${line}\n`));
      }
      case 'api-key': {
        if (rest.length > 0) throw new ConfigError('api-key takes no options');
        process.stdout.write(JSON.stringify(generateP256ApiKeyPair(), null, 2) + '\n');
        return 0;
      }
      case 'backup': {
        const file = rest[0];
        if (file === undefined || file.startsWith('--')) throw new ConfigError('backup needs the file to write: kmas backup <file> [--data-dir <dir>]');
        const config = loadConfig({ env, argv: rest.slice(1) });
        const [{ backupDatabase }, { DB_FILE }] = await Promise.all([import('./storage/backup.js'), server()]);
        const summary = await backupDatabase(path.join(config.dataDir, DB_FILE), file);
        process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
        return 0;
      }
      case 'init': {
        const config = loadConfig({ env, argv: rest });
        const log = createLogger(config.logLevel, (l) => process.stderr.write(l));
        const [{ prepareDataDir }, { ensureBootstrap }, { DB_FILE, openDb }] = await Promise.all([import('./storage/datadir.js'), import('./bootstrap.js'), server()]);
        prepareDataDir(config.dataDir, DB_FILE, log);
        const db = await openDb({ ...config, workers: 1 });
        try {
          const { info, vault } = await ensureBootstrap(db, config, log);
          vault.close();
          process.stdout.write(JSON.stringify(info, null, 2) + '\n');
        } finally {
          await db.close();
        }
        return 0;
      }
      case 'migrate': {
        const config = loadConfig({ env, argv: rest });
        if (config.databaseUrl !== undefined) {
          const { migratePostgres } = await import('./storage/pgMigrations.js');
          process.stdout.write(JSON.stringify({ storage: 'postgres', ...await migratePostgres(config.databaseUrl) }) + '\n');
        } else {
          const log = createLogger(config.logLevel, (l) => process.stderr.write(l));
          const [{ prepareDataDir }, { DB_FILE, openDb }] = await Promise.all([import('./storage/datadir.js'), server()]);
          prepareDataDir(config.dataDir, DB_FILE, log);
          // opening the file applies its migrations
          await (await openDb({ ...config, workers: 1 })).close();
          process.stdout.write(JSON.stringify({ storage: 'sqlite', file: path.join(config.dataDir, DB_FILE) }) + '\n');
        }
        return 0;
      }
      case 'migrate-store': {
        const { dataDir, databaseUrl, masterKey } = migrateStoreConfig(rest, env);
        const [{ migrateStore }, { DB_FILE }] = await Promise.all([import('./migratestore.js'), server()]);
        const summary = await migrateStore({ dataDir, dbFile: DB_FILE, databaseUrl, masterKey });
        process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
        return 0;
      }
      case 'serve': {
        serving = true;
        const config = loadConfig({ env, argv: rest });
        // until the server's own log exists, its lines go where start-up errors go
        let serverLog: Logger | undefined;
        exitOnUncaught(() => serverLog ?? createLogger(config.logLevel, (l) => process.stderr.write(l)));
        const running = await (await server()).startServer(config);
        serverLog = running.log;
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) return;
          stopping = true;
          running.log.info('stopping', { signal, shutdownTimeoutMs: config.shutdownTimeoutMs });
          // stop() is bounded by SHUTDOWN_TIMEOUT_MS; this is the backstop should something hang.
          setTimeout(() => { running.log.error('stop did not finish in time; exiting'); process.exit(1); }, config.shutdownTimeoutMs + 10_000).unref();
          void running.stop().then(() => process.exit(0), () => process.exit(1));
        };
        process.on('SIGINT', () => stop('SIGINT'));
        process.on('SIGTERM', () => stop('SIGTERM'));
        return -1; // keep running
      }
      default:
        throw new ConfigError(`unknown command "${cmd}" (see kmas --help)`);
    }
  } catch (e) {
    // serve writes JSON lines only (as its log does); the other commands write for people.
    const report = (message: string) => process.stderr.write(serving
      ? `${JSON.stringify({ level: 'error', time: new Date().toISOString(), pid: process.pid, msg: `kmas: ${message}` })}\n`
      : `kmas: ${message}\n`);
    if (e instanceof ConfigError) {
      report(e.message);
      return 2;
    }
    const err = e as NodeJS.ErrnoException;
    if (err && (err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')) {
      report(`cannot listen: ${err.message}`);
      return 2;
    }
    report(err instanceof Error ? err.message : String(err));
    return 1;
  }
}

/**
 * migrate-store's settings: --from is --data-dir (DATA_DIR), --to is --database-url (DATABASE_URL),
 * so both are read and checked as everywhere else; KMAS_MASTER_KEY (or --master-key) is required.
 */
function migrateStoreConfig(argv: string[], env: Record<string, string | undefined>): { dataDir: string; databaseUrl: string; masterKey: string } {
  const renamed: Record<string, string> = { '--from': '--data-dir', '--to': '--database-url' };
  const args = argv.map((a) => {
    const eq = a.indexOf('=');
    const flag = eq >= 0 ? a.slice(0, eq) : a;
    const to = renamed[flag];
    return to === undefined ? a : eq >= 0 ? to + a.slice(eq) : to;
  });
  const hasMasterKey = (env.KMAS_MASTER_KEY ?? '') !== '' || args.some((a) => a === '--master-key' || a.startsWith('--master-key='));
  if (!hasMasterKey) {
    throw new ConfigError('migrate-store needs KMAS_MASTER_KEY: the installation\'s master key (the content of DATA_DIR/master.key, or the KMAS_MASTER_KEY it ran with), which the PostgreSQL nodes will use too');
  }
  const config = loadConfig({ env, argv: args });
  if (config.databaseUrl === undefined) throw new ConfigError('migrate-store needs the target: --to postgres://… (or DATABASE_URL)');
  return { dataDir: config.dataDir, databaseUrl: config.databaseUrl, masterKey: config.masterKey! };
}

/** The "version" of kmas's package.json. */
export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
