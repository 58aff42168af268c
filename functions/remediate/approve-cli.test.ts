import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../events/cli-kit/command.ts';
import { APPROVAL_DECIDED, SOURCES } from '../../events/index.ts';
import { startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';
import { approvalKey, checkSeal } from '../lib/approval-seal.ts';
import { approveCommand } from './approve-cli.ts';

let bus: LocalBus;
const NOW = new Date('2026-11-21T03:05:00.000Z');
const KEY_TEXT = 'an-approval-key-for-this-test-only-000';
let ENV: NodeJS.ProcessEnv = { USER: 'alice', GPU_REFLEX_APPROVAL_KEY: KEY_TEXT };

beforeAll(async () => {
  bus = await startLocalBus({ busName: 'gpu-reflex' });
});
afterAll(async () => {
  await bus?.close();
});

function run(args: string[]) {
  const out: string[] = [];
  const io = { out: (l: string) => void out.push(l), err: (l: string) => void out.push(l) };
  return {
    out,
    done: (
      approveCommand.run as (a: string[], io: unknown, env: NodeJS.ProcessEnv, now: () => Date) => Promise<number>
    )(args, io, ENV, () => NOW),
  };
}

describe('gpu-reflex approve', () => {
  it('puts an Approval Decided on the bus, decided by cli:NAME and sealed with the approval key', async () => {
    const { out, done } = run(['apr-7f3c9a12', '--endpoint', bus.url, '--by', 'bob', '--comment', 'capacity is fine']);
    expect(await done).toBe(0);
    const sent = bus.events.filter((e) => e['detail-type'] === APPROVAL_DECIDED);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.source).toBe(SOURCES.chatops);
    expect(sent[0]!.detail).toEqual({
      schemaVersion: 1,
      eventId: 'apr-7f3c9a12:approved',
      occurredAt: NOW.toISOString(),
      approvalId: 'apr-7f3c9a12',
      decision: 'approved',
      decidedBy: { platform: 'cli', id: 'bob' },
      comment: 'capacity is fine',
      seal: expect.any(String),
    });
    expect(checkSeal(approvalKey(KEY_TEXT, 'test'), sent[0]!.detail as never)).toBe('valid');
    expect(out).toEqual(['approved apr-7f3c9a12 by cli:bob: event apr-7f3c9a12:approved on the bus']);
  });

  it('--dry-run reads the key and prints the sealed event it would send, and sends nothing', async () => {
    const before = bus.events.length;
    const { out, done } = run(['apr-7f3c9a12', '--endpoint', bus.url, '--dry-run']);
    expect(await done).toBe(0);
    expect(bus.events).toHaveLength(before);
    expect(out[0]).toBe(
      `dry run: approved apr-7f3c9a12 by cli:alice would be event apr-7f3c9a12:approved on bus gpu-reflex ` +
        `(${bus.url}); nothing sent, nothing decided`,
    );
    const event = JSON.parse(out[1]!) as { detailType: string; detail: never };
    expect(event.detailType).toBe(APPROVAL_DECIDED);
    expect(checkSeal(approvalKey(KEY_TEXT, 'test'), event.detail)).toBe('valid');
  });

  it('--reject rejects, decided by the login name by default', async () => {
    const { done } = run(['apr-7f3c9a12', '--reject', '--endpoint', bus.url]);
    expect(await done).toBe(0);
    expect(bus.events.at(-1)!.detail).toMatchObject({
      decision: 'rejected',
      decidedBy: { platform: 'cli', id: 'alice' },
    });
  });

  it('sends nothing without an approval key, saying where one comes from (exit 1)', async () => {
    const before = bus.events.length;
    const saved = ENV;
    ENV = { USER: 'alice' };
    try {
      await expect(run(['apr-7f3c9a12', '--endpoint', bus.url]).done).rejects.toThrow(
        /^no approval key: remediate-approve refuses an unsealed decision; pass --key-parameter/,
      );
      ENV = { USER: 'alice', GPU_REFLEX_APPROVAL_KEY: 'short' };
      await expect(run(['apr-7f3c9a12', '--endpoint', bus.url]).done).rejects.toThrow(
        /GPU_REFLEX_APPROVAL_KEY: the approval key must be at least 32 characters \(it has 5\)/,
      );
    } finally {
      ENV = saved;
    }
    expect(bus.events).toHaveLength(before);
  });

  it('refuses a malformed ID or a missing one in one line, before sending anything', async () => {
    const before = bus.events.length;
    await expect(run(['7f3c9a12', '--endpoint', bus.url]).done).rejects.toThrow(
      new UsageError('approvalId: expected an approval id like apr-7f3c9a12'),
    );
    await expect(run(['--endpoint', bus.url]).done).rejects.toThrow(/expected one approval ID \(apr-\.\.\.\), got 0/);
    expect(bus.events).toHaveLength(before);
  });

  it.each(['apr-7f3c9a12 --bogus', 'apr-7f3c9a12 --by'])(
    'refuses `%s` as a UsageError, not a raw TypeError, before sending anything',
    async (line) => {
      const before = bus.events.length;
      await expect(run(['--endpoint', bus.url, ...line.split(' ')]).done).rejects.toThrow(UsageError);
      expect(bus.events).toHaveLength(before);
    },
  );
});

