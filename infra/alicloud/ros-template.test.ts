/**
 * The Alibaba target's ROS template (issue #35) against the AWS stack it mirrors and against
 * Alibaba's own SDK models: every serverless.yml function is an FC 3.0 function on nodejs20 with
 * its triggers (schedules as timers of the same period, the chat route as an HTTP trigger, each
 * pattern as rules in Alibaba's syntax), least-privilege roles, and definitions whose every field
 * is one FC 3.0's API (`@alicloud/fc20230330` models) knows, of the type it expects.
 */
import * as fc from '@alicloud/fc20230330';
import * as ros from '@alicloud/ros20190910';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toAlibabaPatterns } from '../../events/alibaba-pattern.ts';
import {
  alibabaTemplate,
  alibabaTemplateInput,
  fcEvery,
  FC_RUNTIME,
  httpMethods,
  oosParameters,
  ROS_TEMPLATE_MAX_BYTES,
} from './ros-template.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const input = alibabaTemplateInput(ROOT, 'prod');
const yml = { functions: input.functions, provider: input.defaults };
const { patterns, cloudActions } = input;
const template = alibabaTemplate(input);
type Resource = { Type: string; Properties: Record<string, unknown> };
const resources = Object.values(template['Resources'] as Record<string, Resource>);
const ofType = (t: string) => resources.filter((r) => r.Type === t);
/** Resolves `{Fn::GetAtt: [X, FunctionName]}` to the function it names. */
const fnNameOf = (ref: unknown): string => {
  const getAtt = (ref as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
  const r = getAtt ? (template['Resources'] as Record<string, Resource>)[getAtt[0]] : undefined;
  return String(r?.Properties['FunctionName'] ?? ref);
};

/**
 * Every key of `value` is a field of the darabonba model `model` (its wire names), of the type its
 * `types()` declares, recursively; ROS's PascalCase properties are FC's camelCase API fields.
 * ROS intrinsics (`Ref`, `Fn::*`) stand for strings.
 */
function shapeProblems(model: unknown, value: unknown, path: string, pascal: boolean): string[] {
  const m = model as { names(): Record<string, string>; types(): Record<string, unknown> };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [`${path}: expected an object`];
  const byWire = new Map(Object.entries(m.names()).map(([field, wire]) => [wire, field]));
  const out: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const wire = pascal ? k.charAt(0).toLowerCase() + k.slice(1) : k;
    const field = byWire.get(wire) ?? [...byWire.entries()].find(([w]) => w.toLowerCase() === wire.toLowerCase())?.[1];
    if (field === undefined) {
      out.push(`${path}.${k}: not a field of ${(model as { name: string }).name}`);
      continue;
    }
    out.push(...typeProblems(m.types()[field], v, `${path}.${k}`, pascal));
  }
  return out;
}
function typeProblems(type: unknown, v: unknown, path: string, pascal: boolean): string[] {
  const intrinsic =
    v !== null && typeof v === 'object' && Object.keys(v).some((k) => k === 'Ref' || k.startsWith('Fn::'));
  if (type === 'string') return typeof v === 'string' || intrinsic ? [] : [`${path}: expected a string`];
  if (type === 'number') return typeof v === 'number' ? [] : [`${path}: expected a number`];
  if (type === 'boolean') return typeof v === 'boolean' ? [] : [`${path}: expected a boolean`];
  if (typeof type === 'function') return shapeProblems(type, v, path, pascal);
  const t = type as { type?: string; itemType?: unknown };
  if (t?.type === 'array')
    return Array.isArray(v)
      ? v.flatMap((x, i) => typeProblems(t.itemType, x, `${path}[${i}]`, pascal))
      : [`${path}: expected an array`];
  if (t?.type === 'map') return v !== null && typeof v === 'object' ? [] : [`${path}: expected a map`];
  return [];
}

