import { describe, expect, it } from 'vitest';
import { everyMs, readAlibabaTemplate, RosTemplateError } from './alibaba-ros.ts';

const fn = (name: string, extra: Record<string, unknown> = {}) => ({
  Type: 'ALIYUN::FC3::Function',
  Properties: {
    FunctionName: name,
    Code: { OssObjectName: { 'Fn::Sub': '${CodePrefix}/' + name.replace('gpu-reflex-dev-', '') + '.zip' } },
    Timeout: 60,
    ...extra,
  },
});

const template = (resources: Record<string, unknown>) => ({
  Parameters: { CodePrefix: { Default: 'gpu-reflex/dev' }, EventBusName: { Default: 'gpu-reflex-dev' } },
  Resources: resources,
});

/** Reading a ROS template as Alibaba would create it (the embedded stack's Alibaba target). */
describe('readAlibabaTemplate', () => {
  it('resolves Ref, Fn::Sub and Fn::GetAtt: rules to their functions, timers, HTTP triggers, async retries', () => {
    const d = readAlibabaTemplate(
      template({
        RemediateFunction: fn('gpu-reflex-dev-remediate'),
        RemediateAsync: {
          Type: 'ALIYUN::FC3::AsyncInvokeConfig',
          Properties: {
            FunctionName: { 'Fn::GetAtt': ['RemediateFunction', 'FunctionName'] },
            MaxAsyncRetryAttempts: 2,
            DestinationConfig: { OnFailure: { Destination: { 'Fn::Sub': 'acs:mns:${ALIYUN::Region}:x:/queues/dlq' } } },
          },
        },
        Rule: {
          Type: 'ALIYUN::EventBridge::Rule',
          Properties: {
            RuleName: 'r0',
            EventBusName: { Ref: 'EventBusName' },
            FilterPattern: { type: ['GPU XID Error'] },
            Targets: [
              {
                Type: 'acs.fc.function',
                Endpoint: {
                  'Fn::Sub': 'acs:fc:${ALIYUN::Region}:${ALIYUN::TenantId}:functions/gpu-reflex-dev-remediate',
                },
              },
            ],
          },
        },
        Timer: {
          Type: 'ALIYUN::FC3::Trigger',
          Properties: {
            FunctionName: { 'Fn::GetAtt': ['RemediateFunction', 'FunctionName'] },
            TriggerName: 't',
            TriggerType: 'timer',
            TriggerConfig: { cronExpression: '@every 5m', enable: true, payload: '' },
          },
        },
      }),
      { regionId: 'cn-beijing', accountId: '1234567890123456', parameters: { EventBusName: 'prod-bus' } },
    );
    expect(d.functions.get('gpu-reflex-dev-remediate')).toMatchObject({
      package: 'remediate',
      timeoutSeconds: 60,
      maxAsyncRetryAttempts: 2,
      onFailure: 'acs:mns:cn-beijing:x:/queues/dlq',
    });
    expect(d.rules).toEqual([
      {
        name: 'r0',
        bus: 'prod-bus',
        pattern: { type: ['GPU XID Error'] },
        enabled: true,
        functions: ['gpu-reflex-dev-remediate'],
      },
    ]);
    expect(d.timers).toEqual([{ function: 'gpu-reflex-dev-remediate', name: 't', everyMs: 300_000, payload: '' }]);
  });

  it('refuses what it cannot resolve or serve, naming the resource', () => {
    expect(() =>
      readAlibabaTemplate(
        template({
          F: fn('gpu-reflex-dev-x'),
          R: {
            Type: 'ALIYUN::EventBridge::Rule',
            Properties: { RuleName: 'r', EventBusName: { Ref: 'Nope' }, FilterPattern: {}, Targets: [] },
          },
        }),
        { regionId: 'cn-hangzhou', accountId: '1' },
      ),
    ).toThrow('parameter Nope: no value given and no Default');
    expect(() =>
      readAlibabaTemplate(
        template({
          F: fn('gpu-reflex-dev-x'),
          R: {
            Type: 'ALIYUN::EventBridge::Rule',
            Properties: {
              RuleName: 'r',
              EventBusName: 'b',
              FilterPattern: {},
              Targets: [{ Type: 'acs.mns.queue', Endpoint: 'q' }],
            },
          },
        }),
        { regionId: 'cn-hangzhou', accountId: '1' },
      ),
    ).toThrow(RosTemplateError);
  });

  it.each([
    ['@every 1m', 60_000],
    ['@every 1h30m', 5_400_000],
  ])('reads FC timers %s', (e, ms) => expect(everyMs(e)).toBe(ms));

  it.each(['0 0/5 * * * *', '@every 30s'])('refuses the timer %s', (e) =>
    expect(() => everyMs(e)).toThrow(RosTemplateError),
  );
});
