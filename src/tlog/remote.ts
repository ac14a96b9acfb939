/**
 * The server's log queries as a LogSource (verify.ts), stamped with an API key the way every kmas
 * query is (X-Stamp: P-256 ECDSA over the body's SHA-256, DER, in base64url JSON). Pure code over
 * fetch and @noble: `kmas log verify` and a browser use it alike.
 */
import { p256 } from '@noble/curves/nist.js';
import { base64, base64urlnopad, hex } from '@scure/base';
import type { ExportedEntry, LogSource } from './verify.js';

export interface ApiKey { publicKey: string; privateKey: string }

const enc = new TextEncoder();

/** The X-Stamp header of a body for a P-256 API key (compressed public key hex, private key hex). */
export function stamp(body: string, key: ApiKey): string {
  const signature = hex.encode(p256.sign(enc.encode(body), hex.decode(key.privateKey), { format: 'der', lowS: false }));
  return base64urlnopad.encode(enc.encode(JSON.stringify({ publicKey: key.publicKey, scheme: 'SIGNATURE_SCHEME_TK_API_P256', signature })));
}

export class RemoteLogError extends Error {}

/** The log of `organizationId` at the server `url` (no trailing slash needed). */
export function remoteLog(url: string, key: ApiKey, organizationId: string, fetchFn: typeof fetch = fetch): LogSource & { query(path: string, body: Record<string, unknown>): Promise<any> } {
  const base = url.replace(/\/+$/, '');
  const query = async (path: string, body: Record<string, unknown>): Promise<any> => {
    const text = JSON.stringify({ organizationId, ...body });
    const res = await fetchFn(`${base}/public/v1/query/${path}`, { method: 'POST', body: text, headers: { 'Content-Type': 'application/json', 'X-Stamp': stamp(text, key) } });
    const reply = await res.json().catch(() => undefined) as any;
    if (!res.ok) throw new RemoteLogError(`${path}: HTTP ${res.status}${reply?.message ? `: ${String(reply.message)}` : ''}`);
    return reply;
  };
  return {
    query,
    async checkpoint() { return String((await query('kmas_get_log_checkpoint', {})).checkpoint); },
    async consistency(oldSize, newSize) {
      const r = await query('kmas_get_log_consistency_proof', { fromSize: String(oldSize), toSize: String(newSize) });
      return (r.proof as string[]).map((p) => base64.decode(p));
    },
    async entries(start, limit) {
      return (await query('kmas_list_log_entries', { start: String(start), limit: String(limit) })).entries as ExportedEntry[];
    },
  };
}

/** Every entry [0, size) a LogSource has, a page of up to 1000 indexes at a time (a missing index is simply absent). */
export async function fetchEntries(source: Pick<LogSource, 'entries'>, size: number): Promise<ExportedEntry[]> {
  const out: ExportedEntry[] = [];
  for (let next = 0; next < size;) {
    const limit = Math.min(1000, size - next);
    const page = await source.entries(next, limit);
    out.push(...page);
    next += limit;
  }
  return out;
}

/** Every activity of the organization as served (list_activities, 100 at a time, newest first). */
export async function fetchActivities(source: { query(path: string, body: Record<string, unknown>): Promise<any> }): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await source.query('list_activities', { paginationOptions: after ? { limit: '100', after } : { limit: '100' } });
    const acts = page.activities as Record<string, unknown>[];
    out.push(...acts);
    if (acts.length < 100) return out;
    after = String(acts[acts.length - 1]!.id);
  }
}