describe('the Alibaba ROS template', () => {
  it('declares every serverless.yml function on FC 3.0 (nodejs20), with its timeout and memory', () => {
    const fns = ofType('ALIYUN::FC3::Function');
    expect(fns.map((f) => f.Properties['FunctionName']).sort()).toEqual(
      Object.keys(yml.functions)
        .map((n) => `gpu-reflex-prod-${n}`)
        .sort(),
    );
    for (const [name, f] of Object.entries(yml.functions)) {
      const p = fns.find((x) => x.Properties['FunctionName'] === `gpu-reflex-prod-${name}`)!.Properties;
      expect(p['Runtime']).toBe(FC_RUNTIME);
      expect(p['Timeout']).toBe(f.timeout ?? yml.provider.timeout);
      expect(p['MemorySize']).toBe(f.memorySize ?? yml.provider.memorySize);
      expect(p['VpcConfig']).toBeDefined();
      // Logs to the stack's SLS logstore.
      expect(p['LogConfig']).toMatchObject({
        Project: { 'Fn::GetAtt': ['FunctionLogs', 'ProjectName'] },
        Logstore: { 'Fn::GetAtt': ['FunctionLogs', 'LogstoreName'] },
      });
    }
    expect(ofType('ALIYUN::SLS::Logstore')).toHaveLength(1);
  });

  it("gives FC 3.0's API only fields it knows, of the types it expects (@alicloud/fc20230330 models)", () => {
    const problems = [
      ...ofType('ALIYUN::FC3::Function').flatMap((r) =>
        shapeProblems(fc.CreateFunctionInput, r.Properties, String(r.Properties['FunctionName']), true),
      ),
      ...ofType('ALIYUN::FC3::Trigger').flatMap((r) => {
        const { TriggerConfig, FunctionName: _f, ...rest } = r.Properties;
        const config = r.Properties['TriggerType'] === 'timer' ? fc.TimerTriggerConfig : fc.HTTPTriggerConfig;
        return [
          ...shapeProblems(fc.CreateTriggerInput, rest, `trigger ${String(r.Properties['TriggerName'])}`, true),
          ...shapeProblems(config, TriggerConfig, `trigger ${String(r.Properties['TriggerName'])}.config`, false),
        ];
      }),
      ...ofType('ALIYUN::FC3::AsyncInvokeConfig').flatMap((r) => {
        const { FunctionName: _f, ...rest } = r.Properties;
        return shapeProblems(fc.PutAsyncInvokeConfigInput, rest, 'async config', true);
      }),
    ];
    expect(problems).toEqual([]);
    // The check can fail: a misspelt field and a wrong type are named.
    expect(
      shapeProblems(fc.CreateFunctionInput, { Runtime: 'nodejs20', MemorySise: 1, Timeout: '3' }, 'f', true),
    ).toEqual(['f.MemorySise: not a field of CreateFunctionInput', 'f.Timeout: expected a number']);
  });

  it('turns each schedule into an FC timer of the same period, and the chat route into an HTTP trigger', () => {
    const triggers = ofType('ALIYUN::FC3::Trigger').map((t) => ({
      fn: fnNameOf(t.Properties['FunctionName']),
      type: t.Properties['TriggerType'],
      config: t.Properties['TriggerConfig'] as Record<string, unknown>,
    }));
    for (const [name, f] of Object.entries(yml.functions))
      for (const e of f.events ?? []) {
        if (typeof e['schedule'] === 'string')
          expect(triggers).toContainEqual({
            fn: `gpu-reflex-prod-${name}`,
            type: 'timer',
            config: { cronExpression: fcEvery(e['schedule']), enable: true, payload: '' },
          });
        if (e['httpApi'] !== undefined)
          expect(triggers).toContainEqual(expect.objectContaining({ fn: `gpu-reflex-prod-${name}`, type: 'http' }));
        // chat's `ANY /chat/{platform}`: the webhook's POST and the health check's GET (GET /chat/healthz).
        const chat = triggers.find((t) => t.type === 'http')!;
        expect(chat.config['methods']).toEqual(['GET', 'POST']);
        expect(httpMethods('POST /x')).toEqual(['POST']);
        expect(() => httpMethods('TRACE /x')).toThrow('no FC HTTP trigger method for "TRACE"');
      }
    expect(fcEvery('rate(1 minute)')).toBe('@every 1m');
    expect(fcEvery('rate(5 minutes)')).toBe('@every 5m');
    expect(fcEvery('rate(2 days)')).toBe('@every 48h');
  });

  it("routes each function's patterns as rules in Alibaba's syntax on the custom bus, to that function", () => {
    const rules = ofType('ALIYUN::EventBridge::Rule');
    for (const [name, f] of Object.entries(yml.functions))
      for (const e of f.events ?? []) {
        const eb = e['eventBridge'] as { pattern?: string } | undefined;
        if (!eb) continue;
        const file = /\.\/(.+)\)\}$/.exec(String(eb.pattern))![1]!;
        const mine = rules.filter((r) =>
          (r.Properties['Targets'] as { Endpoint: { 'Fn::Sub': string } }[]).some((t) =>
            t.Endpoint['Fn::Sub'].endsWith(`functions/gpu-reflex-prod-${name}`),
          ),
        );
        expect(mine.map((r) => r.Properties['FilterPattern'])).toEqual(toAlibabaPatterns(patterns[file]));
        for (const r of mine) expect(r.Properties['EventBusName']).toEqual({ Ref: 'EventBusName' });
      }
  });

  it('grants each function only its calls: Alibaba cloud actions to those that reach the cloud', () => {
    const roles = ofType('ALIYUN::RAM::Role');
    const actionsOf = (fnName: string) =>
      (
        roles.find((r) => r.Properties['RoleName'] === fnName)!.Properties['Policies'] as {
          PolicyDocument: { Statement: { Action: string[] }[] };
        }[]
      )[0]!.PolicyDocument.Statement.flatMap((s) => s.Action);
    for (const [name, f] of Object.entries(yml.functions)) {
      const reaches = Object.hasOwn(f.environment ?? {}, 'ALIBABA_CLOUD_ACCESS_KEY_PARAMETER');
      const params = oosParameters(input, f);
      expect(actionsOf(`gpu-reflex-prod-${name}`).sort()).toEqual(
        [
          'eventbridge:PutEvents',
          'log:PostLogStoreLogs',
          'cs:DescribeClusterUserKubeconfig',
          ...(reaches ? cloudActions : []),
          ...(params.some((p) => !p.secret) ? ['oos:GetParameter'] : []),
          ...(params.some((p) => p.secret) ? ['oos:GetSecretParameter', 'kms:GetSecretValue'] : []),
          // Its dead-letter queue, FC's failure destination (rule-invoked functions only).
          ...((f.events ?? []).some((e) => e['eventBridge'] !== undefined) ? ['mns:SendMessage'] : []),
        ].sort(),
      );
    }
    expect(actionsOf('gpu-reflex-prod-label-nodes')).not.toContain('ecs:RebootInstance');
  });

  it("carries each function's parameters over as OOS names, readable by that function alone (its AWS role's grants)", () => {
    const fns = ofType('ALIYUN::FC3::Function');
    const envOf = (n: string) =>
      fns.find((x) => x.Properties['FunctionName'] === `gpu-reflex-prod-${n}`)!.Properties[
        'EnvironmentVariables'
      ] as Record<string, unknown>;
    // chatops reads the chat secrets and the approval key (encrypted) and its policies; label-nodes its own policy only.
    expect(envOf('chatops')).toMatchObject({
      CHAT_SECRETS_PARAMETER: 'oos-secret:gpu-reflex-prod-chat-secrets',
      GPU_REFLEX_APPROVAL_KEY_PARAMETER: 'oos-secret:gpu-reflex-prod-approval-key',
      REMEDIATION_POLICY_PARAMETER: 'oos:gpu-reflex-prod-remediation-policy',
    });
    expect(envOf('label-nodes')).toEqual(
      expect.objectContaining({ LABELER_CONFIG_PARAMETER: 'oos:gpu-reflex-prod-labeler-config' }),
    );
    expect(Object.keys(envOf('label-nodes'))).not.toContain('CHAT_SECRETS_PARAMETER');
    for (const f of fns) {
      const env = f.Properties['EnvironmentVariables'] as Record<string, unknown>;
      expect(env['GPU_REFLEX_KUBECONFIG_PARAMETER']).toBeUndefined();
      expect(env['ALIBABA_CLOUD_ACCESS_KEY_PARAMETER']).toBeUndefined();
    }
    // The role grants exactly those names.
    const role = ofType('ALIYUN::RAM::Role').find((r) => r.Properties['RoleName'] === 'gpu-reflex-prod-chatops')!;
    const secretArns = JSON.stringify(role.Properties['Policies']);
    expect(secretArns).toContain('secretparameter/gpu-reflex-prod-chat-secrets');
    expect(secretArns).not.toContain('parameter/gpu-reflex-prod-labeler-config');
  });

  it("ends both failure paths of a rule-invoked function in its own dead-letter queue, as Alibaba's docs define them", () => {
    // The keys ROS CDK renders for a rule target (@alicloud/ros-cdk-eventbridge rosRuleTargetsPropertyToRosTemplate),
    // the Targets syntax of https://help.aliyun.com/en/ros/developer-reference/aliyun-eventbridge-rule.
    const TARGET_KEYS = ['ErrorsTolerance', 'PushRetryStrategy', 'DeadLetterQueue', 'Type', 'Endpoint'];
    const TARGET_KEYS_ALL = [...TARGET_KEYS, 'ConcurrentConfig', 'ParamList', 'Id'];
    // ALIYUN::MNS::Queue's properties (https://www.alibabacloud.com/help/doc-detail/116238.html).
    const QUEUE_KEYS = ['PollingWaitSeconds', 'LoggingEnabled', 'MessageRetentionPeriod', 'MaximumMessageSize'];
    const QUEUE_KEYS_ALL = [...QUEUE_KEYS, 'DelaySeconds', 'VisibilityTimeout', 'QueueName', 'DlqPolicy', 'Tags'];
    const byId = template['Resources'] as Record<string, Resource & { DependsOn?: string[] }>;
    const sub = (v: unknown) => (v as { 'Fn::Sub'?: string })['Fn::Sub'];
    for (const [name, f] of Object.entries(yml.functions)) {
      const fn = `gpu-reflex-prod-${name}`;
      const queues = Object.entries(byId).filter(
        ([, r]) => r.Type === 'ALIYUN::MNS::Queue' && r.Properties['QueueName'] === `${fn}-dlq`,
      );
      const asyncConfig = ofType('ALIYUN::FC3::AsyncInvokeConfig').find(
        (r) => fnNameOf(r.Properties['FunctionName']) === fn,
      )!;
      const grants = (
        ofType('ALIYUN::RAM::Role').find((r) => r.Properties['RoleName'] === fn)!.Properties['Policies'] as {
          PolicyDocument: { Statement: { Action: string[]; Resource: unknown[] }[] };
        }[]
      )[0]!.PolicyDocument.Statement.filter((st) => st.Action.includes('mns:SendMessage'));
      if (!(f.events ?? []).some((e) => e['eventBridge'] !== undefined)) {
        // Timers only: FC sends no timer-invoked failure to a destination; the next tick is the retry.
        expect(queues, name).toEqual([]);
        expect(asyncConfig.Properties['DestinationConfig'], name).toBeUndefined();
        expect(grants, name).toEqual([]);
        continue;
      }
      expect(queues, name).toHaveLength(1);
      const [queueId, queue] = queues[0]!;
      expect(Object.keys(queue.Properties).filter((k) => !QUEUE_KEYS_ALL.includes(k))).toEqual([]);
      expect(queue.Properties['QueueName']).toMatch(/^[A-Za-z0-9][A-Za-z0-9-]{0,255}$/);
      expect(queue.Properties['MessageRetentionPeriod']).toBeGreaterThanOrEqual(60);
      expect(queue.Properties['MessageRetentionPeriod']).toBeLessThanOrEqual(604_800);
      const arn = `acs:mns:\${ALIYUN::Region}:\${ALIYUN::TenantId}:/queues/${fn}-dlq`;
      // EventBridge: every target of the function's rules retries, then dead-letters there (ErrorsTolerance
      // ALL: NONE would block the rule instead); the rule waits for the queue.
      const rules = Object.values(byId).filter(
        (r) =>
          r.Type === 'ALIYUN::EventBridge::Rule' && new RegExp(`^${fn}-\\d+$`).test(String(r.Properties['RuleName'])),
      );
      expect(rules.length, name).toBeGreaterThan(0);
      for (const r of rules) {
        expect(r.DependsOn).toContain(queueId);
        for (const t of r.Properties['Targets'] as Record<string, unknown>[]) {
          expect(Object.keys(t).filter((k) => !TARGET_KEYS_ALL.includes(k))).toEqual([]);
          expect(['BACKOFF_RETRY', 'EXPONENTIAL_DECAY_RETRY']).toContain(t['PushRetryStrategy']);
          expect(t['ErrorsTolerance']).toBe('ALL');
          expect(sub((t['DeadLetterQueue'] as { Arn: unknown }).Arn)).toBe(arn);
        }
      }
      // FC: a handler still failing after its async retries goes to the same queue, with the role's grant.
      const destination = (asyncConfig.Properties['DestinationConfig'] as { OnFailure: { Destination: unknown } })
        .OnFailure.Destination;
      expect(sub(destination)).toBe(`${arn}/messages`);
      expect((asyncConfig as { DependsOn?: string[] }).DependsOn).toContain(queueId);
      expect(grants.map((g) => g.Resource.map(sub))).toEqual([[`${arn}/messages`]]);
    }
    expect(TARGET_KEYS).toHaveLength(5);
    expect(QUEUE_KEYS).toHaveLength(4);
  });

  it('stays within ROS limits', () => {
    expect(Buffer.byteLength(JSON.stringify(template))).toBeLessThan(ROS_TEMPLATE_MAX_BYTES);
    expect(template['ROSTemplateFormatVersion']).toBe('2015-09-01');
  });

  it('refuses what FC cannot run, naming it', () => {
    const bad = { ...input, functions: { x: { handler: 'h', timeout: 100_000 } } };
    expect(() => alibabaTemplate(bad)).toThrow(/x: timeout 100000 s is outside FC 3.0's/);
    expect(() => fcEvery('cron(0 * * * ? *)')).toThrow(/only rate/);
  });
});

