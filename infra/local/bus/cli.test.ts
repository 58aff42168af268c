import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../bin/command.ts';
import { busServeCommand, makeBusServeCommand } from './cli.ts';
import { calls } from './fixtures/handlers/record.ts';
import type { LocalBus } from './index.ts';
import { formatBusEvent } from './timeline.ts';

const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('gpu-reflex bus serve', () => {
  it('serves PutEvents from the real SDK, prints the routing table and a line per delivery, and stops', async () => {
    let stop!: () => void;
    const stopped = new Promise<void>((r) => (stop = r));
    let ready!: (b: LocalBus) => void;
    const readyP = new Promise<LocalBus>((r) => (ready = r));
    const { io, out, err } = capture();
    const done = makeBusServeCommand({ stop: stopped, onReady: ready }).run(['--serverless', FIXTURE, '--stage', 'cli'], io);
    const bus = await readyP;
    calls().length = 0;
    const sdk = new EventBridgeClient({ endpoint: bus.url, region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' }, maxAttempts: 1 });
    await sdk.send(new PutEventsCommand({ Entries: [{ Source: 'gpu-reflex.node-agent', DetailType: 'GPU XID Error', Detail: '{}', EventBusName: 'fixture-bus' }] }));
    await bus.drain();
    stop();
    expect(await done).toBe(0);
    expect(out[0]).toBe(`PutEvents: ${bus.url}   (AWS_ENDPOINT_URL_EVENTBRIDGE=${bus.url})`);
    expect(out[2]).toBe('fixture (cli): buses default, fixture-bus; 4 rules, 2 schedules, 2 routes');
    expect(out.some((l) => / delivered +fixture-cli-record-rule-1 → record \(attempt 1\)$/.test(l))).toBe(true);
    expect(out.at(-1)).toBe('local bus stopped');
    expect(err).toEqual(['warning: functions.legacy.events[0]: sqs events are not served by the local bus']);
    expect(calls()).toHaveLength(1);
  });

  it.each([
    [['--port', '70000'], /--port must be an integer from 0 to 65535/],
    [['--account', '12'], /--account must be 12 digits/],
    [['--nope'], /Unknown option/],
  ])('refuses %j as usage', async (args, message) => {
    await expect(busServeCommand.run(args, capture().io)).rejects.toThrow(UsageError);
    await expect(busServeCommand.run(args, capture().io)).rejects.toThrow(message);
  });

  it('reports a serverless.yml it cannot read as exit 1, naming the file', async () => {
    const { io, err } = capture();
    expect(await busServeCommand.run(['--serverless', '/nonexistent/serverless.yml'], io)).toBe(1);
    expect(err[0]).toMatch(/cannot read \/nonexistent\/serverless\.yml/);
  });
});

describe('formatBusEvent', () => {
  const at = Date.parse('2026-01-01T00:05:00Z');
  it.each([
    ['scheduled', { rule: 'r', function: 'f', event: {}, at }, '2026-01-01T00:05:00Z scheduled     r → f'],
    ['delivered', { rule: 'r', function: 'f', event: {}, at, attempt: 2, result: 1 }, '2026-01-01T00:05:00Z delivered     r → f (attempt 2)'],
    ['failed', { rule: 'r', function: 'f', event: {}, at, attempt: 1, error: new Error('boom'), retryAt: at + 1500 }, '2026-01-01T00:05:00Z failed        r → f (attempt 1): boom; retry at 2026-01-01T00:05:01Z'],
    [
      'dead-lettered',
      { time: '2026-01-01T00:05:00Z', rule: 'r', function: 'f', deadLetterQueueArn: null, reason: 'retries-exhausted', errorName: 'Error', errorMessage: 'boom', attempts: 4, event: {} },
      '2026-01-01T00:05:00Z dead-lettered r → f after 4 attempts (retries-exhausted): boom',
    ],
  ] as const)('formats %s', (name, payload, line) => {
    expect(formatBusEvent(name, payload as never)).toBe(line);
  });
});
