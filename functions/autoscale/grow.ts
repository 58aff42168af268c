import { GPU_POOL_SCALED, SCHEMA_VERSION, SOURCES, type GpuPoolScaledDetail } from '../../events/index.ts';
import { NODEPOOL_LABEL, type NodePool } from '../adapters/alicloud/ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { startGrowing } from './arrivals.ts';
import type { PublishedEvent } from '../adapters/bus.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import type { Increment, ScaleOutPlan } from './core/planner.ts';
import type { RoundPoolState } from './pool-states.ts';
import type { MaintenanceBook } from './maintenance.ts';
import { type AutoscaleDeps, type PoolRecord, flush, record, movable, cooldownMs, sent } from './deps.ts';

export function poolEvent(
  deps: AutoscaleDeps,
  pool: { id: string; name: string; instanceTypes: string[] },
  at: number,
  from: number,
  to: number,
  state: GpuPoolScaledDetail['state'],
  reason: string,
  extra: { taskId?: string; cost?: number } = {},
): PublishedEvent {
  const detail: GpuPoolScaledDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `pool:${deps.clusterId}:${pool.id}:${from}-${to}:${at}:${state}`.slice(0, 128),
    occurredAt: new Date(deps.clock.now()).toISOString(),
    provider: 'alicloud',
    clusterId: deps.clusterId,
    nodepoolId: pool.id,
    nodepoolName: pool.name,
    instanceTypes: pool.instanceTypes.slice(0, 20),
    from,
    to,
    state,
    ...(extra.taskId ? { taskId: extra.taskId } : {}),
    ...(extra.cost !== undefined
      ? { hourlyCostDelta: { amount: Math.round(extra.cost * 100) / 100, currency: 'CNY' } }
      : {}),
    reason: reason.slice(0, 2048),
    dryRun: false,
  };
  return { source: SOURCES.functions, detailType: GPU_POOL_SCALED, detail, resources: [`nodepool/${pool.id}`] };
}

export function reasonOf(inc: Increment, plan: ScaleOutPlan): string {
  const waiting = plan.deferred.length > 0 ? `; ${plan.deferred.length} more pod(s) wait on pool limits` : '';
  return (
    `${inc.why}: ${inc.pods.slice(0, 10).join(', ')}` +
    `${inc.pods.length > 10 ? ` and ${inc.pods.length - 10} more` : ''}${waiting}`
  );
}

/** The chat notice of a scale-out, recorded with its request (growPool, or the re-sent intent: run.ts). */
export const growNotice = (pool: { name: string }, from: number, to: number, reason: string, cost: number): Notice => ({
  title: `gpu-reflex: growing node pool ${pool.name} ${from} → ${to}`,
  text: `${reason} (+${cost}/h)`.slice(0, 1000),
  severity: 'info',
});

/** The names of a pool's nodes (ACK's label): what a scale-out's new nodes are told apart from (arrivals.ts). */
export const membersOf = (nodes: readonly NodeInfo[], poolId: string) =>
  nodes.filter((n) => n.labels[NODEPOOL_LABEL] === poolId).map((n) => n.name);

/**
 * Intent first, then the absolute size, then the request with its event and notice (the outbox); the task id. The
 * pool's nodes now (`members`) go on the record with the intent: its new nodes are followed until they arrive.
 */
export async function growPool(
  deps: AutoscaleDeps,
  pool: NodePool,
  inc: { from: number; to: number; hourlyCost: number },
  reason: string,
  now: number,
  members: readonly string[],
): Promise<string> {
  await record(deps, pool.id, (x) => ({
    ...x,
    intent: { from: inc.from, to: inc.to, at: now, reason, cost: inc.hourlyCost },
    growing: startGrowing(x.growing, members, inc.from, inc.to, now),
  }));
  const { taskId } = await deps.cloud.setDesiredSize(pool.id, inc.to);
  const ev = poolEvent(deps, pool, now, inc.from, inc.to, 'requested', reason, { taskId, cost: inc.hourlyCost });
  const rec = await record(
    deps,
    pool.id,
    (x) => ({
      ...x,
      intent: undefined,
      ...sent(x, { taskId, from: inc.from, to: inc.to, at: now }),
      cooldownUntil: now + cooldownMs(deps, pool.id),
    }),
    [ev],
    [growNotice(pool, inc.from, inc.to, reason, inc.hourlyCost)],
  );
  await flush(deps, pool.id, rec);
  pool.desiredSize = inc.to;
  return taskId;
}

/** The maintenance step's view of the round (maintenance.ts): records, growth, what may move. */
export function maintenanceBook(
  deps: AutoscaleDeps,
  fresh: ReadonlyMap<string, PoolRecord>,
  states: readonly RoundPoolState[],
  now: number,
  nodes: readonly NodeInfo[],
): MaintenanceBook {
  const costOf = (id: string, from: number, to: number) =>
    Math.round((to - from) * (states.find((s) => s.id === id)?.hourlyPrice ?? 0) * 100) / 100;
  return {
    tracked: (id) => ({ ...(fresh.get(id)?.maintenance ?? {}) }),
    busy: (id) => {
      const r = fresh.get(id);
      const price = states.find((s) => s.id === id)?.hourlyPrice;
      const limit = deps.policy.approval?.aboveHourlyCost;
      if (r?.intent || r?.removal) return 'an earlier size change of the pool is still being sent';
      // Its last scale-out's nodes did not come (arrivals.ts): one more node asked of it would not come either.
      const held = states.find((s) => s.id === id)?.arrivalHold;
      if (held) return `held: ${held}`;
      if (price === undefined) return 'its instance type, or its price, cannot be read';
      if (limit !== undefined && price > limit)
        return `a node costs ${price}/h, above the ${limit}/h the policy lets gpu-reflex spend alone`;
      return undefined;
    },
    setTracked: async (id, change, notices = [], intent) => {
      const rec = await record(
        deps,
        id,
        (x) => ({
          ...x,
          maintenance: change({ ...(x.maintenance ?? {}) }),
          // The same intent growPool records first: a round that stops before growPool re-sends it next round.
          ...(intent ? { intent: { ...intent, at: now, cost: costOf(id, intent.from, intent.to) } } : {}),
        }),
        [],
        notices,
      );
      await flush(deps, id, rec);
    },
    grow: async (pool, from, to, reason) => {
      const members = membersOf(nodes, pool.id);
      await growPool(deps, pool, { from, to, hourlyCost: costOf(pool.id, from, to) }, reason, now, members);
    },
    gpuOffer: (id) => states.find((s) => s.id === id)?.gpuOffer,
    movable,
  };
}
