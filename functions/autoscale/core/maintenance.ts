/**
 * Capacity that will go away, known ahead (issue #34), decided as data: an ECS system event (planned maintenance:
 * the instance is rebooted or redeployed at its NotBefore at the earliest) or a spot instance's interruption notice
 * (reclaimed about 5 minutes later). cluster-autoscaler and Karpenter have no such reflex on Alibaba Cloud.
 *
 * For each warned node of a managed pool, in this order:
 *   1. prepare, `prepareMinutes + drainBeforeMinutes` before the deadline (a spot notice: at once): the node is
 *      cordoned (nothing new lands on it) and, when the pool is below its max (and the replacement within the
 *      policy's spending limit, the pool not held because its last scale-out's nodes did not arrive), one more node
 *      is asked of the pool: capacity first; a node of ours found schedulable later is cordoned again;
 *   2. drain: once its replacement has joined, by identity: a node of the pool that was not one of its members when
 *      the replacement was asked (TrackedNode.before), Ready with its GPUs (it can carry the node's GPU pods: a node
 *      whose driver or device plugin is down cannot), one such node per node moved off, beyond those the pool still
 *      owed when it was asked (a scale-out's nodes still booting: TrackedNode.owed); a count of Ready members
 *      is not that (a size lowered in the ACK console meanwhile, a member back from NotReady meet it with no new
 *      node). Or `drainBeforeMinutes` before the deadline at the latest (a spot notice: at once, a new node takes
 *      minutes). Its pods are evicted through the Eviction API (disruption budgets respected; a blocked one is tried
 *      again next round);
 *   3. return: once the event is no longer listed (executed, canceled) and the node is Ready again with its type's
 *      GPUs, it is uncordoned and forgotten; the extra node idles and scale-in gives it back. Ready without them (the
 *      driver or device plugin not up after the reboot or redeploy), or with its pool's GPUs unknown (its type
 *      unread), it stays cordoned and a person is told once; it returns once they show. Not Ready again
 *      BACK_READY_MS after its event was first seen over, the same: kept cordoned, a person told once.
 * An event that cannot be read (the call failed) is unknown: nothing is returned on it, and nodes already being
 * prepared keep their stored deadline. An instance with several events listed is prepared for the first of them,
 * is over only when the one it was prepared for is no longer listed (by its id), and is drained by whichever of its
 * listed events is due first. A node is the one prepared by its instance, not its name (ACK names nodes by private
 * IP, which a new instance may take): a node of that name on another instance is not acted on, only forgotten.
 */

import type { CapacityWarning, MaintenanceFacts, MaintenancePlan, TrackedNode } from './maintenance-types.ts';

export type {
  CapacityWarning,
  MaintenanceFacts,
  MaintenancePlan,
  MaintenancePolicy,
  MaintenancePool,
  MaintenanceStep,
  TrackedNode,
  WarningKind,
} from './maintenance-types.ts';

const MIN = 60_000;
/**
 * How long a node whose event is over may stay not Ready before a person is told: cluster-autoscaler's
 * `MaxNodeStartupTime` (cluster-autoscaler/clusterstate/clusterstate.go, 15 min, as arrivals.ts MAX_NODE_STARTUP_MS),
 * the time it gives a node from registering to Ready. A reboot or redeploy gives its kubelet as long.
 */
export const BACK_READY_MS = 15 * MIN;
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

