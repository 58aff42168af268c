/**
 * A reset on an MPS-shared GPU (issue #32), pure. Under MPS the tenants' kernels run inside the MPS
 * server, a process of the MPS control daemon's pod, which outlives its clients: with every tenant gone the
 * node agent still answers the reset `busy`, held by that pod, and the repair would climb to a reboot.
 * NVIDIA's MPS guide (docs.nvidia.com/deploy/mps, "Starting and Stopping MPS on Linux") stops it by the
 * control daemon's `quit`, which ends its servers; in Kubernetes the daemon is a DaemonSet pod of NVIDIA's
 * plugin — `nvidia-device-plugin-mps-control-daemon` under the GPU Operator (gpu-operator
 * assets/state-device-plugin), `<release>-mps-control-daemon` from the plugin's Helm chart
 * (k8s-device-plugin deployments/helm/nvidia-device-plugin/templates/daemonset-mps-control-daemon.yml) —
 * whose container quits the daemon when stopped (k8s-device-plugin cmd/mps-control-daemon). So that pod is
 * evicted (its DaemonSet makes a new one, which starts no server before a client connects, and the card is
 * fenced) and the reset asked again. Only the pod the agent named as the holder, only while the answer is
 * `busy`; any other holder is left as it was (the reset waits and fails as before). Not checked on a real
 * cluster.
 */
import type { GpuActionState } from '../../../events/index.ts';
import type { Incident } from './state.ts';
import type { PodFacts } from './types.ts';

/** How NVIDIA names the MPS control daemon's DaemonSet in both its deployments (see the file comment). */
const MPS_DAEMON_NAME = /mps-control-daemon/;

export interface MpsDaemonStep {
  pods: PodFacts[];
  why: string;
}

/** The MPS control daemon pods holding the GPU by the agent's last `busy` answer to its reset, if any. */
export function mpsDaemonHolding(
  i: Incident,
  results: Readonly<Record<string, GpuActionState>>,
  pods: readonly PodFacts[],
): MpsDaemonStep | undefined {
  if (i.repair?.step !== 'reset') return undefined;
  const r = results[i.repair.id];
  if (r?.state !== 'failed' || r.reason !== 'busy' || !r.holders?.length) return undefined;
  const held = pods.filter(
    (p) => p.daemonSet && MPS_DAEMON_NAME.test(p.name) && r.holders!.includes(`${p.namespace}/${p.name}`),
  );
  if (held.length === 0) return undefined;
  const names = held.map((p) => `${p.namespace}/${p.name}`).join(', ');
  return {
    pods: held,
    why:
      `the reset of ${i.gpu} is held by the MPS control daemon (${names}), whose server outlives its clients: ` +
      'its pod is evicted (stopping it quits the daemon and its servers; its DaemonSet makes a new one) and ' +
      'the reset asked again',
  };
}
