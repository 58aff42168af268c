import { AwsRequestError } from './errors.ts';
import type { Target } from './router.ts';
import {
  DEFAULT_RETRY_POLICY,
  type EventRule,
  type FunctionDef,
  type RoutingTable,
  type TargetInput,
} from './rules.ts';
import {
  checkPattern,
  checkSchedule,
  constraint,
  inputOf,
  nameOf,
  optString,
  parseTarget,
  unsupportedTarget,
  validation,
  type TargetView,
} from './rule-request.ts';

export type { TargetView } from './rule-request.ts';

/**
 * The bus's rules and their targets as EventBridge keeps them: seeded from serverless.yml (each rule
 * with one target, its function), then changed by PutRule, DeleteRule, PutTargets and RemoveTargets.
 * Written again from the EventBridge API Reference
 * (https://docs.aws.amazon.com/eventbridge/latest/APIReference/): API_PutRule (Name 1–64 of
 * `[.\-_A-Za-z0-9]`, EventPattern ≤ 4096, ScheduleExpression ≤ 256 and only on the default bus, one of
 * the two required, State ENABLED | DISABLED | ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS, Description
 * ≤ 512; a PutRule of an existing rule replaces it, targets kept), API_DeleteRule (every call for the
 * same rule succeeds, a rule that still has targets cannot be deleted, a custom bus that is not there
 * is ResourceNotFoundException), API_PutTargets (1–10 targets a request, at most 5 on a rule at once:
 * LimitExceededException; an Id already there is updated; Input, InputPath and InputTransformer are
 * exclusive; RetryPolicy 0–185 attempts, 60–86,400 s), API_RemoveTargets (1–10 Ids; an Id that is not
 * there is no failure) and API_ListTargetsByRule (Limit 1–100, NextToken). Rules per bus: 300 (the
 * service quota, https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html).
 *
 * Only what the local bus can deliver is routed: an ENABLED rule with a pattern, to targets that are
 * the Lambda ARN of a function it loaded (`arn:aws:lambda:<region>:<account>:function:<name>`); PutTargets
 * answers any other target as a failed entry (ErrorCode UnsupportedTarget) naming its type, and keeps the
 * rest. Every enabled rule with a ScheduleExpression fires on the bus's clock (schedules(), schedules.ts),
 * whether serverless.yml or PutRule made it.
 */
export interface ScheduledRule {
  name: string;
  expression: string;
  targets: Target[];
}

export interface RegisteredRule {
  Name: string;
  EventBusName: string;
  EventPattern?: string;
  ScheduleExpression?: string;
  State: string;
  Description?: string;
  RoleArn?: string;
  targets: Map<string, TargetView>;
}

const STATES = ['ENABLED', 'DISABLED', 'ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS'];
export const MAX_TARGETS_PER_RULE = 5;
export const MAX_RULES_PER_BUS = 300;

export class RuleRegistry {
  private readonly rules = new Map<string, RegisteredRule>(); // `${bus}\0${name}`
  private readonly functions = new Map<string, FunctionDef>(); // deployed name → function

  constructor(
    table: RoutingTable | undefined,
    private readonly where: { region: string; account: string },
    /** Called with the routable rules whenever they change. */
    private readonly onChange: (rules: EventRule[]) => void = () => undefined,
  ) {
    for (const f of table?.functions ?? []) this.functions.set(f.name, f);
    for (const r of table?.eventRules ?? [])
      this.seed(
        r.busName,
        r.name,
        { EventPattern: JSON.stringify(r.pattern) },
        r.fn,
        r.input,
        r.retryPolicy,
        r.deadLetterQueueArn,
      );
    for (const s of table?.schedules ?? [])
      this.seed('default', s.name, { ScheduleExpression: s.schedule.expression }, s.fn, s.input, s.retryPolicy);
  }

