import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRoutingTable } from './rules.ts';
import { ServerlessConfigError } from './serverless-yaml.ts';

/** Writes a service folder with serverless.yml (and extra files) and returns the yml path. */
function service(yml: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'sls-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  writeFileSync(join(dir, 'serverless.yml'), yml);
  return join(dir, 'serverless.yml');
}
const ctx = { region: 'eu-west-1', account: '123456789012', env: { BUS: 'from-env' } };
const fnWith = (events: string) => `service: svc\nfunctions:\n  f:\n    handler: src/f.main\n    events:\n${events}`;

describe('variables', () => {
  it('resolves file (whole and by key), self, sls:stage, env, aws and fallbacks', () => {
    const yml = service(
      `service: svc
provider:
  stage: \${opt:stage, 'qa'}
custom:
  prefix: \${sls:stage}-\${aws:region}
  bus: \${env:BUS}
  missing: \${env:NOPE, 'fallback'}
functions:
  f:
    handler: src/f.main
    name: \${self:custom.prefix}-\${self:custom.missing}-\${aws:accountId}
    events:
      - eventBridge:
          eventBus: \${self:custom.bus}
          pattern: \${file(./p/one.json)}
      - eventBridge:
          eventBus: \${env:NOPE, self:custom.bus}
          pattern: \${file(./p/many.yml):rules.second}
`,
      {
        'p/one.json': '{"source":["one"]}',
        'p/many.yml': 'rules:\n  second:\n    source: [two]\n    detail:\n      stage: ["${sls:stage}"]\n',
      },
    );
    const t = loadRoutingTable(yml, ctx);
    expect(t.stage).toBe('qa');
    expect(t.functions[0]?.name).toBe('qa-eu-west-1-fallback-123456789012');
    expect(t.eventRules.map((r) => [r.busName, r.pattern])).toEqual([
      ['from-env', { source: ['one'] }],
      ['from-env', { source: ['two'], detail: { stage: ['qa'] } }],
    ]);
    expect(t.buses).toEqual(['from-env']);
  });

  it('lets an explicit stage win over provider.stage', () => {
    const yml = service(`service: svc\nprovider:\n  stage: \${opt:stage, 'qa'}\nfunctions: {}\n`);
    expect(loadRoutingTable(yml, { ...ctx, stage: 'prod' }).stage).toBe('prod');
  });

  it.each([
    [
      'an unsupported source in a field the bus reads',
      fnWith('      - eventBridge:\n          pattern: ${ssm:/x}\n'),
      /functions\.f\.events\[0\]\.eventBridge\.pattern: variable \$\{ssm:\/x\} is not supported/,
    ],
    [
      'a missing file',
      fnWith('      - eventBridge:\n          pattern: ${file(./nope.json)}\n'),
      /\$\{file\(\.\/nope\.json\)\}: no such file or directory \(\//,
    ],
    [
      'a missing key in a file',
      fnWith('      - eventBridge:\n          pattern: ${file(./p.yml):absent}\n'),
      /has no such key/,
    ],
    [
      'a variable that resolves to nothing',
      fnWith('      - eventBridge:\n          pattern: ${env:NOPE}\n'),
      /\$\{env:NOPE\} resolves to nothing/,
    ],
    [
      'a self-reference cycle',
      `service: svc\ncustom:\n  a: \${self:custom.b}\n  b: \${self:custom.a}\nfunctions:\n  f:\n    handler: src/f.main\n    name: \${self:custom.a}\n`,
      /nest too deeply/,
    ],
  ])('rejects %s, naming where', (_what, yml, message) => {
    const path = service(yml, { 'p.yml': 'present: 1\n' });
    expect(() => loadRoutingTable(path, ctx)).toThrow(ServerlessConfigError);
    expect(() => loadRoutingTable(path, ctx)).toThrow(message);
  });
});

describe('events', () => {
  it('reads a bus from Ref or GetAtt to an AWS::Events::EventBus resource', () => {
    const yml = service(
      `${fnWith('      - eventBridge:\n          eventBus: !GetAtt Bus.Arn\n          pattern: { source: [a] }\n      - eventBridge:\n          eventBus: { Ref: Bus }\n          pattern: { source: [b] }\n')}resources:\n  Resources:\n    Bus:\n      Type: AWS::Events::EventBus\n      Properties:\n        Name: my-bus\n`,
    );
    const t = loadRoutingTable(yml, ctx);
    expect(t.eventRules.map((r) => r.busName)).toEqual(['my-bus', 'my-bus']);
    expect(t.eventRules[0]?.retryPolicy).toEqual({ maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 });
  });

  it('turns handler strings into a module path and export path', () => {
    const t = loadRoutingTable(
      service(
        'service: svc\nfunctions:\n  f:\n    handler: functions/remediate/handler.handler\n  g:\n    handler: a.b.c\n',
      ),
      ctx,
    );
    expect(
      t.functions.map((f) => [
        f.modulePath.endsWith('/functions/remediate/handler'),
        f.exportPath,
        f.name,
        f.timeoutSeconds,
      ]),
    ).toEqual([
      [true, ['handler'], 'svc-dev-f', 6],
      [false, ['b', 'c'], 'svc-dev-g', 6],
    ]);
  });

  it('reads eventBridge schedules, schedule names, rate lists and disabled rules', () => {
    const t = loadRoutingTable(
      service(
        fnWith(
          "      - eventBridge:\n          schedule: rate(10 minutes)\n          input: '{\"k\":1}'\n      - schedule:\n          name: nightly\n          rate: [cron(0 2 * * ? *), rate(2 hours)]\n      - eventBridge:\n          enabled: false\n          pattern: { source: [x] }\n      - httpApi: '*'\n",
        ),
      ),
      ctx,
    );
    expect(t.schedules.map((s) => [s.name, s.schedule.expression, s.input])).toEqual([
      ['svc-dev-f-rule-1', 'rate(10 minutes)', { kind: 'constant', value: { k: 1 } }],
      ['nightly-1', 'cron(0 2 * * ? *)', { kind: 'event' }],
      ['nightly-2', 'rate(2 hours)', { kind: 'event' }],
    ]);
    expect(t.eventRules).toEqual([]);
    expect(t.routes.map((r) => [r.method, r.path, r.routeKey])).toEqual([['ANY', '*', '$default']]);
  });

  it.each([
    [
      'a bad handler string',
      'service: svc\nfunctions:\n  f:\n    handler: nodot\n',
      /functions\.f\.handler: must look like path\/to\/file\.exportName/,
    ],
    [
      'a bad rate',
      fnWith('      - schedule: rate(1 minutes)\n'),
      /functions\.f\.events\[0\]\.schedule: rate expression "rate\(1 minutes\)": use the singular unit/,
    ],
    ['a bad cron', fnWith('      - schedule: cron(0 10 * * * *)\n'), /exactly one of Day-of-month and Day-of-week/],
    [
      'a schedule time zone',
      fnWith('      - schedule:\n          rate: cron(0 10 * * ? *)\n          timezone: Europe/Paris\n'),
      /timezone: time zones are not supported/,
    ],
    [
      'a retry policy beyond AWS limits',
      fnWith(
        '      - eventBridge:\n          pattern: { source: [a] }\n          retryPolicy: { maximumRetryAttempts: 186 }\n',
      ),
      /retryPolicy\.maximumRetryAttempts/,
    ],
    [
      'an event age below 60 s',
      fnWith(
        '      - eventBridge:\n          pattern: { source: [a] }\n          retryPolicy: { maximumEventAge: 59 }\n',
      ),
      /retryPolicy\.maximumEventAge/,
    ],
    [
      'both pattern and schedule',
      fnWith('      - eventBridge:\n          pattern: { source: [a] }\n          schedule: rate(1 hour)\n'),
      /exactly one of pattern and schedule/,
    ],
    [
      'a bus Ref to something that is not a bus',
      fnWith('      - eventBridge:\n          eventBus: !Ref Nope\n          pattern: { source: [a] }\n'),
      /eventBus: expected a bus name/,
    ],
    ['an httpApi without a path', fnWith('      - httpApi: POST\n'), /httpApi: expected "METHOD \/path"/],
    [
      'an input transformer',
      fnWith(
        '      - eventBridge:\n          pattern: { source: [a] }\n          inputTransformer: { inputTemplate: x }\n',
      ),
      /inputTransformer: not supported/,
    ],
    ['no service name', 'functions: {}\n', /service must be a name/],
    [
      'HTTP API payload format 1.0',
      "service: svc\nprovider:\n  httpApi:\n    payload: '1.0'\nfunctions: {}\n",
      /provider\.httpApi\.payload: the local bus produces payload format 2\.0 only/,
    ],
    ['YAML that does not parse', 'service: [\n', /not valid YAML/],
  ])('rejects %s, naming where', (_what, yml, message) => {
    expect(() => loadRoutingTable(service(yml), ctx)).toThrow(message);
  });
});
