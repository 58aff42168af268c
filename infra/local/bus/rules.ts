import { resolve as resolvePath } from 'node:path';
import * as z from 'zod';
import { parseSchedule, type Schedule } from './schedule-expression.ts';
import { ServerlessConfigError, ServerlessDocument, type VariableContext } from './serverless-yaml.ts';
import { busNameOf } from './put-events.ts';

/**
 * serverless.yml → the local bus's routing table: event rules (eventBridge), schedules and HTTP
 * routes (httpApi), each pointing at a function's handler. serverless.yml stays the one source of
 * truth: nothing here is configured twice. Event kinds the bus does not serve become warnings.
 */
import {
  DEFAULT_RETRY_POLICY,
  type FunctionDef,
  type RetryPolicy,
  type RoutingTable,
  type TargetInput,
} from './routing-table.ts';

export {
  DEFAULT_RETRY_POLICY,
  type EventRule,
  type FunctionDef,
  type HttpRoute,
  type RetryPolicy,
  type RoutingTable,
  type ScheduleRule,
  type TargetInput,
} from './routing-table.ts';

const RetryPolicySchema = z.looseObject({
  maximumRetryAttempts: z.number().int().min(0).max(185).optional(),
  maximumEventAge: z.number().int().min(60).max(86_400).optional(),
});
const InputFields = {
  input: z.unknown().optional(),
  inputPath: z.string().optional(),
  inputTransformer: z.unknown().optional(),
};
const EventBridgeSchema = z.looseObject({
  eventBus: z.unknown().optional(),
  /** One of pattern or schedule (serverless allows `eventBridge: { schedule: rate(...) }`). */
  pattern: z.record(z.string(), z.unknown()).optional(),
  schedule: z.string().optional(),
  enabled: z.boolean().optional(),
  name: z.string().optional(),
  retryPolicy: RetryPolicySchema.optional(),
  deadLetterQueueArn: z.unknown().optional(),
  ...InputFields,
});
const ScheduleSchema = z.union([
  z.string(),
  z.looseObject({
    rate: z.union([z.string(), z.array(z.string()).min(1)]),
    enabled: z.boolean().optional(),
    name: z.string().optional(),
    timezone: z.string().optional(),
    ...InputFields,
  }),
]);
const HttpApiSchema = z.union([z.string(), z.looseObject({ method: z.string(), path: z.string() })]);
const FunctionSchema = z.looseObject({
  handler: z.string().regex(/^[^.]+(\/[^/]+)*\.[\w$.]+$/, 'must look like path/to/file.exportName'),
  name: z.string().optional(),
  timeout: z.number().positive().optional(),
  events: z.array(z.record(z.string(), z.unknown())).optional(),
});

function parseAt<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const at = issue && issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
  throw new ServerlessConfigError(`${where}${at}: ${issue?.message ?? 'invalid'}`);
}