  private seed(
    bus: string,
    name: string,
    what: Pick<RegisteredRule, 'EventPattern' | 'ScheduleExpression'>,
    fn: FunctionDef,
    input: TargetInput,
    retry: EventRule['retryPolicy'],
    dlq?: string,
  ): void {
    const target: TargetView = {
      Id: fn.name.slice(0, 64),
      Arn: this.lambdaArn(fn.name),
      ...(input.kind === 'constant' ? { Input: JSON.stringify(input.value) } : {}),
      ...(input.kind === 'path' ? { InputPath: input.path } : {}),
      RetryPolicy: {
        MaximumRetryAttempts: retry.maximumRetryAttempts,
        MaximumEventAgeInSeconds: retry.maximumEventAgeSeconds,
      },
      ...(dlq ? { DeadLetterConfig: { Arn: dlq } } : {}),
    };
    this.rules.set(key(bus, name), {
      Name: name,
      EventBusName: bus,
      ...what,
      State: 'ENABLED',
      targets: new Map([[target.Id, target]]),
    });
  }

  lambdaArn(fn: string): string {
    return `arn:aws:lambda:${this.where.region}:${this.where.account}:function:${fn}`;
  }

  get(bus: string, name: string): RegisteredRule | undefined {
    return this.rules.get(key(bus, name));
  }

  list(bus: string): RegisteredRule[] {
    return [...this.rules.values()].filter((r) => r.EventBusName === bus);
  }

  /** API_PutRule: creates or replaces the rule (its targets stay); returns its ARN. */
  putRule(bus: string, body: Record<string, unknown>): RegisteredRule {
    const name = nameOf(body['Name'], 'name');
    const pattern = optString(body['EventPattern'], 'eventPattern', 4096);
    const schedule = optString(body['ScheduleExpression'], 'scheduleExpression', 256);
    const description = optString(body['Description'], 'description', 512);
    const roleArn = optString(body['RoleArn'], 'roleArn', 1600);
    const state = optString(body['State'], 'state', 64) ?? 'ENABLED';
    if (!STATES.includes(state))
      throw constraint(state, 'state', `Member must satisfy enum value set: [${STATES.join(', ')}]`);
    if (pattern === undefined && schedule === undefined)
      throw validation('Parameter(s) EventPattern or ScheduleExpression must be specified.');
    if (schedule !== undefined && bus !== 'default')
      throw validation('ScheduleExpression is supported only on the default event bus.');
    if (pattern !== undefined) checkPattern(pattern);
    if (schedule !== undefined) checkSchedule(schedule);
    const existing = this.get(bus, name);
    if (!existing && this.list(bus).length >= MAX_RULES_PER_BUS)
      throw new AwsRequestError('LimitExceededException', 'The requested resource exceeds the maximum number allowed.');
    const rule: RegisteredRule = {
      Name: name,
      EventBusName: bus,
      ...(pattern !== undefined ? { EventPattern: pattern } : {}),
      ...(schedule !== undefined ? { ScheduleExpression: schedule } : {}),
      State: state,
      ...(description !== undefined ? { Description: description } : {}),
      ...(roleArn !== undefined ? { RoleArn: roleArn } : {}),
      targets: existing?.targets ?? new Map(),
    };
    this.rules.set(key(bus, name), rule);
    this.changed();
    return rule;
  }

  /** API_DeleteRule: idempotent; a rule with targets stays. */
  deleteRule(bus: string, name: string): void {
    const rule = this.get(bus, name);
    if (!rule) return;
    if (rule.targets.size > 0) throw validation("Rule can't be deleted since it has targets.");
    this.rules.delete(key(bus, name));
    this.changed();
  }

  /** API_PutTargets: adds or updates; a target that cannot be taken is a failed entry, the others stay. */
  putTargets(
    bus: string,
    ruleName: string,
    targets: unknown,
  ): { TargetId: string; ErrorCode: string; ErrorMessage: string }[] {
    const rule = this.mustGet(bus, ruleName);
    if (!Array.isArray(targets) || targets.length < 1 || targets.length > 10)
      throw constraint(JSON.stringify(targets), 'targets', 'Member must have length between 1 and 10');
    const parsed = targets.map((t, i) => parseTarget(t, i));
    // The local bus invokes only the functions it loaded: any other target (an SQS queue, a log group,
    // another account's Lambda) is a failed entry naming what it is, never kept to be silently not delivered.
    const failed = parsed.flatMap((t) => {
      const why = this.functionOf(t.Arn) ? undefined : unsupportedTarget(t.Arn, this.where);
      return why ? [{ TargetId: t.Id, ErrorCode: 'UnsupportedTarget', ErrorMessage: why }] : [];
    });
    const taken = parsed.filter((t) => !failed.some((f) => f.TargetId === t.Id));
    const fresh = new Set(taken.map((t) => t.Id).filter((id) => !rule.targets.has(id)));
    if (rule.targets.size + fresh.size > MAX_TARGETS_PER_RULE)
      throw new AwsRequestError('LimitExceededException', `The requested resource exceeds the maximum number allowed.`);
    for (const t of taken) rule.targets.set(t.Id, t);
    this.changed();
    return failed;
  }

