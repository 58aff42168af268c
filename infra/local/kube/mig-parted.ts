import { parse } from 'yaml';
import { deviceResourceName, simMigModel } from './mig-catalog.ts';
import { placeInstances } from './mig-placement.ts';
import type { Store } from './store.ts';
import type { Node } from './types.ts';

/** NVIDIA mig-parted's config as the simulated mig-manager (mig-manager.ts) reads it from the operator's ConfigMap. */

/**
 * The GPU Operator's own mig-parted ConfigMap (NVIDIA/gpu-operator MigPartedDefaultConfigMapName). mig-manager
 * reads it unless the ClusterPolicy's `spec.migManager.config.name` names another, in the same namespace, key
 * `config.yaml` (object_controls.go: the DaemonSet's `mig-parted-config` volume takes that name).
 */
export const OPERATOR_MIG_PARTED_CONFIGMAP = {
  namespace: 'gpu-operator',
  name: 'default-mig-parted-config',
  key: 'config.yaml',
} as const;
/** What the simulated operator ships in it: no layouts of its own (the fleet's `migConfigs` stand for those). */
export const OPERATOR_SHIPPED_MIG_CONFIG = 'version: v1\nmig-configs: {}\n';
/**
 * A named mig-parted config (`version: v1`) for the node's GPUs: the per-GPU profiles and the
 * node's resource totals (`nvidia.com/mig-<profile>`, `+` spelled `.`). Undefined when the
 * ConfigMap, the name or a GPU's entry is missing, or when a GPU's instances cannot be created on
 * its model (a profile it lacks, more than it offers, no placement: mig-parted's apply fails on the
 * driver's refusal): mig-manager then fails. A model the catalog lacks is taken on trust.
 */
export function partedLayout(
  store: Store,
  configMap: string,
  config: string,
  node: Node,
): { perGpu: string[][]; resources: Record<string, number> } | undefined {
  const gpus = Number(node.metadata.labels?.['nvidia.com/gpu.count'] ?? 1) || 1;
  const model = simMigModel(node.metadata.labels?.['nvidia.com/gpu.product'] ?? '');
  const cm = store.get('configmaps', OPERATOR_MIG_PARTED_CONFIGMAP.namespace, configMap) as
    { data?: Record<string, string> } | undefined;
  const text = cm?.data?.[OPERATOR_MIG_PARTED_CONFIGMAP.key];
  if (!text) return undefined;
  let parsed: {
    'mig-configs'?: Record<
      string,
      { devices: number[] | 'all'; 'mig-enabled'?: boolean; 'mig-devices'?: Record<string, number> }[]
    >;
  };
  try {
    parsed = parse(text) as typeof parsed;
  } catch {
    return undefined;
  }
  const entries = parsed['mig-configs']?.[config];
  if (!Array.isArray(entries)) return undefined;
  const perGpu: (string[] | undefined)[] = Array.from({ length: gpus }, () => undefined);
  for (const e of entries) {
    const devices = e.devices === 'all' ? perGpu.map((_, i) => i) : e.devices;
    for (const d of devices)
      if (d < gpus) perGpu[d] = Object.entries(e['mig-devices'] ?? {}).flatMap(([p, n]) => Array<string>(n).fill(p));
  }
  if (perGpu.some((g) => g === undefined)) return undefined;
  if (model && perGpu.some((g) => !('slots' in placeInstances(model, g!)))) return undefined;
  const resources: Record<string, number> = {};
  for (const p of perGpu.flat() as string[])
    resources[deviceResourceName(p)] = (resources[deviceResourceName(p)] ?? 0) + 1;
  return { perGpu: perGpu as string[][], resources };
}
