// The `time` field's functions (src/policy/cron.ts): CronSpan windows in IANA zones across daylight
// saving changes (the two overnight cases Turnkey's time-policy reference works through), the
// documented cron / duration / timestamp rules, and Timestamp / time.now in the language.
import { describe, it, expect } from 'vitest';
import { CronError, inCronSpan, parseCron, parseDuration, parseTimestamp } from '../../src/policy/cron.js';
import { evaluate, EvalError, Instant, literalProblems, parse, type Value } from '../../src/policy/language.js';

const at = (iso: string) => Date.parse(iso);

describe('CronSpan', () => {
  const business = (iso: string) => inCronSpan(at(iso), '0 9 * * 1-5', '8h', 'America/New_York');

  it('business hours in New York: [09:00, 17:00) local on weekdays', () => {
    // Monday 2 March 2026: EST (UTC-5)
    expect(business('2026-03-02T13:59:59Z')).toBe(false);
    expect(business('2026-03-02T14:00:00Z')).toBe(true);
    expect(business('2026-03-02T21:59:59Z')).toBe(true);
    expect(business('2026-03-02T22:00:00Z')).toBe(false);
    // Monday 16 March 2026: EDT (UTC-4), the same local hours an hour earlier in UTC
    expect(business('2026-03-16T12:59:00Z')).toBe(false);
    expect(business('2026-03-16T13:00:00Z')).toBe(true);
    expect(business('2026-03-16T20:59:00Z')).toBe(true);
    expect(business('2026-03-16T21:00:00Z')).toBe(false);
    // Saturday 7 March and Sunday 8 March
    expect(business('2026-03-07T15:00:00Z')).toBe(false);
    expect(business('2026-03-08T15:00:00Z')).toBe(false);
  });

  it('an overnight window crossing midnight ends at 07:00 after the spring change and at 05:00 after the autumn one (elapsed duration)', () => {
    const overnight = (iso: string) => inCronSpan(at(iso), '0 22 * * *', '8h', 'America/New_York');
    // 7 March 2026 22:00 EST = 8 March 03:00Z; clocks go forward at 02:00 on 8 March; +8 h = 11:00Z = 07:00 EDT
    expect(overnight('2026-03-08T02:59:00Z')).toBe(false);
    expect(overnight('2026-03-08T03:00:00Z')).toBe(true);
    expect(overnight('2026-03-08T10:59:00Z')).toBe(true);
    expect(overnight('2026-03-08T11:00:00Z')).toBe(false);
    // a fire after the change inside a window that began before it: 09:00 EDT on 8 March = 13:00Z
    const morning = (iso: string) => inCronSpan(at(iso), '0 9 * * *', '8h', 'America/New_York');
    expect(morning('2026-03-08T12:59:00Z')).toBe(false);
    expect(morning('2026-03-08T13:00:00Z')).toBe(true);
    // and after the autumn change: 09:00 EST on 1 November = 14:00Z
    expect(morning('2026-11-01T13:59:00Z')).toBe(false);
    expect(morning('2026-11-01T14:00:00Z')).toBe(true);
    // 31 October 2026 22:00 EDT = 1 November 02:00Z; clocks go back at 02:00 on 1 November; +8 h = 10:00Z = 05:00 EST
    expect(overnight('2026-11-01T01:59:00Z')).toBe(false);
    expect(overnight('2026-11-01T02:00:00Z')).toBe(true);
    expect(overnight('2026-11-01T09:59:00Z')).toBe(true);
    expect(overnight('2026-11-01T10:00:00Z')).toBe(false);
  });

  it('zones without daylight saving time, day-of-month OR day-of-week, week-long windows', () => {
    expect(inCronSpan(at('2026-06-10T00:30:00Z'), '0 9 * * *', '1h', 'Asia/Tokyo')).toBe(true); // 09:30 JST
    expect(inCronSpan(at('2026-06-10T01:00:00Z'), '0 9 * * *', '1h', 'Asia/Tokyo')).toBe(false);
    // both day fields restricted: the 1st of the month or a Monday
    const either = (iso: string) => inCronSpan(at(iso), '0 0 1 * 1', '1h', 'UTC');
    expect(either('2026-07-01T00:10:00Z')).toBe(true); // Wednesday the 1st
    expect(either('2026-07-06T00:10:00Z')).toBe(true); // Monday the 6th
    expect(either('2026-07-07T00:10:00Z')).toBe(false);
    // 7 days from Monday 00:00: the whole week
    expect(inCronSpan(at('2026-07-12T23:59:00Z'), '0 0 * * 1', '7d', 'UTC')).toBe(true);
    expect(inCronSpan(at('2026-07-13T00:00:00Z'), '0 0 * * 1', '7d', 'UTC')).toBe(true); // the next fire
  });

  it('refuses what the documented grammar refuses', () => {
    for (const bad of ['*/5 * * * *', '0 9 * * MON', '@daily', '0 0 9 * * 1', '60 * * * *', '0 24 * * *', '0 0 0 * *', '0 0 * 13 *', '0 0 * * 7', '5-1 * * * *', '']) {
      expect(() => parseCron(bad), bad).toThrow(CronError);
    }
    expect(parseCron('0,30 9-17 * * 1-5').sets[1]!.size).toBe(9);
    expect(parseDuration('8h')).toBe(480);
    expect(parseDuration('90m')).toBe(90);
    expect(parseDuration('1d12h')).toBe(2160);
    expect(parseDuration('7d')).toBe(10080);
    for (const bad of ['0h', '8d', '1.5h', '', '30s', '12h1d', 'h']) expect(() => parseDuration(bad), bad).toThrow(CronError);
    expect(() => inCronSpan(0, '0 9 * * *', '1h', 'Mars/Olympus')).toThrow(/IANA/);
  });
});

