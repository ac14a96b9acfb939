/**
 * IP allowlists (set_ip_allowlist): an organization's list applies to every credential of the
 * organization (API keys, sessions and passkeys alike); an API key's own list replaces the
 * organization's for that key. A request from an address no rule covers is refused (403) before
 * anything runs. When the address cannot be evaluated, the list's onEvaluationError decides.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { permissionDenied } from '../errors.js';
import type { ApiKeyRow, AuthenticatorRow, IpAllowlistRow, IpAllowlistRule, Tx } from '../storage/types.js';

export interface Cidr { family: 'ipv4' | 'ipv6'; network: string; prefix: number }

/** '10.0.0.0/8', '2001:db8::/32', or a bare address (a single host). undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const network = slash < 0 ? text : text.slice(0, slash);
  const family = isIPv4(network) ? 'ipv4' : isIPv6(network) ? 'ipv6' : undefined;
  if (!family) return undefined;
  const max = family === 'ipv4' ? 32 : 128;
  if (slash < 0) return { family, network, prefix: max };
  const p = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(p) || Number(p) > max) return undefined;
  return { family, network, prefix: Number(p) };
}

/** A socket address as the rules see it: IPv4-mapped IPv6 (::ffff:a.b.c.d) becomes IPv4. */
export function normalizeAddress(address: string | undefined): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  if (!address) return undefined;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  const a = mapped ? mapped[1]! : address;
  if (isIPv4(a)) return { address: a, family: 'ipv4' };
  if (isIPv6(a)) return { address: a, family: 'ipv6' };
  return undefined;
}

// Compiled rule sets, by their CIDRs (a list changes rarely; requests check it constantly).
const compiled = new Map<string, BlockList>();
const MAX_COMPILED = 1000;

function blockListOf(rules: IpAllowlistRule[]): BlockList {
  const id = rules.map((r) => r.cidr).join(',');
  let list = compiled.get(id);
  if (!list) {
    list = new BlockList();
    for (const r of rules) {
      const c = parseCidr(r.cidr);
      if (c) list.addSubnet(c.network, c.prefix, c.family);
    }
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(id, list);
  }
  return list;
}

/** Whether the list admits the address; undefined when the address cannot be evaluated. */
export function admits(row: IpAllowlistRow, address: string | undefined): boolean | undefined {
  const a = normalizeAddress(address);
  if (!a) return undefined;
  return blockListOf(row.rules).check(a.address, a.family);
}

/**
 * The list that governs a credential: its API key's own, else its organization's when enabled.
 * With `replaced`, as it would be once that list is stored (set_ip_allowlist's lock-out check).
 */
export async function governingAllowlist(
  tx: Tx, credential: ApiKeyRow | AuthenticatorRow, replaced?: IpAllowlistRow, read?: { own?: IpAllowlistRow; organization?: IpAllowlistRow },
): Promise<IpAllowlistRow | undefined> {
  const isKey = !('credentialId' in credential);
  // `read`: ipAllowlists.governing of this credential, read already (a StampContext)
  const found = read ?? await tx.ipAllowlists.governing(credential.organizationId, isKey ? credential.publicKey : '');
  const as = (row: IpAllowlistRow | undefined, publicKey: string): IpAllowlistRow | undefined =>
    (replaced && replaced.organizationId === credential.organizationId && replaced.publicKey === publicKey ? replaced : row);
  const own = isKey ? as(found.own, credential.publicKey) : undefined;
  if (own) return own;
  const org = as(found.organization, '');
  return org && org.enabled ? org : undefined;
}

/** Refuses (403) a request whose client address the credential's allowlist does not admit. */
export async function checkClientAddress(
  tx: Tx, credential: ApiKeyRow | AuthenticatorRow, address: string | undefined, read?: { own?: IpAllowlistRow; organization?: IpAllowlistRow },
): Promise<void> {
  const list = await governingAllowlist(tx, credential, undefined, read);
  if (!list) return;
  const ok = admits(list, address);
  if (ok === true || (ok === undefined && list.onEvaluationError === 'ALLOW')) return;
  const whose = list.publicKey === '' ? `of organization ${list.organizationId}` : 'of the API key that stamped this request';
  throw permissionDenied(ok === undefined
    ? `the client address could not be evaluated against the IP allowlist ${whose}`
    : `requests from ${normalizeAddress(address)!.address} are not in the IP allowlist ${whose}`, 'IP_NOT_ALLOWED');
}

/**
 * Gives the new API keys `publicKeys` of the organization the own list of the API key `of` (the
 * one that asked for them), if it has one: else a key limited to some addresses could make, from
 * there, a key usable anywhere (auth/services.ts registerKey does the same for sessions).
 */
export async function passOnOwnAllowlist(tx: Tx, organizationId: string, of: string | undefined, publicKeys: string[], nowMs: number): Promise<void> {
  if (of === undefined) return;
  const list = await tx.ipAllowlists.get(organizationId, of.toLowerCase());
  if (!list) return;
  for (const pk of publicKeys) await tx.ipAllowlists.set({ ...list, publicKey: pk.toLowerCase(), createdMs: nowMs, updatedMs: nowMs });
}
