import { errors } from './errors.ts';
import { applyLimitRanges, RequestOverLimit } from './limit-range.ts';
import { hostIpOf, pendingStatus } from './pods.ts';
import { quotaRefusal } from './quota.ts';
import { resource } from './resources.ts';
import type { Store } from './store.ts';
import type { KubeObject, Node, Pod, Taint } from './types.ts';

/**
 * What happens to a new pod or node before it is stored: API defaulting and the admission
 * plugins (LimitRanger, ResourceQuota). Throws the ApiError the real server would answer with.
 */
const PODS = resource('pods');

/** Pod defaulting and admission: limit ranges, then quota (403 with the plugin's message). */
export function admitPod(input: Pod, store: Store, running: (pod: Pod, node: string) => Pod['status']): Pod {
  const ns = input.metadata.namespace ?? '';
  if (!Array.isArray(input.spec?.containers) || input.spec.containers.length === 0) throw errors.invalid(PODS, input.metadata.name, 'spec.containers', 'Required value');
  let pod: Pod;
  try {
    pod = applyLimitRanges(input, store.list('limitranges', ns));
  } catch (err) {
    if (err instanceof RequestOverLimit) throw errors.invalid(PODS, input.metadata.name, err.field, err.message);
    throw errors.forbidden(PODS, input.metadata.name, (err as Error).message);
  }
  pod.spec = { restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', ...pod.spec };
  // Quota needs the namespace's pods only when the namespace has a quota (most have none).
  const quotas = store.list('resourcequotas', ns);
  const refusal = quotas.length > 0 ? quotaRefusal(pod, quotas, store.pods(ns)) : undefined;
  if (refusal) throw errors.forbidden(PODS, pod.metadata.name, refusal);
  // A pod created already bound (DaemonSet pods, fleet seeds) is started by its kubelet at once.
  pod.status = pod.spec.nodeName ? running(pod, pod.spec.nodeName) : pendingStatus(pod);
  return pod;
}

/** A node as its kubelet would register it: allocatable, Ready, addresses, node info. */
export function defaultNode(node: Node, nowIso: string): Node {
  const status = { ...(node.status ?? {}) };
  status.capacity ??= status.allocatable ?? {};
  status.allocatable ??= status.capacity;
  status.conditions ??= [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: nowIso, lastTransitionTime: nowIso }];
  status.addresses ??= [{ type: 'InternalIP', address: hostIpOf(node.metadata.name) }, { type: 'Hostname', address: node.metadata.name }];
  status.nodeInfo ??= { kubeletVersion: 'v1.30.0', containerRuntimeVersion: 'containerd://1.7.0', osImage: 'gpu-reflex simulated node', operatingSystem: 'linux', architecture: 'amd64' };
  return { ...node, spec: node.spec ?? {}, status };
}

/**
 * Field validation the real server applies to what gpu-reflex writes most: node taints and
 * PDB specs. Returns [field, why] for the first problem, as a 422 cause.
 */
export function invalidField(obj: KubeObject): [string, string] | undefined {
  if (obj.kind === 'Node') {
    const taints = (obj.spec as { taints?: unknown } | undefined)?.taints;
    if (taints === undefined || taints === null) return undefined;
    if (!Array.isArray(taints)) return ['spec.taints', 'Invalid value: must be a list'];
    const seen = new Set<string>();
    for (const [i, t] of (taints as Partial<Taint>[]).entries()) {
      if (!t?.key) return [`spec.taints[${i}].key`, 'Required value'];
      if (!['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(t.effect ?? '')) {
        return [`spec.taints[${i}].effect`, `Unsupported value: "${t.effect ?? ''}": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`];
      }
      const id = `${t.key}:${t.effect}`;
      if (seen.has(id)) return [`spec.taints[${i}]`, `Duplicate value: core.Taint{Key:"${t.key}", Effect:"${t.effect}"}`];
      seen.add(id);
    }
  }
  if (obj.kind === 'PodDisruptionBudget') {
    const spec = (obj.spec ?? {}) as { minAvailable?: unknown; maxUnavailable?: unknown };
    if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined) return ['spec', 'Invalid value: minAvailable and maxUnavailable cannot be both set'];
  }
  return undefined;
}
