import type { PodRef } from '../../lib/plan.ts';
import type { MigRecord } from './mig-record.ts';

/** What one relayout step (rebalance.ts stepMigNode) reads and returns, and its policy. */
export interface MigRebalancePolicy {
  configSyncSeconds: number;
  timeoutMinutes: number;
}

export const DEFAULT_MIG_REBALANCE: MigRebalancePolicy = { configSyncSeconds: 90, timeoutMinutes: 20 };

export interface MigNodeFacts {
  name: string;
  labels: Readonly<Record<string, string>>;
  unschedulable: boolean;
  record?: MigRecord;
  /** Another part of gpu-reflex holds the node out (a remediation drained it meanwhile): it stays cordoned. */
  heldBy?: string;
  /** The record's preempted pods still on the node (same uid), as the caller read the pods. */
  remaining?: PodRef[];
  /**
   * What the node agent last read through NVML (`gpu-reflex.io/mig-inventory`): when, and each GPU's
   * instances. The evidence that a relayout happened; absent when the node has none (or a bad one).
   */
  inventory?: { at: string; gpus: readonly { index: number; profiles: readonly string[] }[] };
  /**
   * The Node's `status.allocatable` counts of `nvidia.com/mig-*` (resource → count): what the scheduler
   * can place. While mig-manager reconfigures it drops to 0 (it pauses the device plugin), and the kubelet
   * reports the new devices some seconds after `success`. Absent: not read (the check is skipped).
   */
  allocatable?: Readonly<Record<string, number>>;
}

export interface PlannedNodeChange {
  /** Every GPU's current layout (index order), from the supply reader. */
  current: string[][];
  changes: { gpu: number; from: string[]; to: string[]; unblocks: string[]; preempts?: PodRef[] }[];
}

/** What one step writes. `config`: an entry to put into the mig-parted config before the node edit. */
export interface MigStep {
  kind: 'start' | 'evict' | 'wait' | 'observe' | 'label' | 'done' | 'failed' | 'none';
  config?: { name: string; layout: string[][] };
  labels: Record<string, string | null>;
  unschedulable?: boolean;
  /** The record to keep (undefined with `kind: done`: removed). */
  record?: MigRecord;
  /** Preempted pods to evict (Eviction API), after the cordon. */
  evictions?: PodRef[];
  /** For the MIG Layout Change event and the notice. */
  state?: 'pending' | 'success' | 'failed';
  why: string;
}
