import { InvalidPatternError } from '../../../events/pattern-error.ts';
import { matchesPattern, validatePattern } from '../../../events/pattern.ts';
import { AwsRequestError } from './errors.ts';
import type { RoutingTable } from './rules.ts';

/**
 * The read side of EventBridge's control plane over the rules the bus loaded from serverless.yml, so
 * `aws events list-rules` and the SDK's ListRulesCommand see what a deployment would create. Shapes and
 * errors from the EventBridge API Reference (https://docs.aws.amazon.com/eventbridge/latest/APIReference/):
 * API_ListRules (NamePrefix, EventBusName, Limit 1–100, NextToken), API_DescribeRule, API_DescribeEventBus
 * (Name defaults to `default`), API_TestEventPattern (the event must carry id, account, source, time, region,
 * resources and detail-type). A rule or bus that is not there is ResourceNotFoundException (400).
 * Schedules are rules on the default bus (serverless' `eventBridge: { schedule }`), with ScheduleExpression.
 */
export type ControlOperation = (body: Record<string, unknown>) => unknown;

interface RuleView {
  Name: string;
  Arn: string;
  EventPattern?: string;
  ScheduleExpression?: string;
  State: 'ENABLED';
  EventBusName: string;
}

const REQUIRED_EVENT_FIELDS = ['id', 'account', 'source', 'time', 'region', 'resources', 'detail-type'];

export function controlPlane(
  table: RoutingTable | undefined,
  buses: () => ReadonlySet<string>,
  where: { region: string; account: string },
): Record<string, ControlOperation> {
  const arn = (kind: string, bus: string, name?: string) =>
    `arn:aws:events:${where.region}:${where.account}:${kind}/` +
    (name === undefined ? bus : bus === 'default' ? name : `${bus}/${name}`);
  const rules = (): RuleView[] => [
    ...(table?.eventRules ?? []).map((r) => ({
      Name: r.name,
      Arn: arn('rule', r.busName, r.name),
      EventPattern: JSON.stringify(r.pattern),
      State: 'ENABLED' as const,
      EventBusName: r.busName,
    })),
    ...(table?.schedules ?? []).map((s) => ({
      Name: s.name,
      Arn: arn('rule', 'default', s.name),
      ScheduleExpression: s.schedule.expression,
      State: 'ENABLED' as const,
      EventBusName: 'default',
    })),
  ];
  const busOf = (body: Record<string, unknown>, field: string): string => {
    const v = body[field];
    if (v === undefined) return 'default';
    if (typeof v !== 'string' || v === '') throw validation(`${field} must be a non-empty string`);
    // An ARN names the bus too (API_ListRules: "the name or ARN of the event bus").
    return v.startsWith('arn:') ? v.slice(v.lastIndexOf('/') + 1) : v;
  };
  const knownBus = (bus: string) => bus === 'default' || buses().has(bus);

  return {
    ListRules(body) {
      const bus = busOf(body, 'EventBusName');
      if (!knownBus(bus)) throw notFound(`Event bus ${bus} does not exist.`);
      const prefix = typeof body['NamePrefix'] === 'string' ? body['NamePrefix'] : '';
      const limit = body['Limit'] === undefined ? 100 : Number(body['Limit']);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw validation('Limit must be between 1 and 100');
      const all = rules()
        .filter((r) => r.EventBusName === bus && r.Name.startsWith(prefix))
        .sort((a, b) => (a.Name < b.Name ? -1 : 1));
      const start = typeof body['NextToken'] === 'string' ? Number(body['NextToken']) : 0;
      if (!Number.isInteger(start) || start < 0) throw validation('The NextToken is not valid');
      const page = all.slice(start, start + limit);
      return { Rules: page, ...(start + limit < all.length ? { NextToken: String(start + limit) } : {}) };
    },
    DescribeRule(body) {
      const name = body['Name'];
      if (typeof name !== 'string' || name === '') throw validation('Name must be a non-empty string');
      const bus = busOf(body, 'EventBusName');
      const rule = rules().find((r) => r.Name === name && r.EventBusName === bus);
      if (!rule) throw notFound(`Rule ${name} does not exist on EventBus ${bus}.`);
      return { ...rule, CreatedBy: where.account };
    },
    DescribeEventBus(body) {
      const bus = busOf(body, 'Name');
      if (!knownBus(bus)) throw notFound(`Event bus ${bus} does not exist.`);
      return { Name: bus, Arn: arn('event-bus', bus) };
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
