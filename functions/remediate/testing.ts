/**
 * Test fixtures: valid events, nodes, pods, and `apply`, which carries a plan out with the REAL
 * applier (lib/apply.ts) over the fake ports (adapters/kube/fake-*.ts), so tests replay event
 * sequences through parse → plan → apply → parse without a cluster and without a stand-in that
 * could drift from production.
 */
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  GPU_DEVICES_ANNOTATION,
  GPU_HEALTH_CHANGED,
  type GpuActionState,
  GPU_XID_ERROR,
  type GpuActionRequest,
  type GpuProbe,
  type GpuHealthChangedDetail,
  type GpuRef,
  type GpuXidErrorDetail,
  type MigRef,
  type PodRef,
} from '../../events/index.ts';
import type { EventPublisher } from '../adapters/bus.ts';
import { RecordingNotifier, type Notifier } from '../adapters/chat/notifier.ts';
import type { ManualClock } from '../adapters/clock.ts';
import { FakeCluster, FakeDeviceTaintOps, FakeNodeOps, FakePodOps, type FakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { applyActions, type Applied, type CloudOps } from '../lib/apply.ts';
import type { Policy } from './core/policy.ts';
import { historyCodec } from './core/reconcile.ts';
import { parseNodeState } from './core/state.ts';
import type { NodeFacts, Plan, PodFacts, PoolFacts, RemediationFacts, TriggerEvent } from './core/types.ts';
import type { RemediationDeps } from './run.ts';

export const T0 = Date.parse('2026-11-21T03:00:00.000Z');
export const at = (minutes: number): string => new Date(T0 + minutes * 60_000).toISOString();

export function gpu(index: number): GpuRef {
  const hex = index.toString(16).padStart(2, '0');
  return {
    index,
    uuid: `GPU-5f2c3a${hex}-8d41-4b7a-9e0f-1c2d3e4f5a6b`,
    pciBusId: `00000000:${hex.toUpperCase()}:00.0`,
    name: 'NVIDIA A100-SXM4-80GB',
  };
}

let seq = 0;
export function xid(
  x: number,
  o: {
    node?: string;
    gpu?: number;
    minute?: number;
    pods?: PodRef[];
    mig?: MigRef;
    recoveryAction?: GpuXidErrorDetail['recoveryAction'];
    severity?: GpuXidErrorDetail['severity'];
    eventId?: string;
  } = {},
): TriggerEvent {
  const node = o.node ?? 'gpu-a100-07';
  const detail: GpuXidErrorDetail = {
    schemaVersion: 1,
    eventId: o.eventId ?? `xid:${node}:${o.gpu ?? 0}:${x}:${o.minute ?? 0}:${seq++}`,
    node,
    observedAt: at(o.minute ?? 0),
    gpu: gpu(o.gpu ?? 0),
    ...(o.mig ? { mig: o.mig } : {}),
    xid: x,
    via: 'nvml',
    pid: null,
    process: null,
    message: `Xid ${x}`,
    ...(o.recoveryAction ? { recoveryAction: o.recoveryAction } : {}),
    ...(o.severity ? { severity: o.severity } : {}),
    pods: o.pods ?? [],
  };
  return { detailType: GPU_XID_ERROR, detail };
}

export function health(
  condition: GpuHealthChangedDetail['condition'],
  o: {
    node?: string;
    gpu?: number | null;
    minute?: number;
    state?: 'firing' | 'resolved';
    severity?: 'info' | 'warning' | 'critical';
    recoveryAction?: GpuHealthChangedDetail['recoveryAction'];
    pods?: PodRef[];
  } = {},
): TriggerEvent {
  const node = o.node ?? 'gpu-a100-07';
  const detail: GpuHealthChangedDetail = {
    schemaVersion: 1,
    eventId: `health:${node}:${condition}:${o.state ?? 'firing'}:${o.minute ?? 0}:${seq++}`,
    node,
    observedAt: at(o.minute ?? 0),
    ...(o.gpu === null ? {} : { gpu: gpu(o.gpu ?? 0) }),
    condition,
    state: o.state ?? 'firing',
    severity: o.severity ?? 'critical',
    message: `${condition} ${o.state ?? 'firing'}`,
    ...(o.recoveryAction ? { recoveryAction: o.recoveryAction } : {}),
    ...(o.pods ? { pods: o.pods } : {}),
  };
  return { detailType: GPU_HEALTH_CHANGED, detail };
}

export function node(name = 'gpu-a100-07', gpus = 8): NodeFacts {
  const count = { 'nvidia.com/gpu': String(gpus) };
  return {
    name,
    labels: { 'gpu-reflex.io/pool': 'a100' },
    annotations: {},
    taints: [],
    unschedulable: false,
    gpus: Array.from({ length: gpus }, (_, i) => gpu(i).uuid),
    capacity: count,
    allocatable: { ...count },
  };
}

/** The node as a DRA cluster shows it: NVIDIA's driver publishes each GPU as `gpu-<index>` in the node's pool. */
export function withDra(n: NodeFacts, rules: string[] = []): NodeFacts {
  const devices = Object.fromEntries(
    (n.gpus ?? []).map((uuid, i) => [uuid, { driver: 'gpu.nvidia.com', pool: n.name, device: `gpu-${i}` }]),
  );
  return { ...n, dra: { devices, rules } };
}

export function pod(name: string, o: Partial<PodFacts> = {}): PodFacts {
  return { namespace: 'ml', name, uid: `uid-${name}`, requestsGpu: true, daemonSet: false, mirror: false, ...o };
}

export const STANDARD_PODS: PodFacts[] = [
  pod('train-0', { gpus: [gpu(0).uuid] }),
  pod('train-1', { gpus: [gpu(1).uuid] }),
  pod('web', { requestsGpu: false }),
  pod('dcgm-exporter', { daemonSet: true, requestsGpu: false }),
  pod('kube-proxy', { mirror: true, requestsGpu: false, namespace: 'kube-system' }),
];

export function pool(o: Partial<PoolFacts> = {}): PoolFacts {
  return { name: 'a100', nodes: 10, quarantinedInWindow: 0, quarantinedNodes: [], ...o };
}

export function factsFor(
  event: TriggerEvent,
  n: NodeFacts,
  o: Partial<RemediationFacts> & { policy?: Policy } = {},
): RemediationFacts {
  return {
    now: new Date(Date.parse(event.detail.observedAt) + 1000),
    event,
    node: n,
    state: parseNodeState(n.annotations, n.labels, n.taints, {
      unschedulable: n.unschedulable,
      ...(o.policy ? { taintKey: o.policy.taintKey } : {}),
    }),
    pool: pool(),
    pods: STANDARD_PODS,
    ...o,
  };
}

/**
 * How the node's device plugin answers the fence requests the node carries: `honours` (the ACK
 * plugin with the node agent's actuator running: each GPU with a `fence` request leaves
 * `nvidia.com/gpu` allocatable), or `ignores` (no actuator, or a plugin that reads no file).
 */
export type PluginModel = 'honours' | 'ignores';

/** A node and its pods as the planners see them, between one plan and the next (`apply`). */
export interface World {
  node: NodeFacts;
  pods: PodFacts[];
}

/** What the node carries for its agent: the requested GPU actions. */
export const requested = (w: World): GpuActionRequest[] =>
  JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[];

/** The node agent answers request `id` (as its actuator writes gpu-reflex.io/gpu-action-results). */
export function answer(w: World, id: string, state: GpuActionState): World {
  const results = {
    ...(JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>),
    [id]: state,
  };
  return {
    ...w,
    node: {
      ...w.node,
      annotations: { ...w.node.annotations, [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify(results) },
    },
  };
}

/**
 * A health probe that passed: NVML answers and lists the GPU, recovery action none, no remap, no ECC error or XID in
 * the window.
 */
export const PASSED_PROBE: GpuProbe = {
  nvmlAnswers: true,
  counted: true,
  recoveryAction: 'none',
  remapPending: false,
  remapFailed: false,
  eccUncorrectedDelta: 0,
  xidsDuringProbe: [],
  passed: true,
};

/**
 * Carries `plan` out on a fake cluster holding `n` and `pods` with the real applier, and reads the
 * node and the pods still there back. Pods named in `blocked` are guarded by a disruption budget.
 */
export async function apply(
  n: NodeFacts,
  pods: PodFacts[],
  plan: Plan,
  blocked: ReadonlySet<string> = new Set(),
  plugin: PluginModel = 'honours',
  cloud?: CloudOps,
): Promise<{ node: NodeFacts; pods: PodFacts[] }> {
  const cluster = new FakeCluster();
  const conditions = Object.fromEntries(
    Object.entries(n.conditions ?? {}).map(([type, c]) => [
      type,
      { type, status: c.status as 'True' | 'False', reason: '', message: c.message },
    ]),
  );
  cluster.addNode({
    name: n.name,
    labels: n.labels,
    annotations: n.annotations,
    taints: n.taints.map((t) => ({ ...t, effect: t.effect as 'NoSchedule' })),
    unschedulable: n.unschedulable,
    conditions,
  });
  for (const p of pods) {
    // Grace 0: an evicted pod is gone at once on the fake's clock.
    cluster.addPod({
      namespace: p.namespace,
      name: p.name,
      uid: p.uid,
      nodeName: n.name,
      labels: blocked.has(p.name) ? { guarded: 'yes' } : {},
      terminationGracePeriodSeconds: 0,
    });
  }
  if (blocked.size > 0)
    for (const ns of new Set(pods.map((p) => p.namespace)))
      cluster.addPdb({ namespace: ns, matchLabels: { guarded: 'yes' }, minAvailable: pods.length });
  // DRA: the node's ResourceSlice devices and the rules it has, as the facts read them.
  if (n.dra) {
    cluster.draDevices.set(n.name, n.dra.devices);
    for (const name of n.dra.rules)
      cluster.deviceTaintRules.set(name, {
        name,
        node: n.name,
        gpuUuid: '',
        driver: '',
        pool: '',
        device: '',
        taint: { key: '', value: '', effect: 'NoSchedule' },
      });
  }
  const deviceTaints = new FakeDeviceTaintOps(cluster);
  await applyActions(
    plan,
    {
      nodes: new FakeNodeOps(cluster),
      pods: new FakePodOps(cluster),
      notifier: new RecordingNotifier(),
      deviceTaints,
      ...(cloud ? { cloud } : {}),
    },
    historyCodec,
  );
  const after = cluster.nodes.get(n.name)!;
  const dra = n.dra ? { devices: n.dra.devices, rules: await deviceTaints.rules(n.name) } : undefined;
  const left = new Set(cluster.pods().map((p) => p.uid));
  const allocatable =
    plugin === 'honours' && n.capacity ? allocatableFor(n.capacity, after.annotations) : n.allocatable;
  const annotations = plugin === 'honours' ? withFenceAnswers(after.annotations) : after.annotations;
  return {
    node: {
      ...n,
      ...(allocatable ? { allocatable } : {}),
      ...(dra ? { dra } : {}),
      labels: after.labels,
      annotations,
      taints: after.taints,
      unschedulable: after.unschedulable,
      ...(after.conditions && Object.keys(after.conditions).length > 0 ? { conditions: after.conditions } : {}),
    },
    pods: pods.filter((p) => left.has(p.uid)),
  };
}

export const stateOf = (n: NodeFacts, policy?: Policy) =>
  parseNodeState(n.annotations, n.labels, n.taints, {
    unschedulable: n.unschedulable,
    ...(policy ? { taintKey: policy.taintKey } : {}),
  });

/** What the applier answers when every action of `plan` succeeded (for rendering events). */
export function allDone(plan: Plan): Applied {
  const done = { result: 'done' as const };
  const dra = plan.deviceTaints ? [...plan.deviceTaints.add, ...plan.deviceTaints.remove].map(() => done) : undefined;
  return {
    ...(plan.nodeEdit ? { nodeEdit: done } : {}),
    ...(dra ? { deviceTaints: dra } : {}),
    evictions: plan.evictions.map(() => done),
    notices: plan.notices.map(() => done),
    cloud: plan.cloud.map(() => done),
  };
}

/**
 * The node agent's answer to each fence request not yet answered, as its actuator gives it
 * (node-agent/actuator/fence-hold.ts): done, the file lists the GPU, nothing else was listed before.
 */
function withFenceAnswers(annotations: Record<string, string>): Record<string, string> {
  const requests = JSON.parse(annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as {
    id: string;
    action: string;
    gpuUuid: string;
    requestedAt: string;
  }[];
  const results = JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>;
  const fresh = requests.filter((r) => r.action === 'fence' && results[r.id] === undefined);
  if (fresh.length === 0) return annotations;
  for (const r of fresh)
    results[r.id] = {
      state: 'done',
      action: 'fence',
      gpuUuid: r.gpuUuid,
      at: r.requestedAt,
      fence: { listed: true, before: [] },
    };
  return { ...annotations, [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify(results) };
}

/** `nvidia.com/gpu` allocatable as a device plugin that honours the node's fence requests reports it. */
function allocatableFor(capacity: Record<string, string>, annotations: Record<string, string>): Record<string, string> {
  const requests = JSON.parse(annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as { action: string; gpuUuid: string }[];
  const fenced = new Set(requests.filter((r) => r.action === 'fence').map((r) => r.gpuUuid)).size;
  const total = Number(capacity['nvidia.com/gpu'] ?? 0);
  return { ...capacity, 'nvidia.com/gpu': String(Math.max(0, total - fenced)) };
}

/**
 * The node agent's word on PodResources' allocatable devices (events/gpu-devices.ts), as it writes it:
 * GPUs 0..count-1, each with its `replicas` device IDs allocatable, but for `out`, where `left` of its
 * replicas stay allocatable (default none: the GPU is out). `unknown`: a reason, no socket say.
 */
export function podResourcesSays(
  n: NodeFacts,
  out: readonly number[],
  o: { count?: number; replicas?: number; left?: number; unknown?: string; at?: string; checked?: string } = {},
): NodeFacts {
  const replicas = o.replicas ?? 1;
  const ids = (uuid: string, k: number) =>
    replicas === 1 ? (k > 0 ? [uuid] : []) : Array.from({ length: k }, (_, r) => `${uuid}::${r}`);
  const gpus = Object.fromEntries(
    Array.from({ length: o.count ?? 8 }, (_, i) => [
      gpu(i).uuid,
      ids(gpu(i).uuid, out.includes(i) ? (o.left ?? 0) : replicas),
    ]),
  );
  // `checked`: when the agent last confirmed it (an agent from before that stamp writes none).
  const stamp = { v: 1, at: o.at ?? at(0), ...(o.checked ? { checked: o.checked } : {}) };
  const doc = o.unknown ? { ...stamp, known: false, reason: o.unknown, gpus: {} } : { ...stamp, known: true, gpus };
  return { ...n, annotations: { ...n.annotations, [GPU_DEVICES_ANNOTATION]: JSON.stringify(doc) } };
}

/** XID 79 on GPU 0 of `node` at `atMs`, as the agent publishes it (each node's GPU a UUID of its own). */
export function xid79(node: string, atMs: number): GpuXidErrorDetail {
  return {
    schemaVersion: 1,
    eventId: `xid:${node}:${atMs}`,
    node,
    observedAt: new Date(atMs).toISOString(),
    gpu: {
      index: 0,
      uuid: `GPU-${node.replace(/\D/g, '').padStart(8, '0')}-0000-4000-8000-000000000000`,
      pciBusId: '00000000:3B:00.0',
      name: 'NVIDIA A100-SXM4-80GB',
    },
    xid: 79,
    via: 'nvml',
    pid: null,
    process: null,
    message: 'XID 79',
    pods: [],
  };
}

/** Remediation's ports over the Kubernetes fakes, as the handlers' tests drive it (request holder `req-1`). */
export function fakeDeps(
  kube: FakeKube,
  o: { clock: ManualClock; publisher: EventPublisher; policy: Policy; notifier?: Notifier },
): RemediationDeps {
  return {
    nodes: kube.nodes,
    pods: kube.pods,
    state: kube.state,
    leases: kube.leases,
    publisher: o.publisher,
    notifier: o.notifier ?? new RecordingNotifier(),
    policy: o.policy,
    clock: o.clock,
    logger: silentLogger,
    holder: 'req-1',
  };
}
