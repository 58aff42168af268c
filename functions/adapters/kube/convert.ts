/**
 * SDK objects → the plain data in model.ts. Only the fields the ports promise are read, and
 * absent maps become `{}`, so callers never branch on undefined metadata.
 */
import type { V1LimitRange, V1Node, V1Pod, V1ResourceQuota } from '@kubernetes/client-node';
import type {
  LimitItem,
  LimitRangeInfo,
  NodeInfo,
  NodeSelectorExpression,
  NodeSelectorTermInfo,
  PodInfo,
  PodLocalVolume,
  PodToleration,
  QuotaInfo,
  Taint,
  TaintEffect,
} from './model.ts';
import { parseQuantity } from './quantity.ts';

const EFFECTS = new Set<string>(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

export function toTaint(t: { key: string; value?: string; effect: string }): Taint {
  const effect = (EFFECTS.has(t.effect) ? t.effect : 'NoSchedule') as TaintEffect;
  return t.value === undefined || t.value === '' ? { key: t.key, effect } : { key: t.key, value: t.value, effect };
}

export function toNodeInfo(n: V1Node): NodeInfo {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    name: n.metadata?.name ?? '',
    labels: { ...(n.metadata?.labels ?? {}) },
    annotations: { ...(n.metadata?.annotations ?? {}) },
    taints: (n.spec?.taints ?? []).map(toTaint),
    unschedulable: n.spec?.unschedulable === true,
    ready: ready === undefined ? undefined : ready.status === 'True',
    allocatable: { ...(n.status?.allocatable ?? {}) },
    ...(n.status?.capacity ? { capacity: { ...n.status.capacity } } : {}),
    resourceVersion: n.metadata?.resourceVersion ?? '',
    conditions: Object.fromEntries(
      (n.status?.conditions ?? [])
        .filter((c) => c.type !== 'Ready')
        .map((c) => [
          c.type,
          {
            type: c.type,
            status: c.status as 'True' | 'False' | 'Unknown',
            reason: c.reason ?? '',
            message: c.message ?? '',
          },
        ]),
    ),
    ...(n.status?.nodeInfo?.bootID ? { bootId: n.status.nodeInfo.bootID } : {}),
    ...(n.spec?.providerID ? { providerId: n.spec.providerID } : {}),
    ...(n.metadata?.creationTimestamp ? { createdAt: new Date(n.metadata.creationTimestamp).toISOString() } : {}),
  };
}

/**
 * Only extended resources (names with a domain, e.g. nvidia.com/gpu), as Kubernetes reckons the pod's requests
 * (podRequests): a GPU a native sidecar or an init container holds is the pod's too.
 */
function extendedResources(pod: V1Pod): Record<string, number> {
  return Object.fromEntries(Object.entries(podRequests(pod)).filter(([r]) => r.includes('/')));
}

function quantity(q: string | undefined): number {
  try {
    return parseQuantity(q);
  } catch {
    return 0;
  }
}

type Requests = Record<string, number>;

function addInto(into: Requests, more: Readonly<Requests>): void {
  for (const [r, v] of Object.entries(more)) into[r] = (into[r] ?? 0) + v;
}

function maxInto(into: Requests, other: Readonly<Requests>): void {
  for (const [r, v] of Object.entries(other)) into[r] = Math.max(into[r] ?? 0, v);
}

/**
 * Resources that pod-level `spec.resources.requests` may set: cpu, memory and hugepages-*
 * (component-helpers/resource/helpers.go IsSupportedPodLevelResource).
 */
const podLevel = (r: string) => r === 'cpu' || r === 'memory' || r.startsWith('hugepages-');

/**
 * The scheduler's view of a pod's requests (see PodInfo.requests), as Kubernetes computes it
 * (kubernetes/kubernetes staging/src/k8s.io/component-helpers/resource/helpers.go `PodRequests`,
 * `AggregateContainerRequests`, after pkg/api/v1/resource/helpers.go; KEP-753 for sidecars):
 * - the app containers are summed;
 * - a restartable init container (`restartPolicy: Always`, a sidecar) runs beside them, so it is
 *   added to that sum, and stays counted while the init containers after it run;
 * - a plain init container needs its own requests plus those of the sidecars started before it;
 *   the pod needs at least the largest such need, per resource;
 * - pod-level `spec.resources.requests` (PodLevelResources, on by default since 1.34) replace the
 *   containers' total for the resources it may set;
 * - `spec.overhead` (RuntimeClass) is added last.
 */
