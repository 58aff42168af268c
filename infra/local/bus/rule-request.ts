import { InvalidPatternError } from '../../../events/pattern-error.ts';
import { validatePattern } from '../../../events/pattern.ts';
import { CronError } from './cron.ts';
import { AwsRequestError } from './errors.ts';
import { parseSchedule } from './schedule-expression.ts';
import type { TargetInput } from './rules.ts';

/**
 * The checks of a rule request's fields (PutRule, PutTargets), as the EventBridge API Reference writes
 * them (rule-registry.ts names each page), and a target's input as the router reads it.
 */

export interface TargetView {
  Id: string;
  Arn: string;
  Input?: string;
  InputPath?: string;
  InputTransformer?: unknown;
  RoleArn?: string;
  RetryPolicy?: { MaximumRetryAttempts?: number; MaximumEventAgeInSeconds?: number };
  DeadLetterConfig?: { Arn?: string };
}

const NAME = /^[.\-_A-Za-z0-9]{1,64}$/;

export function inputOf(t: TargetView): TargetInput {
  if (t.Input !== undefined) return { kind: 'constant', value: JSON.parse(t.Input) as unknown };
  if (t.InputPath !== undefined) return { kind: 'path', path: t.InputPath };
  return { kind: 'event' };
}

export function parseTarget(raw: unknown, i: number): TargetView {
  const where = `targets.${i + 1}.member`;
  if (typeof raw !== 'object' || raw === null) throw validation(`${where} must be a structure`);
  const t = raw as Record<string, unknown>;
  const id = nameOf(t['Id'], `${where}.id`);
  const arn = t['Arn'];
  if (typeof arn !== 'string' || arn.length < 1 || arn.length > 1600)
    throw constraint(String(arn), `${where}.arn`, 'Member must have length between 1 and 1600');
  const inputs = ['Input', 'InputPath', 'InputTransformer'].filter((k) => t[k] !== undefined);
  if (inputs.length > 1)
    throw validation(`Target ${id}: only one of Input, InputPath, or InputTransformer must be provided.`);
  if (typeof t['Input'] === 'string') {
    try {
      JSON.parse(t['Input']);
    } catch {
      throw validation(`Target ${id}: Input is not valid JSON.`);
    }
  }
  if (t['InputPath'] !== undefined && (typeof t['InputPath'] !== 'string' || !/^\$(\.[\w-]+)*$/.test(t['InputPath'])))
    throw validation(`Target ${id}: InputPath is not valid (the local bus takes $ and $.a.b).`);
  if (t['InputTransformer'] !== undefined)
    throw validation(`Target ${id}: InputTransformer is not supported by the local bus.`);
  const retry = t['RetryPolicy'] as TargetView['RetryPolicy'] | undefined;
  const attempts = retry?.MaximumRetryAttempts;
  if (attempts !== undefined && !(Number.isInteger(attempts) && attempts >= 0 && attempts <= 185))
    throw constraint(
      String(attempts),
      `${where}.retryPolicy.maximumRetryAttempts`,
      'Member must have value between 0 and 185',
    );
  const age = retry?.MaximumEventAgeInSeconds;
  if (age !== undefined && !(Number.isInteger(age) && age >= 60 && age <= 86_400))
    throw constraint(
      String(age),
      `${where}.retryPolicy.maximumEventAgeInSeconds`,
      'Member must have value between 60 and 86400',
    );
  return { ...(t as object), Id: id, Arn: arn } as TargetView;
}

/**
 * rate(value unit) or cron(six fields), as the EventBridge user guide gives them
 * (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html); AWS answers
 * anything else with ValidationException "Parameter ScheduleExpression is not valid.".
 */
export function checkSchedule(text: string): void {
  try {
    parseSchedule(text);
  } catch (err) {
    if (err instanceof CronError) throw validation(`Parameter ScheduleExpression is not valid. (${err.message})`);
    throw err;
  }
}

/** Services by an ARN's service field, as EventBridge's target types name them (eb-targets.html). */
const TARGET_KINDS: Record<string, string> = {
  sqs: 'an SQS queue',
  sns: 'an SNS topic',
  logs: 'a CloudWatch Logs log group',
  kinesis: 'a Kinesis stream',
  firehose: 'a Firehose stream',
  states: 'a Step Functions state machine',
  events: 'an event bus or API destination',
  ecs: 'an ECS task',
  batch: 'a Batch job queue',
  ssm: 'a Systems Manager document',
  codebuild: 'a CodeBuild project',
};

/**
 * Why a target the bus did not load cannot be taken
 * (target types: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-targets.html).
 */
export function unsupportedTarget(arn: string, where: { region: string; account: string }): string {
  const [, , service = '', region = '', account = ''] = arn.split(':');
  const what =
    service === 'lambda'
      ? region === where.region && account === where.account
        ? 'a Lambda function the local bus did not load from serverless.yml'
        : `a Lambda function outside this bus's region and account (${where.region}, ${where.account})`
      : (TARGET_KINDS[service] ?? `a ${service || 'non-ARN'} target`);
  return `The local bus delivers only to the Lambda functions it loaded; ${arn} is ${what}: not supported.`;
}

export function checkPattern(text: string): void {
  let pattern: unknown;
  try {
    pattern = JSON.parse(text);
  } catch {
    throw new AwsRequestError('InvalidEventPatternException', 'Event pattern is not valid. Reason: not valid JSON');
  }
  try {
    validatePattern(pattern);
  } catch (err) {
    if (err instanceof InvalidPatternError) throw new AwsRequestError('InvalidEventPatternException', err.message);
    throw err;
  }
}

export function nameOf(v: unknown, field: string): string {
  if (typeof v !== 'string' || !NAME.test(v))
    throw constraint(
      String(v),
      field,
      v === undefined
        ? 'Member must not be null'
        : 'Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ and have length between 1 and 64',
    );
  return v;
}

export function optString(v: unknown, field: string, max: number): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max)
    throw constraint(String(v), field, `Member must have length less than or equal to ${max}`);
  return v;
}

/** The shape of AWS's request validation message ("1 validation error detected: Value … at '…' failed …"). */
export const constraint = (value: string, field: string, rule: string) =>
  validation(`1 validation error detected: Value '${value}' at '${field}' failed to satisfy constraint: ${rule}`);
export const validation = (message: string) => new AwsRequestError('ValidationException', message);
