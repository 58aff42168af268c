import { execFile } from 'node:child_process';
import {
  DeleteRuleCommand,
  DescribeRuleCommand,
  EventBridgeClient,
  ListTargetsByRuleCommand,
  PutRuleCommand,
  type PutRuleCommandInput,
  PutTargetsCommand,
  RemoveTargetsCommand,
  type Target,
} from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandWorks, requireTool } from '../../../test/tools.ts';
import { ManualClock, startLocalBus, type LocalBus } from './index.ts';

/**
 * PutRule, DeleteRule, PutTargets, RemoveTargets and ListTargetsByRule through the real SDK client and
 * the AWS CLI: validation and errors as the EventBridge API Reference gives them (rule-registry.ts),
 * and the routing follows (a target that is one of the bus's functions is invoked; a disabled rule or a
 * removed target is not).
 */
const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;
const awsCli = requireTool('aws', () => commandWorks('aws', ['--version']));
const BUS = 'fixture-bus';
const RECORD = 'arn:aws:lambda:us-east-1:000000000000:function:fixture-test-record';
const clock = new ManualClock(Date.parse('2026-01-02T11:50:00Z'));
let bus: LocalBus;
let sdk: EventBridgeClient;
const delivered: { rule: string; fn: string }[] = [];

beforeAll(async () => {
  bus = await startLocalBus({ serverlessYml: FIXTURE, clock });
  bus.on('delivered', (d) => delivered.push({ rule: d.rule, fn: d.function }));
  sdk = new EventBridgeClient({
    endpoint: bus.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
});
afterAll(async () => bus.close());

/** Publishes one event of `source` on the fixture bus; returns the rules it was delivered through. */
async function deliveredFor(source: string): Promise<string[]> {
  delivered.length = 0;
  const r = await bus.put([{ EventBusName: BUS, Source: source, DetailType: 'Test', Detail: '{}' }]);
  expect(r.FailedEntryCount).toBe(0);
  await bus.deliverNow();
  return delivered.map((d) => `${d.rule} → ${d.fn}`);
}

describe('the bus write calls through the SDK', () => {
  it('a new rule routes only once a target names one of its functions, and stops when disabled', async () => {
    const put = await sdk.send(
      new PutRuleCommand({ Name: 'sims-rule', EventBusName: BUS, EventPattern: JSON.stringify({ source: ['sims'] }) }),
    );
    expect(put.RuleArn).toBe('arn:aws:events:us-east-1:000000000000:rule/fixture-bus/sims-rule');
    expect((await sdk.send(new ListTargetsByRuleCommand({ Rule: 'sims-rule', EventBusName: BUS }))).Targets).toEqual(
      [],
    );
    expect(await deliveredFor('sims')).toEqual([]);
    const targets = await sdk.send(
      new PutTargetsCommand({ Rule: 'sims-rule', EventBusName: BUS, Targets: [{ Id: 'rec', Arn: RECORD }] }),
    );
    expect(targets).toMatchObject({ FailedEntryCount: 0, FailedEntries: [] });
    expect(await deliveredFor('sims')).toEqual(['sims-rule → record']);
    // PutRule of an existing rule replaces it; its targets stay.
    await sdk.send(
      new PutRuleCommand({
        Name: 'sims-rule',
        EventBusName: BUS,
        EventPattern: JSON.stringify({ source: ['sims'] }),
        State: 'DISABLED',
      }),
    );
    expect(await sdk.send(new DescribeRuleCommand({ Name: 'sims-rule', EventBusName: BUS }))).toMatchObject({
      State: 'DISABLED',
    });
    expect(await deliveredFor('sims')).toEqual([]);
    const listed = await sdk.send(new ListTargetsByRuleCommand({ Rule: 'sims-rule', EventBusName: BUS }));
    expect(listed.Targets).toEqual([{ Id: 'rec', Arn: RECORD }]);
  });

  it('a rule with targets cannot be deleted; once they are removed it can, and deleting again succeeds', async () => {
    await expect(sdk.send(new DeleteRuleCommand({ Name: 'sims-rule', EventBusName: BUS }))).rejects.toMatchObject({
      name: 'ValidationException',
      message: "Rule can't be deleted since it has targets.",
    });
    const removed = await sdk.send(
      new RemoveTargetsCommand({ Rule: 'sims-rule', EventBusName: BUS, Ids: ['rec', 'not-there'] }),
    );
    expect(removed).toMatchObject({ FailedEntryCount: 0 });
    await sdk.send(new DeleteRuleCommand({ Name: 'sims-rule', EventBusName: BUS }));
    await sdk.send(new DeleteRuleCommand({ Name: 'sims-rule', EventBusName: BUS }));
    await expect(sdk.send(new DescribeRuleCommand({ Name: 'sims-rule', EventBusName: BUS }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
    await expect(sdk.send(new DeleteRuleCommand({ Name: 'x', EventBusName: 'no-such-bus' }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
      message: 'Event bus no-such-bus does not exist.',
    });
  });

  it("serverless.yml's rules have their function as a target, and removing it stops their deliveries", async () => {
    const [rule] = bus.table!.eventRules.filter((r) => r.fn.key === 'detail-only');
    const listed = await sdk.send(new ListTargetsByRuleCommand({ Rule: rule!.name, EventBusName: BUS }));
    expect(listed.Targets).toEqual([
      expect.objectContaining({
        Id: 'fixture-test-detail-only',
        Arn: 'arn:aws:lambda:us-east-1:000000000000:function:fixture-test-detail-only',
        InputPath: '$.detail',
      }),
    ]);
    expect(await deliveredFor('fixture.input-path')).toEqual([`${rule!.name} → detail-only`]);
    await sdk.send(
      new RemoveTargetsCommand({ Rule: rule!.name, EventBusName: BUS, Ids: ['fixture-test-detail-only'] }),
    );
    expect(await deliveredFor('fixture.input-path')).toEqual([]);
  });

  it.each([
    [{ Name: 'has space', EventPattern: '{"source":["x"]}' }, 'ValidationException', /regular expression pattern/],
    [{ Name: 'n' }, 'ValidationException', /EventPattern or ScheduleExpression must be specified/],
    [{ Name: 'n', ScheduleExpression: 'rate(5 minutes)' }, 'ValidationException', /only on the default event bus/],
    [{ Name: 'n', EventPattern: '{"source":"x"}' }, 'InvalidEventPatternException', /./],
    [{ Name: 'n', EventPattern: '{' }, 'InvalidEventPatternException', /not valid JSON/],
    [{ Name: 'n', EventPattern: '{"source":["x"]}', State: 'ON' }, 'ValidationException', /enum value set/],
  ])('PutRule %j on a custom bus is refused: %s', async (input, name, message) => {
    await expect(
      sdk.send(new PutRuleCommand({ EventBusName: BUS, ...input } as PutRuleCommandInput)),
    ).rejects.toMatchObject({
      name,
      message: expect.stringMatching(message),
    });
  });

  it('PutTargets: a missing rule, more than five on a rule, two kinds of input, a retry policy out of range', async () => {
    const put = (targets: Target[], rule = 'limits') =>
      sdk.send(new PutTargetsCommand({ Rule: rule, EventBusName: BUS, Targets: targets }));
    await expect(put([{ Id: 'a', Arn: RECORD }], 'no-such-rule')).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
      message: 'Rule no-such-rule does not exist on EventBus fixture-bus.',
    });
    await sdk.send(new PutRuleCommand({ Name: 'limits', EventBusName: BUS, EventPattern: '{"source":["l"]}' }));
    const five = ['1', '2', '3', '4', '5'].map((Id) => ({ Id, Arn: RECORD }));
    await put(five);
    await put([{ Id: '5', Arn: RECORD }]); // an Id already there is updated, not added
    await expect(put([{ Id: '6', Arn: RECORD }])).rejects.toMatchObject({ name: 'LimitExceededException' });
    await expect(put([{ Id: '1', Arn: RECORD, Input: '{}', InputPath: '$.detail' }])).rejects.toMatchObject({
      name: 'ValidationException',
    });
    await expect(put([{ Id: '1', Arn: RECORD, RetryPolicy: { MaximumRetryAttempts: 186 } }])).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/between 0 and 185/),
    });
    // Five targets, each the same function: it is invoked once per target, as AWS does.
    expect(await deliveredFor('l')).toEqual(Array(5).fill('limits → record'));
  });

  it('PutTargets refuses targets the local bus cannot deliver to, naming their type, and keeps the others', async () => {
    await sdk.send(new PutRuleCommand({ Name: 'kinds', EventBusName: BUS, EventPattern: '{"source":["k"]}' }));
    const r = await sdk.send(
      new PutTargetsCommand({
        Rule: 'kinds',
        EventBusName: BUS,
        Targets: [
          { Id: 'q', Arn: 'arn:aws:sqs:us-east-1:000000000000:work' },
          { Id: 'log', Arn: 'arn:aws:logs:us-east-1:000000000000:log-group:/aws/events/gpu' },
          { Id: 'other', Arn: 'arn:aws:lambda:eu-west-1:000000000000:function:fixture-test-record' },
          { Id: 'rec', Arn: RECORD },
        ],
      }),
    );
    expect(r.FailedEntryCount).toBe(3);
    expect(r.FailedEntries!.map((f) => [f.TargetId, f.ErrorCode])).toEqual([
      ['q', 'UnsupportedTarget'],
      ['log', 'UnsupportedTarget'],
      ['other', 'UnsupportedTarget'],
    ]);
    expect(r.FailedEntries![0]!.ErrorMessage).toMatch(/arn:aws:sqs:us-east-1:000000000000:work is an SQS queue/);
    expect(r.FailedEntries![1]!.ErrorMessage).toMatch(/a CloudWatch Logs log group: not supported/);
    expect(r.FailedEntries![2]!.ErrorMessage).toMatch(/outside this bus's region and account/);
    const listed = await sdk.send(new ListTargetsByRuleCommand({ Rule: 'kinds', EventBusName: BUS }));
    expect(listed.Targets).toEqual([{ Id: 'rec', Arn: RECORD }]);
    expect(await deliveredFor('k')).toEqual(['kinds → record']);
  });
});

describe('the bus write calls through the AWS CLI', awsCli.options, () => {
  const aws = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((done) =>
      execFile(
        'aws',
        [...args, '--endpoint-url', bus.url, '--region', 'us-east-1', '--output', 'json'],
        { env: { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_PAGER: '' } },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );

  it('aws events put-rule, put-targets, list-targets-by-rule, remove-targets and delete-rule answer as AWS', async () => {
    const rule = await aws([
      'events',
      'put-rule',
      '--name',
      'cli-rule',
      '--event-bus-name',
      BUS,
      '--event-pattern',
      '{"source":["cli"]}',
    ]);
    expect(rule.stderr).toBe('');
    expect(JSON.parse(rule.stdout)).toEqual({
      RuleArn: 'arn:aws:events:us-east-1:000000000000:rule/fixture-bus/cli-rule',
    });
    const t = await aws([
      'events',
      'put-targets',
      '--rule',
      'cli-rule',
      '--event-bus-name',
      BUS,
      '--targets',
      `Id=rec,Arn=${RECORD}`,
    ]);
    expect(JSON.parse(t.stdout)).toEqual({ FailedEntryCount: 0, FailedEntries: [] });
    const listed = await aws(['events', 'list-targets-by-rule', '--rule', 'cli-rule', '--event-bus-name', BUS]);
    expect(JSON.parse(listed.stdout)).toEqual({ Targets: [{ Id: 'rec', Arn: RECORD }] });
    expect(await deliveredFor('cli')).toEqual(['cli-rule → record']);
    const refused = await aws(['events', 'delete-rule', '--name', 'cli-rule', '--event-bus-name', BUS]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/ValidationException.*Rule can't be deleted since it has targets\./);
    await aws(['events', 'remove-targets', '--rule', 'cli-rule', '--event-bus-name', BUS, '--ids', 'rec']);
    const deleted = await aws(['events', 'delete-rule', '--name', 'cli-rule', '--event-bus-name', BUS]);
    expect(deleted.code).toBe(0);
    const missing = await aws(['events', 'list-targets-by-rule', '--rule', 'cli-rule', '--event-bus-name', BUS]);
    expect(missing.stderr).toMatch(/ResourceNotFoundException.*Rule cli-rule does not exist on EventBus fixture-bus\./);
    // Each aws start-up is seconds on a loaded 2-core machine, and this test makes eight calls.
  }, 180_000);
});

describe('schedules made through PutRule', () => {
  it('fire on the bus clock as EventBridge scheduled rules do; replaced they re-arm, disabled they stop', async () => {
    const fired: string[] = [];
    const off = bus.on('scheduled', ({ rule, function: fn, event, at }) => {
      if (rule !== 'sims-tick') return;
      const e = event as { 'detail-type': string; resources: string[] };
      expect(e['detail-type']).toBe('Scheduled Event');
      expect(e.resources).toEqual(['arn:aws:events:us-east-1:000000000000:rule/sims-tick']);
      fired.push(`${new Date(at).toISOString().slice(11, 16)} ${fn}`);
    });
    const ran = () => delivered.filter((d) => d.rule === 'sims-tick').map((d) => d.fn);
    const start = clock.now();
    // A rate counts from the rule's creation (schedule-expression.ts): 5 and 10 minutes after it.
    await sdk.send(new PutRuleCommand({ Name: 'sims-tick', ScheduleExpression: 'rate(5 minutes)' }));
    await sdk.send(
      new PutTargetsCommand({ Rule: 'sims-tick', Targets: [{ Id: 'rec', Arn: RECORD, Input: '{"tick":1}' }] }),
    );
    delivered.length = 0;
    await bus.advance(12 * 60_000);
    const hhmm = (min: number) => new Date(start + min * 60_000).toISOString().slice(11, 16);
    expect(fired).toEqual([`${hhmm(5)} record`, `${hhmm(10)} record`]);
    expect(ran()).toEqual(['record', 'record']);
    // Replaced by a cron: the rate stops, the cron fires at minute 15 of each hour.
    fired.length = 0;
    await sdk.send(new PutRuleCommand({ Name: 'sims-tick', ScheduleExpression: 'cron(15 * * * ? *)' }));
    await bus.advance(75 * 60_000);
    expect(fired).toEqual(['12:15 record', '13:15 record']);
    // Disabled, it fires no more.
    fired.length = 0;
    await sdk.send(
      new PutRuleCommand({ Name: 'sims-tick', ScheduleExpression: 'cron(15 * * * ? *)', State: 'DISABLED' }),
    );
    await bus.advance(120 * 60_000);
    expect(fired).toEqual([]);
    // Enabled again, then its target removed and the rule deleted: nothing armed fires.
    await sdk.send(new PutRuleCommand({ Name: 'sims-tick', ScheduleExpression: 'rate(1 minute)' }));
    await sdk.send(new RemoveTargetsCommand({ Rule: 'sims-tick', Ids: ['rec'] }));
    await sdk.send(new DeleteRuleCommand({ Name: 'sims-tick' }));
    await bus.advance(10 * 60_000);
    expect(fired).toEqual([]);
    off();
  });

  it.each(['rate(5 minute)', 'rate(0 minutes)', 'every 5 minutes', 'cron(0 12 * * * *)'])(
    'PutRule refuses ScheduleExpression %s as AWS does',
    async (expression) => {
      await expect(
        sdk.send(new PutRuleCommand({ Name: 'bad-tick', ScheduleExpression: expression })),
      ).rejects.toMatchObject({
        name: 'ValidationException',
        message: expect.stringMatching(/^Parameter ScheduleExpression is not valid\./),
      });
    },
  );
});
