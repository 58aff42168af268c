import { NODEPOOL_LABEL, type SizedPool } from '../adapters/alicloud/ports.ts';
import { type NodeInfo, type PodInfo, holdsDevices } from '../adapters/kube/model.ts';
import type { PendingPod, PoolState } from './core/planner.ts';
import { planScaleIn } from './core/scale-in.ts';
import { drainCounts, whyBlocks } from './drainable.ts';
import { withoutRoomOnExisting } from './existing-room.ts';
import { instanceIdOf } from '../adapters/alicloud/repair.ts';
import type { ReplacementRecord } from '../lib/replacements.ts';
import {
  type AutoscaleDeps,
  type AutoscaleOutcome,
  type PoolRecord,
  flush,
  record,
  movable,
  remediationHold,
} from './deps.ts';
import { asPending } from './pool-states.ts';
import { followRemovals, sendRemoval } from './removals.ts';

/** One pool's scale-in round: what it reads (this round's facts) and where it reports (`out`). */
export interface ScaleInRound {
  pool: SizedPool;
  /** The pool's record as this round read it (a pool that grew this round is not shrunk). */
  rec: PoolRecord;
  /** The pool as the planner sees it (price, what a node offers). */
  template: PoolState;
  nodes: readonly NodeInfo[];
  pods: readonly PodInfo[];
  /** Pods waiting for a node: an idle node that could take one is not given back (core/scale-in.ts). */
  pending: readonly PendingPod[];
  now: number;
  out: AutoscaleOutcome;
  /** Remediation's replacements into this pool: none of its nodes leaves meanwhile, and idle time starts over after. */
  replacing?: readonly ReplacementRecord[];
}

