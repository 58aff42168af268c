import { migResourceName } from '../../lib/mig-profiles.ts';
import { layoutWords } from './layout.ts';
import type { MigRecord } from './mig-record.ts';
import type { MigNodeFacts } from './rebalance-types.ts';

// The evidence that a relayout happened, beyond mig-manager's word (rebalance.ts).
/**
 * Why the node agent's inventory does not (yet) show the change, or undefined when it does: it must
 * be newer than the label write and list, for every changed GPU, exactly the instances asked for.
 */
export function inventoryGap(r: MigRecord, inv: MigNodeFacts['inventory']): string | undefined {
  if (!inv)
    return `the node agent's MIG inventory (gpu-reflex.io/mig-inventory) is missing: the new instances are unconfirmed`;
  if (Date.parse(inv.at) < Date.parse(r.since))
    return `the node agent's MIG inventory (${inv.at}) is older than the change (${r.since})`;
  const sorted = (l: readonly string[]) => [...l].sort().join(',');
  for (const g of r.gpus) {
    const have = inv.gpus.find((x) => x.index === g.gpu)?.profiles;
    if (!have) return `the node agent's MIG inventory does not list GPU ${g.gpu}`;
    if (sorted(have) !== sorted(g.to))
      return `the node agent's MIG inventory shows GPU ${g.gpu} as ${layoutWords(have)}, not ${layoutWords(g.to)}`;
  }
  return undefined;
}

/**
 * Why the Node does not (yet) offer the new instances to the scheduler, or undefined when it does: its
 * allocatable must hold, per `nvidia.com/mig-<profile>`, at least the instances the changed GPUs now carry.
 * mig-manager's `success` and the agent's NVML come before the device plugin re-registers and the kubelet
 * reports it (node status every 10 s, Kubernetes node-status-update-frequency); until then the scheduler
 * cannot place the pods the layout is for, and the node must not be called done (nor uncordoned).
 * "At least": instances of that profile on other GPUs add to it, and a fenced one elsewhere takes from it.
 */
export function allocatableGap(r: MigRecord, allocatable: MigNodeFacts['allocatable']): string | undefined {
  if (!allocatable) return undefined;
  const want = new Map<string, number>();
  for (const g of r.gpus) for (const p of g.to) want.set(migResourceName(p), (want.get(migResourceName(p)) ?? 0) + 1);
  for (const [res, n] of [...want].sort(([a], [b]) => a.localeCompare(b))) {
    const have = allocatable[res] ?? 0;
    if (have < n)
      return (
        `the Node's allocatable ${res} is ${have}, below the ${n} the new layout offers (the kubelet has not yet ` +
        `reported the device plugin's new devices)`
      );
  }
  return undefined;
}
