/**
 * Preemption in the MIG planner (issue #12, docs/mig.md "Preemption"): which GPUs with instances
 * in use may be relaid, and whether what a relayout serves outweighs what it destroys. Pure.
 *
 * Weighing is by priority, highest first (lexicographic), as the planner counts satisfied demand
 * and as kube-scheduler preempts: one pod served at a priority outweighs any number lost below it.
 * A sum of raw priorities would not do: PriorityClass values run from negative to 2·10⁹ and 0 is
 * the default, so a priority-0 notebook would weigh nothing.
 */
import { protectedBy, type PreemptionPolicy } from './policy.ts';

/** A running pod that holds instances of a GPU: what preempting that GPU destroys. */
export interface MigHolder {
  namespace: string;
  name: string;
  uid?: string;
  priority: number;
  priorityClassName?: string;
}

export const holderKey = (h: Pick<MigHolder, 'namespace' | 'name'>) => `${h.namespace}/${h.name}`;

/**
 * Why a GPU with instances in use may not be preempted under `policy`, or undefined when it may
 * (the priority gap is judged per relayout, against the pods it would serve).
 */
export function notPreemptible(
  gpu: { locked?: string; holders?: readonly MigHolder[] },
  policy: PreemptionPolicy | undefined,
): string | undefined {
  if (!policy?.enabled) return 'preemption is off';
  if (gpu.locked) return gpu.locked;
  if (!gpu.holders || gpu.holders.length === 0) return 'which pods hold its instances is not known';
  for (const h of gpu.holders) {
    const why = protectedBy(h, policy.protect);
    if (why) return `${holderKey(h)} may not be preempted (${why})`;
  }
  return undefined;
}

/** Counts per priority, highest first, over `priorities` (a descending list holding every one used). */
function counts(ps: readonly number[], priorities: readonly number[]): number[] {
  return priorities.map((p) => ps.filter((x) => x === p).length);
}

/**
 * > 0 when `a` weighs more than `b` (priorities of pods, lexicographic from the highest priority),
 * < 0 when less, 0 when equal.
 */
export function weigh(a: readonly number[], b: readonly number[]): number {
  const priorities = [...new Set([...a, ...b])].sort((x, y) => y - x);
  const ca = counts(a, priorities);
  const cb = counts(b, priorities);
  for (let i = 0; i < priorities.length; i++) if (ca[i] !== cb[i]) return ca[i]! - cb[i]!;
  return 0;
}

/**
 * Whether relaying a GPU whose `holders` are destroyed is worth it for the pods it would serve
 * (`served`: pods that get instances of its new layout): some served pod is at least
 * `minPriorityGap` above every holder, and what it serves outweighs what it destroys.
 */
export function preemptionJustified(
  holders: readonly MigHolder[],
  served: readonly { priority: number }[],
  policy: PreemptionPolicy,
): boolean {
  const top = Math.max(...holders.map((h) => h.priority));
  if (!served.some((s) => s.priority >= top + policy.minPriorityGap)) return false;
  return (
    weigh(
      served.map((s) => s.priority),
      holders.map((h) => h.priority),
    ) > 0
  );
}
