/**
 * set_ip_allowlist, remove_ip_allowlist, get_ip_allowlist (enforcement: domain/ipAllowlist.ts).
 * Like the organization's features, the lists belong to the root quorum alone. A list that would
 * refuse the very request that sets it is refused (400): that is how teams lock themselves out.
 */
import { invalidArgument, notFound } from '../../errors.js';
import { requireRoot } from '../../domain/principal.js';
import { admits, governingAllowlist, parseCidr } from '../../domain/ipAllowlist.js';
import type { IpAllowlistRow, IpAllowlistRule, Tx } from '../../storage/types.js';
import type { Principal } from '../../domain/principal.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';

export const MAX_RULES = 500;
const ON_ERROR = ['ALLOW', 'DENY'] as const;

/** The public key of an API key of the organization (lowercase), 404 when there is none. */
async function apiKeyPublicKey(tx: Tx, organizationId: string, publicKey: string): Promise<string> {
  const pk = publicKey.toLowerCase();
  if (!(await tx.apiKeys.byPublicKey(pk)).some((k) => k.organizationId === organizationId)) {
    throw notFound(`publicKey: no API key of this organization has the public key ${publicKey.slice(0, 140)}`, 'API_KEY_NOT_FOUND');
  }
  return pk;
}

function readPublicKey(v: Validator, params: Obj): string | undefined {
  const pk = v.string(params, 'publicKey', 'publicKey', { max: 200, pattern: /^[0-9a-fA-F]+$/, patternDesc: 'must be an API key\'s public key (hex)' });
  return pk === '' ? undefined : pk;
}

interface SetIntent {
  publicKey?: string;
  enabled?: boolean;
  rules?: { cidr: string; label: string }[];
  onEvaluationError?: 'ALLOW' | 'DENY';
}

/** The list as the API shows it (v1IpAllowlist). */
export function allowlistRecord(row: IpAllowlistRow): Record<string, unknown> {
  return {
    organizationId: row.organizationId,
    rules: row.rules.map((r) => ({ cidr: r.cidr, label: r.label, createdAt: String(r.createdMs) })),
    ...(row.publicKey === '' ? { enabled: row.enabled } : { publicKey: row.publicKey }),
    onEvaluationError: row.onEvaluationError,
  };
}

/** The list set_ip_allowlist makes of the stored one (if any) and the request. */
async function nextList(tx: Tx, organizationId: string, i: SetIntent, nowMs: number): Promise<IpAllowlistRow> {
  const publicKey = i.publicKey === undefined ? '' : await apiKeyPublicKey(tx, organizationId, i.publicKey);
  const old = await tx.ipAllowlists.get(organizationId, publicKey);
  const since = new Map(old?.rules.map((r) => [r.cidr, r.createdMs]));
  const rules: IpAllowlistRule[] = i.rules
    ? i.rules.map((r) => ({ cidr: r.cidr, label: r.label, createdMs: since.get(r.cidr) ?? nowMs }))
    : old?.rules ?? [];
  return {
    organizationId, publicKey, rules,
    enabled: publicKey === '' ? i.enabled ?? old?.enabled ?? true : true,
    onEvaluationError: i.onEvaluationError ?? old?.onEvaluationError ?? 'DENY',
    createdMs: old?.createdMs ?? nowMs,
    updatedMs: nowMs,
  };
}

/** Whether the requester would still be let in, from where it is now, once `next` is in place. */
async function requesterStillAdmitted(tx: Tx, p: Principal, next: IpAllowlistRow): Promise<boolean> {
  if (p.clientAddress === undefined) return true;
  const list = await governingAllowlist(tx, p.credential, next);
  return !list || admits(list, p.clientAddress) !== false;
}

