import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../../events/cli-kit/command.ts';
import { withEnv } from '../stack-env.ts';
import { busServeCommand, makeBusServeCommand } from './cli.ts';
import { calls } from './fixtures/handlers/record.ts';
import type { LocalBus } from './index.ts';
import { formatBusEvent } from './timeline.ts';

const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;
const PUBLISH_BACK = new URL('./fixtures/publish-back/serverless.yml', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'bus-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const KUBECONFIG = join(dir, 'kubeconfig');
writeFileSync(
  KUBECONFIG,
  'apiVersion: v1\nkind: Config\ncurrent-context: sim\ncontexts: [{name: sim, context: {cluster: sim, user: u}}]\nclusters: [{name: sim, cluster: {server: "http://127.0.0.1:6443"}}]\nusers: [{name: u, user: {token: t}}]\n',
);
// The shell running the tests may have cluster or AWS settings of its own: none may leak in.
const SHELL = [
  'KUBECONFIG',
  'GPU_REFLEX_KUBECONFIG_TEXT',
  'GPU_REFLEX_IN_CLUSTER',
  'AWS_ENDPOINT_URL_EVENTBRIDGE',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_REGION',
  'EVENT_BUS_NAME',
];
let restoreShell: () => void;
beforeEach(() => {
  restoreShell = withEnv(Object.fromEntries(SHELL.map((k) => [k, undefined])));
});
afterEach(() => restoreShell());

/** Runs `bus serve` until the returned stop() is called. */
function serve(args: string[]) {
  let stop!: () => void;
  const stopped = new Promise<void>((r) => (stop = r));
  let ready!: (b: LocalBus) => void;
  const readyP = new Promise<LocalBus>((r) => (ready = r));
  const c = capture();
  const done = makeBusServeCommand({ stop: stopped, onReady: ready }).run(args, c.io);
  return { ...c, ready: readyP, done, stop };
}

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
    const done = makeBusServeCommand({ stop: stopped, onReady: ready }).run(
      ['--serverless', FIXTURE, '--stage', 'cli', '--kubeconfig', KUBECONFIG],
      io,
    );
    const bus = await readyP;
    calls().length = 0;
    const sdk = new EventBridgeClient({
      endpoint: bus.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxAttempts: 1,
    });
    await sdk.send(
      new PutEventsCommand({
        Entries: [
          { Source: 'gpu-reflex.node-agent', DetailType: 'GPU XID Error', Detail: '{}', EventBusName: 'fixture-bus' },
        ],
      }),
    );
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

  it('points the functions at itself and at the named cluster while it runs, and puts the environment back', async () => {
    const s = serve(['--serverless', PUBLISH_BACK, '--kubeconfig', KUBECONFIG]);
    const bus = await s.ready;
    expect(s.out).toContain(
      `functions: act on kubeconfig ${KUBECONFIG} (--kubeconfig; context sim, server http://127.0.0.1:6443); publish to back-bus on ${bus.url}`,
    );
    const outcome = new Promise<string>((resolve) => {
      bus.on('delivered', (d) => resolve(`delivered ${JSON.stringify(d.result)}`));
      bus.on('failed', (d) => resolve(`failed: ${d.error.message}`));
    });
    await bus.put([{ Source: 'fixture.ping', DetailType: 'Ping', Detail: '{}', EventBusName: 'back-bus' }]);
    // The handler's client has no options: only the environment can have sent its event here.
    expect(await outcome).toBe('delivered 0');
    expect(bus.events.map((e) => [e.source, (e.detail as { kubeconfig?: string }).kubeconfig])).toEqual([
      ['fixture.ping', undefined],
      ['fixture.pong', KUBECONFIG],
    ]);
    s.stop();
    expect(await s.done).toBe(0);
    expect(process.env.AWS_ENDPOINT_URL_EVENTBRIDGE).toBeUndefined();
    expect(process.env.KUBECONFIG).toBeUndefined();
  });

  it('uses KUBECONFIG from the environment when no --kubeconfig is given', async () => {
    process.env.KUBECONFIG = KUBECONFIG;
    const s = serve(['--serverless', PUBLISH_BACK]);
    await s.ready;
    s.stop();
    expect(await s.done).toBe(0);
    expect(s.out.find((l) => l.startsWith('functions:'))).toMatch(
      `act on kubeconfig ${KUBECONFIG} (KUBECONFIG; context sim, server http://127.0.0.1:6443)`,
    );
  });

  it('refuses to start deliveries without a cluster, naming --kubeconfig and KUBECONFIG (usage, exit 2)', async () => {
    const run = busServeCommand.run(['--serverless', PUBLISH_BACK], capture().io);
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow(
      'the functions need a cluster to act on: give --kubeconfig FILE or set KUBECONFIG (or GPU_REFLEX_KUBECONFIG_TEXT, or GPU_REFLEX_IN_CLUSTER=true)',
    );
  });

  it('refuses two cluster sources at once, and reports an unreadable kubeconfig as exit 1', async () => {
    Object.assign(process.env, { KUBECONFIG, GPU_REFLEX_IN_CLUSTER: 'true' });
    await expect(busServeCommand.run(['--serverless', PUBLISH_BACK], capture().io)).rejects.toThrow(
      /exactly one cluster source, but KUBECONFIG and GPU_REFLEX_IN_CLUSTER are set/,
    );
    const { io, err } = capture();
    expect(await busServeCommand.run(['--serverless', PUBLISH_BACK, '--kubeconfig', join(dir, 'missing')], io)).toBe(1);
    expect(err).toEqual([
      `gpu-reflex bus serve: cannot read kubeconfig ${join(dir, 'missing')}: no such file or directory`,
    ]);
  });

  it.each([
    [['--port', '70000'], /--port must be an integer from 0 to 65535/],
    [['--account', '12'], /--account must be 12 digits/],
    [['--history', '1.5'], /--history must be a whole number of events \(got "1.5"\)/],
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
    [
      'delivered',
      { rule: 'r', function: 'f', event: {}, at, attempt: 2, result: 1 },
      '2026-01-01T00:05:00Z delivered     r → f (attempt 2)',
    ],
    [
      'failed',
      { rule: 'r', function: 'f', event: {}, at, attempt: 1, error: new Error('boom'), retryAt: at + 1500 },
      '2026-01-01T00:05:00Z failed        r → f (attempt 1): boom; retry at 2026-01-01T00:05:01Z',
    ],
    [
      'dead-lettered',
      {
        time: '2026-01-01T00:05:00Z',
        rule: 'r',
        function: 'f',
        deadLetterQueueArn: null,
        reason: 'retries-exhausted',
        errorName: 'Error',
        errorMessage: 'boom',
        attempts: 4,
        event: {},
      },
      '2026-01-01T00:05:00Z dead-lettered r → f after 4 attempts (retries-exhausted): boom',
    ],
  ] as const)('formats %s', (name, payload, line) => {
    expect(formatBusEvent(name, payload as never)).toBe(line);
  });
});
