import { MIRROR_POD_ANNOTATION, type NodeInfo, type PodInfo } from '../adapters/kube/model.ts';
import { DEFAULT_TAINT_KEY, STATE_LABEL } from '../lib/node-state.ts';
import type { CloudPools } from '../adapters/alicloud/ports.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import { isRetryable } from '../adapters/errors.ts';
import type { GangObjectOps, LeaseOps, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';
import { flushStoreOutbox, recordWithOutbox, type PendingNotice } from '../lib/outbox.ts';
import type { NotDemand } from './demand.ts';
import type { AutoscalePolicy } from '../lib/pool-policy.ts';
import type { TrackedNode } from './core/maintenance.ts';
import type { MaintenanceOutcome } from './maintenance.ts';
import type { Growing } from './arrivals.ts';

export const GiB = 2 ** 30;

export interface AutoscaleDeps {
  nodes: Pick<NodeOps, 'list' | 'cordon' | 'uncordon'>;
  pods: Pick<PodOps, 'list' | 'evict'>;
  leases: LeaseOps;
  state: StateStore;
  cloud: CloudPools;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  holder: string;
  policy: AutoscalePolicy;
  clusterId: string;
  /**
   * The gangs' own minimums (issue #34): Volcano PodGroups' `minMember`/`minResources`, Kueue
   * Workloads' pod-set counts (demand.ts). Unset, or a gang with no object: every waiting pod of a
   * gang is bought for (the cautious side: the gang surely starts).
   */
  gangs?: GangObjectOps;
}

export interface AutoscaleOutcome {
  /** Pools grown this round: id → new desired size. */
  scaled: Record<string, number>;
  /** Scale-outs waiting for approval in chat (the policy's `approval`): id → the size asked for. */
  held: Record<string, number>;
  /** Earlier requests whose ACK task ended this round: pool → succeeded/failed. */
  finished: Record<string, 'succeeded' | 'failed'>;
  /** Nodes given back this round (drained, then removed from their pool and released). */
  released: string[];
  /** Idle nodes being drained for release after this round. */
  draining: string[];
  /** Idle nodes scale-in kept this round, with why (a pod that blocks their drain, the pool's minimum...). */
  kept: { node: string; why: string }[];
  pending: number;
  awaitingInFlight: number;
  deferred: number;
  unhostable: number;
  hourlyCost: number;
  /** Gangs (core/gangs.ts) given no node this round, with why; gangs grown whole, by name → pods. */
  gangs: { held: string[]; grown: Record<string, number> };
  /** Nodes moved off ahead of ECS maintenance or a spot interruption (maintenance.ts), and those returned after. */
  maintenance: MaintenanceOutcome;
  /** Waiting GPU pods that are no reason to buy a node (demand.ts), by why; and those an existing node has room for. */
  notDemand: Record<NotDemand, number> & { fitsExisting: number };
}

/** What the state ConfigMap holds per pool (key `autoscale.<pool id>`). */
export interface PoolRecord {
  /** A desired size decided but maybe not yet sent: re-sent (it is absolute) before anything else. */
  intent?: { from: number; to: number; at: number; reason: string; cost: number };
  /** The last request sent, until its ACK task ends. */
  request?: SentRequest;
  /**
   * Requests sent before `request` whose tasks had not ended then (a maintenance replacement sent while a scale-out
   * still ran): each is followed to its end and reported once, as `request` is.
   */
  earlier?: SentRequest[];
  /**
   * The pool's latest scale-out until its new nodes have joined Ready with their GPUs (arrivals.ts): ACK's task ending
   * is not that. Past 15 min without them the pool is held and a person told.
   */
  growing?: Growing;
  /** Instance types ECS answered sold out for (a scale task failed NoStock), until when (ms). */
  noStock?: { types: string[]; until: number };
  cooldownUntil?: number;
  /**
   * ACK's refusal of the pool's last size change (ModifyClusterNodePool answered 400), told once: the pool is not
   * asked again before `cooldownUntil` (grow.ts `refusedSize`).
   */
  refused?: { at: number; why: string };
  /** Node → when it was first seen running no GPU pod (ms). */
  idle?: Record<string, number>;
  /** Idle nodes being drained for release: the instance, and when the drain began. */
  leaving?: { node: string; instanceId: string; since: number }[];
  /** A removal decided but maybe not yet sent (re-sent, or found done, first thing next round). */
  removal?: {
    nodes: string[];
    instanceIds: string[];
    from: number;
    to: number;
    at: number;
    reason: string;
    cost: number;
  };
  /**
   * Nodes whose removal was sent, kept until that node (that name on that instance) has left the pool: a removal
   * whose task failed, or one ACK refused that did not happen, is not taken as done (removals.ts).
   */
  removing?: Removing[];
  /** Nodes of the pool being moved off ahead of ECS maintenance or a spot interruption (maintenance.ts). */
  maintenance?: Record<string, TrackedNode>;
  events?: PublishedEvent[];
  notices?: PendingNotice[];
}

/** A node whose removal was sent: its task, or ACK's refusal (no task: maybe already under way, maybe not). */
export interface Removing {
  node: string;
  instanceId: string;
  at: number;
  taskId?: string;
  refused?: string;
  /** A person was told its task is still running after the drain timeout (told once). */
  overdue?: true;
}

export interface SentRequest {
  taskId: string;
  from: number;
  to: number;
  at: number;
  /** ACK's word for the task's state, told to a person as one it does not document (requests.ts): told once a word. */
  unknownTold?: string;
  /**
   * A removal's nodes still in the pool after its drain timeout, though its task ended `success` (removals.ts hands
   * them back): the request is closed as failed, naming them, never as succeeded.
   */
  leftBehind?: string[];
}

/** A new request on the record: one still followed there moves to `earlier` instead of being overwritten. */
export function sent(x: PoolRecord, request: SentRequest): Pick<PoolRecord, 'request' | 'earlier'> {
  const earlier = x.request && x.request.taskId !== request.taskId ? [...(x.earlier ?? []), x.request] : x.earlier;
  return { request, ...(earlier ? { earlier } : {}) };
}

export const poolKey = (poolId: string) => `autoscale.${poolId}`;

/**
 * Sends a pool's outbox (lib/outbox.ts), then clears what went. A refusal the bus may lift (throttling, an outage)
 * does not stop the round: the events stay in the pool's record, and every round sends what earlier ones left before
 * it plans (run.ts), so pods are not left waiting for GPUs on the bus's account and nothing is lost. A bug (an
 * invalid event) still throws.
 */
export async function flush(deps: AutoscaleDeps, poolId: string, r: PoolRecord): Promise<void> {
  try {
    await flushStoreOutbox(deps, poolKey(poolId), r);
  } catch (err) {
    if (!isRetryable(err)) throw err;
    deps.logger.error('autoscale-pools: events not published: the pool record keeps them for the next round', {
      pool: poolId,
      events: (r.events ?? []).length,
      error: err,
    });
  }
}

/** Writes a pool's record with events and notices in its outbox, in one write (lib/outbox.ts). */
export const record = (
  deps: AutoscaleDeps,
  poolId: string,
  change: (r: PoolRecord) => PoolRecord,
  events: PublishedEvent[] = [],
  notices: Notice[] = [],
): Promise<PoolRecord> => recordWithOutbox(deps.state, poolKey(poolId), change, events, notices);

export const movable = (p: PodInfo) =>
  !p.terminating &&
  p.phase !== 'Succeeded' &&
  p.phase !== 'Failed' &&
  !p.owners.some((o) => o.kind === 'DaemonSet') &&
  !(MIRROR_POD_ANNOTATION in p.annotations);

export function cooldownMs(deps: AutoscaleDeps, poolId: string): number {
  return (deps.policy.pools[poolId]?.cooldownMinutes ?? deps.policy.cooldownMinutes) * 60_000;
}

/** Remediation's hold on a node (its state label or taint): its cordon is not ours to lift. */
export function remediationHold(n: NodeInfo): string | undefined {
  const st = n.labels[STATE_LABEL];
  if (st && st !== 'healthy') return `remediation holds it (${STATE_LABEL}=${st})`;
  if (n.taints.some((t) => t.key === DEFAULT_TAINT_KEY)) return `remediation holds it (taint ${DEFAULT_TAINT_KEY})`;
  return undefined;
}
