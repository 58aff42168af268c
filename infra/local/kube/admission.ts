import { createHash } from 'node:crypto';
import { errors } from './errors.ts';
import { applyLimitRanges, RequestOverLimit } from './limit-range.ts';
import { hostIpOf, pendingStatus } from './pods.ts';
import { quotaRefusal } from './quota.ts';
import { resource } from './resources.ts';
import type { Store } from './store.ts';
import type { Container, KubeObject, Node, Pod, Taint } from './types.ts';

/**
 * What happens to a new pod or node before it is stored: API defaulting and the admission
 * plugins (LimitRanger, ResourceQuota). Throws the ApiError the real server would answer with.
 */
const PODS = resource('pods');

/** Pod defaulting and admission: limit ranges, then quota (403 with the plugin's message). */
export function admitPod(input: Pod, store: Store, running: (pod: Pod, node: string) => Pod['status']): Pod {
  const ns = input.metadata.namespace ?? '';
  if (!Array.isArray(input.spec?.containers) || input.spec.containers.length === 0)
    throw errors.invalid(PODS, input.metadata.name, 'spec.containers', 'Required value');
  let pod: Pod;
  try {
    pod = applyLimitRanges(input, store.list('limitranges', ns));
  } catch (err) {
    if (err instanceof RequestOverLimit) throw errors.invalid(PODS, input.metadata.name, err.field, err.message);
    throw errors.forbidden(PODS, input.metadata.name, (err as Error).message);
  }
  const priority = admitPriority(pod, store);
  pod.spec = {
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    schedulerName: 'default-scheduler',
    serviceAccountName: 'default',
    securityContext: {},
    enableServiceLinks: true,
    ...pod.spec,
    ...priority,
  };
  pod.spec.containers = pod.spec.containers.map(defaultContainer);
  // Quota needs the namespace's pods only when the namespace has a quota (most have none).
  const quotas = store.list('resourcequotas', ns);
  const refusal = quotas.length > 0 ? quotaRefusal(pod, quotas, store.pods(ns)) : undefined;
  if (refusal) throw errors.forbidden(PODS, pod.metadata.name, refusal);
  // A pod created already bound (DaemonSet pods, fleet seeds) is started by its kubelet at once.
  pod.status = pod.spec.nodeName ? running(pod, pod.spec.nodeName) : pendingStatus(pod);
  return pod;
}

/**
 * The Priority admission plugin (plugin/pkg/admission/priority/admission.go; kubernetes.io/docs/concepts/
 * scheduling-eviction/pod-priority-preemption/): `spec.priority` and `spec.preemptionPolicy` come from the pod's
 * PriorityClass, or from the class marked `globalDefault` (its name then written to the pod), or are 0 and
 * PreemptLowerPriority. A class that does not exist is refused (403), and so is a pod that states a priority or a
 * preemption policy other than its class's. The two classes the API server creates at start are known here by
 * value (system-cluster-critical 2000000000, system-node-critical 2000001000), not stored.
 */
const SYSTEM_CLASSES: Record<string, number> = {
  'system-cluster-critical': 2000000000,
  'system-node-critical': 2000001000,
};

function admitPriority(
  pod: Pod,
  store: Store,
): { priority: number; preemptionPolicy: string; priorityClassName?: string } {
  const named = typeof pod.spec.priorityClassName === 'string' ? pod.spec.priorityClassName : '';
  const classes = store.list('priorityclasses.scheduling.k8s.io') as (KubeObject & {
    value?: number;
    globalDefault?: boolean;
    preemptionPolicy?: string;
  })[];
  let resolved: { priority: number; preemptionPolicy: string; priorityClassName?: string };
  if (named === '') {
    const def = classes.find((c) => c.globalDefault === true);
    resolved = def
      ? {
          priority: def.value ?? 0,
          preemptionPolicy: def.preemptionPolicy ?? 'PreemptLowerPriority',
          priorityClassName: def.metadata.name,
        }
      : { priority: 0, preemptionPolicy: 'PreemptLowerPriority' };
  } else if (SYSTEM_CLASSES[named] !== undefined) {
    resolved = { priority: SYSTEM_CLASSES[named], preemptionPolicy: 'PreemptLowerPriority' };
  } else {
    const pc = classes.find((c) => c.metadata.name === named);
    if (!pc) throw errors.forbidden(PODS, pod.metadata.name, `no PriorityClass with name ${named} was found`);
    resolved = { priority: pc.value ?? 0, preemptionPolicy: pc.preemptionPolicy ?? 'PreemptLowerPriority' };
  }
  if (typeof pod.spec.priority === 'number' && pod.spec.priority !== resolved.priority)
    throw errors.forbidden(
      PODS,
      pod.metadata.name,
      `the integer value of priority (${pod.spec.priority}) must not be provided in pod spec; priority admission ` +
        `controller computed ${resolved.priority} from the given PriorityClass name`,
    );
  if (typeof pod.spec.preemptionPolicy === 'string' && pod.spec.preemptionPolicy !== resolved.preemptionPolicy)
    throw errors.forbidden(
      PODS,
      pod.metadata.name,
      `the string value of PreemptionPolicy (${pod.spec.preemptionPolicy}) must not be provided in pod spec; ` +
        `priority admission controller computed ${resolved.preemptionPolicy} from the given PriorityClass name`,
    );
  return resolved;
}