export function loadRoutingTable(
  serverlessYml: string,
  ctx: Omit<VariableContext, 'stage'> & { stage?: string },
): RoutingTable {
  // The stage is an option, else provider.stage (which may itself say `${opt:stage, 'x'}`), else dev.
  const optStage = ctx.stage;
  const probe = new ServerlessDocument(serverlessYml, {
    ...ctx,
    stage: optStage ?? 'dev',
    ...(optStage ? { optStage } : {}),
  });
  const declaredStage = probe.rawAt('provider.stage') === undefined ? undefined : probe.get('provider.stage');
  const stage = optStage ?? (typeof declaredStage === 'string' ? declaredStage : 'dev');
  const doc = new ServerlessDocument(serverlessYml, { ...ctx, stage, ...(optStage ? { optStage } : {}) });
  const service = doc.get('service');
  if (typeof service !== 'string' || service === '')
    throw new ServerlessConfigError(`${serverlessYml}: service must be a name`);

  const table: RoutingTable = {
    service,
    stage,
    region: ctx.region,
    buses: [],
    functions: [],
    eventRules: [],
    schedules: [],
    routes: [],
    warnings: [],
  };
  // Only each resource's Type, and a bus's Name, are resolved: other resources may use variables
  // (ssm, cf) the local bus has no business resolving.
  const resources = new Map<string, string>(); // logical id → bus name
  for (const id of Object.keys((doc.rawAt('resources.Resources') ?? {}) as object)) {
    if (doc.get(`resources.Resources.${id}.Type`) !== 'AWS::Events::EventBus') continue;
    const name = doc.get(`resources.Resources.${id}.Properties.Name`);
    if (typeof name !== 'string')
      throw new ServerlessConfigError(`resources.Resources.${id}.Properties.Name: an event bus needs a Name`);
    resources.set(id, name);
    table.buses.push(name);
  }

  // Only payload format 2.0 (the HTTP API default) is produced; a 1.0 handler would get the wrong shape.
  if (doc.rawAt('provider.httpApi.payload') !== undefined && String(doc.get('provider.httpApi.payload')) !== '2.0') {
    throw new ServerlessConfigError('provider.httpApi.payload: the local bus produces payload format 2.0 only');
  }
  const fnKeys = Object.keys((doc.rawAt('functions') ?? {}) as object);
  for (const key of fnKeys) {
    const where = `functions.${key}`;
    // Only the keys the bus uses are resolved: `environment` may hold ${ssm:...} and friends.
    const picked = Object.fromEntries(
      (['handler', 'name', 'timeout', 'events'] as const)
        .filter((k) => doc.rawAt(`${where}.${k}`) !== undefined)
        .map((k) => [k, doc.get(`${where}.${k}`)]),
    );
    const raw = parseAt(FunctionSchema, picked, where);
    const handler = raw.handler;
    const slash = handler.lastIndexOf('/');
    const dot = handler.indexOf('.', slash + 1);
    const fn: FunctionDef = {
      key,
      name: raw.name ?? `${service}-${stage}-${key}`,
      modulePath: resolvePath(doc.dir, handler.slice(0, dot)),
      exportPath: handler.slice(dot + 1).split('.'),
      timeoutSeconds: raw.timeout ?? 6,
    };
    table.functions.push(fn);
    (raw.events ?? []).forEach((ev, i) => addEvent(table, fn, ev, `${where}.events[${i}]`, resources));
  }
  for (const r of table.eventRules)
    if (!table.buses.includes(r.busName) && r.busName !== 'default') table.buses.push(r.busName);
  return table;
}

function addEvent(
  table: RoutingTable,
  fn: FunctionDef,
  ev: Record<string, unknown>,
  where: string,
  resources: ReadonlyMap<string, string>,
): void {
  const [kind] = Object.keys(ev);
  const n = table.eventRules.length + table.schedules.length + table.routes.length + 1;
  if (kind === 'eventBridge') {
    const e = parseAt(EventBridgeSchema, ev.eventBridge, `${where}.eventBridge`);
    if ((e.pattern === undefined) === (e.schedule === undefined)) {
      throw new ServerlessConfigError(`${where}.eventBridge: give exactly one of pattern and schedule`);
    }
    if (e.enabled === false) return;
    if (e.schedule !== undefined) {
      table.schedules.push({
        name: e.name ?? `${fn.name}-rule-${n}`,
        schedule: scheduleOf(e.schedule, `${where}.eventBridge.schedule`),
        fn,
        input: targetInput(e, `${where}.eventBridge`),
        retryPolicy: retryPolicy(e.retryPolicy),
      });
      return;
    }
    table.eventRules.push({
      name: e.name ?? `${fn.name}-rule-${n}`,
      busName: busFrom(e.eventBus, resources, `${where}.eventBridge.eventBus`),
      pattern: e.pattern,
      fn,
      input: targetInput(e, `${where}.eventBridge`),
      retryPolicy: retryPolicy(e.retryPolicy),
      ...(e.deadLetterQueueArn !== undefined ? { deadLetterQueueArn: arnText(e.deadLetterQueueArn) } : {}),
    });
  } else if (kind === 'schedule') {
    const s = parseAt(ScheduleSchema, ev.schedule, `${where}.schedule`);
    const opts = typeof s === 'string' ? { rate: s } : s;
    if (typeof s !== 'string' && s.timezone !== undefined)
      throw new ServerlessConfigError(
        `${where}.schedule.timezone: time zones are not supported by the local bus (rules run in UTC)`,
      );
    if (typeof s !== 'string' && s.enabled === false) return;
    const rates = Array.isArray(opts.rate) ? opts.rate : [opts.rate];
    rates.forEach((expr, i) => {
      const base = (typeof s === 'string' ? undefined : s.name) ?? `${fn.name}-schedule-${n}`;
      table.schedules.push({
        name: `${base}${rates.length > 1 ? `-${i + 1}` : ''}`,
        schedule: scheduleOf(expr, `${where}.schedule`),
        fn,
        input: targetInput(typeof s === 'string' ? {} : s, `${where}.schedule`),
        retryPolicy: DEFAULT_RETRY_POLICY,
      });
    });
  } else if (kind === 'httpApi') {
    const h = parseAt(HttpApiSchema, ev.httpApi, `${where}.httpApi`);
    const [method, path] =
      typeof h === 'string' ? (h.trim() === '*' ? ['ANY', '*'] : h.trim().split(/\s+/, 2)) : [h.method, h.path];
    if (!method || !path || (path !== '*' && !path.startsWith('/')))
      throw new ServerlessConfigError(`${where}.httpApi: expected "METHOD /path" or "*"`);
    const m = method === '*' ? 'ANY' : method.toUpperCase();
    table.routes.push({ method: m, path, routeKey: path === '*' ? '$default' : `${m} ${path}`, fn });
  } else {
    table.warnings.push(`${where}: ${kind ?? 'empty'} events are not served by the local bus`);
  }
}

