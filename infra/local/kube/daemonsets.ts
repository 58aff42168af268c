import { controllerOf, isHealthy } from './pods.ts';
import { matchesNodeAffinity, tolerates } from './scheduler.ts';
import type { KubeObject, Node, Pod, PodSpec } from './types.ts';

/**
 * The DaemonSet controller's decisions, as pure functions: which nodes a DaemonSet's pod belongs
 * on, the pod it would create there, and the status it reports. The lifecycle applies them.
 */
interface Template {
  metadata?: { labels?: Record<string, string> };
  spec?: PodSpec;
}

function templateOf(ds: KubeObject): Template | undefined {
  return (ds.spec as { template?: Template } | undefined)?.template;
}

/**
 * Eligible: selector/affinity match and every NoSchedule/NoExecute taint tolerated, as the
 * DaemonSet controller's `predicates` decide (pkg/controller/daemon/daemon_controller.go:
 * nodeaffinity.GetRequiredNodeAffinity(pod).Match, FindMatchingUntoleratedTaint over those effects).
 */
export function eligible(ds: KubeObject, node: Node): boolean {
  const spec = templateOf(ds)?.spec;
  if (!spec) return false;
  const blocked = (node.spec?.taints ?? []).some(
    (t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !tolerates(spec.tolerations, t),
  );
  return !blocked && matchesNodeAffinity({ metadata: {}, spec } as unknown as Pod, node);
}

/** Whether the DaemonSet's node selector and required affinity still match `node` (taints aside). */
export function selects(ds: KubeObject, node: Node): boolean {
  const spec = templateOf(ds)?.spec;
  return !!spec && matchesNodeAffinity({ metadata: {}, spec } as unknown as Pod, node);
}

/** Whether `node` already runs a live pod of `ds`. */
export function hasDaemonPod(ds: KubeObject, podsOnNode: Pod[]): boolean {
  return podsOnNode.some((p) => controllerOf(p)?.uid === ds.metadata.uid && !p.metadata.deletionTimestamp);
}

/** The pod the controller creates for `ds` on `node`, bound there directly. */
export function daemonPod(ds: KubeObject, node: string, name: string): KubeObject {
  const tpl = templateOf(ds) ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      generateName: `${ds.metadata.name}-`,
      namespace: ds.metadata.namespace,
      labels: { ...(tpl.metadata?.labels ?? {}) },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          name: ds.metadata.name,
          uid: ds.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...tpl.spec, nodeName: node },
  } as unknown as KubeObject;
}

/** Status counted from the DaemonSet's live pods (desired = scheduled: no misscheduling here). */
export function withDaemonSetStatus(ds: KubeObject, podsInNamespace: Pod[]): KubeObject {
  const pods = podsInNamespace.filter((p) => controllerOf(p)?.uid === ds.metadata.uid && !p.metadata.deletionTimestamp);
  const ready = pods.filter(isHealthy).length;
  return {
    ...ds,
    status: {
      currentNumberScheduled: pods.length,
      desiredNumberScheduled: pods.length,
      numberMisscheduled: 0,
      numberReady: ready,
      numberAvailable: ready,
      updatedNumberScheduled: pods.length,
      observedGeneration: ds.metadata.generation ?? 1,
    },
  };
}
