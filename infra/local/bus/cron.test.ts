import { describe, expect, it } from 'vitest';
import { CronError, parseCron } from './cron.ts';
import { parseRate, parseSchedule } from './schedule-expression.ts';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined =>
  ms === undefined ? undefined : new Date(ms).toISOString().slice(0, 16);

/** The next `n` fire times after `from`, as YYYY-MM-DDTHH:MM (UTC). */
function fires(expr: string, from: string, n: number): (string | undefined)[] {
  const cron = parseCron(expr);
  const out: (string | undefined)[] = [];
  let t: number | undefined = at(from);
  for (let i = 0; i < n && t !== undefined; i++) {
    t = cron.next(t);
    out.push(iso(t));
  }
  return out;
}

describe('parseCron: next fire times (UTC)', () => {
  it.each([
    [
      'every 5 minutes from minute 0',
      'cron(0/5 * * * ? *)',
      '2026-01-01T00:03Z',
      ['2026-01-01T00:05', '2026-01-01T00:10', '2026-01-01T00:15'],
    ],
    [
      'every 10 minutes from minute 1 (AWS example 1/10)',
      '1/10 * * * ? *',
      '2026-01-01T00:00Z',
      ['2026-01-01T00:01', '2026-01-01T00:11', '2026-01-01T00:21'],
    ],
    ['10:00 every day', 'cron(0 10 * * ? *)', '2026-01-01T10:00Z', ['2026-01-02T10:00', '2026-01-03T10:00']],
    [
      '12:15 daily, fire strictly after a matching instant',
      '15 12 * * ? *',
      '2026-01-01T12:15:30Z',
      ['2026-01-02T12:15'],
    ],
    [
      '18:00 Monday to Friday by name',
      'cron(0 18 ? * MON-FRI *)',
      '2026-01-02T19:00Z',
      ['2026-01-05T18:00', '2026-01-06T18:00'],
    ],
    ['8:00 on the first of each month', '0 8 1 * ? *', '2026-01-15T00:00Z', ['2026-02-01T08:00', '2026-03-01T08:00']],
    [
      'every 10 minutes on weekdays (AWS example)',
      '0/10 * ? * MON-FRI *',
      '2026-01-02T23:55Z',
      ['2026-01-05T00:00', '2026-01-05T00:10'],
    ],
    [
      'every 5 minutes between 8:00 and 17:55 on weekdays',
      '0/5 8-17 ? * MON-FRI *',
      '2026-01-05T17:52Z',
      ['2026-01-05T17:55', '2026-01-06T08:00'],
    ],
    [
      '9:00 on the first Monday of the month (#)',
      '0 9 ? * 2#1 *',
      '2026-01-01T00:00Z',
      ['2026-01-05T09:00', '2026-02-02T09:00', '2026-03-02T09:00'],
    ],
    ['the second Tuesday (3#2)', '0 0 ? * 3#2 *', '2026-01-01T00:00Z', ['2026-01-13T00:00', '2026-02-10T00:00']],
    [
      'the fifth Friday only in months that have one',
      '0 0 ? * FRI#5 *',
      '2026-01-01T00:00Z',
      ['2026-01-30T00:00', '2026-05-29T00:00'],
    ],
    [
      'the last day of the month (L)',
      '0 0 L * ? *',
      '2026-01-01T00:00Z',
      ['2026-01-31T00:00', '2026-02-28T00:00', '2026-03-31T00:00'],
    ],
    [
      'the last day of February in a leap year',
      '0 0 L 2 ? *',
      '2027-06-01T00:00Z',
      ['2028-02-29T00:00', '2029-02-28T00:00'],
    ],
    [
      'three days before the last day (L-3)',
      '0 0 L-3 * ? *',
      '2026-01-01T00:00Z',
      ['2026-01-28T00:00', '2026-02-25T00:00'],
    ],
    [
      'the last weekday of the month (LW)',
      '0 0 LW * ? *',
      '2026-01-01T00:00Z',
      ['2026-01-30T00:00', '2026-02-27T00:00', '2026-03-31T00:00'],
    ],
    [
      'the weekday nearest the 15th (15W), Saturday → Friday',
      '0 0 15W * ? *',
      '2026-08-01T00:00Z',
      ['2026-08-14T00:00', '2026-09-15T00:00'],
    ],
    [
      'the weekday nearest the 1st never leaves the month (1W on a Saturday → Monday 3rd)',
      '0 0 1W * ? *',
      '2026-07-31T00:00Z',
      ['2026-08-03T00:00'],
    ],
    [
      'the weekday nearest the 31st never leaves the month (31W on a Sunday → Friday 29th)',
      '0 0 31W * ? *',
      '2026-05-01T00:00Z',
      ['2026-05-29T00:00'],
    ],
    [
      'the last Friday of the month (6L)',
      '0 0 ? * 6L *',
      '2026-01-01T00:00Z',
      ['2026-01-30T00:00', '2026-02-27T00:00'],
    ],
    ['day-of-week L is Saturday', '0 0 ? * L *', '2026-01-01T00:00Z', ['2026-01-03T00:00', '2026-01-10T00:00']],
    [
      'lists and ranges mixed, month names',
      '0,30 6 ? JAN,MAR-APR SUN,SAT *',
      '2026-01-30T00:00Z',
      ['2026-01-31T06:00', '2026-01-31T06:30', '2026-03-01T06:00'],
    ],
    [
      'steps over a range in day-of-month',
      '0 0 1-10/3 * ? *',
      '2026-01-01T00:00Z',
      ['2026-01-04T00:00', '2026-01-07T00:00', '2026-01-10T00:00', '2026-02-01T00:00'],
    ],
    ['a single year', '0 0 1 1 ? 2027', '2026-06-01T00:00Z', ['2027-01-01T00:00', undefined]],
    ['year steps', '0 0 1 1 ? 2026/2', '2026-06-01T00:00Z', ['2028-01-01T00:00', '2030-01-01T00:00']],
    ['a day that never comes (Feb 30) never fires', '0 0 30 2 ? *', '2026-01-01T00:00Z', [undefined]],
    ['lower-case names', '0 12 ? jan mon *', '2026-01-01T00:00Z', ['2026-01-05T12:00', '2026-01-12T12:00']],
  ])('%s: %s', (_what, expr, from, expected) => {
    expect(fires(expr, from, expected.length)).toEqual(expected);
  });
});

