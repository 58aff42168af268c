/**
 * The GPU Operator's node clients as the GPU sees them: the device plugin, DCGM, its exporter, GPU
 * Feature Discovery and the validator hold every GPU of their node open (/dev/nvidia*), so NVML
 * refuses a reset while any of their pods is on the node — terminating ones included, until the
 * kubelet has removed them (nvidia-smi(1) -r: no client may hold the GPU, monitoring ones included).
 *
 * Their DaemonSets are the scenario's fleet (`daemonSets`, node selector
 * `nvidia.com/gpu.deploy.<component>: "true"`, as NVIDIA/gpu-operator's state manager deploys them),
 * so the simulated DaemonSet controller takes the pods off a node whose deploy label turns `false`
 * and brings them back when it is `true` again (kube/lifecycle.ts). This stand-in only writes, per
 * node, which of those pods hold the GPUs into the mock NVML's `clientsFile` (mock-nvml/src/control-dir.c).
 *
 * The clients are written here again from NVIDIA/mig-parted's GPU Operator hook reconfigure-mig.sh
 * (its pods' `app` labels) and NVSentinel ADR-019; nothing is imported from the node agent.
 */
import { renameSync, writeFileSync } from 'node:fs';
import type { KubeSim } from './kube/index.ts';

const CLIENT_APPS: ReadonlySet<string> = new Set([
  'nvidia-device-plugin-daemonset',
  'gpu-feature-discovery',
  'nvidia-dcgm-exporter',
  'nvidia-dcgm',
  'nvidia-operator-validator',
]);

export interface OperatorNode {
  node: string;
  /** The node's mock NVML `clientsFile`. */
  clientsPath: string;
}

export class GpuOperatorClients {
  private readonly last = new Map<string, string>();

  constructor(
    private readonly sim: KubeSim,
    private readonly nodes: () => readonly OperatorNode[],
    private readonly namespace = 'gpu-operator',
  ) {}

  /** Writes each node's holders when they changed; returns the nodes whose file changed. */
  sync(): string[] {
    const changed: string[] = [];
    for (const n of this.nodes()) {
      const holders = this.sim.store
        .podsOnNode(n.node)
        .filter((p) => p.metadata.namespace === this.namespace && CLIENT_APPS.has(p.metadata.labels?.app ?? ''))
        .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
        .sort();
      const text = JSON.stringify({ holders });
      if (this.last.get(n.node) === text) continue;
      this.last.set(n.node, text);
      // Atomic, as every node file the mock reads (it may read between two writes).
      writeFileSync(`${n.clientsPath}.tmp`, text);
      renameSync(`${n.clientsPath}.tmp`, n.clientsPath);
      changed.push(n.node);
    }
    return changed;
  }
}

/** The operator's own mig-parted ConfigMap: what mig-manager reads while the ClusterPolicy names none. */
const OPERATOR_DEFAULT_MIG_CONFIG = 'default-mig-parted-config';

/**
 * The GPU Operator's ClusterPolicy as its Helm chart installs it (`cluster-policy`), as far as MIG goes:
 * `spec.migManager.config.name` is the mig-parted ConfigMap mig-manager reads. The chart leaves it empty
 * by default (deployments/gpu-operator/values.yaml `migManager.config.name: ""`), and the operator then
 * uses its own default-mig-parted-config (controllers/object_controls.go TransformMigManager), so a fleet
 * whose mig-manager reads that one gets a ClusterPolicy that names none. `status.state` `ready` is the
 * operator's word for the one ClusterPolicy it acts on (others are `ignored`).
 */
export function operatorClusterPolicy(migConfigName: string): object {
  const config = migConfigName === OPERATOR_DEFAULT_MIG_CONFIG ? {} : { name: migConfigName };
  return {
    apiVersion: 'nvidia.com/v1',
    kind: 'ClusterPolicy',
    metadata: { name: 'cluster-policy' },
    spec: { migManager: { enabled: true, config: { default: 'all-disabled', ...config } } },
    status: { state: 'ready' },
  };
}
