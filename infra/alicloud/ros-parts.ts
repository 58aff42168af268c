import * as ros from '@alicloud/ros-cdk-core';

/** The pieces the ROS template (ros-template.ts) builds each function's resources from. */

/** How long the functions' logs are kept (days). */
export const LOG_DAYS = 30;
/** FC 3.0's timeout bounds in seconds (CreateFunction, @alicloud/fc20230330 CreateFunctionInput). */
export const FC_TIMEOUT = { min: 1, max: 86_400 };

/**
 * `rate(5 minutes)` → FC's `@every 5m` (timer triggers:
 * https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/timer-triggers).
 */
export function fcEvery(rate: string): string {
  const m = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(rate.trim());
  if (!m) throw new Error(`schedule ${JSON.stringify(rate)}: only rate(N minutes|hours|days) has an FC timer form`);
  const n = Number(m[1]);
  const unit = m[2]!.startsWith('minute') ? 'm' : m[2]!.startsWith('hour') ? 'h' : 'd';
  return unit === 'd' ? `@every ${n * 24}h` : `@every ${n}${unit}`;
}

export const resourceId = (name: string, suffix: string) =>
  name
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('') + suffix;

/** The pattern file a serverless.yml `eventBridge.pattern` names (`${file(./events/patterns/x.json)}`). */
export function patternFile(pattern: unknown): string {
  const m = typeof pattern === 'string' ? /^\$\{file\(\.\/(.+)\)\}$/.exec(pattern) : null;
  if (!m) throw new Error(`eventBridge pattern ${JSON.stringify(pattern)}: expected \${file(./events/patterns/…)}`);
  return m[1]!;
}

/**
 * The methods of serverless.yml's `httpApi: METHOD /path` for FC's HTTP trigger (HTTPTriggerConfig.methods).
 * `ANY` is chat's webhook (POST) and its health check (GET /chat/healthz): those two, as FC answers a method
 * the trigger does not list itself, and the handler would refuse any other with 405 anyway.
 */
export function httpMethods(httpApi: unknown): string[] {
  const method = (typeof httpApi === 'string' ? httpApi : String((httpApi as { method?: unknown })?.method ?? ''))
    .trim()
    .split(/\s+/)[0]!
    .toUpperCase();
  if (method === 'ANY' || method === '*') return ['GET', 'POST'];
  if (!/^(GET|POST|PUT|DELETE|HEAD|PATCH)$/.test(method))
    throw new Error(`httpApi ${JSON.stringify(httpApi)}: no FC HTTP trigger method for "${method}"`);
  return [method];
}

/** How long a dead letter is kept: SMQ's longest (MessageRetentionPeriod 60–604800 s). */
export const DLQ_RETENTION_SECONDS = 604_800;

/**
 * A function's dead-letter queue: `ALIYUN::MNS::Queue` (https://www.alibabacloud.com/help/doc-detail/116238.html;
 * no typed ROS CDK package for it is published, so a plain RosResource with the documented properties). `arn`
 * is the form EventBridge's DeadLetterQueue takes (`acs:mns:<region>:<account>:/queues/<name>`, PutTargets:
 * https://www.alibabacloud.com/help/en/eventbridge/developer-reference/api-eventbridge-2020-04-01-puttargets);
 * `messagesArn` the form FC's destinations and RAM's mns:SendMessage name (`…/queues/<name>/messages`).
 */
export function deadLetterQueue(stack: ros.Stack, name: string, queueName: string) {
  // DependsOn (by logical id: what ROS CDK renders) keeps a rule or config from naming a queue not yet made.
  const id = resourceId(name, 'Dlq');
  new ros.RosResource(stack, id, {
    type: 'ALIYUN::MNS::Queue',
    properties: { QueueName: queueName, MessageRetentionPeriod: DLQ_RETENTION_SECONDS },
  });
  const arn = `acs:mns:\${ALIYUN::Region}:\${ALIYUN::TenantId}:/queues/${queueName}`;
  return { id, arn: ros.Fn.sub(arn), messagesArn: ros.Fn.sub(`${arn}/messages`) };
}
