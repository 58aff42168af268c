/**
 * What the quota planner needs, read from the cluster's objects (the same for a live cluster, a
 * fleet file seeded in process, and the function): capacity from the nodes pods can land on,
 * usage as the quota admission counts it, and gpu-reflex's current quotas.
 */
import type { NodeInfo, PodInfo, QuotaInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { migModel, migResourceName } from '../lib/mig-profiles.ts';
import { DEFAULT_TAINT_KEY } from '../lib/node-state.ts';
import { resourcesOf, type QuotaConfig } from './core/config.ts';
import { quotaKey, type QuotaFacts } from './core/planner.ts';

function quantity(q: string | undefined): number {
  try {
    return parseQuantity(q);
  } catch {
    return 0;
  }
}

/**
 * Capacity counts Ready nodes nobody took out: not cordoned, not tainted by remediation. A GPU
 * fenced by its device plugin has already left the node's allocatable, so a quarantine shrinks it.
 */
export function quotaFacts(
  config: QuotaConfig,
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  quotas: readonly QuotaInfo[],
): QuotaFacts & { excluded: string[] } {
  const resources = resourcesOf(config);
  const capacity: Record<string, number> = Object.fromEntries(resources.map((r) => [r, 0]));
  const excluded: string[] = [];
  for (const n of nodes) {
    const out =
      n.ready !== true
        ? 'not Ready'
        : n.unschedulable
          ? 'cordoned'
          : n.taints.some((t) => t.key === DEFAULT_TAINT_KEY)
            ? `tainted ${DEFAULT_TAINT_KEY}`
            : undefined;
    if (out) {
      if (resources.some((r) => quantity(n.allocatable[r]) > 0)) excluded.push(`${n.name} (${out})`);
      continue;
    }
    for (const r of resources) capacity[r]! += quantity(n.allocatable[r]);
  }
  const teamNs = new Set(config.teams.flatMap((t) => t.namespaces));
  const usage: Record<string, Record<string, number>> = {};
  for (const p of pods) {
    // ResourceQuota counts every pod not in a terminal phase (pending ones included).
    if (!teamNs.has(p.namespace) || p.phase === 'Succeeded' || p.phase === 'Failed') continue;
    const req = p.requests ?? p.extendedResources;
    for (const r of resources) {
      const v = req[r] ?? 0;
      if (v > 0) (usage[p.namespace] ??= {})[r] = (usage[p.namespace]![r] ?? 0) + v;
    }
  }
  const current: Record<string, Record<string, number>> = {};
  for (const q of quotas) {
    if (q.name !== config.quotaName || !teamNs.has(q.namespace)) continue;
    for (const r of resources)
      if (q.hard[quotaKey(r)] !== undefined) (current[q.namespace] ??= {})[r] = quantity(q.hard[quotaKey(r)]);
  }
  return { capacity, usage, current, excluded, gpuEighths: gpuEighths(config, nodes) };
}

/**
 * Each MIG group profile's size in eighths of a GPU — memory slices × 8 / the model's memory
 * slices (why memory: core/mig-shares.ts) — from the GPU model (GPU Feature Discovery's
 * `nvidia.com/gpu.product`) of the nodes that offer it. The same name can differ in size between
 * models (1g.10gb is the double-memory 1g on an A100-40GB): the largest wins, so a team's
 * GPU-equivalents are never under-counted.
 */
export function gpuEighths(config: QuotaConfig, nodes: readonly NodeInfo[]): Record<string, number> {
  const wanted = new Set(config.migGroups.flatMap((g) => g.profiles));
  const out: Record<string, number> = {};
  for (const n of nodes) {
    const model = migModel(n.labels['nvidia.com/gpu.product'] ?? '');
    if (!model) continue;
    for (const p of model.profiles) {
      const r = migResourceName(p.name);
      if (!wanted.has(r) || quantity(n.allocatable[r]) <= 0) continue;
      out[r] = Math.max(out[r] ?? 0, (p.size * 8) / model.memorySlices);
    }
  }
  return out;
}
