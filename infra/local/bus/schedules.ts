import { randomUUID } from 'node:crypto';
import type { Clock, TimerQueue } from './clock.ts';
import { isoSeconds, type EventEnvelope } from './envelope.ts';
import type { Router, Target } from './router.ts';
import type { ScheduledRule } from './rule-registry.ts';
import { parseSchedule, type Schedule } from './schedule-expression.ts';

interface Armed {
  expression: string;
  schedule: Schedule;
  start: number;
  targets: Target[];
  cancel: () => void;
}

/**
 * The scheduled rules on the bus's clock, as EventBridge runs them
 * (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-rule-schedule.html): each enabled rule
 * with a ScheduleExpression fires at its times and sends the `Scheduled Event` (source aws.events, the rule
 * ARN in resources, empty detail) — or a target's configured input — to every target, through the router
 * so schedules get the same retries as events.
 *
 * `sync` follows the rules as PutRule/DeleteRule/PutTargets/RemoveTargets change them: a new rule (or a
 * changed expression, or a rule enabled again) is armed from that moment, since "the rate starts when you
 * create the rule" (schedule-expression.ts); a disabled or deleted rule stops; changed targets take the
 * next firing.
 */
export class Schedules {
  private readonly armed = new Map<string, Armed>();

  constructor(
    private readonly deps: { clock: Clock; timers: TimerQueue; router: Router; region: string; account: string },
  ) {}

  sync(rules: readonly ScheduledRule[]): void {
    const seen = new Set<string>();
    for (const r of rules) {
      seen.add(r.name);
      const a = this.armed.get(r.name);
      if (a && a.expression === r.expression) {
        a.targets = r.targets;
        continue;
      }
      a?.cancel();
      const start = this.deps.clock.now();
      const armed: Armed = {
        expression: r.expression,
        schedule: parseSchedule(r.expression),
        start,
        targets: r.targets,
        cancel: () => undefined,
      };
      this.armed.set(r.name, armed);
      this.arm(r.name, armed, start);
    }
    for (const [name, a] of this.armed)
      if (!seen.has(name)) {
        a.cancel();
        this.armed.delete(name);
      }
  }

  /** Names of the rules armed now (for tests and the CLI). */
  get names(): string[] {
    return [...this.armed.keys()];
  }

  private arm(name: string, a: Armed, after: number): void {
    const { timers, router, region, account } = this.deps;
    const at = a.schedule.next(after, a.start);
    if (at === undefined) return; // a cron whose last year has passed
    a.cancel = timers.add(at, () => {
      const event: EventEnvelope = {
        version: '0',
        id: randomUUID(),
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account,
        time: isoSeconds(at),
        region,
        resources: [`arn:aws:events:${region}:${account}:rule/${name}`],
        detail: {},
      };
      for (const t of a.targets) {
        router.report('scheduled', { rule: name, function: t.fn.key, event, at });
        router.enqueue(t, event);
      }
      this.arm(name, a, at);
    });
  }
}
