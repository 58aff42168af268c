/**
 * What the quota planner needs, read from the cluster's objects (the same for a live cluster, a
 * fleet file seeded in process, and the function): capacity from the nodes pods can land on,
 * usage as the quota admission counts it, and gpu-reflex's current quotas.
 */
import { readMigInventory } from '../../events/index.ts';
import type { NodeInfo, PodInfo, QuotaInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { migModel, migResourceName } from '../lib/mig-profiles.ts';
import { DEFAULT_TAINT_KEY, NODE_OUT_PHASES, QUARANTINED_GPUS_ANNOTATION, STATE_LABEL } from '../lib/node-state.ts';
import { resourcesOf, type QuotaConfig } from './core/config.ts';
import { WRITTEN_HARD_ANNOTATION } from './deps.ts';
import { planQuotas, quotaKey, type QuotaFacts } from './core/planner.ts';

const GPU = 'nvidia.com/gpu';

function quantity(q: string | undefined): number {
  try {
    return parseQuantity(q);
  } catch {
    return 0;
  }
}

/** Capacity a node does not give, and why: a whole node, or GPUs fenced on a node that stays. */
export interface CapacityOut {
  node: string;
  why: string;
  /** Whole GPUs (nvidia.com/gpu) of a node that stays schedulable; absent with `instances`: the whole node is out. */
  gpus?: number;
  /** MIG instances fenced on a node that stays, per resource (`nvidia.com/mig-1g.10gb`). */
  instances?: Record<string, number>;
}

/**
 * The MIG instances of a quarantined-gpus annotation whose profile is known, per resource: an entry
 * `GPU-…/gi<n>` is looked up in the node agent's gpu-reflex.io/mig-inventory (that GPU's instance with
 * GPU-instance id n). A `MIG-…` UUID names no profile there: it leaves through the allocatable alone.
 */
function fencedInstances(annotations: Readonly<Record<string, string>>): Record<string, number> {
  const raw = annotations[QUARANTINED_GPUS_ANNOTATION];
  if (raw === undefined) return {};
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    return {};
  }
  if (!Array.isArray(list)) return {};
  const { inventory } = readMigInventory(annotations);
  const out: Record<string, number> = {};
  for (const entry of new Set(list.filter((x): x is string => typeof x === 'string'))) {
    const m = /^(GPU-[^/]+)\/gi(\d+)$/.exec(entry);
    if (!m) continue;
    const profile = inventory?.gpus.find((g) => g.uuid === m[1])?.instances.find((i) => i.gi === Number(m[2]))?.profile;
    if (profile) out[migResourceName(profile)] = (out[migResourceName(profile)] ?? 0) + 1;
  }
  return out;
}

/** The whole GPUs of a quarantined-gpus annotation (MIG instances are `MIG-…` or `GPU-…/gi<n>`). */
function fencedGpus(annotations: Readonly<Record<string, string>>): number {
  const raw = annotations[QUARANTINED_GPUS_ANNOTATION];
  if (raw === undefined) return 0;
  try {
    const list: unknown = JSON.parse(raw);
    // A list we cannot read says nothing: the node's allocatable still does.
    if (!Array.isArray(list)) return 0;
    return new Set(list.filter((x): x is string => typeof x === 'string' && /^GPU-[^/]+$/.test(x))).size;
  } catch {
    return 0;
  }
}

/** Why a node gives no capacity, or undefined when it does. */
function nodeOut(n: NodeInfo): string | undefined {
  if (n.ready !== true) return 'not Ready';
  if (n.unschedulable) return 'cordoned';
  if (n.taints.some((t) => t.key === DEFAULT_TAINT_KEY)) return `tainted ${DEFAULT_TAINT_KEY}`;
  const phase = n.labels[STATE_LABEL];
  // Remediation's own word, whatever taint its policy uses: the node is being emptied or waits for repair.
  if ((NODE_OUT_PHASES as readonly string[]).includes(phase ?? '')) return `${phase} (${STATE_LABEL})`;
  return undefined;
}

/**
 * Capacity counts Ready nodes nobody took out: not cordoned, not tainted by remediation, not
 * draining or awaiting repair (remediation's state label). On a node that stays, each whole GPU
 * remediation holds out (its quarantined-gpus annotation) is out of nvidia.com/gpu at once, whether or
 * not the device plugin has dropped it from the allocatable yet: the node gives
 * min(allocatable, capacity − fenced) — counted once either way. Restored, it comes back with the
 * annotation's entry (and the allocatable, for a plugin that latches, once it re-enumerates).
 */
