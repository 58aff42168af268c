/**
 * Blast radius: no invocation takes more than the configured share AND count of a pool out of
 * service within the window. Beyond it a plan becomes an approval request. Each invocation sees
 * the pool's current count, so in a storm the first faults to arrive (by the agent's observedAt,
 * as the bus delivers them) are acted on and the rest wait: first come, first served.
 */
import type { RemediationAction } from '../../../events/index.ts';
import type { Policy } from './policy.ts';
import type { NodePhase, NodeState } from './state.ts';
import type { PoolFacts } from './types.ts';

const CAPACITY_ACTIONS: ReadonlySet<RemediationAction> = new Set([
  'quarantine-gpu',
  'drain-node',
  'reboot-node',
  'replace-node',
]);

/** Actions that take GPUs out of service count against the blast radius; restarts and observing do not. */
export function takesCapacity(action: RemediationAction): boolean {
  return CAPACITY_ACTIONS.has(action);
}

/** Blast-radius limits for a pool: the pool's own, else the policy's. */
export function poolLimits(
  policy: Policy,
  pool: string,
): { maxShare: number; maxCount: number; windowMinutes: number } {
  const p = policy.pools[pool];
  return {
    maxShare: p?.maxQuarantinedShare ?? policy.blastRadius.maxShare,
    maxCount: p?.maxQuarantinedCount ?? policy.blastRadius.maxCount,
    windowMinutes: policy.blastRadius.windowMinutes,
  };
}

/**
 * How many nodes of the pool may be out at once: the smaller of the share and the count. At least
 * one whenever both limits are above zero, or a pool smaller than 1/maxShare could never heal a
 * node by itself (a 3-node pool at 20% would need approval for its first broken GPU). Setting
 * either limit to 0 sends every capacity action in that pool to a person.
 */
export function poolAllowance(policy: Policy, pool: PoolFacts): number {
  const { maxShare, maxCount } = poolLimits(policy, pool.name);
  if (maxShare <= 0 || maxCount <= 0) return 0;
  return Math.min(maxCount, Math.max(1, Math.floor(maxShare * pool.nodes + 1e-9)));
}

export interface BlastVerdict {
  allowed: boolean;
  /** Nodes already out in the window, this one excluded. */
  used: number;
  limit: number;
  words: string;
}

/** `alreadyOut`: this node is already out of service (counted once, however many GPUs fail on it). */
export function checkBlastRadius(policy: Policy, pool: PoolFacts, node: string, alreadyOut: boolean): BlastVerdict {
  const limit = poolAllowance(policy, pool);
  const others = pool.quarantinedNodes.filter((n) => n !== node).length;
  const counted = pool.quarantinedNodes.includes(node) ? pool.quarantinedInWindow - 1 : pool.quarantinedInWindow;
  const used = Math.max(others, counted, 0);
  const { maxShare, maxCount, windowMinutes } = poolLimits(policy, pool.name);
  const words =
    `${used} of ${pool.nodes} nodes in pool ${pool.name} are already out within ` +
    `${windowMinutes} min (limit ${limit}: ${Math.round(maxShare * 100)}% and at most ${maxCount})`;
  if (alreadyOut || pool.quarantinedNodes.includes(node)) return { allowed: true, used, limit, words };
  return { allowed: used + 1 <= limit, used, limit, words };
}

/** A node in one of these phases counts against its pool whatever its history says. */
export const OUT_OF_SERVICE: ReadonlySet<NodePhase> = new Set<NodePhase>([
  'quarantined',
  'draining',
  'awaiting-repair',
]);

/**
 * The pool's count as the planners expect it, from the states of its nodes (pure; the handler
 * lists the pool's nodes and parses their state): a node counts when it is out of service now
 * (quarantined, draining, awaiting repair) or came back within the window — a window limits how
 * many nodes are taken out per window, not just how many are out at once.
 */
export function poolFacts(
  policy: Policy,
  name: string,
  members: readonly { name: string; state: NodeState }[],
  now: Date,
): PoolFacts {
  const { windowMinutes } = poolLimits(policy, name);
  const from = now.getTime() - windowMinutes * 60_000;
  const out = members.filter(({ state }) => {
    if (OUT_OF_SERVICE.has(state.phase)) return true;
    return state.incidents.some(
      (i) =>
        i.phase === 'closed' && i.outAt !== undefined && i.closedAt !== undefined && Date.parse(i.closedAt) >= from,
    );
  });
  const names = out.map((m) => m.name).sort();
  return { name, nodes: members.length, quarantinedInWindow: names.length, quarantinedNodes: names };
}

/**
 * On a shared card (issue #32) the limit counts tenants too: how many teams (namespaces) one fence
 * moves. More than the pool allows (`blastRadius.maxTenants`, else its `maxCount`) goes to a person.
 * `tenants`: the namespaces of the pods the plan moves.
 */
export function checkTenants(policy: Policy, pool: PoolFacts, tenants: readonly string[]): BlastVerdict {
  const limit = policy.blastRadius.maxTenants ?? poolLimits(policy, pool.name).maxCount;
  const teams = `${tenants.length} teams (${tenants.join(', ')})`;
  const words = `the fence of this shared GPU moves pods of ${teams}, limit ${limit}`;
  return { allowed: tenants.length <= limit, used: tenants.length, limit, words };
}
