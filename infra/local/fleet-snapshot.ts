/**
 * A fleet file as the functions would read it from a live cluster: the simulated cluster is seeded
 * in process (no server), its scheduler places what fits, and nodes, pods and quotas come back in
 * the adapters' own types (`gpu-reflex quota plan --fleet`, which bin/main.ts hands this reader:
 * the quota CLI itself imports no simulator). A fleet file that is not one is an InputError, told
 * as one line naming the field.
 */
import type { V1Node, V1Pod, V1ResourceQuota } from '@kubernetes/client-node';
import { toNodeInfo, toPodInfo, toQuotaInfo } from '../../functions/adapters/kube/convert.ts';
import type { NodeInfo, PodInfo, QuotaInfo } from '../../functions/adapters/kube/model.ts';
import { Cluster, ManualClock, loadFleet } from './kube/index.ts';
import { FleetError } from './kube/fleet.ts';
import { seedFleet } from './kube/fleet-seed.ts';
import { InputError } from '../../events/cli-kit/command.ts';

export async function fleetSnapshot(
  path: string,
): Promise<{ nodes: NodeInfo[]; pods: PodInfo[]; quotas: QuotaInfo[] }> {
  try {
    return snapshot(path);
  } catch (err) {
    throw err instanceof FleetError ? new InputError(err.message, { cause: err }) : err;
  }
}

function snapshot(path: string): { nodes: NodeInfo[]; pods: PodInfo[]; quotas: QuotaInfo[] } {
  const fleet = loadFleet(path);
  const cluster = new Cluster(new ManualClock(), {
    migLayouts: fleet.migConfigs,
    migReconfigureSeconds: fleet.migReconfigureSeconds,
    migManagerConfig: fleet.migManagerConfig,
  });
  seedFleet(cluster, fleet);
  cluster.tick();
  return {
    nodes: cluster.store.list('nodes').map((n) => toNodeInfo(n as unknown as V1Node)),
    pods: cluster.store.list('pods').map((p) => toPodInfo(p as unknown as V1Pod)),
    quotas: cluster.store.list('resourcequotas').map((q) => toQuotaInfo(q as unknown as V1ResourceQuota)),
  };
}
