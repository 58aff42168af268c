/**
 * One remediation, from event to published outcome: fetch facts, plan (pure), reserve a
 * blast-radius slot, apply, publish. Used by the Lambda handler, the local stack and the CLI's
 * dry-run `plan`, so all three run the same code.
 */
import { GPU_HEALTH_CHANGED, GPU_XID_ERROR, REMEDIATION, SOURCES, type GpuHealthChangedDetail, type GpuXidErrorDetail } from '../../events/index.ts';
import type { Clock } from '../adapters/clock.ts';
import type { EventPublisher } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import { BlockedError } from '../adapters/errors.ts';
import type { LeaseOps, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../lib/logger.ts';
import { applyRemediation } from './apply.ts';
import { poolAllowance, takesCapacity } from './blast-radius.ts';
import { toRemediationDetail, type StepResult } from './detail.ts';
import { nodeFacts, podsOf, fetchPoolFacts, stateOf } from './facts.ts';
import { ledgerNodes, reserveSlot } from './ledger.ts';
import { planRemediation } from './plan.ts';
import { poolLimits, type Policy } from './policy.ts';
import type { Plan, PoolFacts, TriggerEvent } from './types.ts';

export interface RemediationDeps {
  nodes: NodeOps;
  pods: PodOps;
  state: StateStore;
  leases: LeaseOps;
  publisher: EventPublisher;
  notifier: Notifier;
  policy: Policy;
  clock: Clock;
  logger: Logger;
  /** Global dry run; the ports are then already the dry-run decorator. */
  dryRun: boolean;
  /** Who holds the per-node lease: the invocation's request id. */
  holder: string;
}

export interface RemediationOutcome {
  plan: Plan;
  results: StepResult[];
  published: boolean;
}

export function triggerOf(detailType: string, detail: unknown): TriggerEvent {
  if (detailType === GPU_XID_ERROR) return { detailType: GPU_XID_ERROR, detail: detail as GpuXidErrorDetail };
  if (detailType === GPU_HEALTH_CHANGED) return { detailType: GPU_HEALTH_CHANGED, detail: detail as GpuHealthChangedDetail };
  throw new Error(`remediation does not handle ${detailType}`);
}

/** Union of who is out by label and who holds a ledger slot within the window. */
async function poolWithLedger(deps: RemediationDeps, pool: PoolFacts): Promise<PoolFacts> {
  const windowMs = poolLimits(deps.policy, pool.name).windowMinutes * 60_000;
  const held = await ledgerNodes(deps.state, pool.name, deps.clock.now(), windowMs);
  const nodes = [...new Set([...pool.quarantinedNodes, ...held])];
  return { ...pool, quarantinedNodes: nodes, quarantinedInWindow: nodes.length };
}

export async function remediate(event: TriggerEvent, deps: RemediationDeps): Promise<RemediationOutcome> {
  const nodeName = event.detail.node;
  // One remediation per node at a time: the node's annotations are its state, and two writers
  // planning from the same snapshot would lose an incident.
  const lease = `remediate-${nodeName}`.slice(0, 253);
  const got = await deps.leases.tryAcquire(lease, deps.holder, 60, deps.clock);
  if (!got.acquired) throw new BlockedError(`node ${nodeName} is being remediated by another invocation`, { what: `lease ${lease}` });
  try {
    const info = await deps.nodes.get(nodeName);
    const state = stateOf(info, deps.policy.taintKey);
    if (state.warnings.length) deps.logger.warn('node state partly unreadable', { node: nodeName, warnings: state.warnings });
    const pods = await podsOf(deps.pods, nodeName);
    const pool = await poolWithLedger(deps, await fetchPoolFacts(deps.nodes, deps.policy, info, new Date(deps.clock.now())));
    const now = new Date(deps.clock.now());
    const facts = { now, event, node: nodeFacts(info), state, pool, pods, dryRun: deps.dryRun };
    let plan = planRemediation(facts, deps.policy);

    // Take a slot in the pool's ledger before taking capacity; a concurrent invocation may have
    // taken the last one since we read the pool, and then this becomes an approval request.
    if (plan.kind === 'act' && plan.action !== 'restore' && takesCapacity(plan.action) && !pool.quarantinedNodes.includes(nodeName) && !deps.dryRun) {
      const windowMs = poolLimits(deps.policy, pool.name).windowMinutes * 60_000;
      const limit = poolAllowance(deps.policy, pool);
      if (!(await reserveSlot(deps.state, pool.name, nodeName, limit, deps.clock.now(), windowMs))) {
        const full = { ...pool, quarantinedInWindow: Math.max(limit, pool.quarantinedInWindow) + 1, quarantinedNodes: pool.quarantinedNodes };
        plan = planRemediation({ ...facts, pool: full }, deps.policy);
      }
    }

    const results = await applyRemediation(plan, deps, { taintKey: deps.policy.taintKey, now });
    // A duplicate or stale delivery changes nothing and says nothing: one incident, one event.
    const publish = plan.phase !== 'skipped';
    if (publish) {
      const detail = toRemediationDetail(plan, results, { occurredAt: new Date(deps.clock.now()) });
      await deps.publisher.publish([{ source: SOURCES.functions, detailType: REMEDIATION, detail, resources: [`node/${nodeName}`] }]);
    }
    deps.logger.info('remediation', { node: nodeName, incident: plan.incident, kind: plan.kind, action: plan.action, phase: plan.phase, steps: plan.steps.length, reason: plan.reason });
    return { plan, results, published: publish };
  } finally {
    await deps.leases.release(lease, deps.holder).catch((err: unknown) => deps.logger.warn('releasing lease', { lease, error: err }));
  }
}