describe('npm run package -- --target …', () => {
  it('names a target it does not know, and explains itself with --help', async () => {
    const { spawnSync } = await import('node:child_process');
    const script = join(ROOT, 'scripts/package.js');
    const bad = spawnSync(process.execPath, [script, '--target', 'gcp'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--target must be aws or alibaba \(got "gcp"\)/);
    const help = spawnSync(process.execPath, [script, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/--target alibaba {2}FC 3\.0 packages/);
  });
});

/**
 * What ROS's own SDK (@alicloud/ros20190910, the OpenAPI 2019-09-10 models) sends for the template: ValidateTemplate
 * and CreateStack carry it as TemplateBody; ROS refuses a body over 524,288 bytes and a stack name that does not start
 * with a letter or digit or holds other than [A-Za-z0-9_-] (ROS API reference, CreateStack: StackName, TemplateBody).
 * ValidateTemplate itself is online only: this holds what can be held offline.
 */
describe("the template through ROS's own SDK", () => {
  const body = JSON.stringify(template);
  const params = template['Parameters'] as Record<string, { Type: string; Default?: unknown }>;

  it('is a ValidateTemplate request the SDK accepts, under the TemplateBody limit', () => {
    const req = new ros.ValidateTemplateRequest({ regionId: 'cn-hangzhou', templateBody: body });
    req.validate();
    expect(req.toMap()).toMatchObject({ RegionId: 'cn-hangzhou', TemplateBody: body });
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(524_288);
  });

  it('is a CreateStack request the SDK accepts: every parameter the template declares, and a valid stack name', () => {
    const stackName = 'gpu-reflex-prod';
    expect(stackName).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$/);
    const req = new ros.CreateStackRequest({
      regionId: 'cn-hangzhou',
      stackName,
      templateBody: body,
      timeoutInMinutes: 60,
      parameters: Object.entries(params).map(
        ([key, p]) =>
          new ros.CreateStackRequestParameters({ parameterKey: key, parameterValue: String(p.Default ?? 'given') }),
      ),
    });
    req.validate();
    const map = req.toMap() as { Parameters: { ParameterKey: string }[]; TemplateBody: string };
    expect(map.TemplateBody).toBe(body);
    expect(map.Parameters.map((p) => p.ParameterKey)).toEqual(Object.keys(params));
    // Each parameter is of a type ROS knows (ROS template structure: Parameters, Type).
    const known = ['String', 'Number', 'CommaDelimitedList', 'Json', 'Boolean'];
    expect(Object.entries(params).filter(([, p]) => !known.includes(p.Type))).toEqual([]);
  });
});