describe('gpu-reflex approvals list', () => {
  it('lists the stored approvals oldest first, --open only the open ones, reading the cluster only', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { startKubeSim } = await import('../../infra/local/kube/index.ts');
    const { kubePorts, loadKubeConfig } = await import('../adapters/kube/client.ts');
    const { closeApproval, recordApproval } = await import('../lib/approvals.ts');
    const { approvalsListCommand } = await import('./approve-cli.ts');
    const sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu-a100-07', allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': 8 } }],
        namespaces: [{ name: 'gpu-reflex' }],
      },
    });
    const dir = mkdtempSync(join(tmpdir(), 'gr-approvals-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      sim.writeKubeconfig(kubeconfig);
      const state = kubePorts(loadKubeConfig({ kubeconfigPath: kubeconfig }), { namespace: 'gpu-reflex' }).state;
      const base = {
        node: 'gpu-a100-07',
        incident: 'i',
        action: 'drain-node',
        scope: 'node',
        target: { gpus: [], pods: [] },
        expiresAt: '2026-11-21T04:00:00.000Z',
        approvers: [],
        status: 'open' as const,
      };
      await recordApproval(state, { ...base, id: 'apr-first000', requestedAt: '2026-11-21T03:00:00.000Z' });
      await recordApproval(state, { ...base, id: 'apr-second00', requestedAt: '2026-11-21T03:01:00.000Z' });
      await closeApproval(state, 'apr-first000', 'approved-applied', { decidedBy: 'cli:alice', at: NOW });
      const lines: string[] = [];
      const io = { out: (l: string) => void lines.push(l), err: (l: string) => void lines.push(l) };
      expect(await approvalsListCommand.run(['--kubeconfig', kubeconfig], io)).toBe(0);
      expect(lines).toEqual([
        'apr-first000  approved-applied  gpu-a100-07  drain-node  expires 2026-11-21T04:00:00.000Z  by cli:alice',
        'apr-second00  open  gpu-a100-07  drain-node  expires 2026-11-21T04:00:00.000Z',
      ]);
      lines.length = 0;
      expect(await approvalsListCommand.run(['--kubeconfig', kubeconfig, '--open'], io)).toBe(0);
      expect(lines).toEqual(['apr-second00  open  gpu-a100-07  drain-node  expires 2026-11-21T04:00:00.000Z']);
      await expect(approvalsListCommand.run([], io)).rejects.toThrow(/--kubeconfig FILE is required/);
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(['--kubeconfig k --bogus', '--kubeconfig', '--kubeconfig k extra'])(
    'approvals list refuses `%s` as a UsageError, not a raw TypeError',
    async (line) => {
      const { approvalsListCommand } = await import('./approve-cli.ts');
      const io = { out: () => {}, err: () => {} };
      await expect(approvalsListCommand.run(line.split(' '), io)).rejects.toThrow(UsageError);
    },
  );
});
