/**
 * Remediation's cloud hands on Alibaba Cloud (the applier's CloudOps port, adapters/cloud.ts):
 * - reboot: the ECS instance behind a node, its `spec.providerID` (`<region>.<instance id>` on
 *   ACK). Idempotent: an instance already rebooting answers "already".
 * - replace, capacity first (remediate/core/replace.ts): `grow` sets the node pool's desired size
 *   (absolute) only while the pool still has the size the sweep saw, and `remove` takes the
 *   instance out of its pool through RemoveNodePoolNodes (instance_ids, no drain: remediation
 *   drained it; released, which ACK skips for subscription instances), answering ACK's task id.
 *   Both hold the pool-size Lease the autoscaler holds (`lock`): one held elsewhere answers "not
 *   now" and the sweep asks again next round. Never ESS or ECS for scaling.
 */
import type { CloudAction, CloudOps } from '../cloud.ts';
import { BadInputError, ForbiddenError } from '../errors.ts';
import type { NodeOps } from '../kube/ports.ts';
import { NODEPOOL_LABEL, POOL_SIZE_LEASE, type CloudPools, type NodePool } from './ports.ts';
import type { NodeInfo } from '../kube/model.ts';

/** The ECS instance id in an ACK node's providerID (`cn-hangzhou.i-bp1...`); undefined when it names none. */
export function instanceIdOf(providerId: string | undefined): string | undefined {
  const m = /(?:^|[./])(i-[a-z0-9]+)$/.exec(providerId ?? '');
  return m?.[1];
}

/** Runs `work` holding the pool-size Lease; undefined when someone else holds it. */
export type PoolLock = <T>(work: () => Promise<T>) => Promise<T | undefined>;

const noLock: PoolLock = (work) => work();

export function aliCloudRepair(
  cloud: Pick<CloudPools, 'reboot' | 'setDesiredSize' | 'listNodePools' | 'removeNodes'>,
  nodes: Pick<NodeOps, 'get'>,
  lock: PoolLock = noLock,
): CloudOps {
  const replace = async (action: Extract<CloudAction, { kind: 'replace' }>) => {
    const r = await lock(async () => {
      if (action.step === 'grow') {
        const pool = (await cloud.listNodePools()).find((p) => p.id === action.pool);
        if (!pool) return { done: false, message: `node pool ${action.pool} not found` };
        if (pool.desiredSize === undefined)
          return { done: false, message: `ACK gives no desired size for node pool ${pool.name}: nothing set` };
        // Asked before (a retry), or the pool changed since the sweep read it: the next sweep decides again.
        if (pool.desiredSize >= action.to)
          return { done: false, message: `node pool ${pool.name} already wants ${pool.desiredSize} nodes` };
        if (pool.desiredSize !== action.from)
          return {
            done: false,
            message:
              `node pool ${pool.name} has ${pool.desiredSize} nodes, not the ${action.from} seen: decided ` +
              `again next sweep`,
          };
        return { done: true, taskId: (await cloud.setDesiredSize(action.pool, action.to)).taskId };
      }
      try {
        return {
          done: true,
          taskId: (await cloud.removeNodes(action.pool, [action.instanceId], { release: true, drain: false })).taskId,
        };
      } catch (err) {
        // ACK refuses an instance already leaving the pool: the removal asked before is under way.
        if (err instanceof BadInputError)
          return {
            done: false,
            message:
              `instance ${action.instanceId} is not in node pool ${action.pool} any more (already ` + `being removed?)`,
          };
        throw err;
      }
    });
    return r ?? { done: false, message: `${POOL_SIZE_LEASE} holds node pool sizes now: asked again next sweep` };
  };
  return {
    async run(action: CloudAction) {
      if (action.kind === 'scale') {
        await cloud.setDesiredSize(action.pool, action.desired);
        return true;
      }
      if (action.kind === 'replace') return replace(action);
      const node = await nodes.get(action.node);
      const id = instanceIdOf(node.providerId);
      if (!id)
        throw new BadInputError(
          `node ${action.node} names no ECS instance (spec.providerID ${node.providerId ?? 'unset'}): it cannot be ` +
            `rebooted through Alibaba Cloud`,
          { what: `node ${action.node}` },
        );
      try {
        await cloud.reboot(id);
        return true;
      } catch (err) {
        // Already stopping or starting: the reboot asked earlier is under way.
        if (err instanceof ForbiddenError && err.message.includes('IncorrectInstanceStatus')) return false;
        throw err;
      }
    },
  };
}

/**
 * Who repairs a node besides gpu-reflex: ACK's managed auto repair, when the node's pool has it on
 * (it reboots or replaces the node itself, with GPU fault isolation: a second controller gpu-reflex
 * must not fight). The pools are read at most once per `ttlMs`. A pool that cannot be read throws:
 * no repair is decided on a guess.
 */
export function ackRepairOwner(
  cloud: Pick<CloudPools, 'listNodePools'>,
  now: () => number,
  ttlMs = 60_000,
): (node: Pick<NodeInfo, 'labels'>) => Promise<string | undefined> {
  let cached: { at: number; pools: Promise<NodePool[]> } | undefined;
  return async (node) => {
    const id = node.labels[NODEPOOL_LABEL];
    if (!id) return undefined;
    if (!cached || now() - cached.at >= ttlMs) {
      const pools = cloud.listNodePools();
      cached = { at: now(), pools };
      pools.catch(() => (cached = undefined));
    }
    const pool = (await cached.pools).find((p) => p.id === id);
    return pool?.ackAutoRepair ? `ACK auto repair of node pool ${pool.name} (${pool.id})` : undefined;
  };
}
