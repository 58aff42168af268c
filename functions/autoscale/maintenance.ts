/**
 * Planned maintenance and spot interruptions for autoscale-pools (issue #34): the facts read from ECS, the plan of
 * core/maintenance.ts carried out through the same ports as the rest of the round (cordon, Eviction API, the pool's
 * absolute desired size), so a dry run wraps them like every other write.
 *
 * Facts: DescribeInstanceHistoryEvents for the managed pools' instances (events scheduled or under way), and, for
 * spot pools, DescribeInstances' `OperationLocks` (`Recycling`: the instance is reclaimed about 5 minutes later,
 * https://www.alibabacloud.com/help/en/ecs/user-guide/query-the-interruption-events-of-preemptible-instances).
 */
import type { NodePool, SizedPool } from '../adapters/alicloud/ports.ts';
import { NODEPOOL_LABEL } from '../adapters/alicloud/ports.ts';
import { instanceIdOf } from '../adapters/alicloud/repair.ts';
import type { Notice } from '../adapters/chat/notifier.ts';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import {
  planMaintenance,
  type CapacityWarning,
  type MaintenancePlan,
  type MaintenancePool,
  type TrackedNode,
} from './core/maintenance.ts';
import { remediationHold, type AutoscaleDeps } from './deps.ts';
import { advertisesGpus } from './arrivals.ts';

/** A spot instance runs about this long after its interruption notice (ECS preemptible instances overview). */
export const SPOT_NOTICE_MS = 5 * 60_000;

/** What the round lends the maintenance step: the pools' records and how to grow a pool (run.ts). */
export interface MaintenanceBook {
  tracked(poolId: string): Record<string, TrackedNode>;
  /**
   * Why the pool cannot be sized this round (an earlier request is being sent; it is held, its last scale-out's
   * nodes not arrived: arrivals.ts; it is sold out: stock.ts), if so.
   */
  busy(poolId: string): string | undefined;
  /** The GPU resources a node of the pool offers (pool-states.ts), or undefined when its type cannot be read. */
  gpuOffer(poolId: string): Readonly<Record<string, number>> | undefined;
  /** With `intent`, the pool's size change is recorded in the same write (deps.ts PoolRecord.intent). */
  setTracked(
    poolId: string,
    change: (t: Record<string, TrackedNode>) => Record<string, TrackedNode>,
    notices?: Notice[],
    intent?: { from: number; to: number; reason: string },
  ): Promise<void>;
  /** Intent first, then the absolute size, then the request with its GPU Pool Scaled event (run.ts). */
  grow(pool: NodePool, from: number, to: number, reason: string): Promise<void>;
  movable(p: PodInfo): boolean;
}

export interface MaintenanceOutcome {
  preparing: string[];
  draining: string[];
  returned: string[];
  refused: { node: string; pool: string; why: string }[];
}

/** The warnings ECS gives for the managed pools' nodes, or undefined when they could not be read. */
async function warningsOf(
  deps: AutoscaleDeps,
  pools: readonly NodePool[],
  members: readonly NodeInfo[],
  tracked: Readonly<Record<string, TrackedNode>>,
): Promise<CapacityWarning[] | undefined> {
  const byInstance = new Map(
    members.flatMap((n) => (instanceIdOf(n.providerId) ? [[instanceIdOf(n.providerId)!, n]] : [])),
  );
  if (byInstance.size === 0) return [];
  const spotPools = new Set(pools.filter((p) => (p.spotStrategy ?? 'NoSpot') !== 'NoSpot').map((p) => p.id));
  try {
    const out: CapacityWarning[] = [];
    for (const e of await deps.cloud.systemEvents([...byInstance.keys()])) {
      const n = byInstance.get(e.instanceId);
      if (!n) continue;
      let deadline = Date.parse(e.notBefore);
      if (!Number.isFinite(deadline)) {
        // Listed, so not over: a node prepared for it keeps its stored deadline (never returned on it). A new one
        // is not prepared on a time nobody knows; a person is told by the log, every round.
        const t = tracked[n.name];
        if (t?.eventId !== e.id) {
          deps.logger.warn(
            'autoscale-pools: an ECS system event has no NotBefore that can be read: node not prepared',
            {
              node: n.name,
              instanceId: e.instanceId,
              eventId: e.id,
              type: e.type,
              notBefore: e.notBefore,
            },
          );
          continue;
        }
        deadline = t.deadline;
      }
      out.push({ node: n.name, instanceId: e.instanceId, kind: 'maintenance', type: e.type, eventId: e.id, deadline });
    }
    const spot = [...byInstance].filter(([, n]) => spotPools.has(n.labels[NODEPOOL_LABEL] ?? '')).map(([id]) => id);
    if (spot.length > 0) {
      const listed = await deps.cloud.instances(spot);
      for (const i of listed)
        if (i.locks?.includes('Recycling'))
          out.push({
            node: byInstance.get(i.id)!.name,
            instanceId: i.id,
            kind: 'preemption',
            type: 'Recycling',
            eventId: `spot:${i.id}`,
            deadline: deps.clock.now() + SPOT_NOTICE_MS,
          });
      // DescribeInstances leaves out an instance it no longer has (released: the reclaim carried out), and its
      // lock with it: that is no interruption called off. A node prepared for it stays so (its Ready may linger
      // until the node controller's grace period runs out) and is forgotten once it leaves the cluster.
      const answered = new Set(listed.map((i) => i.id));
      for (const id of spot) {
        const n = byInstance.get(id)!;
        const t = tracked[n.name];
        if (!answered.has(id) && t?.eventId === `spot:${id}`)
          out.push({
            node: n.name,
            instanceId: id,
            kind: 'preemption',
            type: t.type,
            eventId: t.eventId,
            deadline: t.deadline,
          });
      }
    }
    return out;
  } catch (e) {
    deps.logger.warn('autoscale-pools: ECS system events unread: no node is returned from maintenance this round', {
      error: e instanceof Error ? e.message : String(e),
    });
    return undefined;
  }
}

