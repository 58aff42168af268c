/**
 * What Alibaba Cloud would create from a ROS template, read as the embedded stack's Alibaba target
 * needs it (issue #35): the event bus's rules (`ALIYUN::EventBridge::Rule`), the functions
 * (`ALIYUN::FC3::Function`) with their async-invocation settings (`ALIYUN::FC3::AsyncInvokeConfig`),
 * and their timer and HTTP triggers (`ALIYUN::FC3::Trigger`). The template is the deployable, as
 * serverless.yml is for the AWS bus: the stack reads the one `npm run package -- --target alibaba`
 * writes, so what runs locally is what would be deployed. Written from ROS's documents, it imports
 * nothing of the product.
 *
 * ROS's intrinsic functions resolved here (https://www.alibabacloud.com/help/en/ros/user-guide/functions):
 * `Ref` (a parameter, its given value else its Default; the pseudo parameters `ALIYUN::Region` and
 * `ALIYUN::TenantId`), `Fn::Sub` (`${Name}` replaced the same way) and `Fn::GetAtt` of a function's
 * `FunctionName`. Anything else is refused by name: a template this reader cannot resolve must not
 * half-run.
 */

export interface RosFunction {
  /** FC's function name. */
  name: string;
  /** The code package's name: `<CodePrefix>/<package>.zip` (one package per serverless.yml function). */
  package: string;
  timeoutSeconds: number;
  memorySize: number;
  /** ALIYUN::FC3::AsyncInvokeConfig: retries of a failed async invocation (FC's default 3) and event age. */
  maxAsyncRetryAttempts: number;
  maxAsyncEventAgeInSeconds: number;
  /** The async config's failure destination, where an invocation out of retries goes. */
  onFailure?: string;
}

export interface RosRule {
  name: string;
  bus: string;
  /** Alibaba's pattern syntax. */
  pattern: Record<string, unknown>;
  /** The FC functions its `acs.fc.function` targets name. */
  functions: string[];
  enabled: boolean;
}

export interface RosTimer {
  function: string;
  name: string;
  /** `@every` interval (ms). */
  everyMs: number;
  payload: string;
}

export interface RosHttpTrigger {
  function: string;
  name: string;
  methods: string[];
}

export interface AlibabaDeployment {
  functions: Map<string, RosFunction>;
  rules: RosRule[];
  timers: RosTimer[];
  http: RosHttpTrigger[];
}

export class RosTemplateError extends Error {
  override name = 'RosTemplateError';
}

type Resource = { Type?: string; Properties?: Record<string, unknown> };

/** FC's async defaults (@alicloud/fc20230330 AsyncConfig: 3 retries; max age 86400 s). */
const FC_ASYNC_DEFAULTS = { retries: 3, maxAgeSeconds: 86_400 };

/**
 * FC 3.0 timer triggers' `@every` form
 * (https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/timer-triggers):
 * `@every 4m`, `@every 1h30m`; cron expressions are refused here (the template writes `@every` only).
 */
export function everyMs(expression: string): number {
  const m = /^@every\s+((?:\d+[hms])+)$/.exec(expression.trim());
  if (!m) throw new RosTemplateError(`timer ${JSON.stringify(expression)}: only "@every <n>h<n>m<n>s" is served`);
  let ms = 0;
  for (const [, n, unit] of m[1]!.matchAll(/(\d+)([hms])/g))
    ms += Number(n) * (unit === 'h' ? 3_600_000 : unit === 'm' ? 60_000 : 1_000);
  if (ms < 60_000) throw new RosTemplateError(`timer ${expression}: FC's shortest interval is one minute`);
  return ms;
}

