/**
 * `quarantine NODE GPU` answers with what remediation did, not only what it decided: a disruption budget
 * that blocks the GPU's pod leaves it running on the faulty GPU, and the answer says so. The end-to-end
 * path is test/e2e/chatops-commands.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock } from '../adapters/clock.ts';
import { dryRunPorts } from '../adapters/kube/dry-run.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { DEFAULT_POLICY } from '../remediate/core/policy.ts';
import type { CommandPorts } from './command-ports.ts';
import { quarantine } from './quarantine.ts';

const UUID = 'GPU-5f2c3a00-8d41-4b7a-9e0f-1c2d3e4f5a6b';

function setup(o: { budget?: boolean; dryRun?: boolean } = {}) {
  const clock = manualClock(Date.parse('2026-12-06T02:00:00.000Z'));
  const kube = fakeKube({ clock });
  kube.cluster.addNode({
    name: 'a-0',
    labels: { 'gpu-reflex.io/pool': 'a' },
    allocatable: { 'nvidia.com/gpu': '8' },
  });
  kube.cluster.addPod({
    name: 'train',
    namespace: 'ml',
    nodeName: 'a-0',
    extendedResources: { 'nvidia.com/gpu': 1 },
    owners: [{ kind: 'StatefulSet', name: 'train' }],
    labels: { app: 'train' },
  });
  // A budget that lets none of the training pods go.
  if (o.budget) kube.cluster.addPdb({ namespace: 'ml', matchLabels: { app: 'train' }, minAvailable: 1 });
  const ports: CommandPorts = {
    kube: o.dryRun ? dryRunPorts(kube, () => {}) : kube,
    publisher: new RecordingPublisher(),
    notifier: new RecordingNotifier(),
    clock,
    logger: silentLogger,
    holder: 'test',
    dryRun: o.dryRun ?? false,
  };
  const who = { platform: 'slack', id: 'U-OPS', channel: 'C-OPS' } as const;
  return {
    kube,
    ask: () => quarantine(ports, { policy: DEFAULT_POLICY, who, node: 'a-0', gpu: UUID, usage: 'quarantine NODE GPU' }),
  };
}

describe('quarantine, answered in chat', () => {
  it('says the GPU’s pod was evicted when it was', async () => {
    const { kube, ask } = setup();
    const answer = await ask();
    expect(kube.cluster.pod('ml', 'train')?.terminating).toBe(true);
    expect(answer).toMatch(/evicted 1 pod \(ml\/train\)/);
    expect(answer).not.toMatch(/blocked/);
  });

  it('says a disruption budget kept the pod running on the faulty GPU, and why, when it did', async () => {
    const { kube, ask } = setup({ budget: true });
    const answer = await ask();
    // The pod is still there, running on the GPU that was asked out of service.
    expect(kube.cluster.pod('ml', 'train')?.terminating).toBe(false);
    expect(answer).not.toMatch(/evicted 1 pod/);
    expect(answer).toMatch(/1 pod not evicted: ml\/train .*disruption budget/);
    expect(answer).toMatch(/still runs on GPU-5f2c3a00/);
  });

  it('says, in a dry run, what a live run would evict, and evicts nothing', async () => {
    const { kube, ask } = setup({ dryRun: true });
    const answer = await ask();
    expect(answer).toMatch(/^dry run, nothing changed: .*\. A live run would: evict 1 pod \(ml\/train\)$/);
    expect(kube.cluster.pod('ml', 'train')?.terminating).toBe(false);
  });

  it('says an eviction the API server failed, with its error', async () => {
    const { kube, ask } = setup();
    kube.cluster.failNext('pods.evict', 500);
    const answer = await ask();
    expect(kube.cluster.pod('ml', 'train')?.terminating).toBe(false);
    expect(answer).toMatch(/NOT done: 1 pod not evicted: ml\/train \(failed: .+\); it still runs on GPU-5f2c3a00/);
  });
});
