import type { EventPublisher } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { LeaseOps, NodeOps, PodOps, QuotaOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';
import type { QuotaConfig } from './core/config.ts';
import type { QuotaPlan } from './core/planner.ts';
import type { IdleLending } from './idle-lending.ts';

/** The quota rewriter's marks on what it writes, its ports and its outcome (run.ts, rollback.ts). */
export const PREVIOUS_HARD_ANNOTATION = 'gpu-reflex.io/previous-hard';
export const HOLD_UNTIL_ANNOTATION = 'gpu-reflex.io/quota-hold-until';
/**
 * The managed keys as gpu-reflex last wrote them (a rewrite, a rollback): a quota read otherwise was changed by someone
 * since, and that value is theirs, not gpu-reflex's (facts.ts).
 */
export const WRITTEN_HARD_ANNOTATION = 'gpu-reflex.io/written-hard';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'gpu-reflex' } as const;

export interface QuotaDeps {
  nodes: Pick<NodeOps, 'list'>;
  pods: Pick<PodOps, 'list'>;
  quotas: QuotaOps;
  state: StateStore;
  leases: LeaseOps;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  holder: string;
  config: QuotaConfig;
}

export interface QuotaOutcome {
  plan: QuotaPlan;
  /** Namespaces whose quota was written this round. */
  changed: string[];
  /** Namespaces left alone: a rollback holds them. */
  held: string[];
  /** Idle devices counted as free this round (idle-lending.ts), and the records' loans not taken. */
  lending?: IdleLending;
}
