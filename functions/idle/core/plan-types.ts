import type { GpuUtilizationSummaryDetail } from '../../../events/index.ts';
import type { ApprovalRecord } from '../../lib/approvals.ts';
import type { IdleRecord, IdleTrack } from '../../lib/idle-record.ts';
import type { PodRef } from '../../lib/plan.ts';
import type { EffectiveRule } from './policy.ts';

/** What the idle planner (planner.ts) reads and what it decides: the labels it reads, its facts, its plan. */
/** A pod opts out with this annotation set to `exempt`. */
export const IDLE_OPT_OUT_ANNOTATION = 'gpu-reflex.io/idle-policy';
/** Who to name in chat for the pod (`@alice`); absent: the notice names the pod and team only. */
export const OWNER_ANNOTATION = 'gpu-reflex.io/owner';
/**
 * ACK's node pool label
 * (https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/node-pool-overview).
 */
export const POOL_LABEL = 'alibabacloud.com/nodepool-id';
/** The well-known instance type label
 * (https://kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type). */
export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';

export interface PodFacts {
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  terminating: boolean;
  /** metadata.uid: a loan to the quota planner names the very pod (absent: nothing is lent). */
  uid?: string;
}

export interface IdleFacts {
  node: { name: string; labels: Readonly<Record<string, string>> };
  summary: GpuUtilizationSummaryDetail;
  /** The pods on the node (all namespaces). */
  pods: readonly PodFacts[];
  record: IdleRecord;
  /** The eviction approvals asked for this node's tracks, by id (idleApprovalId), as the store holds them. */
  approvals?: Readonly<Record<string, ApprovalRecord>>;
}

/** An eviction to put to a person (policy evict.approvalMinutes): told first, then recorded (run.ts). */
export interface ApprovalAsk {
  id: string;
  node: string;
  /** namespace/name */
  pod: string;
  device: string;
  expiresAt: number;
  reason: string;
}

export interface IdleCost {
  gpuHours: number;
  amount: number;
  currency: string;
  pricePerGpuHour: number;
}

export interface IdleFinding {
  state: 'idle' | 'evicted' | 'cancelled';
  track: IdleTrack;
  team: string;
  owner?: string;
  rule: EffectiveRule;
  /** Epoch ms: the end of the window that decided it. */
  at: number;
  idleMs: number;
  cost?: IdleCost;
  reason: string;
}

export interface IdlePlan {
  node: string;
  record: IdleRecord;
  /** False when the record is the one read (nothing to write). */
  recordChanged: boolean;
  findings: IdleFinding[];
  evictions: PodRef[];
  /** Evictions waiting for a person: asked this window. */
  asks: ApprovalAsk[];
  /** Open approvals past their expiry, to close as expired (nothing is evicted for them). */
  expired: string[];
  /** Evictions past their deadline held this window, and why: the pod holds another device not read idle. */
  held?: string[];
  /** Why no device was read this window (holders unknown: the open runs end, no-holders.ts), when so. */
  skipped?: string;
}
