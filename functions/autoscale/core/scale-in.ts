/**
 * Scale-in (pure): which nodes of a pool have been idle long enough to give back. A node is idle
 * while no pod that asks for a GPU runs on it (DaemonSet pods do not count: every node has them);
 * after `idleMinutes` of that it may be drained and released, unless
 * - the pool would fall under its minimum (counting nodes already on their way out), by the nodes there and by its
 *   desired size: a removal lowers the desired size, so nodes there beyond it (ones ACK is still removing after a
 *   person lowered it) are no room to give back (cluster-autoscaler likewise weighs the group's TargetSize less the
 *   deletions in progress against MinSize: "node group min size reached", cluster-autoscaler/core/scale_down.go),
 * - remediation holds the node (its state label or taint: a broken node is repair's, not ours),
 * - someone else cordoned it (an admin's cordon is a person's decision),
 * - a pending GPU pod could run on a node of this pool (it would only be bought back),
 * - the pool grew within its cooldown.
 * At most `maxStep` nodes of a pool leave per round, longest idle first. Deterministic.
 */
import { whyNot, type NodeTemplate } from './fit.ts';
import type { PendingPod } from './planner.ts';

export interface IdleNode {
  name: string;
  /** Ready, schedulable and not held by anyone. */
  eligible: boolean;
  /** Why it is not eligible, when it is not. */
  heldBy?: string;
  /** Pods asking for a GPU that run on it now (not DaemonSet, not finished; shutting down counts: its GPU is held). */
  gpuPods: number;
}

export interface ScaleInPool {
  id: string;
  name: string;
  min: number;
  maxStep: number;
  /** Nodes of the pool that count towards its size (joined, not on their way out). */
  nodes: IdleNode[];
  /** The pool's desired size as ACK gives it (removals already sent lowered it). */
  desired: number;
  /** Nodes already being drained by gpu-reflex for removal. */
  leaving: string[];
  template: NodeTemplate;
  /** Why the pool may not shrink now (its cooldown after a scale-out); unset when it may. */
  frozen?: string;
}

export interface ScaleInDecision {
  /** Node → when it was first seen idle (ms): what to remember for the next round. */
  idleSince: Record<string, number>;
  /** Nodes to drain and release now, longest idle first, with why. */
  release: { node: string; why: string }[];
  /** Idle nodes kept, with why (for the log). */
  kept: { node: string; why: string }[];
}

export function planScaleIn(
  pool: ScaleInPool,
  idleBefore: Readonly<Record<string, number>>,
  pending: readonly PendingPod[],
  now: number,
  idleMinutes: number,
): ScaleInDecision {
  const idleSince: Record<string, number> = {};
  for (const n of pool.nodes)
    if (n.gpuPods === 0 && !pool.leaving.includes(n.name)) idleSince[n.name] = idleBefore[n.name] ?? now;
  const kept: ScaleInDecision['kept'] = [];
  const release: ScaleInDecision['release'] = [];
  const due = Object.entries(idleSince)
    .filter(([, since]) => now - since >= idleMinutes * 60_000)
    .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1));
  if (due.length === 0) return { idleSince, release, kept };
  const keep = (why: string) => due.forEach(([node]) => kept.push({ node, why }));
  if (pool.frozen) return (keep(pool.frozen), { idleSince, release, kept });
  const wanted = pending.find((p) => whyNot(p, pool.template) === undefined);
  if (wanted)
    return (keep(`${wanted.key} waits and could run on a node of ${pool.name}`), { idleSince, release, kept });
  // What the pool keeps: its nodes there and its desired size, the lower (each leaving node lowers both once removed).
  const size = Math.min(pool.nodes.length, pool.desired);
  let room = Math.min(pool.maxStep - pool.leaving.length, size - pool.leaving.length - pool.min);
  for (const [node, since] of due) {
    const n = pool.nodes.find((x) => x.name === node)!;
    if (!n.eligible) kept.push({ node, why: n.heldBy ?? 'not eligible' });
    else if (room <= 0)
      kept.push({
        node,
        why:
          size - pool.leaving.length - release.length <= pool.min
            ? `${pool.name} is at its minimum of ${pool.min} nodes`
            : `at most ${pool.maxStep} nodes of ${pool.name} leave at once`,
      });
    else {
      release.push({
        node,
        why:
          `${node} has run no GPU pod for ${Math.round((now - since) / 60_000)} min (idle ` +
          `since ${new Date(since).toISOString()})`,
      });
      room--;
    }
  }
  return { idleSince, release, kept };
}
