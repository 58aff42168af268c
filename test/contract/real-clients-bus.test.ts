import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';

/**
 * The local bus through EventBridge clients gpu-reflex does not own: boto3 (Debian's
 * python3-boto3) and the AWS CLI. One call mixes good and bad entries; each client must parse the
 * partial failure (FailedEntryCount, per-entry ErrorCode / EventId) and a request-level error
 * without complaint. Where a client is missing the test is skipped, and says so loudly.
 *
 * The clients run as child processes and asynchronously: the bus answers from this process, so a
 * synchronous spawn would leave it unable to answer.
 */
const SCRIPT = new URL('./clients/put_events.py', import.meta.url).pathname;
const run = promisify(execFile);

/** The first interpreter that can `import boto3` (the pyenv python3 on PATH may lack it). */
function pythonWithBoto3(): string | undefined {
  for (const candidate of ['/usr/bin/python3', 'python3', 'python']) {
    const probe = spawnSync(candidate, ['-c', 'import boto3'], { stdio: 'ignore', timeout: 30_000 });
    if (probe.status === 0) return candidate;
  }
  return undefined;
}
const python = pythonWithBoto3();
const aws = spawnSync('aws', ['--version'], { stdio: 'ignore', timeout: 30_000 }).status === 0 ? 'aws' : undefined;
if (!python) console.warn('SKIPPED: boto3 PutEvents test: no python3 here can `import boto3` (install python3-boto3)');
if (!aws) console.warn('SKIPPED: AWS CLI PutEvents test: `aws` is not on PATH (install awscli)');

/** Only test credentials and this bus: nothing from the shell's AWS configuration. */
const clientEnv = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '/tmp',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_CONFIG_FILE: '/nonexistent/aws-config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
  AWS_EC2_METADATA_DISABLED: 'true',
};

let bus: LocalBus;
beforeAll(async () => {
  bus = await startLocalBus({ busName: 'gpu-reflex' });
});
afterAll(async () => bus.close());

describe('PutEvents through clients gpu-reflex does not own', () => {
  it.skipIf(!python)('boto3 parses a partial failure per entry and a request-level error', async () => {
    const { stdout } = await run(python!, [SCRIPT, bus.url, 'gpu-reflex'], { env: clientEnv, timeout: 120_000 });
    const out = JSON.parse(stdout) as {
      FailedEntryCount: number;
      Entries: Record<string, string>[];
      missingBus: unknown;
    };
    expect(out.FailedEntryCount).toBe(4);
    expect(out.Entries.map((e) => e.ErrorCode ?? 'ok')).toEqual([
      'ok',
      'MalformedDetail',
      'MalformedDetail',
      'NotAuthorizedForSourceException',
      'InvalidArgument',
    ]);
    expect(out.Entries[2]!.ErrorMessage).toBe('Detail is malformed: nested more than 1000 levels deep.');
    expect(out.missingBus).toEqual({
      code: 'ResourceNotFoundException',
      message: 'Event bus no-such-bus does not exist.',
      status: 400,
    });
    const accepted = bus.events.find((e) => e.id === out.Entries[0]!.EventId);
    expect(accepted).toMatchObject({
      source: 'gpu-reflex.node-agent',
      'detail-type': 'GPU XID Error',
      detail: { xid: 79 },
      resources: ['arn:aws:ec2:us-east-1:000000000000:instance/i-1'],
    });
  });

  it.skipIf(!aws)('the AWS CLI prints a partial failure it parsed', async () => {
    const entries = [
      {
        Source: 'gpu-reflex.node-agent',
        DetailType: 'GPU XID Error',
        Detail: '{"xid":48}',
        EventBusName: 'gpu-reflex',
      },
      { Source: 'gpu-reflex.node-agent', DetailType: 'GPU XID Error', Detail: '[1,2]', EventBusName: 'gpu-reflex' },
    ];
    const { stdout } = await run(
      aws!,
      [
        'events',
        'put-events',
        '--endpoint-url',
        bus.url,
        '--region',
        'us-east-1',
        '--output',
        'json',
        '--entries',
        JSON.stringify(entries),
      ],
      { env: clientEnv, timeout: 120_000 },
    );
    const out = JSON.parse(stdout) as { FailedEntryCount: number; Entries: Record<string, string>[] };
    expect(out.FailedEntryCount).toBe(1);
    expect(out.Entries[0]!.EventId).toEqual(bus.events.find((e) => e.detail.xid === 48)?.id);
    expect(out.Entries[1]).toEqual({ ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' });
  });
});