describe('Timestamp', () => {
  it('RFC 3339 in UTC only', () => {
    expect(parseTimestamp('2026-03-01T00:00:00Z')).toBe(at('2026-03-01T00:00:00Z'));
    expect(parseTimestamp('2026-03-01t00:00:00z')).toBe(at('2026-03-01T00:00:00Z'));
    expect(parseTimestamp('2026-03-01T00:00:00+00:00')).toBe(at('2026-03-01T00:00:00Z'));
    expect(parseTimestamp('2026-03-01T00:00:00-00:00')).toBe(at('2026-03-01T00:00:00Z'));
    expect(parseTimestamp('2026-03-01T12:34:56.789Z')).toBe(at('2026-03-01T12:34:56.789Z'));
    expect(() => parseTimestamp('2026-03-01T00:00:00+01:00')).toThrow(/UTC/);
    for (const bad of ['2026-02-30T00:00:00Z', '2026-03-01', '2026-03-01 00:00:00Z', '2026-03-01T25:00:00Z', 'yesterday']) {
      expect(() => parseTimestamp(bad), bad).toThrow(CronError);
    }
  });
});

describe('the time field in the language', () => {
  const run = (src: string, nowIso: string) => evaluate(parse(src), new Map<string, Value>([['time', { now: new Instant(at(nowIso)) }]]));

  it('time.now against Timestamp(…): a one-shot window, start inclusive, end exclusive', () => {
    const march = "time.now >= Timestamp('2026-03-01T00:00:00Z') && time.now < Timestamp('2026-04-01T00:00:00Z')";
    expect(run(march, '2026-02-28T23:59:59Z')).toBe(false);
    expect(run(march, '2026-03-01T00:00:00Z')).toBe(true);
    expect(run(march, '2026-03-31T23:59:59Z')).toBe(true);
    expect(run(march, '2026-04-01T00:00:00Z')).toBe(false);
    expect(run("time.now == Timestamp('2026-03-01T00:00:00Z')", '2026-03-01T00:00:00Z')).toBe(true);
  });

  it('CronSpan composes with && and !', () => {
    const src = "CronSpan('0 9 * * 1-5', '8h', 'America/New_York') && time.now < Timestamp('2026-01-01T00:00:00Z')";
    expect(run(src, '2025-12-01T15:00:00Z')).toBe(true);
    expect(run(src, '2026-03-02T15:00:00Z')).toBe(false);
    expect(run("!CronSpan('0 9 * * 1-5', '8h', 'America/New_York')", '2025-12-06T15:00:00Z')).toBe(true);
  });

  it('type errors and bad literals', () => {
    expect(() => run("time.now < 5", '2026-01-01T00:00:00Z')).toThrow(EvalError);
    expect(() => run("Timestamp(5) == time.now", '2026-01-01T00:00:00Z')).toThrow(EvalError);
    expect(() => run("Later('x')", '2026-01-01T00:00:00Z')).toThrow(EvalError);
    expect(() => evaluate(parse("CronSpan('0 9 * * *', '1h', 'UTC')"), new Map())).toThrow(/time.now/);
    expect(literalProblems(parse("time.now < Timestamp('2026-01-01T00:00:00+02:00')"))).toEqual([expect.stringMatching(/UTC/)]);
    expect(literalProblems(parse("CronSpan('*/5 * * * *', '8h', 'UTC')"))).toEqual([expect.stringMatching(/minute/)]);
    expect(literalProblems(parse("CronSpan('0 9 * * *', '9d', 'UTC') || CronSpan('0 9 * * *', '1h', 'Nowhere/City')"))).toHaveLength(2);
    expect(literalProblems(parse("CronSpan('0 9 * * 1-5', '8h', 'America/New_York')"))).toEqual([]);
  });
});
