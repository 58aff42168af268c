/**
 * The ports' contracts as one test suite, run against the fakes (fake.test.ts) and against the
 * real adapters over the simulated cluster (kube-sim.test.ts). Running the same cases on both is
 * what keeps the fakes faithful: a fake that drifts from the real behaviour fails here.
 */
import { afterEach, beforeEach, describe } from 'vitest';
import type { ManualClock } from '../clock.ts';
import { drainContracts } from './contract-drain.ts';
import { nodeAndPodContracts } from './contract-nodes-pods.ts';
import { storeContracts } from './contract-stores.ts';
import type { LeaseOps, NodeOps, PodOps, QuotaOps, StateStore } from './ports.ts';

export interface NodeSeed {
  name: string;
  labels?: Record<string, string>;
}

export interface PodSeed {
  namespace: string;
  name: string;
  nodeName: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Owner kind, e.g. `DaemonSet` or `ReplicaSet`. */
  ownerKind?: string;
  gracePeriodSeconds?: number;
  gpus?: number;
}

export interface PdbSeed {
  namespace: string;
  name: string;
  matchLabels: Record<string, string>;
  minAvailable: number;
}

export interface KubeHarness {
  nodes: NodeOps;
  pods: PodOps;
  quotas: QuotaOps;
  state: StateStore;
  leases: LeaseOps;
  /** Test time; advancing it also moves the cluster's time (terminating pods finish). */
  clock: ManualClock;
  /** Creates a namespace (the real API refuses namespaced objects in a missing one). */
  seedNamespace(name: string): Promise<void>;
  seedNode(seed: NodeSeed): Promise<void>;
  seedPod(seed: PodSeed): Promise<void>;
  seedPdb(seed: PdbSeed): Promise<void>;
  close(): Promise<void>;
}

export function describePortContracts(label: string, setup: () => Promise<KubeHarness>): void {
  describe(`Kubernetes port contracts (${label})`, () => {
    let harness: KubeHarness | undefined;
    beforeEach(async () => {
      harness = await setup();
    });
    afterEach(async () => {
      await harness?.close();
    });
    const current = (): KubeHarness => {
      if (harness === undefined) throw new Error('harness not set up');
      return harness;
    };
    nodeAndPodContracts(current);
    drainContracts(current);
    storeContracts(current);
  });
}