export function planMaintenance(f: MaintenanceFacts): MaintenancePlan {
  const plan: MaintenancePlan = { steps: [], grow: {}, refused: [] };
  const drainAt = (t: TrackedNode) =>
    t.kind === 'preemption' ? t.since : t.deadline - f.policy.drainBeforeMinutes * MIN;
  const poolOf = new Map(f.pools.map((p) => [p.id, p]));
  // An instance may have several events listed at once (a reboot, and a redeploy after it): its node is prepared for
  // the first of them, and stays prepared as long as the one it was prepared for is listed.
  const warned = new Map<string, CapacityWarning>();
  for (const w of [...(f.warnings ?? [])].sort((a, b) => a.deadline - b.deadline))
    if (!warned.has(w.node)) warned.set(w.node, w);
  const membersOf = (pool: string) => [...f.nodes].filter(([, m]) => m.pool === pool).map(([n]) => n);
  // 1. New warnings, once inside the preparing window.
  for (const w of warned.values()) {
    const member = f.nodes.get(w.node);
    const pool = member && poolOf.get(member.pool);
    if (!member || !pool || f.tracked[w.node]) continue;
    const start = w.deadline - (f.policy.drainBeforeMinutes + f.policy.prepareMinutes) * MIN;
    if (w.kind === 'maintenance' && f.now < start) continue;
    const grown = plan.grow[pool.id];
    const desired = grown?.to ?? pool.desired;
    const refusal = desired >= pool.max ? `node pool ${pool.id} is at its max (${pool.max})` : pool.noReplacement;
    if (refusal) plan.refused.push({ node: w.node, pool: pool.id, why: refusal });
    else plan.grow[pool.id] = { from: pool.desired, to: desired + 1, nodes: [...(grown?.nodes ?? []), w.node] };
    const tracked: TrackedNode = {
      eventId: w.eventId,
      type: w.type,
      kind: w.kind,
      instanceId: w.instanceId,
      deadline: w.deadline,
      since: f.now,
      replacement: refusal === undefined,
      ownCordon: member.unschedulable !== true,
      ...(refusal === undefined
        ? {
            before: membersOf(pool.id),
            owed: Math.max(0, pool.desired - membersOf(pool.id).length),
            asked: desired + 1,
          }
        : { noReplacement: refusal }),
    };
    plan.steps.push({ kind: 'prepare', node: w.node, pool: pool.id, tracked, why: wordsOf(w) });
    // A spot notice leaves no time to wait for a node; an event first seen late is drained at once too.
    if (f.now >= drainAt(tracked))
      plan.steps.push({ kind: 'drain', node: w.node, pool: pool.id, why: `${wordsOf(w)}: no time to wait for a node` });
  }
  // 2. Tracked nodes: drain when the replacement is Ready or the drain deadline came; return once the event is over.
  const replaced = replacementsJoined(f);
  for (const [node, t] of Object.entries(f.tracked)) {
    const member = f.nodes.get(node);
    const poolId = member?.pool ?? '';
    if (!member) {
      plan.steps.push({ kind: 'forget', node, pool: poolId, why: `${node} left the cluster` });
      continue;
    }
    // ACK names a node by its private IP, which a new instance may take once the prepared one is gone (a spot
    // instance reclaimed): a node of that name on another instance is not the one prepared, nor is it ours to cordon.
    if (member.instanceId !== t.instanceId) {
      plan.steps.push(
        member.instanceId === undefined
          ? {
              kind: 'wait',
              node,
              pool: poolId,
              why:
                `${node}'s instance cannot be read from its providerID: ` +
                `not known to be ${t.instanceId}, left as it is`,
            }
          : {
              kind: 'forget',
              node,
              pool: poolId,
              why: `${node} is instance ${member.instanceId} now: ${t.instanceId}, prepared for ${t.type}, left`,
            },
      );
      continue;
    }
    const still = f.warnings?.some((w) => w.node === node && w.eventId === t.eventId);
    if (f.warnings !== undefined && !still) {
      // Someone else's cordon (a person's, remediation's) stays: the node is only forgotten.
      if (!t.ownCordon || member.heldBy)
        plan.steps.push({
          kind: 'forget',
          node,
          pool: poolId,
          why: `${t.type} on ${node} is over; left cordoned: ${member.heldBy ?? 'cordoned before gpu-reflex did'}`,
        });
      else if (member.ready && member.gpus === true)
        plan.steps.push({
          kind: 'return',
          node,
          pool: poolId,
          why: `${t.type} on ${node} is over and it is Ready with its GPUs`,
        });
      else if (member.unschedulable !== true)
        plan.steps.push({
          kind: 'forget',
          node,
          pool: poolId,
          why: `${t.type} on ${node} is over; uncordoned by then`,
        });
      else if (member.ready)
        // Uncordoned without its GPUs, it would take CPU pods and look like capacity while its GPU jobs can land
        // nowhere: kept cordoned until they show, and a person told (the driver or device plugin did not come up).
        plan.steps.push({
          kind: 'keep',
          node,
          pool: poolId,
          tell: t.told === undefined,
          ready: true,
          why:
            member.gpus === false
              ? `${t.type} on ${node} is over and it is Ready, but advertises none of its type's GPUs (the NVIDIA ` +
                'driver or the device plugin did not come up): kept cordoned until they show'
              : `${t.type} on ${node} is over and it is Ready, but whether it has its GPUs is unknown (its node ` +
                "pool's instance type cannot be read): kept cordoned until that is known",
        });
      else if (f.now - (t.over ?? f.now) < BACK_READY_MS)
        plan.steps.push({
          kind: 'wait',
          node,
          pool: poolId,
          why: `${t.type} on ${node} is over; not Ready yet (restarting)`,
          ...(t.over === undefined ? { over: f.now } : {}),
        });
      else
        // Not back: no capacity, and nobody to notice (it is cordoned, its pods moved off). Kept cordoned, a person
        // told; it returns once it is Ready with its GPUs.
        plan.steps.push({
          kind: 'keep',
          node,
          pool: poolId,
          tell: t.told === undefined,
          ready: false,
          why:
            `${t.type} on ${node} is over, and it is not Ready again ${Math.floor((f.now - t.over!) / MIN)} min ` +
            'after (the instance did not come back up, or its kubelet cannot reach the API server): kept cordoned',
        });
      continue;
    }
    // Recorded as ours, yet schedulable: the round that recorded it stopped before its cordon (the record is
    // written first), and no later round prepares it again. A person's uncordon is undone the same way: the
    // node still goes away, and its pods are being moved off.
    if (t.ownCordon && member.unschedulable !== true && !member.heldBy)
      plan.steps.push({
        kind: 'cordon',
        node,
        pool: poolId,
        why: `${t.type} on ${node}: recorded as ours, not cordoned`,
      });
    const capacityReady = replaced.has(node);
    // Another event of it due earlier than its own (listed since it was prepared) is drained for too.
    const first = warned.get(node);
    const due = first && first.kind === t.kind && first.deadline < t.deadline ? first : t;
    const by = drainAt({ ...t, deadline: due.deadline });
    // None asked at prepare (sold out, held, at its max), and its pool may grow now (stock back, the hold lifted):
    // asked after all, while there is time to wait for it. Once: a refused or failed ask is not asked again.
    const pool = poolOf.get(poolId);
    if (!t.replacement && t.noReplacement !== undefined && t.asked === undefined && pool && f.now < by) {
      const grown = plan.grow[pool.id];
      const desired = grown?.to ?? pool.desired;
      if (!pool.noReplacement && desired < pool.max) {
        plan.grow[pool.id] = { from: pool.desired, to: desired + 1, nodes: [...(grown?.nodes ?? []), node] };
        const { noReplacement: was, ...rest } = t;
        const members = membersOf(pool.id);
        const asked = { before: members, owed: Math.max(0, pool.desired - members.length), asked: desired + 1 };
        plan.steps.push({
          kind: 'ask',
          node,
          pool: poolId,
          tracked: { ...rest, replacement: true, ...asked },
          why: `${t.type} at ${clock(t.deadline)}: node pool ${pool.id} may grow again (no node was added: ${was})`,
        });
      }
    }
    if (f.now >= by || capacityReady)
      plan.steps.push({
        kind: 'drain',
        node,
        pool: poolId,
        why:
          f.now >= by
            ? `${due.type} at ${clock(due.deadline)}: drained by ${clock(by)} at the latest`
            : `${t.type} at ${clock(t.deadline)}: ${replaced.get(node)}, new since its replacement was asked, ` +
              'is Ready with its GPUs',
      });
  }
  return plan;
}

