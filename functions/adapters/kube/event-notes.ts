/**
 * Kubernetes Event notes gpu-reflex records about a drain (pure: no client, so the applier and
 * drain share them without pulling the SDK in).
 *
 * Evictions are recorded as one Event on the node, not one per pod. The pod side is already
 * recorded by Kubernetes itself: the Eviction API sets the pod's `DisruptionTarget` condition
 * (reason `EvictionByEvictionAPI`, what `kubectl describe pod` shows while it terminates) and the
 * kubelet records `Killing` for each container; an evicted pod is then gone, and with it what
 * describe would show. What is ours to say is why the node's pods were moved: one line in
 * `kubectl describe node`, one request instead of one per pod.
 */
import type { KubeEventNote } from './ports.ts';

/** The node Event for the pods whose eviction was accepted (`namespace/name`). */
export function evictionsNote(pods: readonly string[]): KubeEventNote {
  const n = pods.length;
  return {
    type: 'Normal',
    reason: 'PodsEvicted',
    action: 'Evict',
    note:
      `${n} pod${n === 1 ? '' : 's'} evicted by gpu-reflex through the Eviction API (PodDisruptionBudgets ` +
      `honoured): ${pods.join(', ')}`,
  };
}
