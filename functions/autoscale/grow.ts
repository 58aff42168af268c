import { GPU_POOL_SCALED, SCHEMA_VERSION, SOURCES, type GpuPoolScaledDetail } from '../../events/index.ts';
import { NODEPOOL_LABEL, type NodePool } from '../adapters/alicloud/ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { startGrowing, type Growing } from './arrivals.ts';
import { BadInputError } from '../adapters/errors.ts';
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
 * Intent first, then the absolute size, then the request with its event and notice (the outbox); the task id, or
 * undefined when ACK refused the size (`refusedSize`). The pool's nodes now (`members`) go on the record with the
 * intent: its new nodes are followed until they arrive.
 */
export async function growPool(
  deps: AutoscaleDeps,
  pool: NodePool,
  inc: { from: number; to: number; hourlyCost: number },
  reason: string,
  now: number,
  members: readonly string[],
): Promise<string | undefined> {
  let followed: Growing | undefined;
  const intent = { from: inc.from, to: inc.to, at: now, reason, cost: inc.hourlyCost };
  await record(deps, pool.id, (x) => {
    followed = x.growing;
    return { ...x, intent, growing: startGrowing(x.growing, members, inc.from, inc.to, now) };
  });
  let taskId: string;
  try {
    ({ taskId } = await deps.cloud.setDesiredSize(pool.id, inc.to));
  } catch (err) {
    if (!(err instanceof BadInputError)) throw err;
    // Nothing was asked of the pool: the scale-out followed before (if any) is followed as it was.
    await flush(
      deps,
      pool.id,
      await refusedSize(deps, pool, intent, err.message, now, (x) => ({ ...x, growing: followed })),
    );
    return undefined;
  }
  const ev = poolEvent(deps, pool, now, inc.from, inc.to, 'requested', reason, { taskId, cost: inc.hourlyCost });
  const rec = await record(
    deps,
    pool.id,
    (x) => ({
      ...x,
      intent: undefined,
      refused: undefined,
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

/**
 * A size ACK refused (ModifyClusterNodePool answered 400: the pool being upgraded, a quota, a size it does not take).
 * A refusal is an answer: the size was not set, so the intent is dropped (re-sent, it was refused again every round,
 * and the round, thrown, grew, drained and gave back nothing in any pool), the request closes `failed` with ACK's
 * words, a person is told once, and the pool is not asked again before its cooldown is over (others take its pods).
 * The record as written, its outbox for the caller to flush.
 */
export async function refusedSize(
  deps: AutoscaleDeps,
  pool: NodePool,
  intent: NonNullable<PoolRecord['intent']>,
  refusal: string,
  now: number,
  also: (r: PoolRecord) => PoolRecord = (r) => r,
): Promise<PoolRecord> {
  const until = now + cooldownMs(deps, pool.id);
  const why = refusal.slice(0, 500);
  const grow = `growing node pool ${pool.name} ${intent.from} → ${intent.to}`;
  deps.logger.warn('autoscale-pools: ACK refused a node pool size; not asked again before the cooldown is over', {
    pool: pool.id,
    from: intent.from,
    to: intent.to,
    error: why,
  });
  const ev = poolEvent(
    deps,
    pool,
    intent.at,
    intent.from,
    intent.to,
    'failed',
    `${intent.reason.slice(0, 2048 - why.length - 20)}; ACK refused it: ${why}`,
    { cost: intent.cost },
  );
  const told = (orphans: readonly string[]): string =>
    (
      `${pool.name}: ACK refused the size ${intent.to} (${why}): the pool keeps its size, and is not asked again ` +
      `before ${new Date(until).toISOString().slice(11, 16)}; waiting pods go to other pools that fit them, or ` +
      'wait. ' +
      (orphans.length > 0
        ? `${orphans.join(', ')} (prepared for maintenance) get${orphans.length === 1 ? 's' : ''} no replacement: ` +
          `drained by ${orphans.length === 1 ? 'its' : 'their'} deadline. `
        : '') +
      intent.reason
    ).slice(0, 1000);
  const notice: Notice = { title: `gpu-reflex: ACK refused ${grow}`, text: told([]), severity: 'warning' };
  // Nodes prepared for maintenance whose replacement this size was (by the size asked for each, TrackedNode.asked):
  // none comes. They are drained by their deadline, and the person told so in the same notice (worded in the same
  // write that reads them, before the outbox takes it: lib/outbox.ts), not left waiting on a node never added.
  return record(
    deps,
    pool.id,
    (x) => {
      const mine = Object.entries(x.maintenance ?? {}).filter(
        ([, t]) => t.replacement && t.asked !== undefined && t.asked > intent.from && t.asked <= intent.to,
      );
      notice.text = told(mine.map(([n]) => n));
      const noReplacement = `ACK refused the pool size ${intent.to} asked for it: ${why}`;
      return {
        ...also(x),
        intent: undefined,
        cooldownUntil: until,
        refused: { at: now, why },
        ...(mine.length > 0
          ? {
              maintenance: {
                ...x.maintenance,
                ...Object.fromEntries(mine.map(([n, t]) => [n, { ...t, replacement: false, noReplacement }])),
              },
            }
          : {}),
      };
    },
    [ev],
    [notice],
  );
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
      // ACK refused its size: the person was told it is not asked again before the cooldown is over (refusedSize).
      if (r?.refused && r.cooldownUntil !== undefined && r.cooldownUntil > now) {
        const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
        const until = hhmm(r.cooldownUntil);
        return `ACK refused its size at ${hhmm(r.refused.at)} (${r.refused.why}): not asked again until ${until}`;
      }
      // Its last scale-out's nodes did not come (arrivals.ts): one more node asked of it would not come either.
      const held = states.find((s) => s.id === id)?.arrivalHold;
      if (held) return `held: ${held}`;
      // A node asked of a pool sold out through and through fails NoStock (stock.ts): none would come.
      const soldOut = states.find((s) => s.id === id)?.soldOut;
      if (soldOut) return soldOut;
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
