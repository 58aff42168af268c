import { CronError, parseCron } from './cron.ts';

/**
 * `rate(...)` and `cron(...)` schedule expressions. A rate counts from when the rule was created
 * (AWS: "the rate starts when you create the rule"), so its first fire is one period after start.
 */
export interface Schedule {
  readonly expression: string;
  /** The first fire strictly after `afterMs`, for a rule created at `startMs`; undefined: never again. */
  next(afterMs: number, startMs: number): number | undefined;
}

const UNIT_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

export function parseRate(expression: string): Schedule {
  const m = /^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$/.exec(expression.trim());
  if (!m)
    throw new CronError(`rate expression "${expression}" must look like rate(5 minutes): minute(s), hour(s) or day(s)`);
  const value = Number(m[1]);
  const unit = m[2] as string;
  // AWS: a value of 1 takes the singular unit, anything larger the plural.
  const singular = !unit.endsWith('s');
  if (value < 1) throw new CronError(`rate expression "${expression}": the value must be a positive integer`);
  if ((value === 1) !== singular) {
    throw new CronError(
      `rate expression "${expression}": use the ${value === 1 ? 'singular' : 'plural'} unit with ${value}`,
    );
  }
  const period = value * UNIT_MS[unit.replace(/s$/, '') as keyof typeof UNIT_MS];
  return {
    expression,
    next(afterMs, startMs) {
      const k = Math.max(1, Math.floor((afterMs - startMs) / period) + 1);
      return startMs + k * period;
    },
  };
}

export function parseSchedule(expression: string): Schedule {
  const text = expression.trim();
  if (text.startsWith('rate(')) return parseRate(text);
  if (text.startsWith('cron(')) {
    const cron = parseCron(text);
    return { expression, next: (afterMs) => cron.next(afterMs) };
  }
  throw new CronError(`schedule expression "${expression}" must start with rate( or cron(`);
}
