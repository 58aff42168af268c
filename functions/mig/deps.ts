import type { EventPublisher } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { ConfigFileOps, LeaseOps, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';
import type { PreemptionPolicy } from './core/policy.ts';
import type { MigRebalancePolicy, MigStep } from './core/rebalance.ts';

/** The MIG rebalancer's settings, ports and outcome (run.ts runs it). */
export interface MigRebalanceConfig extends MigRebalancePolicy {
  /** MIG_POLICY_FILE's preemption (core/policy.ts); absent: off. */
  preemption?: PreemptionPolicy;
  /** Nodes under reconfiguration at once (each is cordoned meanwhile). */
  maxNodesAtOnce: number;
  /** A pending pod counts as demand once it has waited this long (the scheduler may still bind it). */
  minPendingSeconds: number;
}

export const DEFAULT_MIG_REBALANCE_CONFIG: MigRebalanceConfig = {
  configSyncSeconds: 90,
  timeoutMinutes: 20,
  maxNodesAtOnce: 1,
  minPendingSeconds: 60,
};

export interface MigRebalanceDeps {
  nodes: NodeOps;
  pods: PodOps;
  leases: LeaseOps;
  migParted: ConfigFileOps;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  holder: string;
  mig: MigRebalanceConfig;
  /** Where approvals of preempting relayouts are kept (the policy's `approvalMinutes`). */
  state?: StateStore;
}

export interface MigRebalanceOutcome {
  /** MIG nodes read. */
  nodes: number;
  /** Node → what this round did (`start`, `evict`, `label`, `done`, `failed`). */
  steps: Record<string, MigStep['kind']>;
  /** Pending MIG pods, and how many the plan would let run. */
  pending: number;
  satisfiedAfter: number;
  /** Nodes whose relayout is under way after this round, and ones left failed for a person. */
  underWay: string[];
  failed: string[];
  /** Why no relayout started: the mig-parted ConfigMap is not gpu-reflex's to write (core/parted-owner.ts). */
  refused?: string;
}
