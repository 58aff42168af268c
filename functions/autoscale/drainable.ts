/**
 * Which pods keep their node through scale-in (pure): cluster-autoscaler's default rules, so a
 * node it would not remove, gpu-reflex does not remove either (kubernetes/autoscaler
 * cluster-autoscaler/utils/drain/drain.go and simulator/drainability/rules; FAQ "What types of pods
 * can prevent CA from removing a node?"), plus Karpenter's opt-out. In CA's order:
 *
 * - mirror (static) pods, DaemonSet pods, and pods that have finished never block (CA skips them);
 * - `karpenter.sh/do-not-disrupt: "true"` blocks (karpenter.sh/docs/concepts/disruption,
 *   "Pod-Level Controls"): whoever set it asked for no voluntary disruption at all;
 * - `cluster-autoscaler.kubernetes.io/safe-to-evict: "true"` lets the pod go whatever follows;
 * - a pod with no controller (no ownerReference with `controller: true`): nothing recreates it
 *   (drain.go `NotReplicated`);
 * - a kube-system pod: CA lets one go only when a PodDisruptionBudget covers it
 *   (`UnmovableKubeSystemPod`); gpu-reflex reads no budgets, so every kube-system pod blocks;
 * - local storage: a hostPath volume, or an emptyDir not backed by memory (`isLocalVolume`), unless
 *   named in `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`;
 * - `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` (`NotSafeToEvictAnnotation`).
 *
 * Pods that would fit on no other node are the caller's check (run.ts), as CA simulates them
 * rescheduled.
 */
import { MIRROR_POD_ANNOTATION, type PodInfo } from '../adapters/kube/model.ts';

export const SAFE_TO_EVICT = 'cluster-autoscaler.kubernetes.io/safe-to-evict';
export const SAFE_TO_EVICT_LOCAL_VOLUMES = 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes';
export const DO_NOT_DISRUPT = 'karpenter.sh/do-not-disrupt';

/** Does the pod count at all for draining its node (not mirror, not DaemonSet, not finished)? */
export function drainCounts(p: PodInfo): boolean {
  if (MIRROR_POD_ANNOTATION in p.annotations) return false;
  if (p.owners.some((o) => o.kind === 'DaemonSet')) return false;
  return p.phase !== 'Succeeded' && p.phase !== 'Failed';
}

/** Why this pod keeps its node (in words, naming the pod), or undefined when it may be evicted. */
export function whyBlocks(p: PodInfo): string | undefined {
  if (!drainCounts(p)) return undefined;
  const pod = `${p.namespace}/${p.name}`;
  if (p.annotations[DO_NOT_DISRUPT] === 'true') return `${pod} blocks its removal: ${DO_NOT_DISRUPT}: "true"`;
  if (p.annotations[SAFE_TO_EVICT] === 'true') return undefined;
  if (!p.owners.some((o) => o.controller === true))
    return `${pod} blocks its removal: it has no controller, nothing would recreate it (a bare pod)`;
  if (p.namespace === 'kube-system')
    return (
      `${pod} blocks its removal: a kube-system pod ` +
      '(cluster-autoscaler moves one only under a PodDisruptionBudget)'
    );
  const safe = new Set((p.annotations[SAFE_TO_EVICT_LOCAL_VOLUMES] ?? '').split(',').filter(Boolean));
  const local = (p.localVolumes ?? []).find(
    (v) => !safe.has(v.name) && (v.kind === 'hostPath' || v.medium !== 'Memory'),
  );
  if (local) return `${pod} blocks its removal: local storage (${local.kind} volume ${local.name})`;
  if (p.annotations[SAFE_TO_EVICT] === 'false') return `${pod} blocks its removal: ${SAFE_TO_EVICT}: "false"`;
  return undefined;
}
