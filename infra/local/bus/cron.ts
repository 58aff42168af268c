/**
 * AWS EventBridge cron expressions (six fields, evaluated in UTC):
 *
 *   Minutes 0-59 `, - * /` · Hours 0-23 `, - * /` · Day-of-month 1-31 `, - * ? / L W`
 *   Month 1-12|JAN-DEC `, - * /` · Day-of-week 1-7|SUN-SAT (1 = SUN) `, - * ? L #` · Year 1970-2199 `, - * /`
 *
 * Exactly one of day-of-month and day-of-week is `?`. `L` is the last day of the month (`L-n`: n
 * days before it), `nW` the weekday nearest day n without leaving the month (`LW`: the last
 * weekday), day-of-week `L` is Saturday and `nL` the month's last weekday n, `n#k` the k-th weekday
 * n of the month (only one `#` expression per field). Errors name the field and the token.
 */
export class CronError extends Error {
  override name = 'CronError';
}

type DayRule =
  | { kind: 'set'; values: ReadonlySet<number> }
  | { kind: 'last'; offset: number }
  | { kind: 'lastWeekday' }
  | { kind: 'nearestWeekday'; day: number }
  | { kind: 'lastOfWeekday'; weekday: number }
  | { kind: 'nth'; weekday: number; nth: number };

export interface Cron {
  readonly expression: string;
  /** The first fire time strictly after `afterMs` (epoch ms, minute-aligned), or undefined past 2199. */
  next(afterMs: number): number | undefined;
  /** Whether the minute containing `ms` is a fire time. */
  matches(ms: number): boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** Wildcards beyond `, - *` that the field allows. */
  allow: string;
}

const FIELDS = {
  minutes: { name: 'Minutes', min: 0, max: 59, allow: '/' },
  hours: { name: 'Hours', min: 0, max: 23, allow: '/' },
  dom: { name: 'Day-of-month', min: 1, max: 31, allow: '?/LW' },
  month: { name: 'Month', min: 1, max: 12, names: MONTHS, allow: '/' },
  dow: { name: 'Day-of-week', min: 1, max: 7, names: DAYS, allow: '?L#' },
  year: { name: 'Year', min: 1970, max: 2199, allow: '/' },
} satisfies Record<string, FieldSpec>;

/** Accepts `cron(0/5 * * * ? *)` or the bare six fields. */
export function parseCron(input: string): Cron {
  const inner = /^cron\((.*)\)$/s.exec(input.trim())?.[1] ?? input;
  const parts = inner.trim().split(/\s+/);
  if (parts.length !== 6) throw new CronError(`cron expression "${input}" needs 6 fields, found ${parts.length}`);
  const [mi, h, dom, mo, dow, y] = parts as [string, string, string, string, string, string];
  if ((dom === '?') === (dow === '?')) {
    throw new CronError(`cron expression "${input}": exactly one of Day-of-month and Day-of-week must be "?"`);
  }
  const minutes = valueSet(mi, FIELDS.minutes);
  const hours = valueSet(h, FIELDS.hours);
  const months = valueSet(mo, FIELDS.month);
  const years = valueSet(y, FIELDS.year);
  const dayRules = dom === '?' ? dowRules(dow) : domRules(dom);
  const dayMatches = (year: number, month: number, day: number): boolean =>
    dayRules.some((r) => ruleMatches(r, dom === '?', year, month, day));

  return {
    expression: input,
    matches(ms) {
      const d = new Date(ms);
      const [Y, M, D] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
      return (
        years.has(Y) &&
        months.has(M) &&
        dayMatches(Y, M, D) &&
        hours.has(d.getUTCHours()) &&
        minutes.has(d.getUTCMinutes())
      );
    },
    // Jumps a whole year, month, day or hour at a time when that field cannot match.
    next(afterMs) {
      let t = Math.floor(afterMs / 60_000) * 60_000 + 60_000;
      for (;;) {
        const d = new Date(t);
        const Y = d.getUTCFullYear();
        const M = d.getUTCMonth() + 1;
        const D = d.getUTCDate();
        const H = d.getUTCHours();
        if (Y > FIELDS.year.max) return undefined;
        if (!years.has(Y)) t = Date.UTC(Math.max(Y + 1, FIELDS.year.min), 0, 1);
        else if (!months.has(M)) t = Date.UTC(Y, M, 1);
        else if (!dayMatches(Y, M, D)) t = Date.UTC(Y, M - 1, D + 1);
        else if (!hours.has(H)) t = Date.UTC(Y, M - 1, D, H + 1);
        else if (!minutes.has(d.getUTCMinutes())) t += 60_000;
        else return t;
      }
    },
  };
}

function fail(f: FieldSpec, token: string, why: string): never {
  throw new CronError(`cron ${f.name} field: "${token}" ${why}`);
}

