/**
 * Chat's `mig apply`: one round of the MIG rebalancer, answered with its plan and what it started. A round that
 * planned a relayout and did not start it says why, or the plan reads as under way.
 */
import { describe, expect, it } from 'vitest';
import { MIG_INVENTORY_ANNOTATION, type MigInventory } from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock } from '../adapters/clock.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { DEFAULT_MIG_REBALANCE_CONFIG } from '../mig/run.ts';
import type { CommandPorts } from './command-ports.ts';
import { migApply } from './mig-apply.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const SEVEN = Array<string>(7).fill('1g.10gb');

/** An H100 node of 4 GPUs at 7×1g.10gb, notebooks on GPUs 0 and 1, and two pods waiting for a 3g.40gb. */
function setup() {
  const clock = manualClock(T0);
  const kube = fakeKube({ clock });
  const inUse = [7, 3, 0, 0];
  const inventory: MigInventory = {
    v: 1,
    at: new Date(T0).toISOString(),
    gpus: inUse.map((used, index) => ({
      index,
      uuid: `GPU-0000000${index}-0000-4000-8000-000000000000`,
      instances: SEVEN.map((profile, gi) => ({ profile, gi: gi + 1, start: gi, size: 1, inUse: gi < used })),
    })),
  };
  kube.cluster.addNode({
    name: 'h100-0',
    labels: {
      'nvidia.com/mig.strategy': 'mixed',
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.count': '4',
      'nvidia.com/mig.config': 'all-1g.10gb',
      'nvidia.com/mig.config.state': 'success',
    },
    annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
    allocatable: { 'nvidia.com/mig-1g.10gb': '28' },
  });
  for (let i = 0; i < 10; i++)
    kube.cluster.addPod({
      name: `nb-${i}`,
      namespace: 'research',
      uid: `nb-${i}`,
      nodeName: 'h100-0',
      extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
    });
  for (let i = 0; i < 2; i++)
    kube.cluster.addPod({
      name: `ft-${i}`,
      namespace: 'ml',
      uid: `ft-${i}`,
      phase: 'Pending',
      extendedResources: { 'nvidia.com/mig-3g.40gb': 1 },
    });
  const ports: CommandPorts = {
    kube,
    publisher: new RecordingPublisher(),
    notifier: new RecordingNotifier(),
    clock,
    logger: silentLogger,
    holder: 'test',
    dryRun: false,
  };
  return { kube, apply: () => migApply(ports, DEFAULT_MIG_REBALANCE_CONFIG) };
}

describe("chat's mig apply", () => {
  it('starts the relayout it plans', async () => {
    const t = setup();
    expect(await t.apply()).toMatch(/^started the relayout of h100-0 /m);
  });

  it('says why a planned relayout was not started, not only that none was', async () => {
    const t = setup();
    // The ClusterPolicy names another mig-parted config: mig-manager would never read gpu-reflex's.
    t.kube.cluster.clusterPolicies = [{ name: 'cluster-policy', ignored: false }];
    const said = await t.apply();
    expect(said).toMatch(
      /^no relayout started: .*ClusterPolicy cluster-policy has spec\.migManager\.config\.name unset/m,
    );
    expect(said).toContain(
      `kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge -p ` +
        `'{"spec":{"migManager":{"config":{"name":"gpu-reflex-mig-parted-config"}}}}'`,
    );
    expect(t.kube.cluster.callsTo('configFile.update')).toEqual([]);
    expect((await t.kube.nodes.get('h100-0')).unschedulable).toBe(false);
  });

  it('says the mig-parted ConfigMap is not gpu-reflex’s to write, and what to set', async () => {
    const t = setup();
    t.kube.cluster.configFileOwners.set('gpu-operator/gpu-reflex-mig-parted-config', {
      labels: {},
      ownerReferences: [{ apiVersion: 'nvidia.com/v1', kind: 'ClusterPolicy', name: 'cluster-policy' }],
    });
    const said = await t.apply();
    expect(said).toMatch(/^no relayout started: .*owned by the GPU Operator's ClusterPolicy cluster-policy/m);
    expect(said).toContain('spec.migManager.config.name');
    expect(t.kube.cluster.callsTo('configFile.update')).toEqual([]);
  });
});
