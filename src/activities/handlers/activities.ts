/** get_activity, list_activities. */
import { invalidArgument, notFound } from '../../errors.js';
import { ACTIVITY_STATUSES, ACTIVITY_TYPES } from '../../domain/enums.js';
import type { QueryOperation } from '../types.js';
import { Validator, type Obj } from '../../domain/validate.js';

export const getActivity: QueryOperation<{ activityId: string }> = {
  kind: 'query',
  path: 'get_activity',
  parentMayRead: true,
  specWrapper: 'none',
  validate(body: Obj) {
    const v = new Validator();
    const activityId = v.string(body, 'activityId', 'activityId', { required: true, max: 100 });
    v.done();
    return { activityId: activityId! };
  },
  async execute(ctx, q) {
    const row = await ctx.tx.activities.get(ctx.organization.id, q.activityId);
    if (!row) throw notFound(`activity ${q.activityId} not found`, 'ACTIVITY_NOT_FOUND');
    return { activity: row.record };
  },
};

export interface Pagination { limit: number; before?: string; after?: string }

/** paginationOptions: limit "1".."100" (default 10), before / after cursors (object ids). */
export function readPagination(v: Validator, body: Obj): Pagination {
  const p = body.paginationOptions;
  if (p === undefined || p === null) return { limit: 10 };
  const o = v.object(p, 'paginationOptions');
  if (!o) return { limit: 10 };
  let limit = 10;
  const raw = o.limit;
  if (raw !== undefined && raw !== null && raw !== '') {
    const s = raw;
    if (typeof s !== 'string' || !/^\d{1,3}$/.test(s) || Number(s) < 1 || Number(s) > 100) {
      v.fail('paginationOptions.limit', 'must be a decimal string between "1" and "100"');
    } else limit = Number(s);
  }
  const before = v.string(o, 'before', 'paginationOptions.before', { max: 100 }) || undefined;
  const after = v.string(o, 'after', 'paginationOptions.after', { max: 100 }) || undefined;
  if (before !== undefined && after !== undefined) {
    v.fail('paginationOptions', 'give at most one of before and after');
  }
  return { limit, before, after };
}

interface ListActivitiesQuery { statuses: string[]; types: string[]; page: Pagination }

export const listActivities: QueryOperation<ListActivitiesQuery> = {
  kind: 'query',
  path: 'list_activities',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body: Obj) {
    const v = new Validator();
    const statuses = v.stringArray(body, 'filterByStatus', 'filterByStatus', { max: 20 }) ?? [];
    statuses.forEach((s, i) => { if (!ACTIVITY_STATUSES.includes(s)) v.fail(`filterByStatus[${i}]`, 'is not an activity status'); });
    const types = v.stringArray(body, 'filterByType', 'filterByType', { max: 200 }) ?? [];
    types.forEach((t, i) => { if (!ACTIVITY_TYPES.has(t)) v.fail(`filterByType[${i}]`, 'is not an activity type'); });
    const page = readPagination(v, body);
    v.done();
    return { statuses, types, page };
  },
  async execute(ctx, q) {
    const rows = await ctx.tx.activities.list({
      organizationId: ctx.organization.id,
      statuses: q.statuses,
      types: q.types,
      limit: q.page.limit,
      beforeId: q.page.before,
      afterId: q.page.after,
    });
    if (!rows) {
      const field = q.page.before !== undefined ? 'paginationOptions.before' : 'paginationOptions.after';
      throw invalidArgument(`${field} names no activity of this organization`, [{ field, description: 'unknown cursor' }]);
    }
    return { activities: rows.map((r) => r.record) };
  },
};