function podRequests(pod: V1Pod): Requests {
  const of = (c: { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }) => {
    const out: Requests = {};
    for (const r of new Set([...Object.keys(c.resources?.requests ?? {}), ...Object.keys(c.resources?.limits ?? {})]))
      out[r] = quantity(c.resources?.requests?.[r] ?? c.resources?.limits?.[r]);
    return out;
  };
  const sum: Requests = {};
  for (const c of pod.spec?.containers ?? []) addInto(sum, of(c));
  const sidecars: Requests = {};
  const init: Requests = {};
  for (const c of pod.spec?.initContainers ?? []) {
    const own = of(c);
    if (c.restartPolicy === 'Always') {
      addInto(sum, own);
      addInto(sidecars, own);
      maxInto(init, sidecars);
    } else {
      addInto(own, sidecars);
      maxInto(init, own);
    }
  }
  maxInto(sum, init);
  const level = (pod.spec as { resources?: { requests?: Record<string, string> } } | undefined)?.resources?.requests;
  for (const [r, q] of Object.entries(level ?? {})) if (podLevel(r)) sum[r] = quantity(q);
  addInto(sum, of({ resources: { requests: pod.spec?.overhead ?? {} } }));
  return sum;
}

function tolerations(pod: V1Pod): PodToleration[] {
  return (pod.spec?.tolerations ?? []).map((t) => ({
    ...(t.key ? { key: t.key } : {}),
    ...(t.operator === 'Exists' || t.operator === 'Equal' ? { operator: t.operator } : {}),
    ...(t.value !== undefined ? { value: t.value } : {}),
    ...(t.effect ? { effect: t.effect } : {}),
  }));
}

type Requirement = { key: string; operator: string; values?: string[] };

/**
 * requiredDuringSchedulingIgnoredDuringExecution's terms, matchExpressions and matchFields both
 * kept as written: an operator Kubernetes does not know is handed on too (never dropped, which
 * would widen its term), and the fit rule (autoscale/core/fit.ts) holds it false, as a parse error
 * makes its term select no node (component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go).
 */
function requiredNodeTerms(pod: V1Pod): NodeSelectorTermInfo[] {
  const terms =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  const plain = (e: Requirement): NodeSelectorExpression => ({
    key: e.key,
    operator: e.operator as NodeSelectorExpression['operator'],
    ...(e.values ? { values: [...e.values] } : {}),
  });
  return terms.map((t) => {
    const fields: Requirement[] = t.matchFields ?? [];
    return {
      matchExpressions: (t.matchExpressions ?? []).map(plain),
      ...(fields.length > 0 ? { matchFields: fields.map(plain) } : {}),
    };
  });
}

export function toPodInfo(p: V1Pod): PodInfo {
  const requests = podRequests(p);
  const tol = tolerations(p);
  const terms = requiredNodeTerms(p);
  return {
    namespace: p.metadata?.namespace ?? 'default',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid ?? '',
    nodeName: p.spec?.nodeName,
    phase: p.status?.phase,
    labels: { ...(p.metadata?.labels ?? {}) },
    annotations: { ...(p.metadata?.annotations ?? {}) },
    owners: (p.metadata?.ownerReferences ?? []).map((o) => ({
      kind: o.kind,
      name: o.name,
      ...(o.controller === true ? { controller: true } : {}),
    })),
    terminating: p.metadata?.deletionTimestamp !== undefined && p.metadata.deletionTimestamp !== null,
    terminationGracePeriodSeconds: p.spec?.terminationGracePeriodSeconds,
    extendedResources: extendedResources(p),
    ...((p.spec?.resourceClaims?.length ?? 0) > 0 ? { resourceClaims: p.spec!.resourceClaims!.length } : {}),
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(p.spec?.nodeSelector && Object.keys(p.spec.nodeSelector).length > 0
      ? { nodeSelector: { ...p.spec.nodeSelector } }
      : {}),
    ...(tol.length > 0 ? { tolerations: tol } : {}),
    ...(terms.length > 0 ? { requiredNodeTerms: terms } : {}),
    ...(typeof p.spec?.priority === 'number' ? { priority: p.spec.priority } : {}),
    ...(p.spec?.priorityClassName ? { priorityClassName: p.spec.priorityClassName } : {}),
    ...(p.metadata?.creationTimestamp ? { createdAt: new Date(p.metadata.creationTimestamp).toISOString() } : {}),
    ...finishedOf(p),
    ...schedulingOf(p),
  };
}

