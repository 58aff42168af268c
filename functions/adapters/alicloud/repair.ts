/**
 * Remediation's cloud hands on Alibaba Cloud (the applier's CloudOps port, lib/apply.ts): a reboot
 * of the ECS instance behind a node. The instance is the node's `spec.providerID`
 * (`<region>.<instance id>` on ACK). Idempotent: an instance already rebooting answers "already".
 * Replacement is not built: remediation is told it cannot (capabilities.replace is off).
 */
import type { CloudAction } from '../../lib/plan.ts';
import type { CloudOps } from '../../lib/apply.ts';
import { BadInputError, ForbiddenError } from '../errors.ts';
import type { NodeOps } from '../kube/ports.ts';
import { NODEPOOL_LABEL, type CloudPools, type NodePool } from './ports.ts';
import type { NodeInfo } from '../kube/model.ts';

/** The ECS instance id in an ACK node's providerID (`cn-hangzhou.i-bp1...`); undefined when it names none. */
export function instanceIdOf(providerId: string | undefined): string | undefined {
  const m = /(?:^|[./])(i-[a-z0-9]+)$/.exec(providerId ?? '');
  return m?.[1];
}

export function aliCloudRepair(cloud: Pick<CloudPools, 'reboot' | 'setDesiredSize'>, nodes: Pick<NodeOps, 'get'>): CloudOps {
  return {
    async run(action: CloudAction): Promise<boolean> {
      if (action.kind === 'scale') {
        await cloud.setDesiredSize(action.pool, action.desired);
        return true;
      }
      if (action.kind === 'replace') throw new BadInputError(`replacing ${action.node} is not built: remediation must not ask for it`, { what: `node ${action.node}` });
      const node = await nodes.get(action.node);
      const id = instanceIdOf(node.providerId);
      if (!id) throw new BadInputError(`node ${action.node} names no ECS instance (spec.providerID ${node.providerId ?? 'unset'}): it cannot be rebooted through Alibaba Cloud`, { what: `node ${action.node}` });
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
export function ackRepairOwner(cloud: Pick<CloudPools, 'listNodePools'>, now: () => number, ttlMs = 60_000): (node: Pick<NodeInfo, 'labels'>) => Promise<string | undefined> {
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
