/**
 * What each label should say, from one GPU Inventory and the Node's allocatable (pure). A value is
 * a string to write, `null` when the inventory cannot vouch for any value (the label, if ours,
 * goes), or `undefined` when it cannot be told yet (the label stays as it is).
 */
import type { GpuInventoryDetail } from '../../../events/catalog/gpu-inventory.ts';
import { FACT_NAMES, keyOf, LABEL_VALUE, type Fact, type LabelerConfig } from './config.ts';

export type InventoryFacts = Pick<GpuInventoryDetail, 'observedAt' | 'driverVersion' | 'cudaVersion'> & {
  gpus: readonly Pick<GpuInventoryDetail['gpus'][number], 'name' | 'migMode'>[];
};

export interface Wanted {
  fact: Fact;
  value: string | null | undefined;
  why: string;
}

/** Words in NVML names that say whose GPU it is, not which one. */
const VENDOR_WORDS = /^(nvidia|tesla|geforce|quadro)$/i;

/**
 * `nvidia-<model>` as the field notes wrote it (`Tesla T4` → nvidia-t4, `NVIDIA A100-SXM4-80GB` →
 * nvidia-a100, `NVIDIA H100 80GB HBM3` → nvidia-h100): the configured models first (first
 * case-insensitive substring wins), else the words after the vendor's up to the first one with a
 * digit, its form-factor suffix dropped. Whole words, not substrings: the field notes' script
 * matched `*"L4"*` and would have called an L40S an L4.
 */
export function acceleratorValue(name: string, models: LabelerConfig['models']): string | undefined {
  const configured = models.find((m) => name.toLowerCase().includes(m.match.toLowerCase()));
  if (configured) return configured.value;
  const picked: string[] = [];
  for (const word of name.split(/\s+/).filter((w) => w && !VENDOR_WORDS.test(w))) {
    const head = word.split('-')[0]!;
    picked.push(head);
    if (/\d/.test(head)) break;
  }
  const slug = picked
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  return slug ? `nvidia-${slug}`.slice(0, 63).replace(/-+$/, '') : undefined;
}

/**
 * The MIG strategy NVIDIA's device plugin runs with, as the Node shows it (NVML cannot tell):
 * `none` with MIG off on every GPU; with MIG on, `mixed` when the node advertises
 * `nvidia.com/mig-<profile>`, `single` when it advertises MIG devices as `nvidia.com/gpu`, and
 * unknown (undefined) while it advertises neither (the plugin has not registered them yet).
 */
function migStrategy(
  inv: InventoryFacts,
  allocatable: Readonly<Record<string, string>>,
): { value: string | null | undefined; why: string } {
  if (inv.gpus.length === 0) return { value: null, why: 'no GPU answers NVML' };
  if (!inv.gpus.some((g) => g.migMode === 'enabled')) return { value: 'none', why: 'MIG is off on every GPU' };
  const has = (k: string) => Number.parseInt(allocatable[k] ?? '0', 10) > 0;
  if (Object.keys(allocatable).some((k) => k.startsWith('nvidia.com/mig-') && has(k)))
    return { value: 'mixed', why: 'MIG is on and the node advertises nvidia.com/mig-<profile>' };
  // The single strategy takes a node whose GPUs all have MIG on; with some off it refuses the node (NVIDIA
  // k8s-device-plugin internal/lm/mig-strategy.go, newMigStrategySingleLabeler: "devices with MIG enabled and
  // disable detected"). There nvidia.com/gpu are the MIG-off GPUs (mixed, its instances not made yet): not told.
  if (has('nvidia.com/gpu') && inv.gpus.every((g) => g.migMode === 'enabled'))
    return { value: 'single', why: 'MIG is on and the node advertises its MIG devices as nvidia.com/gpu' };
  return { value: undefined, why: 'MIG is on and the device plugin advertises no MIG device yet' };
}

function factValue(
  f: Fact,
  inv: InventoryFacts,
  allocatable: Readonly<Record<string, string>>,
  config: LabelerConfig,
): { value: string | null | undefined; why: string } {
  const n = inv.gpus.length;
  const none = { value: null, why: 'no GPU answers NVML' };
  switch (f) {
    case 'accelerator': {
      if (n === 0) return none;
      const values = [...new Set(inv.gpus.map((g) => acceleratorValue(g.name, config.models)))];
      if (values.length > 1)
        return {
          value: null,
          why: `GPUs of more than one model (${[...new Set(inv.gpus.map((g) => g.name))].join(', ')})`,
        };
      return values[0]
        ? { value: values[0], why: `GPU model ${inv.gpus[0]!.name}` }
        : { value: null, why: `no model in the name "${inv.gpus[0]!.name}"` };
    }
    case 'gpuCount':
      return { value: String(n), why: `${n} GPU${n === 1 ? '' : 's'} answer NVML` };
    case 'migCapable':
      return n === 0
        ? none
        : {
            value: String(inv.gpus.some((g) => g.migMode !== 'unsupported')),
            why: `MIG modes ${inv.gpus.map((g) => g.migMode).join(', ')}`,
          };
    case 'migEnabled':
      return n === 0
        ? none
        : {
            value: String(inv.gpus.some((g) => g.migMode === 'enabled')),
            why: `MIG modes ${inv.gpus.map((g) => g.migMode).join(', ')}`,
          };
    case 'migStrategy':
      return migStrategy(inv, allocatable);
    case 'driverVersion':
      return { value: inv.driverVersion, why: `driver ${inv.driverVersion}` };
    case 'cudaVersion':
      return inv.cudaVersion
        ? { value: inv.cudaVersion, why: `CUDA ${inv.cudaVersion}` }
        : { value: null, why: 'the driver reports no CUDA version' };
  }
}

/** Label key → what it should say, for every fact the configuration labels. */
export function wantedLabels(
  inv: InventoryFacts,
  allocatable: Readonly<Record<string, string>>,
  config: LabelerConfig,
): Map<string, Wanted> {
  const out = new Map<string, Wanted>();
  for (const fact of FACT_NAMES) {
    const key = keyOf(config, fact);
    if (key === undefined) continue;
    const w = factValue(fact, inv, allocatable, config);
    // A value the API server would refuse (an odd driver string) is not vouched for.
    const ok = typeof w.value !== 'string' || LABEL_VALUE.test(w.value);
    out.set(key, ok ? { fact, ...w } : { fact, value: null, why: `"${w.value}" is not a valid label value` });
  }
  return out;
}
