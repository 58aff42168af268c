import { planMig, planTable as migPlanTable, readMigFleet } from '../mig/index.ts';
import { rebalanceMig, type MigRebalanceConfig } from '../mig/index.ts';
import type { CommandPorts } from './command-ports.ts';

/** One round of the MIG rebalancer, now: what it plans and what it started. */
export async function migApply(p: CommandPorts, mig: MigRebalanceConfig): Promise<string> {
  const dryRun = p.dryRun;
  if (!p.kube.migParted) return 'mig apply: this deployment has no mig-parted config wired (MIG_PARTED_CONFIGMAP)';
  const [nodes, pods] = await Promise.all([p.kube.nodes.list(), p.kube.pods.list()]);
  const fleet = readMigFleet(nodes, pods, undefined, { now: new Date(p.clock.now()), seconds: mig.minPendingSeconds });
  // The plan rebalanceMig carries out below: with its preemption policy.
  const table = migPlanTable(
    planMig(fleet.nodes, fleet.pending, mig.preemption ? { preemption: mig.preemption } : {}),
    fleet.notes,
  );
  const out = await rebalanceMig({
    ...p.kube,
    migParted: p.kube.migParted,
    publisher: p.publisher,
    notifier: p.notifier,
    clock: p.clock,
    logger: p.logger,
    holder: p.holder,
    mig,
  });
  const started = Object.entries(out.steps)
    .filter(([, s]) => s === 'start')
    .map(([n]) => n);
  const moved = Object.entries(out.steps)
    .filter(([, s]) => s !== 'start')
    .map(([n, s]) => `${n} ${s}`);
  const said = [
    started.length > 0
      ? `${dryRun ? 'dry run: would have started' : 'started'} the relayout of ${started.join(', ')} (mig-parted ` +
        `config written, node cordoned; rebalance-mig sets nvidia.com/mig.config after the sync and uncordons ` +
        `when mig-manager succeeds)`
      : // Planned and refused (gpu-reflex's mig-parted ConfigMap not its own, or not the one mig-manager reads): the
        // table above reads as a plan under way unless the answer says why none started, and how to fix it.
        `${dryRun ? 'dry run: ' : ''}no relayout started${out.refused ? `: ${out.refused}` : ''}`,
    ...(moved.length > 0 ? [`moved on: ${moved.join(', ')}`] : []),
    ...(out.underWay.length > 0 && started.length === 0 ? [`under way: ${out.underWay.join(', ')}`] : []),
  ];
  return [...table, ...said].join('\n');
}