function scheduleOf(expr: string, where: string): Schedule {
  try {
    return parseSchedule(expr);
  } catch (err) {
    throw new ServerlessConfigError(`${where}: ${(err as Error).message}`);
  }
}

function targetInput(
  e: { input?: unknown; inputPath?: string; inputTransformer?: unknown },
  where: string,
): TargetInput {
  if (e.inputTransformer !== undefined)
    throw new ServerlessConfigError(`${where}.inputTransformer: not supported by the local bus`);
  if (e.input !== undefined) {
    if (typeof e.input !== 'string') return { kind: 'constant', value: e.input };
    try {
      return { kind: 'constant', value: JSON.parse(e.input) };
    } catch {
      throw new ServerlessConfigError(`${where}.input: a string input must be JSON`);
    }
  }
  if (e.inputPath !== undefined) {
    if (!/^\$(\.[\w-]+)*$/.test(e.inputPath))
      throw new ServerlessConfigError(`${where}.inputPath: only $ and $.a.b paths are supported`);
    return { kind: 'path', path: e.inputPath };
  }
  return { kind: 'event' };
}

function retryPolicy(p: z.infer<typeof RetryPolicySchema> | undefined): RetryPolicy {
  return {
    maximumRetryAttempts: p?.maximumRetryAttempts ?? DEFAULT_RETRY_POLICY.maximumRetryAttempts,
    maximumEventAgeSeconds: p?.maximumEventAge ?? DEFAULT_RETRY_POLICY.maximumEventAgeSeconds,
  };
}

/** A bus given as a name, an ARN, or a `Ref`/`GetAtt` to an AWS::Events::EventBus resource. */
function busFrom(v: unknown, resources: ReadonlyMap<string, string>, where: string): string {
  if (v === undefined) return 'default';
  if (typeof v === 'string') return busNameOf(v);
  const ref = logicalId(v);
  const name = ref === undefined ? undefined : resources.get(ref);
  if (name !== undefined) return name;
  throw new ServerlessConfigError(
    `${where}: expected a bus name, an ARN, or a Ref/GetAtt to an AWS::Events::EventBus resource`,
  );
}

function logicalId(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.Ref === 'string') return o.Ref;
  const att = o['Fn::GetAtt'];
  if (Array.isArray(att) && typeof att[0] === 'string') return att[0];
  return undefined;
}

/** DLQ ARNs are recorded, not delivered to: a GetAtt becomes a readable `<LogicalId>.Arn`. */
function arnText(v: unknown): string {
  if (typeof v === 'string') return v;
  const id = logicalId(v);
  return id === undefined ? JSON.stringify(v) : `${id}.Arn`;
}
