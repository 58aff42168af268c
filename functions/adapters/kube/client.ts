/**
 * The Kubernetes adapter, the part that holds the client: the implementations of the ports over
 * @kubernetes/client-node and `kubePorts`, which builds them all over one connection. Evaluating
 * this module evaluates client-node (its models, serializer, HTTP stack): the functions' wiring
 * loads it with `import()` at the first invocation, never statically (index.ts is the part without
 * a client; test/contract/build.test.ts fails if a bundle evaluates client-node at import).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { makeKubeApis } from './config.ts';
import { KubeLeaseOps } from './kube-lease-ops.ts';
import { KubeDeviceTaintOps } from './kube-device-taint-ops.ts';
import { KubeGangOps } from './kube-gang-ops.ts';
import { KubeCardFenceOps } from './kube-card-fence-ops.ts';
import { KubeNodeOps } from './kube-node-ops.ts';
import { KubePodOps } from './kube-pod-ops.ts';
import { KubeQuotaOps } from './kube-quota-ops.ts';
import { KubeStateStore } from './kube-state-store.ts';
import { DEFAULT_MIG_PARTED_CONFIG, KubeConfigFile } from './kube-config-file.ts';
import { KubeEventRecorder } from './kube-event-recorder.ts';
import type { KubePorts, KubePortsOptions } from './index.ts';

export { loadKubeConfig, makeKubeApis, KubeAccessSchema } from './config.ts';
export { KubeNodeOps, nodeChangeEvents } from './kube-node-ops.ts';
export { KubePodOps } from './kube-pod-ops.ts';
export { KubeQuotaOps } from './kube-quota-ops.ts';
export { KubeStateStore } from './kube-state-store.ts';
export { KubeConfigFile } from './kube-config-file.ts';
export { KubeLeaseOps } from './kube-lease-ops.ts';
export { KubeDeviceTaintOps } from './kube-device-taint-ops.ts';
export { KubeCardFenceOps } from './kube-card-fence-ops.ts';
export { KubeEventRecorder, REPORTING_CONTROLLER, noEvents } from './kube-event-recorder.ts';

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
    gangs: new KubeGangOps(custom, options.pageSize),
    cardFences: new KubeCardFenceOps(core, options.conflictAttempts),
    migParted: new KubeConfigFile(
      core,
      options.migParted ?? DEFAULT_MIG_PARTED_CONFIG,
      options.conflictAttempts,
      custom,
    ),
  };
}
