/**
 * The Kubernetes adapter, the part without a client: ports (ports.ts), plain data (model.ts),
 * converters, drain, the dry-run decorator and the RBAC the implementations need. Nothing here
 * imports @kubernetes/client-node at runtime, so the cores and the wiring can import it statically
 * while a function's bundle leaves client-node unevaluated until its first invocation (the wiring
 * loads client.ts, the implementations and `kubePorts`, with `import()`; docs/deploy.md#bundles).
 * Fakes live in fake.ts (tests only).
 */
import type { KubeOpsOptions } from './kube-node-ops.ts';
import type { DraVersions } from './kube-device-taint-ops.ts';
import type { ConfigFileRef } from './kube-config-file.ts';
import type { KubeEventRecorderOptions } from './kube-event-recorder.ts';
import type {
  CardFenceOps,
  ConfigFileOps,
  DeviceTaintOps,
  EventRecorder,
  GangObjectOps,
  LeaseOps,
  NodeOps,
  PodOps,
  QuotaOps,
  StateStore,
} from './ports.ts';

export * from './model.ts';
export type { NodeChange } from './node-change.ts';
export type * from './ports.ts';
export type { KubeAccess, KubeApis } from './config.ts';
export type { KubeOpsOptions } from './kube-node-ops.ts';
export { STATE_CONFIGMAP } from './kube-state-store.ts';
export { DEFAULT_MIG_PARTED_CONFIG, type ConfigFileRef } from './kube-config-file.ts';
export { RULE_NODE_LABEL } from './kube-device-taint-ops.ts';
export type { DraVersions } from './kube-device-taint-ops.ts';
export type { KubeEventRecorderOptions } from './kube-event-recorder.ts';
export { drain, drainOnce, podsNamed, podsRequesting, skipReason } from './drain.ts';
export type { DrainOptions, DrainPassOptions, DrainPassReport, DrainPorts, DrainReport, SkipReason } from './drain.ts';
export { dryRunPorts } from './dry-run.ts';
export type { DryRunAction, DryRunnable } from './dry-run.ts';
export { KUBE_RBAC_RULES, flattenRbac, missingRbac } from './rbac.ts';
export type { RbacRule } from './rbac.ts';

export interface KubePorts {
  nodes: NodeOps;
  pods: PodOps;
  quotas: QuotaOps;
  state: StateStore;
  leases: LeaseOps;
  /** The Kubernetes Events the node and pod ports record their changes with (drain's DrainStuck too). */
  events: EventRecorder;
  /** DRA ResourceSlices and DeviceTaintRules (only read for pools that fence by `dra`). */
  deviceTaints: DeviceTaintOps;
  /** ACK gpushare's unhealthy-card ConfigMaps (only read for nodes that share their GPUs). */
  cardFences: CardFenceOps;
  /** NVIDIA mig-manager's mig-parted config (the MIG rebalancer writes its layouts there). */
  migParted: ConfigFileOps;
  /** Volcano PodGroups and Kueue Workloads (the pool autoscaler sizes gangs by them). */
  gangs?: GangObjectOps;
}

export interface KubePortsOptions extends Omit<KubeOpsOptions, 'events'> {
  /** Namespace of gpu-reflex's own objects: the state ConfigMap and the Leases. */
  namespace: string;
  /** Clock, logger and instance name for the Event recorder. */
  events?: KubeEventRecorderOptions;
  /** The resource.k8s.io versions this cluster serves (the remediation policy's `fence.dra`). */
  dra?: DraVersions;
  /** Where mig-manager reads its mig-parted config (default: the GPU Operator's). */
  migParted?: ConfigFileRef;
}
