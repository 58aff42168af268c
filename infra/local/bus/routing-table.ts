import type { Schedule } from './schedule-expression.ts';

/** The local bus's routing table (rules.ts loads it from serverless.yml): functions, rules, schedules, routes. */

/** AWS defaults: 185 retry attempts, 24 hours of event age. */
export interface RetryPolicy {
  maximumRetryAttempts: number;
  maximumEventAgeSeconds: number;
}
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 };

export interface FunctionDef {
  key: string;
  /** The deployed name: `name:` or `<service>-<stage>-<key>`. */
  name: string;
  /** Absolute module path without extension, and the export to call (`handler`, or nested `a.b`). */
  modulePath: string;
  exportPath: string[];
  timeoutSeconds: number;
}

/** What the target receives: the event, a fixed `input`, or the part at `inputPath`. */
export type TargetInput = { kind: 'event' } | { kind: 'constant'; value: unknown } | { kind: 'path'; path: string };

export interface EventRule {
  name: string;
  busName: string;
  pattern: unknown;
  fn: FunctionDef;
  input: TargetInput;
  retryPolicy: RetryPolicy;
  deadLetterQueueArn?: string;
}

export interface ScheduleRule {
  name: string;
  schedule: Schedule;
  fn: FunctionDef;
  input: TargetInput;
  retryPolicy: RetryPolicy;
}

export interface HttpRoute {
  /** Upper-case method or `ANY`; path with `{param}` / `{proxy+}` segments, or `*` for the catch-all. */
  method: string;
  path: string;
  routeKey: string;
  fn: FunctionDef;
}

export interface RoutingTable {
  service: string;
  stage: string;
  region: string;
  buses: string[];
  functions: FunctionDef[];
  eventRules: EventRule[];
  schedules: ScheduleRule[];
  routes: HttpRoute[];
  warnings: string[];
}