export function readAlibabaTemplate(
  template: Record<string, unknown>,
  o: { parameters?: Record<string, string>; regionId: string; accountId: string },
): AlibabaDeployment {
  const resources = (template['Resources'] ?? {}) as Record<string, Resource>;
  const declared = (template['Parameters'] ?? {}) as Record<string, { Default?: unknown }>;
  const param = (name: string): string => {
    if (name === 'ALIYUN::Region') return o.regionId;
    if (name === 'ALIYUN::TenantId') return o.accountId;
    const v = o.parameters?.[name] ?? declared[name]?.Default;
    if (v === undefined) throw new RosTemplateError(`parameter ${name}: no value given and no Default`);
    return String(v);
  };
  const resolve = (v: unknown, where: string): string => {
    if (typeof v === 'string' || typeof v === 'number') return String(v);
    if (v !== null && typeof v === 'object') {
      const o_ = v as Record<string, unknown>;
      if (typeof o_['Ref'] === 'string') return param(o_['Ref']);
      if (typeof o_['Fn::Sub'] === 'string') return o_['Fn::Sub'].replace(/\$\{([^}]+)\}/g, (_, n: string) => param(n));
      const att = o_['Fn::GetAtt'];
      if (Array.isArray(att) && att[1] === 'FunctionName') {
        const r = resources[String(att[0])];
        if (r?.Type !== 'ALIYUN::FC3::Function') throw new RosTemplateError(`${where}: no function ${String(att[0])}`);
        return resolve(r.Properties?.['FunctionName'], `${String(att[0])}.FunctionName`);
      }
    }
    throw new RosTemplateError(`${where}: ${JSON.stringify(v)} cannot be resolved offline`);
  };

  const functions = new Map<string, RosFunction>();
  for (const [id, r] of Object.entries(resources)) {
    if (r.Type !== 'ALIYUN::FC3::Function') continue;
    const p = r.Properties ?? {};
    const name = resolve(p['FunctionName'], `${id}.FunctionName`);
    const object = resolve((p['Code'] as Record<string, unknown> | undefined)?.['OssObjectName'], `${id}.Code`);
    const pkg = /([^/]+)\.zip$/.exec(object)?.[1];
    if (!pkg) throw new RosTemplateError(`${id}.Code: ${object} is not a .zip package`);
    functions.set(name, {
      name,
      package: pkg,
      timeoutSeconds: Number(p['Timeout'] ?? 3),
      memorySize: Number(p['MemorySize'] ?? 128),
      maxAsyncRetryAttempts: FC_ASYNC_DEFAULTS.retries,
      maxAsyncEventAgeInSeconds: FC_ASYNC_DEFAULTS.maxAgeSeconds,
    });
  }
  const fn = (v: unknown, where: string): RosFunction => {
    const name = resolve(v, where);
    const f = functions.get(name);
    if (!f) throw new RosTemplateError(`${where}: no function ${name} in the template`);
    return f;
  };

  const rules: RosRule[] = [];
  const timers: RosTimer[] = [];
  const http: RosHttpTrigger[] = [];
  for (const [id, r] of Object.entries(resources)) {
    const p = r.Properties ?? {};
    if (r.Type === 'ALIYUN::FC3::AsyncInvokeConfig') {
      const f = fn(p['FunctionName'], `${id}.FunctionName`);
      if (p['MaxAsyncRetryAttempts'] !== undefined) f.maxAsyncRetryAttempts = Number(p['MaxAsyncRetryAttempts']);
      if (p['MaxAsyncEventAgeInSeconds'] !== undefined)
        f.maxAsyncEventAgeInSeconds = Number(p['MaxAsyncEventAgeInSeconds']);
      const onFailure = (p['DestinationConfig'] as { OnFailure?: { Destination?: unknown } } | undefined)?.OnFailure;
      if (onFailure?.Destination !== undefined) f.onFailure = resolve(onFailure.Destination, `${id}.OnFailure`);
    } else if (r.Type === 'ALIYUN::EventBridge::Rule') {
      const targets = (p['Targets'] ?? []) as Record<string, unknown>[];
      const pattern = typeof p['FilterPattern'] === 'string' ? JSON.parse(p['FilterPattern']) : p['FilterPattern'];
      rules.push({
        name: resolve(p['RuleName'], `${id}.RuleName`),
        bus: resolve(p['EventBusName'], `${id}.EventBusName`),
        pattern: pattern as Record<string, unknown>,
        enabled: p['Status'] !== 'DISABLE',
        functions: targets.map((t, i) => {
          if (t['Type'] !== 'acs.fc.function')
            throw new RosTemplateError(`${id}.Targets[${i}]: ${String(t['Type'])} targets are not served`);
          // The endpoint is the function's ARN: acs:fc:<region>:<account>:functions/<name>.
          const arn = resolve(t['Endpoint'], `${id}.Targets[${i}].Endpoint`);
          return fn(/:functions\/([^/]+)$/.exec(arn)?.[1] ?? arn, `${id}.Targets[${i}].Endpoint`).name;
        }),
      });
    } else if (r.Type === 'ALIYUN::FC3::Trigger') {
      const f = fn(p['FunctionName'], `${id}.FunctionName`);
      const config = (p['TriggerConfig'] ?? {}) as Record<string, unknown>;
      const name = resolve(p['TriggerName'], `${id}.TriggerName`);
      if (p['TriggerType'] === 'timer') {
        if (config['enable'] === false) continue;
        timers.push({
          function: f.name,
          name,
          everyMs: everyMs(String(config['cronExpression'])),
          payload: String(config['payload'] ?? ''),
        });
      } else if (p['TriggerType'] === 'http') {
        http.push({ function: f.name, name, methods: (config['methods'] as string[] | undefined) ?? ['GET'] });
      } else throw new RosTemplateError(`${id}: ${String(p['TriggerType'])} triggers are not served`);
    }
  }
  return { functions, rules, timers, http };
}