  /** API_RemoveTargets: removes those there; the others are no failure. */
  removeTargets(bus: string, ruleName: string, ids: unknown): void {
    const rule = this.mustGet(bus, ruleName);
    if (!Array.isArray(ids) || ids.length < 1 || ids.length > 10)
      throw constraint(JSON.stringify(ids), 'ids', 'Member must have length between 1 and 10');
    for (const id of ids) rule.targets.delete(nameOf(id, 'ids.member'));
    this.changed();
  }

  mustGet(bus: string, name: string): RegisteredRule {
    const rule = this.get(bus, nameOf(name, 'rule'));
    if (!rule)
      throw new AwsRequestError('ResourceNotFoundException', `Rule ${name} does not exist on EventBus ${bus}.`);
    return rule;
  }

  /** What the router delivers: enabled pattern rules, to targets that are functions the bus loaded. */
  routable(): EventRule[] {
    const out: EventRule[] = [];
    for (const r of this.rules.values()) {
      if (r.State === 'DISABLED' || r.EventPattern === undefined) continue;
      const pattern = JSON.parse(r.EventPattern) as unknown;
      for (const { fn, input, retryPolicy, deadLetterQueueArn } of this.targetsOf(r))
        out.push({
          name: r.Name,
          busName: r.EventBusName,
          pattern,
          fn,
          input,
          retryPolicy,
          ...(deadLetterQueueArn ? { deadLetterQueueArn } : {}),
        });
    }
    return out;
  }

  /**
   * What the scheduler fires: every enabled rule with a ScheduleExpression (serverless.yml's and
   * PutRule's alike), with its targets that are functions the bus loaded (schedules.ts).
   */
  schedules(): ScheduledRule[] {
    const out: ScheduledRule[] = [];
    for (const r of this.rules.values()) {
      if (r.State === 'DISABLED' || r.ScheduleExpression === undefined) continue;
      out.push({ name: r.Name, expression: r.ScheduleExpression, targets: this.targetsOf(r) });
    }
    return out;
  }

  private targetsOf(r: RegisteredRule): Target[] {
    const out: Target[] = [];
    for (const t of r.targets.values()) {
      const fn = this.functionOf(t.Arn);
      if (!fn) continue;
      out.push({
        rule: r.Name,
        fn,
        input: inputOf(t),
        retryPolicy: {
          maximumRetryAttempts: t.RetryPolicy?.MaximumRetryAttempts ?? DEFAULT_RETRY_POLICY.maximumRetryAttempts,
          maximumEventAgeSeconds:
            t.RetryPolicy?.MaximumEventAgeInSeconds ?? DEFAULT_RETRY_POLICY.maximumEventAgeSeconds,
        },
        ...(t.DeadLetterConfig?.Arn ? { deadLetterQueueArn: t.DeadLetterConfig.Arn } : {}),
      });
    }
    return out;
  }

  /** A Lambda ARN (optionally with a version or alias) of a function in this region and account. */
  private functionOf(arn: string): FunctionDef | undefined {
    const prefix = `arn:aws:lambda:${this.where.region}:${this.where.account}:function:`;
    if (!arn.startsWith(prefix)) return undefined;
    return this.functions.get(arn.slice(prefix.length).split(':')[0]!);
  }

  private changed(): void {
    this.onChange(this.routable());
  }
}

const key = (bus: string, name: string) => `${bus}\0${name}`;
