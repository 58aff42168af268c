/**
 * Fakes for the Kubernetes ports: stateful, in memory, recording every call, able to fail on
 * demand. `fakeKube()` builds one FakeCluster and every fake over it, so a handler's test can
 * seed nodes and pods, run the handler, and assert on the resulting state.
 */
import type { Clock } from '../clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { FakeNodeOps, FakePodOps } from './fake-node-pod-ops.ts';
import { FakeConfigFile, FakeDeviceTaintOps, FakeLeaseOps, FakeQuotaOps, FakeStateStore } from './fake-stores.ts';

export { FakeCluster, injected } from './fake-cluster.ts';
export type { FakeCall, FakeLease, FakePdb, InjectedStatus } from './fake-cluster.ts';
export { FakeNodeOps, FakePodOps, matchesSelector, pdbRefusal } from './fake-node-pod-ops.ts';
export { FakeConfigFile, FakeDeviceTaintOps, FakeLeaseOps, FakeQuotaOps, FakeStateStore } from './fake-stores.ts';

export interface FakeKube {
  cluster: FakeCluster;
  nodes: FakeNodeOps;
  pods: FakePodOps;
  quotas: FakeQuotaOps;
  state: FakeStateStore;
  leases: FakeLeaseOps;
  deviceTaints: FakeDeviceTaintOps;
  migParted: FakeConfigFile;
}

export function fakeKube(options: { clock?: Clock; conflictAttempts?: number } = {}): FakeKube {
  const cluster = new FakeCluster(options);
  return {
    cluster,
    nodes: new FakeNodeOps(cluster),
    pods: new FakePodOps(cluster),
    quotas: new FakeQuotaOps(cluster),
    state: new FakeStateStore(cluster),
    leases: new FakeLeaseOps(cluster),
    deviceTaints: new FakeDeviceTaintOps(cluster),
    migParted: new FakeConfigFile(cluster),
  };
}