/** A stable hex string per name and purpose: node IDs are deterministic, as every sim object. */
function stableHex(seed: string, length: number): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, length);
}

const uuidOf = (seed: string) => {
  const h = stableHex(seed, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** The conditions a healthy kubelet posts; a fleet's own (e.g. Ready=False) replace theirs by type. */
function nodeConditions(given: { type: string; status: string; [k: string]: unknown }[] | undefined, nowIso: string) {
  const base = [
    {
      type: 'MemoryPressure',
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
      message: 'kubelet has sufficient memory available',
    },
    {
      type: 'DiskPressure',
      status: 'False',
      reason: 'KubeletHasNoDiskPressure',
      message: 'kubelet has no disk pressure',
    },
    {
      type: 'PIDPressure',
      status: 'False',
      reason: 'KubeletHasSufficientPID',
      message: 'kubelet has sufficient PID available',
    },
    { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' },
  ];
  const byType = new Map((given ?? []).map((c) => [c.type, c]));
  const out = base.map((c) => ({ ...c, lastHeartbeatTime: nowIso, lastTransitionTime: nowIso, ...byType.get(c.type) }));
  for (const c of given ?? [])
    if (!base.some((b) => b.type === c.type))
      out.push({ lastHeartbeatTime: nowIso, lastTransitionTime: nowIso, reason: '', message: '', ...c });
  return out;
}

/**
 * A node as its kubelet would register it: allocatable, the four kubelet conditions, addresses,
 * the kubelet endpoint, and a complete nodeInfo (typed clients such as the Python one refuse a
 * Node whose nodeInfo lacks bootID, machineID, systemUUID, kernelVersion or kubeProxyVersion).
 */
export function defaultNode(node: Node, nowIso: string, kubeletVersion = 'v1.37.0'): Node {
  const name = node.metadata.name;
  const status = { ...(node.status ?? {}) };
  status.capacity ??= status.allocatable ?? {};
  status.allocatable ??= status.capacity;
  status.conditions = nodeConditions(status.conditions, nowIso);
  status.addresses ??= [
    { type: 'InternalIP', address: hostIpOf(name) },
    { type: 'Hostname', address: name },
  ];
  status.daemonEndpoints ??= { kubeletEndpoint: { Port: 10250 } };
  status.nodeInfo = {
    machineID: stableHex(`machine:${name}`, 32),
    systemUUID: uuidOf(`system:${name}`),
    bootID: uuidOf(`boot:${name}`),
    kernelVersion: '5.15.0-1063-nvidia',
    osImage: 'Ubuntu 22.04.4 LTS',
    containerRuntimeVersion: 'containerd://1.7.13',
    kubeletVersion,
    kubeProxyVersion: kubeletVersion,
    operatingSystem: 'linux',
    architecture: 'amd64',
    ...(status.nodeInfo as object | undefined),
  };
  return { ...node, spec: node.spec ?? {}, status };
}

/** The Lease the node's kubelet renews in kube-node-lease (what `kubectl describe node` shows). */
export function nodeLease(node: KubeObject, uid: string, nowMicro: string): KubeObject {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: node.metadata.name,
      namespace: NODE_LEASE_NAMESPACE,
      uid,
      resourceVersion: '',
      creationTimestamp: nowMicro.replace(/\.\d+Z$/, 'Z'),
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid: node.metadata.uid }],
    },
    spec: { holderIdentity: node.metadata.name, leaseDurationSeconds: 40, renewTime: nowMicro },
  };
}

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** Container defaults the API server fills in, and the ones kubectl describe prints. */
export function defaultContainer(c: Container): Container {
  const tag = (c.image ?? '').split('/').pop() ?? '';
  return {
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: tag.includes(':') && !tag.endsWith(':latest') ? 'IfNotPresent' : 'Always',
    resources: {},
    ...c,
  };
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
        return [
          `spec.taints[${i}].effect`,
          `Unsupported value: "${t.effect ?? ''}": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
        ];
      }
      const id = `${t.key}:${t.effect}`;
      if (seen.has(id))
        return [`spec.taints[${i}]`, `Duplicate value: core.Taint{Key:"${t.key}", Effect:"${t.effect}"}`];
      seen.add(id);
    }
  }
  if (obj.kind === 'PodDisruptionBudget') {
    const spec = (obj.spec ?? {}) as { minAvailable?: unknown; maxUnavailable?: unknown };
    if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined)
      return ['spec', 'Invalid value: minAvailable and maxUnavailable cannot be both set'];
  }
  return undefined;
}
