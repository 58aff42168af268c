/**
 * The Kubernetes adapter: ports (ports.ts), plain data (model.ts), real implementations over
 * @kubernetes/client-node, drain, and the RBAC they need. Fakes live in fake.ts (tests only).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { makeKubeApis } from './config.ts';
import { KubeLeaseOps } from './kube-lease-ops.ts';
import { KubeDeviceTaintOps, type DraVersions } from './kube-device-taint-ops.ts';
import { KubeNodeOps } from './kube-node-ops.ts';
import type { KubeOpsOptions } from './kube-node-ops.ts';
import { KubePodOps } from './kube-pod-ops.ts';
import { KubeQuotaOps } from './kube-quota-ops.ts';
import { KubeStateStore } from './kube-state-store.ts';
import { DEFAULT_MIG_PARTED_CONFIG, KubeConfigFile, type ConfigFileRef } from './kube-config-file.ts';
import { KubeEventRecorder, type KubeEventRecorderOptions } from './kube-event-recorder.ts';
import type { ConfigFileOps, DeviceTaintOps, EventRecorder, LeaseOps, NodeOps, PodOps, QuotaOps, StateStore } from './ports.ts';

export * from './model.ts';
export type { NodeChange } from './node-change.ts';
export type * from './ports.ts';
export { loadKubeConfig, makeKubeApis, KubeAccessSchema } from './config.ts';
export type { KubeAccess, KubeApis } from './config.ts';
export { KubeNodeOps } from './kube-node-ops.ts';
export type { KubeOpsOptions } from './kube-node-ops.ts';
export { KubePodOps } from './kube-pod-ops.ts';
export { KubeQuotaOps } from './kube-quota-ops.ts';
export { KubeStateStore, STATE_CONFIGMAP } from './kube-state-store.ts';
export { DEFAULT_MIG_PARTED_CONFIG, KubeConfigFile, type ConfigFileRef } from './kube-config-file.ts';
export { KubeLeaseOps } from './kube-lease-ops.ts';
export { KubeDeviceTaintOps, RULE_NODE_LABEL } from './kube-device-taint-ops.ts';
export type { DraVersions } from './kube-device-taint-ops.ts';
export { KubeEventRecorder, REPORTING_CONTROLLER, noEvents } from './kube-event-recorder.ts';
export type { KubeEventRecorderOptions } from './kube-event-recorder.ts';
export { nodeChangeEvents } from './kube-node-ops.ts';
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
  /** NVIDIA mig-manager's mig-parted config (the MIG rebalancer writes its layouts there). */
  migParted: ConfigFileOps;
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

/** Every port over one cluster connection; the handlers' wiring calls this once at cold start. */
export function kubePorts(kc: KubeConfig, options: KubePortsOptions): KubePorts {
  const { core, coordination, events: eventsApi, custom } = makeKubeApis(kc);
  const events = new KubeEventRecorder(eventsApi, options.events);
  const opts = { pageSize: options.pageSize, conflictAttempts: options.conflictAttempts, events };
  return {
    nodes: new KubeNodeOps(core, opts),
    pods: new KubePodOps(core, opts),
    quotas: new KubeQuotaOps(core, opts),
    state: new KubeStateStore(core, { namespace: options.namespace, conflictAttempts: options.conflictAttempts }),
    leases: new KubeLeaseOps(coordination, options.namespace, { conflictAttempts: options.conflictAttempts }),
    events,
    deviceTaints: new KubeDeviceTaintOps(custom, options.dra),
    migParted: new KubeConfigFile(core, options.migParted ?? DEFAULT_MIG_PARTED_CONFIG, options.conflictAttempts),
  };
}
