/**
 * May the node agent be asked to reset a quarantined GPU yet (issue #32)? Pure.
 *
 * A reset needs the GPU empty, and empty only stays so while nothing can be scheduled onto it. Our
 * pods gone is not enough: on a card whose fence is not verified (NVIDIA's plugin before its fix for
 * k8s-device-plugin#1929 takes one replica of a time-sliced card out and leaves the rest
 * schedulable, github.com/NVIDIA/k8s-device-plugin/issues/1929) a new pod can land on the card while
 * it is being reset. So the reset waits until either
 *
 * - the fence is verified by identity and holds now (fence-check.ts `verifiedAt`, no `driftAt`), or
 * - the escalation that replaces an unverifiable fence — the node taint NoSchedule
 *   (`cordon` backend, or a fence fallback) — is on the Node as read this sweep, not only asked for;
 *
 * and no pod holds the card: ours (`pods`), and any other the node's facts place on it (its GPU
 * UUIDs, its gpushare card), such as one that landed before the taint. Every backend, not only
 * shared cards. Unknown (no fence state at all) is never a fence.
 */
import { evictable } from './scope.ts';
import { fencedByTaint } from './fence.ts';
import type { Policy } from './policy.ts';
import type { Incident } from './state.ts';
import type { NodeFacts, PodFacts } from './types.ts';

export type ResetGate = { ok: true } | { ok: false; why: string };

/** The pods a reset of the incident's GPU would kill: ours, and any other the facts place on the card. */
export function podsOnCard(i: Incident, pods: readonly PodFacts[]): PodFacts[] {
  return evictable(pods).filter(
    (p) =>
      i.pods.includes(p.uid) ||
      (i.gpu !== undefined && p.gpus?.includes(i.gpu) === true) ||
      (i.gpuIndex !== undefined && p.cards?.includes(i.gpuIndex) === true),
  );
}

/** Whether the fence lets the reset be asked for now, and in words why not (see the file comment). */
export function resetGate(
  i: Incident,
  node: Pick<NodeFacts, 'name' | 'taints'>,
  policy: Pick<Policy, 'taintKey' | 'fence'>,
): ResetGate {
  const f = i.fence;
  const waits = `the reset of ${i.gpu} waits`;
  if (f === undefined) return { ok: false, why: `${waits}: its fence is unknown, and unknown is never a fence` };
  if (fencedByTaint(i)) {
    const tainted = node.taints.some((t) => t.key === policy.taintKey && t.effect === 'NoSchedule');
    if (tainted) return { ok: true };
    return {
      ok: false,
      why:
        `${waits} until the node taint ${policy.taintKey}:NoSchedule that holds it out is on ${node.name}` +
        ' (asked for, not yet seen): until then a new pod could land on it while it is reset',
    };
  }
  if (f.verifiedAt !== undefined && f.driftAt === undefined) return { ok: true };
  const state =
    f.verifiedAt === undefined
      ? `its fence (${f.backend}) is not verified yet`
      : `its fence (${f.backend}) has not held since ${f.driftAt}`;
  return {
    ok: false,
    why:
      `${waits}: ${state}, and a new pod could land on it while it is reset;` +
      ` it is reset once the fence is seen, or once the node is tainted after ${policy.fence.verifyMinutes} min`,
  };
}

/**
 * Whether a plan just asked for the node taint that one of its incidents' resets waits for (a fence
 * fallback, see resetGate), on a node read without it. Then the sweep reads the Node again at once
 * and takes the node's next step (sweep-run.ts): the taint landing is what the reset waited for, and
 * the next minute's sweep is no reason to leave a fenced-out GPU unrepaired. Pure.
 */
export function awaitsTaint(
  next: { incidents: readonly Incident[] },
  read: Pick<NodeFacts, 'taints'>,
  policy: Pick<Policy, 'taintKey'>,
): boolean {
  if (read.taints.some((t) => t.key === policy.taintKey && t.effect === 'NoSchedule')) return false;
  return next.incidents.some((i) => fencedByTaint(i) && i.repair === undefined && i.resetHeldAt !== undefined);
}
