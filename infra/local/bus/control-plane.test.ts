import { execFile } from 'node:child_process';
import {
  DescribeEventBusCommand,
  DescribeRuleCommand,
  EventBridgeClient,
  ListRulesCommand,
  TestEventPatternCommand,
} from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandWorks, requireTool } from '../../../test/tools.ts';
import { ManualClock, startLocalBus, type LocalBus } from './index.ts';

/**
 * ListRules, DescribeRule, DescribeEventBus and TestEventPattern through the real SDK client (and the AWS CLI
 * where it is installed), over the rules the bus loaded from the fixture serverless.yml.
 */
const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;
const awsCli = requireTool('aws', () => commandWorks('aws', ['--version']));
let bus: LocalBus;
let sdk: EventBridgeClient;

beforeAll(async () => {
  bus = await startLocalBus({ serverlessYml: FIXTURE, clock: new ManualClock(Date.parse('2026-01-02T11:50:00Z')) });
  sdk = new EventBridgeClient({
    endpoint: bus.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
});
afterAll(async () => bus.close());

const EVENT = {
  version: '0',
  id: '6a7e8feb-b491-4cf7-a9f1-bf3703467718',
  'detail-type': 'GPU XID Error',
  source: 'gpu-reflex.node-agent',
  account: '000000000000',
  time: '2026-01-02T11:50:00Z',
  region: 'us-east-1',
  resources: [],
  detail: { xid: 79 },
};

describe('the bus control plane through the SDK', () => {
  it("lists a bus's rules by name, page by page, and a prefix narrows them", async () => {
    const all = await sdk.send(new ListRulesCommand({ EventBusName: 'fixture-bus' }));
    const names = all.Rules!.map((r) => r.Name!);
    expect(names).toEqual([...names].sort());
    expect(names.length).toBe(bus.table!.eventRules.length);
    expect(all.Rules![0]).toMatchObject({
      State: 'ENABLED',
      EventBusName: 'fixture-bus',
      Arn: `arn:aws:events:us-east-1:000000000000:rule/fixture-bus/${names[0]}`,
    });
    expect(() => JSON.parse(all.Rules![0]!.EventPattern!)).not.toThrow();
    const first = await sdk.send(new ListRulesCommand({ EventBusName: 'fixture-bus', Limit: 1 }));
    expect(first.Rules!.map((r) => r.Name)).toEqual([names[0]]);
    const second = await sdk.send(
      new ListRulesCommand({ EventBusName: 'fixture-bus', Limit: 1, NextToken: first.NextToken! }),
    );
    expect(second.Rules!.map((r) => r.Name)).toEqual([names[1]]);
    const narrowed = await sdk.send(new ListRulesCommand({ EventBusName: 'fixture-bus', NamePrefix: names[1] }));
    expect(narrowed.Rules!.map((r) => r.Name)).toContain(names[1]);
    // Schedules are rules of the default bus.
    const defaults = await sdk.send(new ListRulesCommand({}));
    expect(defaults.Rules!.map((r) => r.ScheduleExpression).sort()).toEqual([
      'cron(0 12 ? * MON-FRI *)',
      'rate(5 minutes)',
    ]);
  });

  it('describes a rule and a bus; one that is not there is ResourceNotFoundException', async () => {
    const [rule] = bus.table!.eventRules;
    const got = await sdk.send(new DescribeRuleCommand({ Name: rule!.name, EventBusName: 'fixture-bus' }));
    expect(got).toMatchObject({ Name: rule!.name, EventPattern: JSON.stringify(rule!.pattern), State: 'ENABLED' });
    await expect(
      sdk.send(new DescribeRuleCommand({ Name: 'nope', EventBusName: 'fixture-bus' })),
    ).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
      message: 'Rule nope does not exist on EventBus fixture-bus.',
    });
    expect(await sdk.send(new DescribeEventBusCommand({ Name: 'fixture-bus' }))).toMatchObject({
      Name: 'fixture-bus',
      Arn: 'arn:aws:events:us-east-1:000000000000:event-bus/fixture-bus',
    });
    await expect(sdk.send(new DescribeEventBusCommand({ Name: 'other' }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
    await expect(sdk.send(new ListRulesCommand({ EventBusName: 'other' }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
  });

  it('tests a pattern against an event with the matcher the rules route by', async () => {
    const test = (pattern: object, event: object = EVENT) =>
      sdk.send(new TestEventPatternCommand({ EventPattern: JSON.stringify(pattern), Event: JSON.stringify(event) }));
    expect((await test({ source: ['gpu-reflex.node-agent'], detail: { xid: [{ numeric: ['>', 60] }] } })).Result).toBe(
      true,
    );
    expect((await test({ detail: { xid: [13] } })).Result).toBe(false);
    await expect(test({ source: 'not-a-list' })).rejects.toMatchObject({ name: 'InvalidEventPatternException' });
    const { id: _id, ...noId } = EVENT;
    await expect(test({ source: ['x'] }, noId)).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringContaining('id'),
    });
  });
});

describe('the bus control plane through the AWS CLI', awsCli.options, () => {
  const aws = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((done) =>
      execFile(
        'aws',
        [...args, '--endpoint-url', bus.url, '--region', 'us-east-1', '--output', 'json'],
        { env: { ...process.env, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_PAGER: '' } },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );

  it('aws events list-rules, describe-rule, describe-event-bus and test-event-pattern answer as AWS', async () => {
    const list = await aws(['events', 'list-rules', '--event-bus-name', 'fixture-bus']);
    expect(list.stderr).toBe('');
    const rules = (JSON.parse(list.stdout) as { Rules: { Name: string }[] }).Rules;
    expect(rules.length).toBe(bus.table!.eventRules.length);
    const one = await aws(['events', 'describe-rule', '--name', rules[0]!.Name, '--event-bus-name', 'fixture-bus']);
    expect(JSON.parse(one.stdout)).toMatchObject({ Name: rules[0]!.Name, EventBusName: 'fixture-bus' });
    const missing = await aws(['events', 'describe-rule', '--name', 'nope', '--event-bus-name', 'fixture-bus']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/ResourceNotFoundException.*Rule nope does not exist on EventBus fixture-bus\./);
    const busOut = await aws(['events', 'describe-event-bus', '--name', 'fixture-bus']);
    expect(JSON.parse(busOut.stdout)).toMatchObject({ Name: 'fixture-bus' });
    const t = await aws([
      'events',
      'test-event-pattern',
      '--event-pattern',
      JSON.stringify({ 'detail-type': ['GPU XID Error'] }),
      '--event',
      JSON.stringify(EVENT),
    ]);
    expect(JSON.parse(t.stdout)).toEqual({ Result: true });
  });
});
