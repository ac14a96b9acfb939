/**
 * The verifiable activity log's queries (kmas's own; the kmas_ prefix keeps them apart from
 * Turnkey's operations): the latest checkpoint or the one at a size, an entry's inclusion proof,
 * the consistency proof between two sizes, a range of entries. Stamped like every query; any user
 * of the organization (and its parent, which reads its activities too) may ask. Sizes and indexes
 * are decimal strings (as the API carries 64-bit numbers) or JSON integers; hashes and entry bytes
 * are standard base64. See docs/server.md, "The verifiable activity log".
 */
import { base64 } from '@scure/base';
import { invalidArgument, notFound } from '../../errors.js';
import { consistencyProofOf, inclusionProofOf } from '../../domain/activityLog.js';
import { leafHash } from '../../tlog/merkle.js';
import type { LogCheckpointRow, Tx } from '../../storage/types.js';
import type { ExecContext, QueryOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';

/** Most entries one kmas_list_log_entries returns. */
export const MAX_LOG_ENTRIES = 1000;

/** An optional tree size or index: a decimal string or a JSON integer, 0 … 2^53 − 1. */
function size(v: Validator, body: Obj, key: string): number | undefined {
  const raw = body[key];
  if (raw === undefined || raw === null || raw === '') return undefined;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) { v.fail(key, 'must be a non-negative integer (a decimal string or a JSON number)'); return undefined; }
  return n;
}

const b64 = (b: Uint8Array): string => base64.encode(b);

function checkpointReply(c: LogCheckpointRow): Record<string, unknown> {
  return { treeSize: String(c.size), rootHash: b64(c.root), checkpoint: c.note };
}

async function headSize(tx: Tx, organizationId: string): Promise<number> {
  return (await tx.log.head(organizationId))?.size ?? 0;
}

function tooLarge(field: string, n: number, have: number) {
  return invalidArgument(`${field} ${n} is larger than the log, which has ${have} entries`, [{ field, description: `must be at most ${have}` }]);
}

/** The tree size a proof is for: the one asked, else the latest checkpoint's (ctx.external). */
async function treeSizeOf(ctx: ExecContext, asked: number | undefined, field: string): Promise<number> {
  const have = await headSize(ctx.tx, ctx.organization.id);
  if (asked === undefined) return Math.min((ctx.external as LogCheckpointRow).size, have);
  if (asked > have) throw tooLarge(field, asked, have);
  return asked;
}

export const getLogCheckpoint: QueryOperation<{ treeSize?: number }> = {
  kind: 'query',
  path: 'kmas_get_log_checkpoint',
  parentMayRead: true,
  specWrapper: 'none',
  validate(body: Obj) {
    const v = new Validator();
    const treeSize = size(v, body, 'treeSize');
    v.done();
    return treeSize === undefined ? {} : { treeSize };
  },
  async external(q, services, organizationId) {
    await services.tlog.settle(organizationId);
    return await services.tlog.checkpoint(organizationId, q.treeSize);
  },
  execute(ctx) {
    const c = ctx.external as LogCheckpointRow | undefined;
    return { ...checkpointReply(c!), origin: ctx.services.tlog.signer.origin(ctx.organization.id), keyName: ctx.services.tlog.signer.keyName };
  },
};

interface InclusionQuery { activityId?: string; index?: number; treeSize?: number }

