/**
 * One remediation, from event to published outcome, on the reflex skeleton (lib/reflex.ts): lock
 * the node, fetch facts, plan (pure), reserve a blast-radius slot, record the events with the
 * node's state (outbox), apply, publish. Used by the Lambda handler, the local stack and the CLI's
 * dry-run `plan`, so all three run the same code.
 */
import {
  APPROVAL_REQUESTED,
  GPU_HEALTH_CHANGED,
  GPU_XID_ERROR,
  REMEDIATION,
  SOURCES,
  type GpuHealthChangedDetail,
  type GpuXidErrorDetail,
} from '../../events/index.ts';
import type { Clock } from '../adapters/clock.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { CardFenceOps, DeviceTaintOps, LeaseOps, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { Applied, CloudOps } from '../lib/apply.ts';
import type { Logger } from '../adapters/logger.ts';
import { readOutbox } from '../lib/outbox.ts';
import { carryOut } from '../lib/reflex.ts';
import { withLease } from '../lib/lease.ts';
import { poolAllowance, takesCapacity } from './core/blast-radius.ts';
import { approvalIdOf, toApprovalDetail, toRemediationDetail } from './core/detail.ts';
import { recordApproval, type ApprovalRecord } from '../lib/approvals.ts';
import { capabilitiesFor, cardFacts, draFacts, nodeFacts, podsOf, fetchPoolFacts, stateOf } from './facts.ts';
import { reserveSlot } from './ledger.ts';
import { planRemediation } from './core/plan.ts';
import { poolLimits, type Policy } from './core/policy.ts';
import { historyCodec } from './core/reconcile.ts';
import { STATE_LABEL } from './core/state.ts';
import type { Capabilities, Plan, PoolFacts, RemediationFacts, TriggerEvent } from './core/types.ts';
import type { ReplaceReader } from './replacements.ts';

export interface RemediationDeps {
  nodes: NodeOps;
  pods: PodOps;
  state: StateStore;
  leases: LeaseOps;
  /** DRA DeviceTaintRules (pools fencing by `dra`); absent: those fences fall back to a node taint. */
  deviceTaints?: DeviceTaintOps;
  /** ACK gpushare's unhealthy-gpu ConfigMaps (sharing nodes); absent: those fences fall back to a node taint. */
  cardFences?: CardFenceOps;
  /** The bus; in a dry run the wiring's DryRunPublisher (reports marked, side effects withheld). */
  publisher: EventPublisher;
  notifier: Notifier;
  policy: Policy;
  clock: Clock;
  logger: Logger;
  /** Who holds the per-node lease: the invocation's request id. */
  holder: string;
  /** The cloud's hands (reboot), when the deployment has a cloud adapter for repair. */
  cloud?: CloudOps;
  /** What `cloud` can do; the planner says "a person must" for the rest. */
  capabilities?: Capabilities;
  /** Another controller that repairs this node (its pool's ACK auto repair): gpu-reflex defers to it. */
  repairOwner?: (node: NodeInfo) => Promise<string | undefined>;
  /** Why `cloud` cannot reach this node (no ECS instance behind it), or undefined when it can. */
  unreachable?: (node: NodeInfo) => string | undefined;
  /** Where `cloud` can replace nodes: what a replacement reads (its node pool, the removal's task). */
  replacements?: ReplaceReader;
}

export interface RemediationOutcome {
  plan: Plan;
  applied: Applied;
  published: boolean;
}

export function triggerOf(detailType: string, detail: unknown): TriggerEvent {
  if (detailType === GPU_XID_ERROR) return { detailType: GPU_XID_ERROR, detail: detail as GpuXidErrorDetail };
  if (detailType === GPU_HEALTH_CHANGED)
    return { detailType: GPU_HEALTH_CHANGED, detail: detail as GpuHealthChangedDetail };
  throw new Error(`remediation does not handle ${detailType}`);
}

/** Takes capacity the pool has not already counted for this node: needs a ledger slot first. */
function needsSlot(plan: Plan, pool: PoolFacts, node: string): boolean {
  return (
    plan.kind === 'act' &&
    plan.action !== 'restore' &&
    takesCapacity(plan.action) &&
    !pool.quarantinedNodes.includes(node)
  );
}

