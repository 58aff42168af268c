/**
 * Whether the nodes a pool was grown for have arrived: joined the cluster Ready **and** advertising the GPUs they
 * were bought for. ACK's task saying `success` is not that: the instances may never register (a bootstrap that
 * fails), or register with no GPU in allocatable (a driver or device plugin that does not come up), and the pods
 * that asked for them would wait behind capacity the planner believes is on its way.
 *
 * A node that should have GPUs but advertises none is not Ready for this, as cluster-autoscaler reads it
 * (kubernetes/autoscaler cluster-autoscaler/processors/customresources/gpu_processor.go
 * `FilterOutNodesWithUnreadyResources`: "nodes with GPU coming up without installed drivers"), and it says nothing of
 * what a new node will hold (`GetNodeGpuTarget`: the node group's template is used instead).
 */
import type { NodeInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';

/**
 * True when the node advertises at least one of the GPU resources a node of its pool offers (`offer`: the resources
 * of the pool's type, core/template.ts `gpuOffer`, each > 0); a type with no GPU expects none.
 */
export function advertisesGpus(n: NodeInfo, offer: Readonly<Record<string, number>>): boolean {
  const keys = Object.keys(offer).filter((k) => offer[k]! > 0);
  if (keys.length === 0) return true;
  return keys.some((k) => {
    try {
      return parseQuantity(n.allocatable[k]) > 0;
    } catch {
      // An unreadable quantity advertises nothing.
      return false;
    }
  });
}