/**
 * When a pod that ended stopped: the latest container `state.terminated.finishedAt`
 * (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#PodStatus); only for a
 * terminal phase, and only when every container says so (one still running: not ended).
 */
function finishedOf(p: V1Pod): Partial<PodInfo> {
  if (p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed') return {};
  const ends = (p.status.containerStatuses ?? []).map((c) => {
    const f = c.state?.terminated?.finishedAt;
    return f === undefined || f === null ? NaN : new Date(f).getTime();
  });
  if (ends.length === 0 || ends.some((t) => !Number.isFinite(t))) return {};
  return { finishedAt: new Date(Math.max(...ends)).toISOString() };
}

/** What the scheduler said and may do with a pod: its PodScheduled condition, gates, nomination; its local volumes. */
function schedulingOf(p: V1Pod): Partial<PodInfo> {
  const cond = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
  const gates = (p.spec?.schedulingGates ?? []).map((g) => g.name);
  const local = (p.spec?.volumes ?? []).flatMap((v): PodLocalVolume[] =>
    v.hostPath
      ? [{ name: v.name, kind: 'hostPath' }]
      : v.emptyDir
        ? [{ name: v.name, kind: 'emptyDir', ...(v.emptyDir.medium ? { medium: v.emptyDir.medium } : {}) }]
        : [],
  );
  // Required anti-affinity per node (topologyKey kubernetes.io/hostname); other topologies are not read.
  const anti = (p.spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [])
    .filter((t) => t.topologyKey === 'kubernetes.io/hostname')
    .map((t) => ({
      ...(t.namespaces?.length ? { namespaces: [...t.namespaces] } : {}),
      ...(t.labelSelector?.matchLabels ? { matchLabels: { ...t.labelSelector.matchLabels } } : {}),
      ...(t.labelSelector?.matchExpressions
        ? {
            matchExpressions: t.labelSelector.matchExpressions.map((e) => ({
              key: e.key,
              operator: e.operator,
              ...(e.values ? { values: [...e.values] } : {}),
            })),
          }
        : {}),
    }));
  return {
    ...(anti.length > 0 ? { hostnameAntiAffinity: anti } : {}),
    ...(cond ? { scheduled: { status: cond.status, ...(cond.reason ? { reason: cond.reason } : {}) } } : {}),
    ...(gates.length > 0 ? { schedulingGates: gates } : {}),
    ...(p.status?.nominatedNodeName ? { nominatedNodeName: p.status.nominatedNodeName } : {}),
    ...(local.length > 0 ? { localVolumes: local } : {}),
  };
}

export function toQuotaInfo(q: V1ResourceQuota): QuotaInfo {
  return {
    namespace: q.metadata?.namespace ?? '',
    name: q.metadata?.name ?? '',
    labels: { ...(q.metadata?.labels ?? {}) },
    annotations: { ...(q.metadata?.annotations ?? {}) },
    hard: { ...(q.spec?.hard ?? {}) },
    used: { ...(q.status?.used ?? {}) },
    resourceVersion: q.metadata?.resourceVersion ?? '',
  };
}

function toLimitItem(i: NonNullable<NonNullable<V1LimitRange['spec']>['limits']>[number]): LimitItem {
  const out: LimitItem = { type: i.type };
  if (i._default !== undefined) out.default = { ...i._default };
  if (i.defaultRequest !== undefined) out.defaultRequest = { ...i.defaultRequest };
  if (i.max !== undefined) out.max = { ...i.max };
  if (i.min !== undefined) out.min = { ...i.min };
  if (i.maxLimitRequestRatio !== undefined) out.maxLimitRequestRatio = { ...i.maxLimitRequestRatio };
  return out;
}

export function toLimitRangeInfo(l: V1LimitRange): LimitRangeInfo {
  return {
    namespace: l.metadata?.namespace ?? '',
    name: l.metadata?.name ?? '',
    labels: { ...(l.metadata?.labels ?? {}) },
    limits: (l.spec?.limits ?? []).map(toLimitItem),
    resourceVersion: l.metadata?.resourceVersion ?? '',
  };
}