export async function remediate(event: TriggerEvent, deps: RemediationDeps): Promise<RemediationOutcome> {
  const nodeName = event.detail.node;
  // One remediation per node at a time: the node's annotations are its state, and two writers
  // planning from the same snapshot would lose an incident.
  return withLease(nodeLease(nodeName), 60, deps, async () => {
    // The node and its pods are independent reads: both at once, one round trip off the cordon's path.
    const [info, pods] = await Promise.all([deps.nodes.get(nodeName), podsOf(deps.pods, nodeName)]);
    const state = stateOf(info, deps.policy.taintKey);
    const pending = readOutbox(info.annotations);
    const warnings = [...state.warnings, ...(pending.warning ? [pending.warning] : [])];
    if (warnings.length) deps.logger.warn('node state partly unreadable', { node: nodeName, warnings });
    // The pool as its labels say. The ledger is not read here: reserveSlot below is its one,
    // atomic reader, and a refused slot is a fact the planner decides on (one request saved).
    const pool = await fetchPoolFacts(deps.nodes, deps.policy, info, new Date(deps.clock.now()));
    const now = new Date(deps.clock.now());
    const dra = await draFacts(deps.deviceTaints, deps.policy, info, (m, f) => deps.logger.warn(m, f));
    const cards = await cardFacts(deps.cardFences, deps.policy, info, (m, f) => deps.logger.warn(m, f));
    const capabilities = await capabilitiesFor(deps, info);
    const facts: RemediationFacts = {
      now,
      event,
      node: nodeFacts(info, dra, cards),
      state,
      pool,
      pods,
      ...(capabilities ? { capabilities } : {}),
    };
    let plan = planRemediation(facts, deps.policy);

    // Take a slot in the pool's ledger before taking capacity. A concurrent invocation may have
    // taken the last one since we read the pool: that is a fact the planner decides on.
    if (needsSlot(plan, pool, nodeName)) {
      const windowMs = poolLimits(deps.policy, pool.name).windowMinutes * 60_000;
      if (
        !(await reserveSlot(
          deps.state,
          pool.name,
          nodeName,
          poolAllowance(deps.policy, pool),
          deps.clock.now(),
          windowMs,
        ))
      ) {
        plan = planRemediation({ ...facts, slotDenied: true }, deps.policy);
      }
    }

    // Never publish an approval id the store does not hold: record it before the outbox is written.
    const asked =
      plan.approval && plan.phase !== 'skipped'
        ? await recordApproval(deps.state, approvalRecord(plan, deps.policy, new Date(deps.clock.now())))
        : undefined;
    const { applied, published } = await carryOut(
      {
        node: nodeName,
        pending,
        actions: plan,
        events: (a) => eventsOf(plan, a, new Date(deps.clock.now()), asked),
        codec: historyCodec,
        basis: info,
        sweptBy: SWEPT,
      },
      deps,
    );
    deps.logger.info('remediation', {
      node: nodeName,
      incident: plan.incident,
      kind: plan.kind,
      action: plan.action,
      phase: plan.phase,
      evictions: plan.evictions.length,
      published: published.length,
      reason: plan.reason,
    });
    return { plan, applied, published: published.length > 0 };
  });
}

/** The sweep lists the nodes with a state label: one whose outbox waits is one it finds (lib/reflex.ts). */
export const SWEPT = { label: STATE_LABEL, value: 'healthy' } as const;

/** The lease that serialises work on one node (remediation and the sweep). */
export const nodeLease = (node: string) => `remediate-${node}`.slice(0, 253);

/**
 * What a remediation publishes: its Approval Requested (approval plans) and its Remediation
 * report. A duplicate or stale delivery changes nothing and says nothing: one incident, one event.
 */
function eventsOf(
  plan: Plan,
  applied: Applied | undefined,
  now: Date,
  asked: ApprovalRecord | undefined,
): PublishedEvent[] {
  if (plan.phase === 'skipped') return [];
  return [...(plan.approval && asked ? [approvalEvent(plan, asked)] : []), remediationEvent(plan, applied, now)];
}

/** The store's record of an approval plan: what to act on, until when, and who may decide. */
export function approvalRecord(plan: Plan, policy: Policy, now: Date): ApprovalRecord {
  return {
    id: approvalIdOf(plan),
    node: plan.target.node,
    incident: plan.incident,
    action: plan.action,
    scope: plan.scope,
    target: { gpus: plan.target.gpus, pods: plan.target.pods.map((p) => `${p.namespace}/${p.name}`) },
    requestedAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + policy.approvals.ttlMinutes * 60_000).toISOString(),
    approvers: [...policy.approvals.approvers],
    status: 'open',
  };
}

export function remediationEvent(plan: Plan, applied: Applied | undefined, occurredAt: Date): PublishedEvent {
  return {
    source: SOURCES.functions,
    detailType: REMEDIATION,
    detail: toRemediationDetail(plan, applied, { occurredAt }),
    resources: [`node/${plan.target.node}`],
  };
}

/** The request as stored: asked at `requestedAt`, open until `expiresAt`. */
export function approvalEvent(plan: Plan, rec: Pick<ApprovalRecord, 'requestedAt' | 'expiresAt'>): PublishedEvent {
  const now = new Date(rec.requestedAt);
  return {
    source: SOURCES.functions,
    detailType: APPROVAL_REQUESTED,
    detail: toApprovalDetail(plan, { now, ttlMs: Date.parse(rec.expiresAt) - now.getTime() }),
    resources: [`node/${plan.target.node}`],
  };
}
