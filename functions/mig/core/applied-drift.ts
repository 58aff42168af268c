/**
 * Whether a layout gpu-reflex applied still holds, long after its relayout was done (its record removed). Pure.
 *
 * The node's `nvidia.com/mig.config` still names gpu-reflex's config, and mig-manager applies the config that label
 * names again at every start and reboot (NVIDIA/mig-parted deployments/gpu-operator/reconfigure-mig.sh: `assert`,
 * then `apply`): a GPU a person carved since with nvidia-smi is wiped then, or the apply fails on it. So each round
 * compares the config's entry in gpu-reflex's mig-parted ConfigMap, GPU by GPU (mig-parted addresses GPUs by index),
 * with what the node agent last read through NVML, and takes mig-manager's own `failed` as drift too.
 */
import { parseDocument } from 'yaml';
import { countProfiles, layoutWords } from './layout.ts';

export const MIG_DRIFT_ANNOTATION = 'gpu-reflex.io/mig-drift';

/** One item of a mig-parted config entry, as far as the check reads it. */
interface PartedItem {
  devices: number[] | 'all';
  enabled: boolean;
  counts: Map<string, number>;
}

/**
 * The entry `name` of a mig-parted config; `undefined` when the config has none; a string when the text cannot be
 * read (the check cannot be made, and says why).
 */
export function partedEntryOf(text: string | undefined, name: string): PartedItem[] | undefined | string {
  if (text === undefined) return undefined;
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return `the mig-parted config is not YAML: ${doc.errors[0]!.message}`;
  const raw = doc.toJS() as { 'mig-configs'?: Record<string, unknown> } | null;
  const entry = raw?.['mig-configs']?.[name];
  if (entry === undefined) return undefined;
  if (!Array.isArray(entry)) return `mig-configs.${name} in the mig-parted config is not a list`;
  const items: PartedItem[] = [];
  for (const it of entry as unknown[]) {
    const i = it as { devices?: unknown; 'mig-enabled'?: unknown; 'mig-devices'?: unknown };
    const devices =
      i.devices === 'all'
        ? 'all'
        : Array.isArray(i.devices) && i.devices.every((d) => Number.isInteger(d))
          ? (i.devices as number[])
          : undefined;
    const md = i['mig-devices'] ?? {};
    if (!devices || typeof md !== 'object' || Array.isArray(md) || md === null)
      return `mig-configs.${name} in the mig-parted config is not in mig-parted's v1 format`;
    const counts = new Map<string, number>();
    for (const [p, k] of Object.entries(md as Record<string, unknown>)) if (Number(k) > 0) counts.set(p, Number(k));
    items.push({ devices, enabled: i['mig-enabled'] === true, counts });
  }
  return items;
}

const same = (a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>) =>
  a.size === b.size && [...a].every(([p, k]) => b.get(p) === k);
const words = (counts: ReadonlyMap<string, number>) => layoutWords([...counts].flatMap(([p, k]) => Array(k).fill(p)));

/**
 * Why the node's GPUs are not (any more) what `config` (gpu-reflex's, read from its ConfigMap) says, or undefined
 * when they are. `entry` undefined: the ConfigMap no longer holds it. A GPU listed with no instance is drift too: the
 * caller checks only nodes no remediation works on (applied-check.ts), and remediation's repair is the only one that
 * has mig-manager apply the config again after a reset (docs/remediation.md); emptied otherwise (a person's
 * `nvidia-smi mig -dci -dgi`, a reset by hand) nobody restores it, and an empty MIG GPU offers no device.
 */
export function appliedDrift(
  config: string,
  state: string | undefined,
  entry: PartedItem[] | undefined,
  inventory: {
    at: string;
    gpus: readonly { index: number; uuid?: string; profiles: readonly string[]; migModeUnknown?: string }[];
  },
): string | undefined {
  if (state === 'failed') return `mig-manager reports nvidia.com/mig.config.state=failed for ${config}`;
  if (!entry)
    return (
      `${config}, which nvidia.com/mig.config names, is no longer in gpu-reflex's mig-parted ConfigMap: ` +
      `mig-manager fails on it at its next start`
    );
  const gaps: string[] = [];
  const indices = new Set(entry.flatMap((i) => (i.devices === 'all' ? inventory.gpus.map((g) => g.index) : i.devices)));
  for (const index of [...indices].sort((a, b) => a - b)) {
    const item = entry.find((i) => i.devices === 'all' || i.devices.includes(index))!;
    if (!item.enabled) continue;
    const gpu = inventory.gpus.find((g) => g.index === index);
    if (!gpu) {
      gaps.push(`GPU ${index} is not in the node agent's MIG inventory`);
      continue;
    }
    // Empty because NVML would not say its MIG mode or list its instances (the agent's migModeUnknown): it may hold
    // anything, and no one else tells a person.
    if (gpu.profiles.length === 0 && gpu.migModeUnknown !== undefined) {
      gaps.push(
        `GPU ${index}${gpu.uuid ? ` (${gpu.uuid})` : ''}: NVML does not answer its MIG state (${gpu.migModeUnknown})`,
      );
      continue;
    }
    // Empty, and no remediation at work on the node (which would have mig-manager apply the config again): where it was
    // left out, "remediation restores it" was assumed of a GPU no remediation held, and nobody was told.
    if (gpu.profiles.length === 0) {
      gaps.push(
        `GPU ${index}${gpu.uuid ? ` (${gpu.uuid})` : ''} holds no MIG instance, not ${words(item.counts)} as ` +
          `${config} applied (no remediation works on the node to have mig-manager apply it again)`,
      );
      continue;
    }
    const have = countProfiles(gpu.profiles);
    if (!same(have, item.counts))
      gaps.push(
        `GPU ${index}${gpu.uuid ? ` (${gpu.uuid})` : ''} holds ${layoutWords(gpu.profiles)}, not ` +
          `${words(item.counts)} as ${config} applied`,
      );
  }
  return gaps.length > 0 ? gaps.join('; ') : undefined;
}
