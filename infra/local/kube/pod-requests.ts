import { quantityNanos, schedulerUnits } from './quantity.ts';
import type { Container, Pod, ResourceList } from './types.ts';

/**
 * What a pod requests, as Kubernetes computes it for both the scheduler (NodeResourcesFit) and
 * quota: k8s.io/component-helpers/resource/helpers.go PodRequests / AggregateContainerRequests.
 *
 * - the sum over `containers`;
 * - a restartable init container (`restartPolicy: Always`, a sidecar, KEP-753) is added to that
 *   sum, and stays counted while later init containers run;
 * - a plain init container i needs `its requests + the sidecars started before it`; the pod
 *   needs at least the largest of these, per resource (`maxResourceList`);
 * - pod-level `spec.resources.requests` replace the containers' total for cpu and memory
 *   (IsSupportedPodLevelResource; PodLevelResources, beta and on by default since 1.34);
 * - `spec.overhead` (RuntimeClass overhead) is added last.
 *
 * A container without a request for a resource it limits requests the limit: the API server's
 * defaulting on create (pkg/apis/core/v1/defaults.go SetDefaults_Pod). Amounts are exact
 * (nano-units); a request of 0 is kept (the fit check skips it).
 */
type Nanos = Map<string, bigint>;

function add(into: Nanos, list: ResourceList | Nanos | undefined): void {
  const entries = list instanceof Map ? list.entries() : Object.entries(list ?? {});
  for (const [k, v] of entries)
    into.set(k, (into.get(k) ?? 0n) + (typeof v === 'bigint' ? v : (quantityNanos(v) ?? 0n)));
}

function max(into: Nanos, other: Nanos): void {
  for (const [k, v] of other) if (v > (into.get(k) ?? 0n)) into.set(k, v);
}

function requestsOf(c: Container): ResourceList {
  return { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
}

const POD_LEVEL = new Set(['cpu', 'memory']);

export function podRequestNanos(pod: Pod): Nanos {
  const reqs: Nanos = new Map();
  for (const c of pod.spec.containers ?? []) add(reqs, requestsOf(c));
  const sidecars: Nanos = new Map();
  const init: Nanos = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    const own: Nanos = new Map();
    add(own, requestsOf(c));
    if (c.restartPolicy === 'Always') {
      add(reqs, own);
      add(sidecars, own);
      max(init, sidecars);
    } else {
      add(own, sidecars);
      max(init, own);
    }
  }
  max(reqs, init);
  const podLevel = (pod.spec.resources as { requests?: ResourceList } | undefined)?.requests ?? {};
  for (const [k, v] of Object.entries(podLevel)) if (POD_LEVEL.has(k)) reqs.set(k, quantityNanos(v) ?? 0n);
  add(reqs, pod.spec.overhead as ResourceList | undefined);
  return reqs;
}

/** The pod's requests in kube-scheduler's integers (millicores for cpu, whole units otherwise), rounded up. */
export function schedulerRequests(pod: Pod): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of podRequestNanos(pod)) out.set(k, schedulerUnits(k, v));
  return out;
}
