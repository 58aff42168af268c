/**
 * Chat's `status` with no node: the counts, then each node gpu-reflex holds in words — what `gpu-reflex
 * status` lists (remediate/held.ts): state, GPU, why, since, the fence, and the approval to decide with
 * its ID — so a person in chat learns what to act on without a kubeconfig.
 */
import { describe, expect, it } from 'vitest';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock } from '../adapters/clock.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { recordApproval } from '../lib/approvals.ts';
import { createLogger } from '../adapters/logger.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { DEFAULT_MIG_REBALANCE_CONFIG } from '../mig/run.ts';
import { DEFAULT_POLICY } from '../remediate/core/policy.ts';
import { HELD_IN_CHAT, parseChatOpsConfig, runChatCommand, type ChatDeps } from './run.ts';

function setup() {
  const clock = manualClock(Date.parse('2026-12-05T01:00:00.000Z'));
  const kube = fakeKube({ clock });
  const deps: ChatDeps = {
    kube,
    publisher: new RecordingPublisher(),
    notifier: new RecordingNotifier(),
    clock,
    logger: createLogger({ service: 't', sink: () => {} }),
    config: parseChatOpsConfig('roles: []\ndefault: viewer\n'),
    policy: DEFAULT_POLICY,
    mig: DEFAULT_MIG_REBALANCE_CONFIG,
  };
  const who = { platform: 'slack' as const, id: 'U-1', name: 'u-1', channel: 'C-1' };
  return { clock, kube, deps, ask: (text: string) => runChatCommand(deps, who, text) };
}

describe("chat's status names the held nodes", () => {
  it('lists a node awaiting approval with the approval ID to decide, and leaves healthy nodes out', async () => {
    const t = setup();
    t.kube.cluster.addNode({ name: 'gpu-0', allocatable: { 'nvidia.com/gpu': '8' } });
    t.kube.cluster.addNode({
      name: 'gpu-1',
      allocatable: { 'nvidia.com/gpu': '8' },
      labels: { [STATE_LABEL]: 'awaiting-approval' },
      unschedulable: true,
    });
    await recordApproval(t.kube.state, {
      id: 'apr-00c0ffee',
      node: 'gpu-1',
      incident: 'inc-1',
      action: 'drain-node',
      scope: 'node',
      target: { gpus: [], pods: [] },
      requestedAt: '2026-12-05T00:50:00.000Z',
      expiresAt: '2026-12-05T01:20:00.000Z',
      approvers: [],
      status: 'open',
    });
    const answer = await t.ask('status');
    const lines = answer.split('\n');
    expect(lines[0]).toBe('2 nodes (1 healthy, 1 awaiting-approval), 1 cordoned; 0 GPU pods pending');
    expect(lines.slice(1)).toEqual([
      '• gpu-1: awaiting-approval, cordoned; waiting for approve apr-00c0ffee (drain-node, expires 2026-12-05T01:20:00.000Z)',
    ]);
  });

  it('says only the counts when nothing is held', async () => {
    const t = setup();
    t.kube.cluster.addNode({ name: 'gpu-0', allocatable: { 'nvidia.com/gpu': '8' } });
    expect(await t.ask('status')).toBe('1 nodes (1 healthy), 0 cordoned; 0 GPU pods pending');
  });

  it(`names at most ${HELD_IN_CHAT} held nodes and points to gpu-reflex status for the rest`, async () => {
    const t = setup();
    for (let i = 0; i < HELD_IN_CHAT + 3; i++)
      t.kube.cluster.addNode({ name: `gpu-${String(i).padStart(2, '0')}`, labels: { [STATE_LABEL]: 'draining' } });
    const lines = (await t.ask('status')).split('\n');
    expect(lines).toHaveLength(1 + HELD_IN_CHAT + 1);
    expect(lines[1]).toBe('• gpu-00: draining');
    expect(lines.at(-1)).toBe('and 3 more held nodes: gpu-reflex status --kubeconfig F lists all');
  });

  it('says a node whose readiness is not known is not known, not Ready', async () => {
    const t = setup();
    // No Ready condition (a node registering, its kubelet never having posted status): kubectl says Unknown.
    t.kube.cluster.addNode({ name: 'gpu-9', ready: undefined, allocatable: { 'nvidia.com/gpu': '8' } });
    expect(await t.ask('status gpu-9')).toBe(
      'gpu-9: Ready unknown (no Ready condition); gpu-reflex state healthy; 8 GPUs allocatable',
    );
    t.kube.cluster.addNode({ name: 'gpu-8', ready: false });
    t.kube.cluster.addNode({ name: 'gpu-0' });
    expect(await t.ask('status gpu-8')).toBe('gpu-8: NotReady; gpu-reflex state healthy');
    expect(await t.ask('status gpu-0')).toBe('gpu-0: Ready; gpu-reflex state healthy');
    // The fleet's counts are gpu-reflex's states: a node not Ready is said beside them, not hidden among "healthy".
    expect(await t.ask('status')).toBe(
      '3 nodes (3 healthy), 0 cordoned; not Ready: gpu-8, gpu-9 (no Ready condition); 0 GPU pods pending',
    );
  });
});
