import { InvalidPatternError } from '../../../events/pattern-error.ts';
import { matchesPattern, validatePattern } from '../../../events/pattern.ts';
import { AwsRequestError } from './errors.ts';
import type { RegisteredRule, RuleRegistry } from './rule-registry.ts';

/**
 * EventBridge's control plane over the bus's rules (rule-registry.ts: those serverless.yml made, and
 * those PutRule/PutTargets added since), so `aws events list-rules` and the SDK's ListRulesCommand see
 * what a deployment would create, and `aws events put-rule` / `put-targets` change what is routed. Shapes and
 * errors from the EventBridge API Reference (https://docs.aws.amazon.com/eventbridge/latest/APIReference/):
 * API_ListRules (NamePrefix, EventBusName, Limit 1–100, NextToken), API_DescribeRule, API_DescribeEventBus
 * (Name defaults to `default`), API_TestEventPattern (the event must carry id, account, source, time, region,
 * resources and detail-type). A rule or bus that is not there is ResourceNotFoundException (400).
 * Schedules are rules on the default bus (serverless' `eventBridge: { schedule }`), with ScheduleExpression.
 */
export type ControlOperation = (body: Record<string, unknown>) => unknown;

const REQUIRED_EVENT_FIELDS = ['id', 'account', 'source', 'time', 'region', 'resources', 'detail-type'];

export function controlPlane(
  registry: RuleRegistry,
  buses: () => ReadonlySet<string>,
  where: { region: string; account: string },
): Record<string, ControlOperation> {
  const arn = (kind: string, bus: string, name?: string) =>
    `arn:aws:events:${where.region}:${where.account}:${kind}/` +
    (name === undefined ? bus : bus === 'default' ? name : `${bus}/${name}`);
  const view = (r: RegisteredRule) => ({
    Name: r.Name,
    Arn: arn('rule', r.EventBusName, r.Name),
    ...(r.EventPattern !== undefined ? { EventPattern: r.EventPattern } : {}),
    ...(r.ScheduleExpression !== undefined ? { ScheduleExpression: r.ScheduleExpression } : {}),
    State: r.State,
    ...(r.Description !== undefined ? { Description: r.Description } : {}),
    ...(r.RoleArn !== undefined ? { RoleArn: r.RoleArn } : {}),
    EventBusName: r.EventBusName,
  });
  const busOf = (body: Record<string, unknown>, field: string): string => {
    const v = body[field];
    if (v === undefined) return 'default';
    if (typeof v !== 'string' || v === '') throw validation(`${field} must be a non-empty string`);
    // An ARN names the bus too (API_ListRules: "the name or ARN of the event bus").
    return v.startsWith('arn:') ? v.slice(v.lastIndexOf('/') + 1) : v;
  };
  const knownBus = (bus: string) => bus === 'default' || buses().has(bus);
  /** The bus a write names, which must exist (API_PutRule, API_PutTargets: ResourceNotFoundException). */
  const existingBus = (body: Record<string, unknown>): string => {
    const bus = busOf(body, 'EventBusName');
    if (!knownBus(bus)) throw notFound(`Event bus ${bus} does not exist.`);
    return bus;
  };
  const page = <T>(body: Record<string, unknown>, all: T[]): { items: T[]; next?: string } => {
    const limit = body['Limit'] === undefined ? 100 : Number(body['Limit']);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw validation('Limit must be between 1 and 100');
    const start = typeof body['NextToken'] === 'string' ? Number(body['NextToken']) : 0;
    if (!Number.isInteger(start) || start < 0) throw validation('The NextToken is not valid');
    return {
      items: all.slice(start, start + limit),
      ...(start + limit < all.length ? { next: String(start + limit) } : {}),
    };
  };

  return {
    ListRules(body) {
      const bus = existingBus(body);
      const prefix = typeof body['NamePrefix'] === 'string' ? body['NamePrefix'] : '';
      const all = registry
        .list(bus)
        .filter((r) => r.Name.startsWith(prefix))
        .sort((a, b) => (a.Name < b.Name ? -1 : 1))
        .map(view);
      const p = page(body, all);
      return { Rules: p.items, ...(p.next ? { NextToken: p.next } : {}) };
    },
    DescribeRule(body) {
      const name = body['Name'];
      if (typeof name !== 'string' || name === '') throw validation('Name must be a non-empty string');
      const bus = busOf(body, 'EventBusName');
      const rule = registry.get(bus, name);
      if (!rule) throw notFound(`Rule ${name} does not exist on EventBus ${bus}.`);
      return { ...view(rule), CreatedBy: where.account };
    },
    DescribeEventBus(body) {
      const bus = busOf(body, 'Name');
      if (!knownBus(bus)) throw notFound(`Event bus ${bus} does not exist.`);
      return { Name: bus, Arn: arn('event-bus', bus) };
    },
    PutRule(body) {
      const rule = registry.putRule(existingBus(body), body);
      return { RuleArn: arn('rule', rule.EventBusName, rule.Name) };
    },
    DeleteRule(body) {
      const name = body['Name'];
      if (typeof name !== 'string' || name === '') throw validation('Name must be a non-empty string');
      registry.deleteRule(existingBus(body), name);
      return {};
    },
    PutTargets(body) {
      const failed = registry.putTargets(existingBus(body), String(body['Rule'] ?? ''), body['Targets']);
      return { FailedEntryCount: failed.length, FailedEntries: failed };
    },
    RemoveTargets(body) {
      registry.removeTargets(existingBus(body), String(body['Rule'] ?? ''), body['Ids']);
      return { FailedEntryCount: 0, FailedEntries: [] };
    },
    ListTargetsByRule(body) {
      const rule = registry.mustGet(existingBus(body), String(body['Rule'] ?? ''));
      const p = page(body, [...rule.targets.values()]);
      return { Targets: p.items, ...(p.next ? { NextToken: p.next } : {}) };
    },
    TestEventPattern(body) {
      const pattern = parseJson(body['EventPattern'], 'EventPattern');
      const event = parseJson(body['Event'], 'Event');
      try {
        validatePattern(pattern);
      } catch (err) {
        if (err instanceof InvalidPatternError) throw new AwsRequestError('InvalidEventPatternException', err.message);
        throw err;
      }
      const missing = REQUIRED_EVENT_FIELDS.filter(
        (f) => typeof event !== 'object' || event === null || !(f in (event as object)),
      );
      if (missing.length > 0)
        throw validation(`Parameter Event is not valid: missing required field(s) ${missing.join(', ')}`);
      return { Result: matchesPattern(pattern, event) };
    },
  };
}

function parseJson(v: unknown, field: string): unknown {
  if (typeof v !== 'string') throw validation(`${field} must be a JSON string`);
  try {
    return JSON.parse(v);
  } catch {
    throw field === 'EventPattern'
      ? new AwsRequestError('InvalidEventPatternException', 'Event pattern is not valid. Reason: not valid JSON')
      : validation(`${field} is not valid JSON`);
  }
}

const validation = (message: string) => new AwsRequestError('ValidationException', message);
const notFound = (message: string) => new AwsRequestError('ResourceNotFoundException', message);