export async function scaleIn(deps: AutoscaleDeps, round: ScaleInRound): Promise<void> {
  const { pool, rec, template, pods, pending, now, out, replacing = [] } = round;
  // A node on its way out of the pool (its removal sent) is none of the pool's any more: it is not counted
  // towards the pool's size or minimum, idles nothing and takes no evicted pod.
  const removing = await followRemovals(deps, pool, rec, round.nodes, now);
  const nodes = round.nodes.filter((n) => !removing.has(n.name));
  const members = nodes.filter((n) => n.labels[NODEPOOL_LABEL] === pool.id);
  const on = (node: string) => pods.filter((p) => p.nodeName === node && movable(p));
  // What still runs on a node, pods shutting down included: an evicted or deleted pod holds its node (and its
  // GPU: a checkpoint being written) until its containers stop. cluster-autoscaler too deletes a node only once
  // the pods it evicted are gone (cluster-autoscaler/core/scaledown/actuation/drain.go, Evictor.waitPodsToDisappear).
  const running = (node: string) => pods.filter((p) => p.nodeName === node && drainCounts(p));
  const policy = deps.policy.scaleIn;
  const blockers = drainBlockers(members, nodes, pods, new Set((rec.leaving ?? []).map((l) => l.node)));
  // Drains under way: a drained node is given back; one that will not drain is handed back to scheduling.
  const leaving: NonNullable<PoolRecord['leaving']> = [];
  const drained: NonNullable<PoolRecord['leaving']> = [];
  // A node being drained is not counted idle (planScaleIn), so one whose drain is abandoned must
  // idle a full period again before it is tried again.
  // While remediation replaces a node of the pool, no node counts as idle: none leaves meanwhile,
  // and the new node (the broken one's capacity, not demand that went away) idles a full period after.
  const idleBefore = replacing.length > 0 ? {} : (rec.idle ?? {});
  if (replacing.length > 0)
    deps.logger.info('autoscale-pools: a node of the pool is being replaced; idle time starts over after', {
      pool: pool.id,
      nodes: replacing.map((r) => r.node),
    });
  for (const l of rec.leaving ?? []) {
    const node = members.find((n) => n.name === l.node);
    if (!node) continue;
    // Remediation took it while it drained (a GPU fault): a broken node is repair's. Nothing is done to it meanwhile
    // (no eviction, no removal, and above all no uncordon past the drain timeout: that lifted remediation's hold and
    // the faulty node took pods again). It stays on record: the cordon is ours (remediation leaves one it found, and
    // never lifts it), handed back or given back by this loop once remediation lets the node go.
    const hold = remediationHold(node);
    if (hold) {
      leaving.push(l);
      deps.logger.info('autoscale-pools: a node being drained for scale-in is held by remediation; left to it', {
        pool: pool.id,
        node: l.node,
        hold,
      });
      continue;
    }
    const left = running(l.node);
    if (left.length === 0) drained.push(l);
    else if (now - l.since >= policy.drainTimeoutMinutes * 60_000) {
      await deps.nodes.uncordon(l.node);
      const text =
        `${l.node} still runs ${left.length} pod(s) after ${policy.drainTimeoutMinutes} min of draining ` +
        `(${left
          .slice(0, 5)
          .map((p) => `${p.namespace}/${p.name}`)
          .join(', ')}; disruption budgets?): kept, uncordoned`;
      await flush(
        deps,
        pool.id,
        await record(
          deps,
          pool.id,
          (x) => x,
          [],
          [{ title: `gpu-reflex: could not give back ${l.node}`, text, severity: 'warning' }],
        ),
      );
      deps.logger.warn('autoscale-pools: drain for scale-in timed out', {
        pool: pool.id,
        node: l.node,
        pods: left.length,
      });
    } else {
      // On the record before its cordon (the intent first): a round that stopped between left it open to new pods,
      // each evicted in turn, until the drain timed out. A person's uncordon is undone the same way while it drains.
      if (node.unschedulable !== true) await deps.nodes.cordon(l.node);
      leaving.push(l);
      for (const p of on(l.node)) await evict(deps, p);
    }
  }
  if (drained.length > 0) {
    const from = pool.desiredSize;
    const to = Math.max(0, from - drained.length);
    const reason =
      `${pool.name}: ${from} → ${to}: ${drained.map((d) => d.node).join(', ')} ran no GPU pod ` +
      `for ${policy.idleMinutes} min and ${drained.length === 1 ? 'is' : 'are'} drained; released` +
      keptWords(blockers);
    const removal = {
      nodes: drained.map((d) => d.node),
      instanceIds: drained.map((d) => d.instanceId),
      from,
      to,
      at: now,
      reason,
      cost: -(from - to) * template.hourlyPrice,
    };
    await record(deps, pool.id, (x) => ({ ...x, leaving, removal }));
    const rec2 = await sendRemoval(deps, pool, removal);
    await flush(deps, pool.id, rec2);
    out.released.push(...removal.nodes);
  }
  // New releases.
  const held = (n: NodeInfo): string | undefined => {
    const moving = rec.maintenance?.[n.name];
    if (moving) return `being moved off ahead of ${moving.type} (maintenance.ts)`;
    const hold = remediationHold(n);
    if (hold) return hold;
    if (n.unschedulable) return 'cordoned by someone else';
    if (n.ready !== true) return 'not Ready';
    const blocked = blockers.get(n.name);
    if (blocked) return blocked;
    if (!instanceIdOf(n.providerId)) return `spec.providerID names no ECS instance (${n.providerId ?? 'unset'})`;
    return undefined;
  };
  const members2 = members.filter((n) => !drained.some((d) => d.node === n.name));
  const decision = planScaleIn(
    {
      id: pool.id,
      name: pool.name,
      min: deps.policy.pools[pool.id]!.min,
      maxStep: deps.policy.pools[pool.id]!.maxStep,
      nodes: members2.map((n) => {
        const why = held(n);
        return {
          name: n.name,
          eligible: why === undefined,
          ...(why ? { heldBy: why } : {}),
          gpuPods: running(n.name).filter(holdsDevices).length,
        };
      }),
      // Less the nodes this round's removal takes (sent above: pool.desiredSize is still the size before it).
      desired: pool.desiredSize - drained.length,
      leaving: leaving.map((l) => l.node),
      template,
      ...(rec.cooldownUntil !== undefined && rec.cooldownUntil > now
        ? {
            frozen:
              `${pool.name} grew within its cooldown ` +
              `(until ${new Date(rec.cooldownUntil).toISOString().slice(11, 16)})`,
          }
        : {}),
    },
    idleBefore,
    pending,
    now,
    policy.idleMinutes,
  );
  // A node moved off ahead of maintenance idles from its return on, not from its drain.
  for (const n of Object.keys(rec.maintenance ?? {})) delete decision.idleSince[n];
  for (const k of decision.kept) deps.logger.info('autoscale-pools: idle node kept', { pool: pool.id, ...k });
  out.kept.push(...decision.kept);
  const starting = decision.release.map((r) => ({
    node: r.node,
    instanceId: instanceIdOf(members2.find((n) => n.name === r.node)!.providerId)!,
    since: now,
  }));
  // The intent first (this node is ours to drain), then the cordon and the evictions.
  await record(deps, pool.id, (x) => ({ ...x, idle: decision.idleSince, leaving: [...leaving, ...starting] }));
  for (const s of starting) {
    await deps.nodes.cordon(s.node);
    for (const p of on(s.node)) await evict(deps, p);
    deps.logger.info('autoscale-pools: draining an idle node to give it back', {
      pool: pool.id,
      node: s.node,
      why: decision.release.find((r) => r.node === s.node)?.why,
    });
  }
  out.draining.push(...leaving.map((l) => l.node), ...starting.map((s) => s.node));
}

