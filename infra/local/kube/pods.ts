import { createHash } from 'node:crypto';
import { podRequestNanos, schedulerRequests } from './pod-requests.ts';
import { parseQuantity } from './quantity.ts';
import type { OwnerReference, Pod } from './types.ts';

/** Pod facts shared by the scheduler, quota, PDB and lifecycle code. Pure functions. */

// Stored pods are immutable snapshots, so their parsed requests can be cached by identity.
const requestCache = new WeakMap<Pod, Map<string, number>>();
const schedulerCache = new WeakMap<Pod, Map<string, number>>();

/** Resources a pod asks for, in base units (cores, bytes, devices): Kubernetes' PodRequests (pod-requests.ts). */
export function podRequests(pod: Pod): Map<string, number> {
  let cached = requestCache.get(pod);
  if (!cached)
    requestCache.set(pod, (cached = new Map([...podRequestNanos(pod)].map(([k, v]) => [k, Number(v) / 1e9]))));
  return cached;
}

/** The same requests in kube-scheduler's integers: millicores for cpu, whole units otherwise. */
export function podSchedulerRequests(pod: Pod): Map<string, number> {
  let cached = schedulerCache.get(pod);
  if (!cached) schedulerCache.set(pod, (cached = schedulerRequests(pod)));
  return cached;
}

/** Limits summed over containers (quota `limits.*`). */
export function podLimits(pod: Pod): Map<string, number> {
  const sum = new Map<string, number>();
  for (const c of pod.spec.containers ?? []) {
    for (const [k, v] of Object.entries(c.resources?.limits ?? {})) sum.set(k, (sum.get(k) ?? 0) + parseQuantity(v));
  }
  return sum;
}

export function isTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

export function isTerminating(pod: Pod): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}

/** Ready condition true and not being deleted: what a PDB counts as healthy. */
export function isHealthy(pod: Pod): boolean {
  if (isTerminating(pod) || pod.status?.phase !== 'Running') return false;
  return pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Pods that hold node resources: bound and not finished. */
export function holdsResources(pod: Pod): boolean {
  return pod.spec.nodeName !== undefined && !isTerminal(pod);
}

export function controllerOf(pod: Pod): OwnerReference | undefined {
  return pod.metadata.ownerReferences?.find((o) => o.controller === true);
}

/** The status a kubelet would report once the pod runs on `node`. One write, not several. */
export function runningStatus(pod: Pod, node: string, nowIso: string, podIp: string): Pod['status'] {
  const cond = (type: string) => ({ type, status: 'True' as const, lastProbeTime: null, lastTransitionTime: nowIso });
  return {
    phase: 'Running',
    conditions: [
      cond('PodReadyToStartContainers'),
      cond('Initialized'),
      cond('Ready'),
      cond('ContainersReady'),
      cond('PodScheduled'),
    ],
    hostIP: hostIpOf(node),
    hostIPs: [{ ip: hostIpOf(node) }],
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: nowIso,
    qosClass: qosOf(pod),
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: imageIdOf(c.image ?? ''),
      containerID: `containerd://${pod.metadata.uid.replace(/-/g, '')}${c.name}`,
      ready: true,
      started: true,
      restartCount: 0,
      lastState: {},
      state: { running: { startedAt: nowIso } },
    })),
  };
}

/** A pod whose containers all exited 0: Succeeded, not Ready, resources released. */
export function succeededStatus(pod: Pod, nowIso: string): Pod['status'] {
  const cond = (type: string, status: 'True' | 'False') => ({
    type,
    status,
    lastTransitionTime: nowIso,
    ...(status === 'False' ? { reason: 'PodCompleted' } : {}),
  });
  return {
    ...pod.status,
    phase: 'Succeeded',
    conditions: [
      cond('Initialized', 'True'),
      cond('Ready', 'False'),
      cond('ContainersReady', 'False'),
      cond('PodScheduled', 'True'),
    ],
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: imageIdOf(c.image ?? ''),
      ready: false,
      started: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: nowIso } },
    })),
  };
}

export function pendingStatus(pod: Pod, reason?: string, message?: string): Pod['status'] {
  return {
    phase: 'Pending',
    qosClass: qosOf(pod),
    ...(reason ? { conditions: [{ type: 'PodScheduled', status: 'False' as const, reason, message }] } : {}),
  };
}

function qosOf(pod: Pod): string {
  const cs = pod.spec.containers;
  const any = cs.some((c) => Object.keys({ ...c.resources?.requests, ...c.resources?.limits }).length > 0);
  if (!any) return 'BestEffort';
  const guaranteed = cs.every((c) => {
    const l = c.resources?.limits ?? {};
    const r = { ...l, ...(c.resources?.requests ?? {}) };
    return ['cpu', 'memory'].every((k) => l[k] !== undefined && parseQuantity(l[k]) === parseQuantity(r[k]));
  });
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The digest a container runtime reports for an image, stable per image name. */
function imageIdOf(image: string): string {
  return `${image.split('@')[0]}@sha256:${createHash('sha256').update(image).digest('hex')}`;
}

/** A stable fake address per node name, so hostIP is deterministic. */
export function hostIpOf(node: string): string {
  let h = 0;
  for (const ch of node) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return `10.${(h >> 16) & 255}.${(h >> 8) & 255}.${(h & 254) + 1}`;
}