describe('parseCron: refuses what AWS refuses', () => {
  it.each([
    ['five fields', '0 10 * * ?', /6 fields/],
    ['both day fields given', '0 10 * * * *', /exactly one of Day-of-month and Day-of-week/],
    ['both day fields "?"', '0 10 ? * ? *', /exactly one/],
    ['minute 60', '60 * * * ? *', /Minutes field: "60" is outside 0-59/],
    ['hour 24', '0 24 * * ? *', /Hours field/],
    ['day-of-week 0', '0 0 ? * 0 *', /Day-of-week field: "0" is outside 1-7/],
    ['year 2200', '0 0 1 1 ? 2200', /Year field/],
    ['an unknown month name', '0 0 1 FOO ? *', /Month field: "FOO" is not a number or a name/],
    ['a backwards range', '0 0 ? * FRI-MON *', /runs backwards/],
    ['two # expressions', '0 0 ? * 3#1,6#3 *', /only one expression/],
    ['# occurrence 6', '0 0 ? * 3#6 *', /occurrence from 1 to 5/],
    ['a step in day-of-week', '0 0 ? * 1/2 *', /does not allow/],
    ['W in day-of-week', '0 0 ? * 2W *', /Day-of-week field/],
    ['a zero step', '*/0 * * * ? *', /invalid step/],
    ['garbage', '0 0 1X * ? *', /Day-of-month field/],
  ])('rejects %s', (_what, expr, message) => {
    expect(() => parseCron(expr)).toThrow(CronError);
    expect(() => parseCron(expr)).toThrow(message);
  });
});

describe('rate expressions', () => {
  const start = at('2026-01-01T00:00:00Z');
  it.each([
    ['rate(1 minute)', 60_000],
    ['rate(5 minutes)', 300_000],
    ['rate(1 hour)', 3_600_000],
    ['rate(2 days)', 172_800_000],
  ])('%s fires one period after the rule starts, then every period', (expr, period) => {
    const r = parseRate(expr);
    expect(r.next(start, start)).toBe(start + period);
    expect(r.next(start + period, start)).toBe(start + 2 * period);
    expect(r.next(start + period + 1, start)).toBe(start + 2 * period);
  });

  it.each(['rate(1 minutes)', 'rate(5 minute)', 'rate(0 minutes)', 'rate(5 seconds)', 'rate(five minutes)'])(
    'rejects %s',
    (expr) => {
      expect(() => parseRate(expr)).toThrow(CronError);
    },
  );

  it('parseSchedule dispatches on the prefix and rejects anything else', () => {
    expect(parseSchedule('cron(0 10 * * ? *)').next(start, start)).toBe(at('2026-01-01T10:00:00Z'));
    expect(parseSchedule('rate(1 hour)').next(start, start)).toBe(at('2026-01-01T01:00:00Z'));
    expect(() => parseSchedule('every 5 minutes')).toThrow(/rate\( or cron\(/);
  });
});