/**
 * Tracked nodes whose replacement has joined → the new node that stands in for each: a member not in the pool when
 * the replacement was asked (`before`), Ready with its GPUs, not itself being moved off, each taken for one node
 * only, and more of them than the pool owed then (`owed`: a scale-out's nodes still on their way are its pods',
 * whichever joins first). The latest asked go first: their new nodes are the fewest (an earlier one's may have
 * joined by then).
 */
function replacementsJoined(f: MaintenanceFacts): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set<string>();
  const waiting = Object.entries(f.tracked)
    .filter(([node, t]) => t.replacement && t.before && t.owed !== undefined && f.nodes.has(node))
    .sort(([, a], [, b]) => b.since - a.since);
  for (const [node, t] of waiting) {
    const pool = f.nodes.get(node)!.pool;
    const before = new Set(t.before);
    const fresh = [...f.nodes]
      .filter(([n, m]) => m.pool === pool && m.ready && m.gpus === true && !before.has(n))
      .map(([n]) => n)
      .filter((n) => !taken.has(n) && !f.tracked[n])
      .sort();
    if (fresh.length <= t.owed! || fresh[0] === undefined) continue;
    taken.add(fresh[0]);
    out.set(node, fresh[0]);
  }
  return out;
}

function wordsOf(w: CapacityWarning): string {
  return w.kind === 'preemption'
    ? `spot instance ${w.instanceId} (${w.node}) is being reclaimed (Recycling) by ${clock(w.deadline)}`
    : `ECS ${w.type} of ${w.instanceId} (${w.node}) not before ${clock(w.deadline)}`;
}
