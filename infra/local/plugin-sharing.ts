/**
 * NVIDIA's device plugin's GPU sharing, as the local stack's stand-in serves it (issue #32). Written
 * from NVIDIA/k8s-device-plugin (@1b826acc, its README "Shared Access to GPUs"), never from gpu-reflex's
 * functions:
 *
 * - **Config.** The plugin reads a config file whose `sharing.timeSlicing` or `sharing.mps` has
 *   `renameByDefault`, `failRequestsGreaterThanOne` and `resources[]{name, replicas}` (api/config/v1/
 *   replicas.go `ReplicatedResources`, `ReplicatedResource`). With the Helm chart the configs are the keys
 *   of a ConfigMap, and the node label `nvidia.com/device-plugin.config` picks the node's
 *   (deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml, its config-manager
 *   sidecar's NODE_LABEL). Here: any ConfigMap in the plugin's namespace holding that key.
 * - **Replicas.** Every GPU of a replicated resource becomes `replicas` devices with IDs `<UUID>::<i>`
 *   (internal/rm/device_map.go `updateDeviceMapWithReplicas`, internal/rm/devices.go `AnnotatedID`), so
 *   allocatable = GPUs × replicas; `renameByDefault` advertises them as `<name>.shared`.
 * - **Labels** (internal/lm/resource.go `baseLabeler`, `getProductName`): `nvidia.com/gpu.replicas`
 *   = replicas per GPU, `nvidia.com/gpu.sharing-strategy` = `time-slicing` | `mps`, and
 *   `nvidia.com/gpu.product` gains `-SHARED` only when the resource is not renamed. MPS adds
 *   `nvidia.com/mps.capable=true` (internal/lm/nvml.go), which the MPS control daemon's DaemonSet selects
 *   (templates/daemonset-mps-control-daemon.yml).
 * - **Health.** Since PR #1930 (merged by 2026-09-22) an Xid marks every replica of the card unhealthy;
 *   before it, `checkHealth` kept one device per parent UUID (`parentToDeviceMap[uuid] = d`,
 *   internal/rm/health.go@1b826acc), so an Xid took one replica out and left the rest allocatable
 *   (github.com/NVIDIA/k8s-device-plugin/issues/1929). A node annotated
 *   `sim.gpu-reflex.io/nvidia-plugin-health: pre-1930` runs that older plugin.
 */
import { parseYamlText } from '../../functions/lib/yaml-text.ts';
import type { Node } from './kube/types.ts';

export type SharingStrategy = 'time-slicing' | 'mps';

export interface PluginSharing {
  strategy: SharingStrategy;
  /** The resource the replicas are advertised under: `nvidia.com/gpu`, or `nvidia.com/gpu.shared` when renamed. */
  resource: string;
  replicas: number;
  renamed: boolean;
  /** The plugin predates PR #1930: an Xid marks one replica of the card unhealthy, not all (issue #1929). */
  preFix1929: boolean;
}

/** The node label NVIDIA's config-manager reads to pick the node's config (Helm chart). */
export const PLUGIN_CONFIG_LABEL = 'nvidia.com/device-plugin.config';
/** The scenario's knob: this node's NVIDIA plugin is one from before PR #1930. */
export const PLUGIN_HEALTH_ANNOTATION = 'sim.gpu-reflex.io/nvidia-plugin-health';

interface Replicated {
  renameByDefault?: boolean;
  resources?: { name?: string; replicas?: number }[];
}

/**
 * The sharing one config text sets up for `nvidia.com/gpu`, or undefined (none, another resource, or a
 * config the plugin would refuse: replicas below 2, api/config/v1/replicas.go `UnmarshalJSON`).
 */
export function parsePluginSharing(text: string, preFix1929 = false): PluginSharing | undefined {
  const raw = parseYamlText(text) as { sharing?: { timeSlicing?: Replicated; mps?: Replicated } } | null;
  const pick = (strategy: SharingStrategy, r: Replicated | undefined): PluginSharing | undefined => {
    const gpu = r?.resources?.find((x) => x.name === 'nvidia.com/gpu');
    if (!gpu || !Number.isInteger(gpu.replicas) || gpu.replicas! < 2) return undefined;
    const renamed = r?.renameByDefault === true;
    return {
      strategy,
      resource: renamed ? 'nvidia.com/gpu.shared' : 'nvidia.com/gpu',
      replicas: gpu.replicas!,
      renamed,
      preFix1929,
    };
  };
  return pick('mps', raw?.sharing?.mps) ?? pick('time-slicing', raw?.sharing?.timeSlicing);
}

/** The labels the plugin's labeller puts on a node with this sharing (`product`: the plain product label). */
export function sharingLabels(s: PluginSharing, product: string | undefined): Record<string, string> {
  return {
    'nvidia.com/gpu.replicas': String(s.replicas),
    'nvidia.com/gpu.sharing-strategy': s.strategy,
    ...(product ? { 'nvidia.com/gpu.product': s.renamed ? product : `${product.replace(/-SHARED$/, '')}-SHARED` } : {}),
    ...(s.strategy === 'mps' ? { 'nvidia.com/mps.capable': 'true' } : {}),
  };
}

/** Config objects as the stand-in reads them: ConfigMaps' `data` in the plugin's namespace. */
export interface ConfigSource {
  configMaps: readonly { data?: Record<string, string> }[];
}

/** The sharing of one node: its config key (its label) looked up in the plugin's ConfigMaps. */
export function nodeSharing(
  labels: Readonly<Record<string, string>> | undefined,
  annotations: Readonly<Record<string, string>> | undefined,
  source: ConfigSource,
): PluginSharing | undefined {
  const key = labels?.[PLUGIN_CONFIG_LABEL];
  if (!key) return undefined;
  const text = source.configMaps.find((c) => c.data?.[key] !== undefined)?.data?.[key];
  return text === undefined
    ? undefined
    : parsePluginSharing(text, annotations?.[PLUGIN_HEALTH_ANNOTATION] === 'pre-1930');
}

/**
 * The node as the kubelet shows it once the plugin has read its sharing config: the labeller's labels,
 * and the shared resource's capacity and allocatable (`whole` GPUs × replicas; a renamed resource
 * replaces `nvidia.com/gpu`, api/config/v1/replicas.go).
 */
export function advertised(node: Node, s: PluginSharing, whole: number): Node {
  const status = (node.status ?? {}) as { allocatable?: Record<string, string>; capacity?: Record<string, string> };
  const shared = (m: Record<string, string> | undefined) => {
    const out: Record<string, string> = { ...m };
    if (s.renamed) delete out['nvidia.com/gpu'];
    out[s.resource] = String(whole * s.replicas);
    return out;
  };
  const labels = node.metadata.labels ?? {};
  return {
    ...node,
    metadata: { ...node.metadata, labels: { ...labels, ...sharingLabels(s, labels['nvidia.com/gpu.product']) } },
    status: {
      ...status,
      capacity: shared(status.capacity ?? status.allocatable),
      allocatable: shared(status.allocatable),
    },
  };
}