export function quotaFacts(
  config: QuotaConfig,
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  quotas: readonly QuotaInfo[],
): QuotaFacts & { excluded: string[]; out: CapacityOut[]; edited: Record<string, QuotaEdit[]> } {
  const resources = resourcesOf(config);
  const capacity: Record<string, number> = Object.fromEntries(resources.map((r) => [r, 0]));
  const out: CapacityOut[] = [];
  for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const why = nodeOut(n);
    if (why) {
      if (resources.some((r) => quantity(n.allocatable[r]) > 0)) out.push({ node: n.name, why });
      continue;
    }
    const instances = fencedInstances(n.annotations ?? {});
    const counted: Record<string, number> = {};
    for (const r of resources) {
      const allocatable = quantity(n.allocatable[r]);
      // A fenced MIG instance leaves its profile's resource at once, as a fenced GPU leaves nvidia.com/gpu.
      const fenced = r === GPU ? fencedGpus(n.annotations ?? {}) : (instances[r] ?? 0);
      if (fenced === 0) {
        capacity[r]! += allocatable;
        continue;
      }
      const total = n.capacity?.[r] === undefined ? allocatable : quantity(n.capacity[r]);
      const gives = Math.max(0, Math.min(allocatable, total - fenced));
      capacity[r]! += gives;
      if (r === GPU)
        out.push({ node: n.name, why: `${fenced} GPU${fenced === 1 ? '' : 's'} fenced by remediation`, gpus: fenced });
      else counted[r] = fenced;
    }
    if (Object.keys(counted).length > 0)
      out.push({
        node: n.name,
        why: `${Object.entries(counted)
          .map(([r, k]) => `${k} ${r.replace('nvidia.com/mig-', '')} MIG instance${k === 1 ? '' : 's'}`)
          .join(', ')} fenced by remediation`,
        instances: counted,
      });
  }
  const excluded = out.map((o) => `${o.node} (${o.why})`);
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
  const edited: Record<string, QuotaEdit[]> = {};
  for (const q of quotas) {
    if (q.name !== config.quotaName || !teamNs.has(q.namespace)) continue;
    const written = writtenHard(q.annotations ?? {});
    for (const r of resources) {
      const k = quotaKey(r);
      const found = q.hard[k] === undefined ? null : quantity(q.hard[k]);
      const ours = written?.[k] === undefined ? null : quantity(written[k]);
      // The planner's "now" (a decrease's rate limit, whether a team is quota-bound) is gpu-reflex's own value: a
      // person's since is theirs, put back and said (run.ts), never taken for gpu-reflex's to come down from slowly.
      const now = written ? ours : found;
      if (now !== null) (current[q.namespace] ??= {})[r] = now;
      if (written && ours !== found) (edited[q.namespace] ??= []).push({ key: k, ours, found });
    }
  }
  return { capacity, usage, current, excluded, out, edited, gpuEighths: gpuEighths(config, nodes) };
}

/**
 * The plan (core/planner.ts) with each namespace's changes counted from its quota as read where someone changed it
 * since gpu-reflex wrote it: the planner's "now" is gpu-reflex's own value there, the write goes over theirs
 * (run.ts), and `quota plan` and chat show what it would change on the cluster.
 */
export function planQuotasAsRead(config: QuotaConfig, facts: QuotaFacts & { edited?: Record<string, QuotaEdit[]> }) {
  const plan = planQuotas(config, facts);
  const edited = facts.edited ?? {};
  return {
    ...plan,
    namespaces: plan.namespaces.map((nq) => {
      const edit = edited[nq.namespace];
      if (!edit) return nq;
      const changes = Object.entries(nq.hard)
        .map(([key, to]) => {
          const e = edit.find((x) => x.key === key);
          const c = nq.changes.find((x) => x.key === key);
          return { key, from: e ? e.found : c ? c.from : to, to };
        })
        .filter((c) => c.from !== c.to);
      return { ...nq, changes };
    }),
  };
}

/** A managed key of a gpu-reflex quota that someone changed since gpu-reflex wrote it (null: absent). */
export interface QuotaEdit {
  key: string;
  ours: number | null;
  found: number | null;
}

/** What gpu-reflex last wrote (WRITTEN_HARD_ANNOTATION); undefined where it cannot tell (none, or unreadable). */
function writtenHard(annotations: Readonly<Record<string, string>>): Record<string, string> | undefined {
  const raw = annotations[WRITTEN_HARD_ANNOTATION];
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
    return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return undefined;
  }
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