export async function maintainPools(
  deps: AutoscaleDeps,
  pools: readonly SizedPool[],
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  book: MaintenanceBook,
): Promise<MaintenanceOutcome> {
  const out: MaintenanceOutcome = { preparing: [], draining: [], returned: [], refused: [] };
  const policy = deps.policy.maintenance;
  const managed = pools.filter((p) => !p.ackAutoScaling.enable);
  const ids = new Set(managed.map((p) => p.id));
  const members = nodes.filter((n) => ids.has(n.labels[NODEPOOL_LABEL] ?? ''));
  const tracked = Object.assign({}, ...managed.map((p) => book.tracked(p.id))) as Record<string, TrackedNode>;
  if (!policy.enabled && Object.keys(tracked).length === 0) return out;
  // Turned off, nothing new is prepared, and the nodes it moved off are seen through: the events are still read for
  // them, as no event read is not "no event" (a node uncordoned minutes before its reboot would lose its new pods).
  const read = await warningsOf(deps, managed, members, tracked);
  const warnings = policy.enabled ? read : read?.filter((w) => tracked[w.node] !== undefined);
  const mpools: MaintenancePool[] = managed.map((p) => {
    const bounds = deps.policy.pools[p.id]!;
    const busy = book.busy(p.id);
    return { id: p.id, desired: p.desiredSize, max: bounds.max, ...(busy ? { noReplacement: busy } : {}) };
  });
  // A member is capacity only Ready with its type's GPUs, as a scale-out's node arrives (arrivals.ts): one whose
  // driver or device plugin is down is no replacement for the node moved off (its GPU pods could land nowhere), nor
  // back from its event. The offer unknown, neither is known: no replacement is seen (the node is drained by its
  // deadline) and no node returns.
  const offers = new Map(managed.map((p) => [p.id, book.gpuOffer(p.id)]));
  const now = deps.clock.now();
  const plan = planMaintenance({
    now,
    policy,
    warnings,
    tracked,
    nodes: new Map(
      members.map((n) => {
        const heldBy = remediationHold(n);
        const offer = offers.get(n.labels[NODEPOOL_LABEL]!);
        return [
          n.name,
          {
            pool: n.labels[NODEPOOL_LABEL]!,
            ready: n.ready === true,
            ...(offer ? { gpus: advertisesGpus(n, offer) } : {}),
            unschedulable: n.unschedulable,
            ...(heldBy ? { heldBy } : {}),
            ...(instanceIdOf(n.providerId) ? { instanceId: instanceIdOf(n.providerId)! } : {}),
          },
        ];
      }),
    ),
    pools: mpools,
  });
  await carryOut(deps, plan, managed, pods, book, out);
  return out;
}