export const getLogInclusionProof: QueryOperation<InclusionQuery> = {
  kind: 'query',
  path: 'kmas_get_log_inclusion_proof',
  parentMayRead: true,
  specWrapper: 'none',
  validate(body: Obj) {
    const v = new Validator();
    const activityId = v.string(body, 'activityId', 'activityId', { max: 100 }) || undefined;
    const index = size(v, body, 'index');
    const treeSize = size(v, body, 'treeSize');
    if ((activityId === undefined) === (index === undefined)) v.fail('activityId', 'give exactly one of activityId and index');
    v.done();
    return { ...(activityId !== undefined ? { activityId } : {}), ...(index !== undefined ? { index } : {}), ...(treeSize !== undefined ? { treeSize } : {}) };
  },
  async external(q, services, organizationId) {
    await services.tlog.settle(organizationId);
    return q.treeSize === undefined ? await services.tlog.checkpoint(organizationId) : undefined;
  },
  async execute(ctx, q) {
    const org = ctx.organization.id;
    const treeSize = await treeSizeOf(ctx, q.treeSize, 'treeSize');
    let index = q.index;
    if (q.activityId !== undefined) {
      // the activity's latest entry within the tree
      const within = (await ctx.tx.log.indexesOf(org, q.activityId)).filter((i) => i < treeSize);
      if (within.length === 0) throw notFound(`activity ${q.activityId} has no entry in the first ${treeSize} entries of this organization's log`, 'ACTIVITY_NOT_FOUND');
      index = within[within.length - 1]!;
    }
    if (index! >= treeSize) {
      throw invalidArgument(`index ${index} is not in a tree of ${treeSize} entries`, [{ field: 'index', description: `must be less than the tree size (${treeSize})` }]);
    }
    const [entry] = await ctx.tx.log.entries(org, index!, index! + 1);
    if (!entry) throw new Error(`the log of ${org} has no entry ${index}`);
    const proof = await inclusionProofOf(ctx.tx, org, index!, treeSize);
    return {
      index: String(index), treeSize: String(treeSize), activityId: entry.activityId, entry: b64(entry.entry), leafHash: b64(leafHash(entry.entry)),
      proof: proof.map(b64),
      ...(q.treeSize === undefined ? { checkpoint: (ctx.external as LogCheckpointRow).note } : {}),
    };
  },
};

export const getLogConsistencyProof: QueryOperation<{ fromSize: number; toSize?: number }> = {
  kind: 'query',
  path: 'kmas_get_log_consistency_proof',
  parentMayRead: true,
  specWrapper: 'none',
  validate(body: Obj) {
    const v = new Validator();
    const fromSize = size(v, body, 'fromSize');
    const toSize = size(v, body, 'toSize');
    if (body.fromSize === undefined || body.fromSize === null || body.fromSize === '') v.fail('fromSize', 'is required');
    if (fromSize !== undefined && toSize !== undefined && fromSize > toSize) v.fail('fromSize', 'must be at most toSize');
    v.done();
    return { fromSize: fromSize!, ...(toSize !== undefined ? { toSize } : {}) };
  },
  async external(q, services, organizationId) {
    await services.tlog.settle(organizationId);
    return q.toSize === undefined ? await services.tlog.checkpoint(organizationId) : undefined;
  },
  async execute(ctx, q) {
    const org = ctx.organization.id;
    const toSize = await treeSizeOf(ctx, q.toSize, 'toSize');
    if (q.fromSize > toSize) throw tooLarge('fromSize', q.fromSize, toSize);
    const proof = await consistencyProofOf(ctx.tx, org, q.fromSize, toSize);
    return {
      fromSize: String(q.fromSize), toSize: String(toSize), proof: proof.map(b64),
      ...(q.toSize === undefined ? { checkpoint: (ctx.external as LogCheckpointRow).note } : {}),
    };
  },
};

export const listLogEntries: QueryOperation<{ start: number; limit: number }> = {
  kind: 'query',
  path: 'kmas_list_log_entries',
  parentMayRead: true,
  specWrapper: 'none',
  validate(body: Obj) {
    const v = new Validator();
    const start = size(v, body, 'start') ?? 0;
    const limit = size(v, body, 'limit') ?? 100;
    if (limit < 1 || limit > MAX_LOG_ENTRIES) v.fail('limit', `must be from 1 to ${MAX_LOG_ENTRIES}`);
    v.done();
    return { start, limit };
  },
  async external(_q, services, organizationId) {
    await services.tlog.settle(organizationId);
  },
  async execute(ctx, q) {
    const org = ctx.organization.id;
    const have = await headSize(ctx.tx, org);
    if (q.start > have) throw tooLarge('start', q.start, have);
    const rows = await ctx.tx.log.entries(org, q.start, Math.min(have, q.start + q.limit));
    return {
      organizationId: org,
      treeSize: String(have),
      entries: rows.map((r) => ({ index: String(r.index), activityId: r.activityId, entry: b64(r.entry) })),
    };
  },
};

export const LOG_QUERIES = [getLogCheckpoint, getLogInclusionProof, getLogConsistencyProof, listLogEntries];
