/**
 * The sweep, every minute: retry blocked evictions, time out stuck drains, act on held-back
 * incidents when the window has room, restore nodes that have been quiet long enough. Plans come
 * from the pure `planSweep`; this file fetches and applies, one node at a time under its lease.
 */
import { applyActions } from '../lib/apply.ts';
import { editsScheduling } from '../lib/plan.ts';
import { nodeFacts, podsOf, fetchPoolFacts, stateOf } from './facts.ts';
import { historyCodec } from './reconcile.ts';
import { remediationEvent, type RemediationDeps } from './run.ts';
import { poolOf } from './policy.ts';
import { STATE_LABEL } from './state.ts';
import { planSweep, type SweepNodeFacts } from './sweep.ts';
import type { Plan, PoolFacts } from './types.ts';

export interface SweepOutcome {
  nodes: number;
  plans: Plan[];
  /** Nodes skipped this round: another invocation held them, or they changed since the snapshot. */
  skipped: string[];
}

export async function sweep(deps: RemediationDeps): Promise<SweepOutcome> {
  const lease = 'remediate-sweep';
  const got = await deps.leases.tryAcquire(lease, deps.holder, 120, deps.clock);
  if (!got.acquired) {
    deps.logger.info('sweep already running elsewhere');
    return { nodes: 0, plans: [], skipped: [] };
  }
  try {
    const tracked = await deps.nodes.list(STATE_LABEL);
    const pools = new Map<string, PoolFacts>();
    const facts: SweepNodeFacts[] = [];
    for (const n of tracked) {
      const key = poolOf(deps.policy, n.labels);
      const pool = pools.get(key) ?? (await fetchPoolFacts(deps.nodes, deps.policy, n, new Date(deps.clock.now())));
      pools.set(key, pool);
      facts.push({ node: nodeFacts(n), state: stateOf(n, deps.policy.taintKey), pool, pods: await podsOf(deps.pods, n.name) });
    }
    const now = new Date(deps.clock.now());
    const plan = planSweep({ now, nodes: facts }, deps.policy);
    const version = new Map(tracked.map((n) => [n.name, n.resourceVersion]));
    const applied: Plan[] = [];
    const skipped: string[] = [];
    for (const p of plan.plans) {
      const node = p.target.node;
      const nodeLease = `remediate-${node}`.slice(0, 253);
      if (!(await deps.leases.tryAcquire(nodeLease, deps.holder, 60, deps.clock)).acquired) {
        skipped.push(node);
        continue;
      }
      try {
        // A remediation may have written the node since the snapshot: then next round decides.
        if ((await deps.nodes.get(node)).resourceVersion !== version.get(node)) {
          skipped.push(node);
          continue;
        }
        const outcome = await applyActions(p, deps, historyCodec);
        // Bookkeeping alone (our history) is nobody's news.
        if (p.phase !== 'skipped' && (editsScheduling(p.nodeEdit) || p.evictions.length || p.notices.length || p.cloud.length)) {
          await deps.reports.publish([remediationEvent(p, outcome, new Date(deps.clock.now()))]);
        }
        applied.push(p);
        deps.logger.info('sweep', { node, action: p.action, phase: p.phase, reason: p.reason });
      } finally {
        await deps.leases.release(nodeLease, deps.holder).catch(() => undefined);
      }
    }
    return { nodes: tracked.length, plans: applied, skipped };
  } finally {
    await deps.leases.release(lease, deps.holder).catch(() => undefined);
  }
}
