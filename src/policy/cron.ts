/**
 * `CronSpan(cron, duration, tz)` of the policy language's `time` field, as Turnkey documents it:
 * true when the moment lies in a window [fire, fire + duration) for some fire of the cron
 * schedule, fires read as wall-clock times in the IANA zone `tz` (so they follow its daylight
 * saving time; the duration is elapsed time).
 *
 * - cron: exactly 5 fields `minute hour day-of-month month day-of-week`, each `*`, a number, a
 *   range `a-b` or a list of those; day of week 0–6 with 0 = Sunday. No steps, names, macros or
 *   seconds. When both day fields are restricted, a day matching either counts (as in cron).
 * - duration: whole days, hours and minutes in that order (`8h`, `90m`, `1d12h`), above zero and
 *   at most 7 days.
 * - `Timestamp('…')`: RFC 3339 with a zero offset only (`Z`, `z`, `+00:00`, `-00:00`).
 */

export class CronError extends Error {}

const FIELDS: [string, number, number][] = [['minute', 0, 59], ['hour', 0, 23], ['day of month', 1, 31], ['month', 1, 12], ['day of week', 0, 6]];

export interface Cron {
  sets: Set<number>[];
  /** whether day of month / day of week were restricted (not `*`) */
  domAny: boolean;
  dowAny: boolean;
}

export function parseCron(text: string): Cron {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 5 || parts[0] === '') throw new CronError(`a cron schedule has 5 fields (minute hour day-of-month month day-of-week), not ${parts[0] === '' ? 0 : parts.length}`);
  const sets = parts.map((p, i) => {
    const [name, min, max] = FIELDS[i]!;
    const set = new Set<number>();
    if (p === '*') { for (let x = min; x <= max; x++) set.add(x); return set; }
    for (const item of p.split(',')) {
      const m = /^(\d{1,2})(?:-(\d{1,2}))?$/.exec(item);
      if (!m) throw new CronError(`${name}: '${item}' is not a number or a range (no steps, names or macros)`);
      const a = Number(m[1]);
      const b = m[2] === undefined ? a : Number(m[2]);
      if (a < min || b > max || a > b) throw new CronError(`${name}: '${item}' is outside ${min}-${max}`);
      for (let x = a; x <= b; x++) set.add(x);
    }
    return set;
  });
  return { sets, domAny: parts[2] === '*', dowAny: parts[4] === '*' };
}

const MAX_DURATION_MIN = 7 * 24 * 60;

/** Duration in minutes. */
export function parseDuration(text: string): number {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?$/.exec(text);
  if (!m || text === '') throw new CronError(`duration '${text}' must be whole days, hours and minutes such as 8h, 90m or 1d12h`);
  const minutes = Number(m[1] ?? 0) * 1440 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
  if (minutes <= 0 || minutes > MAX_DURATION_MIN) throw new CronError(`duration '${text}' must be above zero and at most 7 days`);
  return minutes;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

export function zoneFormatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    } catch {
      throw new CronError(`'${tz}' is not an IANA time zone`);
    }
    if (formatters.size > 500) formatters.clear();
    formatters.set(tz, f);
  }
  return f;
}

/** The zone's offset from UTC at `ms`, in minutes. */
function offsetAt(f: Intl.DateTimeFormat, ms: number): number {
  const p: Record<string, number> = {};
  for (const x of f.formatToParts(new Date(ms))) if (x.type !== 'literal') p[x.type] = Number(x.value);
  const wall = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
  return Math.round((wall - Math.floor(ms / 1000) * 1000) / 60_000);
}

function fires(c: Cron, wallMs: number): boolean {
  const d = new Date(wallMs);
  if (!c.sets[0]!.has(d.getUTCMinutes()) || !c.sets[1]!.has(d.getUTCHours()) || !c.sets[3]!.has(d.getUTCMonth() + 1)) return false;
  const dom = c.sets[2]!.has(d.getUTCDate());
  const dow = c.sets[4]!.has(d.getUTCDay());
  if (c.domAny || c.dowAny) return dom && dow;
  return dom || dow;
}

/** Whether `nowMs` lies in [fire, fire + duration) for a fire of `cron` in zone `tz`. */
export function inCronSpan(nowMs: number, cronText: string, durationText: string, tz: string): boolean {
  const cron = parseCron(cronText);
  const duration = parseDuration(durationText);
  const f = zoneFormatter(tz);
  const last = Math.floor(nowMs / 60_000) * 60_000;
  const first = nowMs - duration * 60_000; // exclusive
  // The offset is found at both ends of the window; where they differ, the change is located by
  // bisection (a zone changes its offset at most once in 7 days).
  const o1 = offsetAt(f, first);
  const o2 = offsetAt(f, last);
  let change = Infinity;
  if (o1 !== o2) {
    let lo = first;
    let hi = last;
    while (hi - lo > 60_000) {
      const mid = Math.floor((lo + hi) / 120_000) * 60_000;
      if (offsetAt(f, mid) === o1) lo = mid; else hi = mid;
    }
    change = hi;
  }
  for (let t = last; t > first; t -= 60_000) {
    if (fires(cron, t + (t >= change ? o2 : o1) * 60_000)) return true;
  }
  return false;
}

/** `Timestamp('…')`: milliseconds since the epoch. */
export function parseTimestamp(text: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]00:00)$/.exec(text);
  if (!m) {
    throw new CronError(/^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/.test(text)
      ? `timestamp '${text}' must be in UTC (Z or +00:00)`
      : `'${text}' is not an RFC 3339 timestamp such as 2026-03-01T00:00:00Z`);
  }
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s) + (m[7] ? Math.floor(Number(m[7]) * 1000) : 0);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    throw new CronError(`timestamp '${text}' is not a valid date and time`);
  }
  return ms;
}
