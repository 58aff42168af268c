import type { KubeSim } from './kube/index.ts';
import type { Pod } from './kube/types.ts';
import type { NodeFiles } from './node-files.ts';
import type { GpuSpec } from './node-gpus.ts';
import type { PluginSharing } from './plugin-sharing.ts';

/** A device plugin's node (device-plugin.ts): which plugin runs there, its GPUs, and the devices each gives. */

/**
 * XIDs NVIDIA's device plugin does not mark a GPU unhealthy for: its default skip list, written
 * here from NVIDIA/k8s-device-plugin `internal/rm/health.go` (13, 31, 43, 45, 68, 109; fencing.md,
 * corrections 2026-12-01), not imported from the functions (which must not agree with a bug).
 */
export const PLUGIN_SKIPPED_XIDS: ReadonlySet<number> = new Set([13, 31, 43, 45, 68, 109]);

export type DevicePluginKind = 'ack' | 'nvidia' | 'dra';

export interface PluginNode extends Pick<NodeFiles, 'node' | 'dir'> {
  gpus: readonly GpuSpec[];
  kind: DevicePluginKind;
  /** NVIDIA's plugin config shares the node's GPUs (time-slicing or MPS replicas: plugin-sharing.ts). */
  sharing?: PluginSharing;
}

/** Where NVIDIA's device plugin runs (the remediation policy's `fence.nvidiaPlugin`). */
export interface PluginPods {
  namespace: string;
  selector: Readonly<Record<string, string>>;
}

/**
 * What one GPU gives the node's allocatable: its MIG instances by profile, or one whole GPU — `replicas`
 * devices of the shared resource when the plugin's config replicates it (plugin-sharing.ts).
 */
export function devicesOf(g: GpuSpec, sharing?: PluginSharing): Map<string, number> {
  const out = new Map<string, number>();
  if (g.mig.length === 0) out.set(sharing?.resource ?? 'nvidia.com/gpu', sharing?.replicas ?? 1);
  for (const m of g.mig) out.set(`nvidia.com/mig-${m.profile}`, (out.get(`nvidia.com/mig-${m.profile}`) ?? 0) + 1);
  return out;
}

/** The live NVIDIA device plugin pod on `node`, if one runs there. */
export function livePluginPod(sim: KubeSim, pluginPods: PluginPods, node: string): Pod | undefined {
  const { namespace, selector } = pluginPods;
  return sim.store
    .podsOnNode(node)
    .find(
      (p) =>
        p.metadata.namespace === namespace &&
        !p.metadata.deletionTimestamp &&
        Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v),
    );
}