export const setIpAllowlist: SubmitOperation<SetIntent, Record<string, never>> = {
  kind: 'submit',
  path: 'set_ip_allowlist',
  types: { ACTIVITY_TYPE_SET_IP_ALLOWLIST: keysFor('ACTIVITY_TYPE_SET_IP_ALLOWLIST') },
  validate(params) {
    const v = new Validator();
    const publicKey = readPublicKey(v, params);
    const enabled = v.boolean(params, 'enabled', 'enabled');
    if (publicKey !== undefined && enabled === false) {
      v.fail('enabled', 'applies to the organization\'s list only; an API key\'s list is removed with remove_ip_allowlist');
    }
    const onEvaluationError = v.enumOf(params, 'onEvaluationError', 'onEvaluationError', ON_ERROR, false);
    const arr = v.array(params, 'rules', 'rules', { max: MAX_RULES });
    const rules = arr?.map((x, k) => {
      const r = v.object(x, `rules[${k}]`);
      if (!r) return { cidr: '', label: '' };
      const cidr = v.string(r, 'cidr', `rules[${k}].cidr`, { required: true, max: 64 });
      if (cidr !== undefined && !parseCidr(cidr.trim())) v.fail(`rules[${k}].cidr`, 'must be an IPv4 or IPv6 CIDR block (e.g. 192.168.1.0/24, 2001:db8::/32) or a single address');
      const label = v.string(r, 'label', `rules[${k}].label`, { max: 256 }) ?? '';
      return { cidr: (cidr ?? '').trim(), label };
    });
    v.done();
    return {
      ...(publicKey !== undefined ? { publicKey } : {}), ...(enabled !== undefined ? { enabled } : {}),
      ...(rules ? { rules } : {}), ...(onEvaluationError ? { onEvaluationError } : {}),
    };
  },
  async authorize(p, i, store) {
    const next = await nextList(store, p.organization.id, i, Date.now());
    if (!await requesterStillAdmitted(store, p, next)) {
      throw invalidArgument(`rules: this allowlist would refuse the request that sets it (from ${p.clientAddress}); add a rule that covers it`,
        [{ field: 'rules', description: `must admit the requester's own address ${p.clientAddress}` }]);
    }
    requireRoot(p, 'set IP allowlists');
  },
  async execute(ctx, i) {
    await ctx.tx.ipAllowlists.set(await nextList(ctx.tx, ctx.organization.id, i, ctx.nowMs));
    return {};
  },
};

export const removeIpAllowlist: SubmitOperation<{ publicKey?: string }, Record<string, never>> = {
  kind: 'submit',
  path: 'remove_ip_allowlist',
  types: { ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST: keysFor('ACTIVITY_TYPE_REMOVE_IP_ALLOWLIST') },
  validate(params) {
    const v = new Validator();
    const publicKey = readPublicKey(v, params);
    v.done();
    return publicKey !== undefined ? { publicKey } : {};
  },
  async authorize(p, i, store) {
    if (!await store.ipAllowlists.get(p.organization.id, i.publicKey?.toLowerCase() ?? '')) {
      throw notFound(i.publicKey === undefined ? 'the organization has no IP allowlist' : 'that API key has no IP allowlist', 'IP_ALLOWLIST_NOT_FOUND');
    }
    requireRoot(p, 'remove IP allowlists');
  },
  async execute(ctx, i) {
    await ctx.tx.ipAllowlists.remove(ctx.organization.id, i.publicKey?.toLowerCase() ?? '');
    return {};
  },
};

export const getIpAllowlist: QueryOperation<{ publicKey?: string }> = {
  kind: 'query',
  path: 'get_ip_allowlist',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const publicKey = readPublicKey(v, body);
    v.done();
    return publicKey !== undefined ? { publicKey } : {};
  },
  async execute(ctx, q) {
    const org = ctx.organization.id;
    const pk = q.publicKey === undefined ? '' : await apiKeyPublicKey(ctx.tx, org, q.publicKey);
    // No list: an empty one (an organization's disabled), so clients need no special case.
    const row = await ctx.tx.ipAllowlists.get(org, pk)
      ?? { organizationId: org, publicKey: pk, enabled: false, onEvaluationError: 'DENY', rules: [], createdMs: 0, updatedMs: 0 };
    return { allowlist: allowlistRecord(row) };
  },
};
