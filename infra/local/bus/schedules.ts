import { randomUUID } from 'node:crypto';
import type { Clock, TimerQueue } from './clock.ts';
import { isoSeconds, type EventEnvelope } from './envelope.ts';
import type { Router } from './router.ts';
import type { ScheduleRule } from './rules.ts';

/**
 * Arms each schedule on the timer queue and, when it fires, delivers the `Scheduled Event`
 * EventBridge sends (source aws.events, the rule ARN in resources, empty detail) — or the
 * configured `input` — through the router, so schedules get the same retries as events.
 */
export function armSchedules(
  rules: ScheduleRule[],
  deps: { clock: Clock; timers: TimerQueue; router: Router; region: string; account: string },
): void {
  const start = deps.clock.now();
  for (const rule of rules) {
    const arm = (after: number): void => {
      const at = rule.schedule.next(after, start);
      if (at === undefined) return; // a cron whose last year has passed
      deps.timers.add(at, () => {
        const event: EventEnvelope = {
          version: '0',
          id: randomUUID(),
          'detail-type': 'Scheduled Event',
          source: 'aws.events',
          account: deps.account,
          time: isoSeconds(at),
          region: deps.region,
          resources: [`arn:aws:events:${deps.region}:${deps.account}:rule/${rule.name}`],
          detail: {},
        };
        deps.router.report('scheduled', { rule: rule.name, function: rule.fn.key, event, at });
        deps.router.enqueue({ rule: rule.name, fn: rule.fn, input: rule.input, retryPolicy: rule.retryPolicy }, event);
        arm(at);
      });
    };
    arm(start);
  }
}