/**
 * Idle members whose pods keep them (node → why): cluster-autoscaler's scale-down rules
 * (drainable.ts), and its last one: every pod that would be evicted must fit on another node, as
 * CA simulates them rescheduled before it removes a node (cluster-autoscaler/simulator/cluster.go).
 * Nodes already leaving take nothing. A node running a GPU pod is not idle and not looked at.
 */
export function drainBlockers(
  members: readonly NodeInfo[],
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  leaving: ReadonlySet<string>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of members) {
    if (leaving.has(n.name)) continue;
    const here = pods.filter((p) => p.nodeName === n.name && !p.terminating);
    // A DRA pod holds its GPU through a claim, not an extended resource: busy all the same.
    if (here.some((p) => drainCounts(p) && holdsDevices(p))) continue;
    const why = here.map(whyBlocks).find((w) => w !== undefined);
    if (why) {
      out.set(n.name, why);
      continue;
    }
    const moving = here.filter(drainCounts);
    if (moving.length === 0) continue;
    const others = nodes.filter((o) => o.name !== n.name && !leaving.has(o.name));
    const { plan: stuck } = withoutRoomOnExisting(moving.map(asPending), others, pods);
    if (stuck.length > 0) out.set(n.name, `${stuck[0]!.key} blocks its removal: it fits on no other node`);
  }
  return out;
}

/** The nodes a shrink leaves in place and why, for its GPU Pool Scaled reason ('' when none). */
export function keptWords(blockers: ReadonlyMap<string, string>): string {
  if (blockers.size === 0) return '';
  const words = [...blockers].slice(0, 5).map(([node, why]) => `${node} kept: ${why}`);
  return `; ${words.join('; ')}${blockers.size > 5 ? `; and ${blockers.size - 5} more kept` : ''}`;
}

export async function evict(deps: AutoscaleDeps, p: PodInfo): Promise<void> {
  const r = await deps.pods.evict(p.namespace, p.name, { uid: p.uid });
  if (r.outcome === 'blocked')
    deps.logger.info('autoscale-pools: eviction blocked for now', {
      pod: `${p.namespace}/${p.name}`,
      reason: r.reason,
    });
}