function number(token: string, f: FieldSpec): number {
  const upper = token.toUpperCase();
  const named = f.names?.indexOf(upper) ?? -1;
  if (named >= 0) return named + f.min;
  if (!/^\d+$/.test(token)) fail(f, token, 'is not a number' + (f.names ? ' or a name' : ''));
  const n = Number(token);
  if (n < f.min || n > f.max) fail(f, token, `is outside ${f.min}-${f.max}`);
  return n;
}

/** `*`, `a`, `a-b`, with an optional `/step` where the field allows it; comma-separated. */
function valueSet(field: string, f: FieldSpec): Set<number> {
  const out = new Set<number>();
  for (const item of field.split(',')) {
    const [range = '', stepText, extra] = item.split('/');
    if (extra !== undefined || range === '') fail(f, item, 'is not a valid item');
    if (stepText !== undefined && !f.allow.includes('/')) fail(f, item, 'uses "/", which this field does not allow');
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [f.min, f.max];
    else if (range.includes('-')) {
      const [a = '', b = ''] = range.split('-');
      [lo, hi] = [number(a, f), number(b, f)];
      if (lo > hi) fail(f, item, 'is a range that runs backwards');
    } else {
      lo = number(range, f);
      hi = stepText === undefined ? lo : f.max;
    }
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1 || !/^\d+$/.test(stepText ?? '1')) fail(f, item, 'has an invalid step');
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

function domRules(field: string): DayRule[] {
  const f = FIELDS.dom;
  const rules: DayRule[] = [];
  const plain: string[] = [];
  for (const item of field.split(',')) {
    const upper = item.toUpperCase();
    let m: RegExpExecArray | null;
    if (upper === 'L') rules.push({ kind: 'last', offset: 0 });
    else if ((m = /^L-(\d+)$/.exec(upper))) {
      const offset = Number(m[1]);
      if (offset > 30) fail(f, item, 'offset must be at most 30');
      rules.push({ kind: 'last', offset });
    } else if (upper === 'LW') rules.push({ kind: 'lastWeekday' });
    else if ((m = /^(\d+)W$/.exec(upper))) rules.push({ kind: 'nearestWeekday', day: number(m[1] ?? '', f) });
    else if (/[LW]/.test(upper)) fail(f, item, 'is not a valid L or W expression');
    else plain.push(item);
  }
  if (plain.length > 0) rules.push({ kind: 'set', values: valueSet(plain.join(','), f) });
  return rules;
}

function dowRules(field: string): DayRule[] {
  const f = FIELDS.dow;
  const items = field.split(',');
  if (field.includes('#') && items.length > 1) fail(f, field, 'may hold only one expression when it uses "#"');
  const rules: DayRule[] = [];
  const plain: string[] = [];
  for (const item of items) {
    const upper = item.toUpperCase();
    let m: RegExpExecArray | null;
    if (upper === 'L') rules.push({ kind: 'set', values: new Set([7]) });
    else if ((m = /^(\w+)L$/.exec(upper))) rules.push({ kind: 'lastOfWeekday', weekday: number(m[1] ?? '', f) });
    else if ((m = /^(\w+)#(\d+)$/.exec(upper))) {
      const nth = Number(m[2]);
      if (nth < 1 || nth > 5) fail(f, item, 'must name an occurrence from 1 to 5');
      rules.push({ kind: 'nth', weekday: number(m[1] ?? '', f), nth });
    } else plain.push(item);
  }
  if (plain.length > 0) rules.push({ kind: 'set', values: valueSet(plain.join(','), f) });
  return rules;
}

const lastDayOf = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate();
/** 1 = Sunday … 7 = Saturday, as AWS numbers days of the week. */
const weekdayOf = (year: number, month: number, day: number): number =>
  new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 1;

function nearestWeekday(year: number, month: number, target: number): number {
  const last = lastDayOf(year, month);
  const day = Math.min(target, last);
  const wd = weekdayOf(year, month, day);
  if (wd === 7) return day === 1 ? 3 : day - 1; // Saturday: Friday, unless that leaves the month
  if (wd === 1) return day === last ? day - 2 : day + 1; // Sunday: Monday, unless that leaves the month
  return day;
}

function ruleMatches(r: DayRule, isDow: boolean, year: number, month: number, day: number): boolean {
  const last = lastDayOf(year, month);
  const wd = weekdayOf(year, month, day);
  switch (r.kind) {
    case 'set':
      return r.values.has(isDow ? wd : day);
    case 'last':
      return day === last - r.offset;
    case 'lastWeekday':
      return day === nearestWeekday(year, month, last);
    case 'nearestWeekday':
      return day === nearestWeekday(year, month, r.day);
    case 'lastOfWeekday':
      return wd === r.weekday && day + 7 > last;
    case 'nth':
      return wd === r.weekday && Math.ceil(day / 7) === r.nth;
  }
}