async function carryOut(
  deps: AutoscaleDeps,
  plan: MaintenancePlan,
  pools: readonly NodePool[],
  pods: readonly PodInfo[],
  book: MaintenanceBook,
  out: MaintenanceOutcome,
): Promise<void> {
  const reasonOf = (pool: NodePool, g: MaintenancePlan['grow'][string]) =>
    `${pool.name}: ${g.from} → ${g.to}: capacity first, ahead of maintenance or a spot interruption of ` +
    g.nodes.join(', ');
  // Ours first (recorded), then the cordon: a crash between leaves a node we know to uncordon. A pool's
  // prepared nodes go on its record in one write with the node asked for them (the pool's intent, re-sent
  // first thing next round): a node recorded as prepared is not prepared again, so a round that fails
  // after that write (a refused cordon or eviction) would otherwise never ask for its replacement.
  const prepared = plan.steps.filter((s) => s.kind === 'prepare' || s.kind === 'ask');
  for (const id of [...new Set(prepared.map((s) => s.pool))]) {
    const mine = prepared.filter((s) => s.pool === id);
    const g = plan.grow[id];
    const pool = pools.find((p) => p.id === id)!;
    await book.setTracked(
      id,
      (t) => ({ ...t, ...Object.fromEntries(mine.map((s) => [s.node, s.tracked])) }),
      mine.map((s) =>
        s.kind === 'ask'
          ? {
              title: `gpu-reflex: a replacement for ${s.node} is asked after all`,
              text: `${s.why}: a node is asked of its pool; ${s.node} is drained once it joins, or by its deadline`,
              severity: 'info' as const,
            }
          : {
              title: `gpu-reflex: moving work off ${s.node} ahead of ${s.tracked.type}`,
              text: (
                `${s.why}: cordoned; ${replacementWords(s.node, s.tracked.replacement, plan.refused)}; ` +
                'drained before the deadline'
              ).slice(0, 1000),
              severity: 'info' as const,
            },
      ),
      g ? { from: g.from, to: g.to, reason: reasonOf(pool, g) } : undefined,
    );
  }
  for (const s of plan.steps) {
    if (s.kind === 'ask') {
      deps.logger.info('autoscale-pools: a replacement asked after all', { node: s.node, why: s.why });
    } else if (s.kind === 'prepare' || s.kind === 'cordon') {
      await deps.nodes.cordon(s.node);
      out.preparing.push(s.node);
      deps.logger.info('autoscale-pools: preparing a node for maintenance', { node: s.node, why: s.why });
    } else if (s.kind === 'drain') {
      const here = pods.filter((p) => p.nodeName === s.node && book.movable(p));
      for (const p of here) {
        const r = await deps.pods.evict(p.namespace, p.name, { uid: p.uid });
        if (r.outcome === 'blocked')
          deps.logger.info('autoscale-pools: eviction blocked for now', { pod: `${p.namespace}/${p.name}` });
      }
      if (here.length > 0) out.draining.push(s.node);
      deps.logger.info('autoscale-pools: draining a node ahead of maintenance', { node: s.node, why: s.why });
    } else if (s.kind === 'return') {
      await deps.nodes.uncordon(s.node);
      await book.setTracked(s.pool, ({ [s.node]: _, ...rest }) => rest, [
        { title: `gpu-reflex: ${s.node} is back`, text: `${s.why}: uncordoned`, severity: 'info' },
      ]);
      out.returned.push(s.node);
    } else if (s.kind === 'keep') {
      deps.logger.warn('autoscale-pools: a node back from maintenance is kept cordoned', { node: s.node, why: s.why });
      if (s.tell)
        await book.setTracked(
          s.pool,
          (t) => (t[s.node] ? { ...t, [s.node]: { ...t[s.node]!, told: deps.clock.now() } } : t),
          [
            {
              title:
                `gpu-reflex: ${s.node} ${s.ready ? 'is back from' : 'is not Ready after'} maintenance, ` +
                'kept cordoned',
              text: s.why.slice(0, 1000),
              severity: 'warning',
            },
          ],
        );
    } else if (s.kind === 'wait') {
      deps.logger.info('autoscale-pools: a node prepared for maintenance is waited on', { node: s.node, why: s.why });
      // When it was first seen so: a person is told if it is still not Ready BACK_READY_MS on.
      if (s.over !== undefined)
        await book.setTracked(s.pool, (t) => (t[s.node] ? { ...t, [s.node]: { ...t[s.node]!, over: s.over } } : t));
    } else {
      await book.setTracked(s.pool, ({ [s.node]: _, ...rest }) => rest);
      deps.logger.info('autoscale-pools: a node prepared for maintenance is forgotten', { node: s.node, why: s.why });
    }
  }
  for (const [poolId, g] of Object.entries(plan.grow)) {
    const pool = pools.find((p) => p.id === poolId)!;
    await book.grow(pool, g.from, g.to, reasonOf(pool, g));
  }
  for (const r of plan.refused) deps.logger.info('autoscale-pools: no replacement for a node leaving', r);
  out.refused.push(...plan.refused);
}

/** What the prepare notice says of the node's replacement: asked for, or why not (a person reads it). */
function replacementWords(node: string, replacement: boolean, refused: MaintenancePlan['refused']): string {
  // Asked, not added: ACK may refuse the size (grow.ts refusedSize then tells the person no replacement comes).
  if (replacement) return 'a node is asked of its pool first';
  const why = refused.find((r) => r.node === node)?.why;
  return `no node is added to its pool${why ? `: ${why}` : ''}`;
}
