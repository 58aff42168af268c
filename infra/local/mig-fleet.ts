/**
 * A fleet file as the MIG planner sees it (`gpu-reflex mig plan --fleet`, which bin/main.ts hands
 * this reader: the MIG CLI itself imports no simulator): the simulated cluster
 * is seeded in process (no server), its scheduler places what fits, and the simulated device
 * plugin's allocation says which GPU instance each running pod holds, so the planner knows which
 * GPUs are idle exactly, as the node agent's inventory would tell it on a real node.
 *
 * This file is the product's side of that hand-over, not a simulator: it reads the simulated
 * objects through the production kube adapter's converters (toNodeInfo, toPodInfo), as objects of a
 * real cluster reach the planner, and decides nothing. What the world does (scheduling, device
 * allocation) is in kube/ and node-gpus.ts, which import no product code
 * (test/contract/sim-independence.test.ts).
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { toNodeInfo, toPodInfo } from '../../functions/adapters/kube/convert.ts';
import type { NodeInfo, PodInfo } from '../../functions/adapters/kube/model.ts';
import type { MigUsage } from '../../functions/mig/supply.ts';
import { Cluster, ManualClock, loadFleet } from './kube/index.ts';
import { FleetError } from './kube/fleet.ts';
import { seedFleet } from './kube/fleet-seed.ts';
import { InputError } from '../../events/cli-kit/command.ts';
import type { Node, Pod } from './kube/types.ts';
import { migInstancesInUse, migLayoutsOf } from './node-gpus.ts';

type MigFleetRead = {
  nodes: NodeInfo[];
  pods: PodInfo[];
  usage: MigUsage;
  /** Each GPU's layout as the simulated GPUs hold it (what a node agent's inventory would say). */
  layouts: MigUsage;
};

/** A fleet file that is not one is an InputError naming every bad field (as quota plan says it). */
export async function readFleetForMig(path: string): Promise<MigFleetRead> {
  try {
    return read(path);
  } catch (err) {
    throw err instanceof FleetError ? new InputError(err.message, { cause: err }) : err;
  }
}

function read(path: string): MigFleetRead {
  const fleet = loadFleet(path);
  const cluster = new Cluster(new ManualClock(), {
    migLayouts: fleet.migConfigs,
    migReconfigureSeconds: fleet.migReconfigureSeconds,
  });
  seedFleet(cluster, fleet);
  cluster.tick();
  const nodes = cluster.store.list('nodes') as Node[];
  const pods = cluster.store.list('pods') as Pod[];
  const usage: MigUsage = migInstancesInUse(nodes, pods);
  return {
    nodes: nodes.map((n) => toNodeInfo(n as unknown as V1Node)),
    pods: pods.map((p) => toPodInfo(p as unknown as V1Pod)),
    usage,
    layouts: migLayoutsOf(nodes),
  };
}
