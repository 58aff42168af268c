/**
 * Dry-run for the cloud port, chosen at wiring time like the Kubernetes ports' decorator
 * (functions/adapters/kube/dry-run.ts): reads go to Alibaba Cloud, writes are recorded and answered
 * as if accepted, so a dry run's plan and report match a real run's and nothing is bought,
 * released or rebooted.
 */
import type { DryRunAction } from '../kube/dry-run.ts';
import type { CloudPools } from './ports.ts';

export const DRY_RUN_TASK = 'dry-run';

export function dryRunCloudPools(real: CloudPools, record: (action: DryRunAction) => void): CloudPools {
  const note = <T>(op: string, args: unknown[], result: T): T => (record({ op, args, result }), result);
  return {
    listNodePools: () => real.listNodePools(),
    instanceTypes: (ids) => real.instanceTypes(ids),
    hourlyPrice: (t) => real.hourlyPrice(t),
    spotPrice: (t) => real.spotPrice(t),
    instances: (ids) => real.instances(ids),
    systemEvents: (ids) => real.systemEvents(ids),
    task: async (id) => (id === DRY_RUN_TASK ? { id, state: 'running' } : real.task(id)),
    setDesiredSize: async (pool, n) => note('cloud.setDesiredSize', [pool, n], { taskId: DRY_RUN_TASK }),
    removeNodes: async (pool, ids, opts) => note('cloud.removeNodes', [pool, ids, opts], { taskId: DRY_RUN_TASK }),
    reboot: async (id) => note('cloud.reboot', [id], undefined),
  };
}
