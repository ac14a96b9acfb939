/**
 * `kmas log verify`: the command-line side of src/tlog/verify.ts (reading files, printing).
 *
 *   kmas log verify --checkpoint <file> --key <verifier key | file> --entries <file> [--activities <file>] [--url … --api-key … --organization …]
 *     offline: the checkpoint's signature, every entry, the tree against the signed root; the first
 *     entry that does not match is named (with --url, located by consistency proofs when the
 *     entries are well-formed but altered). --activities compares the activities to the log.
 *   kmas log verify --checkpoint <file> --key <…> --url <server> --api-key <file> --organization <id> [--audit] [--save <file>]
 *     online: the server's latest checkpoint and the consistency proof from the saved one: whether
 *     the history was kept, rewritten or rolled back; --audit also downloads every entry and
 *     activity and checks them; --save keeps the newer checkpoint when all is well (a witness).
 *
 * Exit code 0: verified; 1: a problem was found (printed); 2: bad usage.
 */
import fs from 'node:fs';
import { ConfigError } from './config.js';
import { useSha256 } from './tlog/hash.js';
import { nativeLogHashing } from './crypto/nativeHash.js';
import { checkHistory, compareActivities, verifierFrom, verifyEntries, type ExportedEntry } from './tlog/verify.js';
import { fetchActivities, fetchEntries, remoteLog, type ApiKey } from './tlog/remote.js';

const FLAGS = new Set(['--checkpoint', '--key', '--entries', '--activities', '--url', '--api-key', '--organization', '--save']);

function parseArgs(argv: string[]): { opts: Map<string, string>; audit: boolean } {
  const opts = new Map<string, string>();
  let audit = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--audit') { audit = true; continue; }
    if (!FLAGS.has(a)) throw new ConfigError(`log verify: unknown option ${a.slice(0, 40)}`);
    const v = argv[++i];
    if (v === undefined) throw new ConfigError(`log verify: ${a} needs a value`);
    opts.set(a, v);
  }
  return { opts, audit };
}

const readText = (file: string, what: string): string => {
  try { return fs.readFileSync(file, 'utf8'); } catch (e) { throw new ConfigError(`log verify: cannot read ${what} ${file}: ${(e as Error).message}`); }
};

/** Entries from a file: a kmas_list_log_entries reply, an array of such replies, or an array of entries. */
export function entriesFromJson(json: unknown): ExportedEntry[] {
  const pages = Array.isArray(json) ? json : [json];
  const out: ExportedEntry[] = [];
  for (const p of pages) {
    if (p && typeof p === 'object' && Array.isArray((p as { entries?: unknown }).entries)) out.push(...(p as { entries: ExportedEntry[] }).entries);
    else if (p && typeof p === 'object' && 'entry' in p) out.push(p as ExportedEntry);
    else throw new ConfigError('log verify: the entries file holds no kmas_list_log_entries reply');
  }
  return out.sort((a, b) => Number(a.index) - Number(b.index));
}

function activitiesFromJson(json: unknown): Record<string, unknown>[] {
  const pages = Array.isArray(json) && json.every((x) => x && typeof x === 'object' && Array.isArray((x as { activities?: unknown }).activities)) ? json : [json];
  const out: Record<string, unknown>[] = [];
  for (const p of pages) {
    if (Array.isArray(p)) out.push(...(p as Record<string, unknown>[]));
    else if (p && typeof p === 'object' && Array.isArray((p as { activities?: unknown }).activities)) out.push(...(p as { activities: Record<string, unknown>[] }).activities);
    else if (p && typeof p === 'object' && (p as { activity?: unknown }).activity) out.push((p as { activity: Record<string, unknown> }).activity);
    else throw new ConfigError('log verify: the activities file holds no list_activities / get_activity reply');
  }
  return out;
}

export async function logVerify(argv: string[], out: (line: string) => void): Promise<number> {
  useSha256(...nativeLogHashing);
  const { opts, audit } = parseArgs(argv);
  const cpFile = opts.get('--checkpoint');
  const keyArg = opts.get('--key');
  if (!cpFile || !keyArg) throw new ConfigError('log verify needs --checkpoint <file> and --key <verifier key or file> (see kmas --help)');
  const verifier = verifierFrom(fs.existsSync(keyArg) ? readText(keyArg, 'key') : keyArg);
  const note = readText(cpFile, 'checkpoint');
  const url = opts.get('--url');
  const org = opts.get('--organization');
  let remote: ReturnType<typeof remoteLog> | undefined;
  if (url !== undefined) {
    const keyFile = opts.get('--api-key');
    if (!keyFile || !org) throw new ConfigError('log verify: --url needs --api-key <file> ({publicKey, privateKey}) and --organization <id>');
    remote = remoteLog(url, JSON.parse(readText(keyFile, 'API key')) as ApiKey, org);
  }
  const entriesFile = opts.get('--entries');
  let ok = true;
  if (entriesFile) {
    const entries = entriesFromJson(JSON.parse(readText(entriesFile, 'entries')));
    const r = await verifyEntries(entries, note, verifier, remote);
    if (!r.ok) { out(`FAILED: ${r.problem!.message}`); return 1; }
    // one log key signs every organization's log: the checkpoint must be the one asked for
    const origin = r.checkpoint!.origin;
    if (org !== undefined && origin.slice(origin.lastIndexOf('/') + 1) !== org) {
      out(`FAILED: the checkpoint is the log of ${origin}, not of organization ${org}`);
      return 1;
    }
    out(`verified: ${r.checkpoint!.size} entries make the signed root of ${origin}`);
    const actFile = opts.get('--activities');
    if (actFile) {
      const problem = compareActivities(r.entries, activitiesFromJson(JSON.parse(readText(actFile, 'activities'))));
      if (problem) { out(`FAILED: ${problem.message}`); return 1; }
      out('verified: every activity matches its latest log entry');
    }
    return 0;
  }
  if (!remote) throw new ConfigError('log verify needs --entries <file> (offline) or --url (online)');
  const h = await checkHistory(note, verifier, remote);
  out(h.history === 'consistent' ? `verified: ${h.message}` : `FAILED: ${h.message}`);
  if (h.history !== 'consistent') return 1;
  if (audit) {
    const entries = await fetchEntries(remote, h.latest!.size);
    const r = await verifyEntries(entries, h.latestNote!, verifier, remote);
    if (!r.ok) { out(`FAILED: ${r.problem!.message}`); return 1; }
    out(`verified: the server's ${r.checkpoint!.size} entries make the signed root`);
    const problem = compareActivities(r.entries, await fetchActivities(remote));
    if (problem) { out(`FAILED: ${problem.message}`); ok = false; } else out('verified: every activity matches its latest log entry');
  }
  const save = opts.get('--save');
  if (ok && save) { fs.writeFileSync(save, h.latestNote!); out(`saved the checkpoint of ${h.latest!.size} entries to ${save}`); }
  return ok ? 0 : 1;
}
