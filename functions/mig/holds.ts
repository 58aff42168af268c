import { migInventoryStale, readMigInventory } from '../../events/index.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { DEFAULT_TAINT_KEY, STATE_LABEL } from '../lib/node-state.ts';
import { MIG_CONFIG_LABEL, neverLabelled, type MigRecord, type MigStep } from './core/rebalance.ts';
import type { MigRebalanceDeps } from './deps.ts';

// What holds a node back from a relayout's next write: a remediation (kept cordoned), or GPUs no longer free.

/** A remediation that keeps the node out (its state label or taint): the relayout must not uncordon it. */
export function remediationHold(n: NodeInfo): string | undefined {
  const state = n.labels[STATE_LABEL];
  if (state && state !== 'healthy' && state !== 'quarantined')
    return `gpu-reflex remediation holds it (${STATE_LABEL}=${state})`;
  if (n.taints.some((t) => t.key === DEFAULT_TAINT_KEY))
    return `gpu-reflex remediation holds it (taint ${DEFAULT_TAINT_KEY})`;
  return undefined;
}

/**
 * Why `nvidia.com/mig.config` must not be set now, or undefined when it may: the Node read again right before the
 * label, and every GPU the relayout touches free in its agent's inventory. The plan was made rounds before (the
 * config sync, the preempted pods' leaving): a process started since on one of those GPUs (a pod, or one outside
 * Kubernetes), or an agent that stopped confirming meanwhile, and mig-manager fails with IN_USE or wipes a GPU in use.
 * In use and cleared by the plan: an instance naming only pods the relayout preempted (they have left, by uid).
 * Unknown is not free: no inventory, an unreadable or stale one, a GPU missing from it or whose processes NVML did
 * not list, an instance in use naming no pod.
 */
export async function labelHeld(
  deps: Pick<MigRebalanceDeps, 'nodes' | 'logger' | 'mig'>,
  name: string,
  r: MigRecord,
  now: Date,
): Promise<MigStep | 'held' | undefined> {
  const why = await labelHold(deps.nodes, name, r, now);
  if (why === undefined) return undefined;
  // Past timeoutMinutes since the start (as a preempted pod that never left, core/rebalance.ts): failed, nothing
  // relaid, a person told; a GPU that stays busy or an agent that stays dead is never waited on in silence.
  if (now.getTime() - Date.parse(r.since) >= deps.mig.timeoutMinutes * 60_000)
    return neverLabelled(r, `held right before the label for ${deps.mig.timeoutMinutes} min: ${why}`, now);
  // As a preempted pod that has not left yet: the record stays `writing`, the node cordoned, the label unset, and the
  // next round decides again.
  deps.logger.warn('rebalance-mig', {
    node: name,
    step: 'wait',
    why: `${MIG_CONFIG_LABEL}=${r.config} not set: ${why}; the node stays cordoned, asked again next round`,
  });
  return 'held';
}

async function labelHold(
  nodes: MigRebalanceDeps['nodes'],
  name: string,
  r: MigRecord,
  now: Date,
): Promise<string | undefined> {
  let annotations: Readonly<Record<string, string>>;
  try {
    annotations = (await nodes.get(name)).annotations;
  } catch (e) {
    return `the node could not be read again before the label (${e instanceof Error ? e.message : String(e)})`;
  }
  const { inventory, problem } = readMigInventory(annotations);
  if (!inventory) return `its node agent's MIG inventory is ${problem ?? 'gone'}: what the GPUs hold now is unknown`;
  const stale = migInventoryStale(inventory, now);
  if (stale) return stale;
  const cleared = new Set((r.preempt ?? []).flatMap((p) => (p.uid ? [p.uid] : [])));
  const held: string[] = [];
  for (const { gpu } of r.gpus) {
    const g = inventory.gpus.find((x) => x.index === gpu);
    if (!g) {
      held.push(`GPU ${gpu} is not in its agent's inventory`);
      continue;
    }
    if (g.inUseUnknown !== undefined) {
      held.push(`GPU ${gpu} (${g.uuid}): which instances processes run in is unknown (${g.inUseUnknown})`);
      continue;
    }
    const busy = g.instances.filter(
      (i) => i.inUse && (i.unnamed || !i.pods || i.pods.length === 0 || i.pods.some((u) => !cleared.has(u))),
    );
    if (busy.length === 0) continue;
    const who = busy.map(
      (i) =>
        `${i.profile} gi ${i.gi}: ${i.pods?.length ? `pod uid ${i.pods.join(', ')}` : 'a process no pod is named for'}`,
    );
    held.push(`GPU ${gpu} (${g.uuid}) has instance(s) in use the plan did not clear (${who.join('; ')})`);
  }
  return held.length > 0 ? held.join('; ') : undefined;
}
