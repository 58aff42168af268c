/**
 * The mig-parted config file (`version: v1`, `mig-configs: {name: [...]}`) that NVIDIA's
 * mig-manager reads from a ConfigMap. gpu-reflex adds one named entry per node layout it applies
 * and removes its own entries for that node once no label names them; every other entry (the GPU
 * Operator's `all-1g.10gb`, a person's) is left exactly as it was. Pure.
 */
import { parseDocument, stringify } from 'yaml';
import { countProfiles } from './layout.ts';

export class PartedConfigError extends Error {
  override name = 'PartedConfigError';
}

/**
 * `text` with the entry `name` set to `layout`, and gpu-reflex's other entries for the same node
 * (the same `gpu-reflex-<node>-` prefix) dropped unless `keep` names them (the config the node's
 * label names now, to restore on failure).
 */
export function withPartedEntry(
  text: string | undefined,
  name: string,
  layout: readonly (readonly string[])[],
  keep: ReadonlySet<string>,
): string {
  const doc = parseDocument(text ?? 'version: v1\nmig-configs: {}\n');
  if (doc.errors.length > 0)
    throw new PartedConfigError(`the mig-parted config is not YAML: ${doc.errors[0]!.message}`);
  const raw: unknown = doc.toJS();
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new PartedConfigError('the mig-parted config is not a mapping (expected version: v1 and mig-configs)');
  const root = raw as Record<string, unknown>;
  if (root.version !== undefined && root.version !== 'v1')
    throw new PartedConfigError(`the mig-parted config is version ${String(root.version)}: gpu-reflex writes v1 only`);
  const configs = (root['mig-configs'] ?? {}) as Record<string, unknown>;
  if (typeof configs !== 'object' || Array.isArray(configs))
    throw new PartedConfigError('mig-configs in the mig-parted config is not a mapping');
  const prefix = name.slice(0, name.lastIndexOf('-') + 1);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(configs)) if (!(k.startsWith(prefix) && k !== name && !keep.has(k))) out[k] = v;
  out[name] = partedEntry(layout);
  return stringify({ ...root, version: 'v1', 'mig-configs': out });
}

/**
 * The mig-parted config entry for a node's layout: one item per distinct GPU layout, naming its
 * devices (`mig-parted`'s `version: v1` format; docs/mig.md).
 */
export function partedEntry(
  layout: readonly (readonly string[])[],
): { devices: number[]; 'mig-enabled': boolean; 'mig-devices': Record<string, number> }[] {
  const groups = new Map<string, { devices: number[]; counts: Record<string, number> }>();
  layout.forEach((profiles, gpu) => {
    const counts = Object.fromEntries([...countProfiles(profiles)].sort(([a], [b]) => a.localeCompare(b)));
    const key = JSON.stringify(counts);
    const g = groups.get(key) ?? { devices: [], counts };
    g.devices.push(gpu);
    groups.set(key, g);
  });
  return [...groups.values()].map((g) => ({ devices: g.devices, 'mig-enabled': true, 'mig-devices': g.counts }));
}
