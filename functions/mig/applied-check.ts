/**
 * A layout gpu-reflex applied, checked every round long after its relayout was done (core/applied-drift.ts): a person
 * is told once when the GPUs no longer hold it, or mig-manager failed on it, and once when it holds again. What was
 * told is kept on the node (gpu-reflex.io/mig-drift), written in the patch that tells it (the outbox).
 */
import { migInventoryStale, readMigInventory } from '../../events/index.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { readOutbox } from '../lib/outbox.ts';
import { emptyEdit, noActions } from '../lib/plan.ts';
import { carryOut } from '../lib/reflex.ts';
import { appliedDrift, MIG_DRIFT_ANNOTATION, partedEntryOf } from './core/applied-drift.ts';
import { MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL } from './core/rebalance.ts';
import type { MigRebalanceDeps } from './deps.ts';

/**
 * Checks every node `busy` does not claim (a relayout of this round, one under way or failed, a record that cannot be
 * read: the relayout's own steps speak there); returns the nodes it carried something out on (their outbox sent).
 */
export async function checkAppliedLayouts(
  deps: MigRebalanceDeps,
  nodes: readonly NodeInfo[],
  busy: (node: string) => boolean,
): Promise<Set<string>> {
  const told = new Set<string>();
  let parted: string | undefined | null = null;
  for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    // A remediation at work (its state label other than `healthy`, which a restore leaves for good) may be resetting
    // GPUs and re-applying configs.
    const remediating = n.labels[STATE_LABEL] !== undefined && n.labels[STATE_LABEL] !== 'healthy';
    if (busy(n.name) || remediating) continue;
    const config = n.labels[MIG_CONFIG_LABEL];
    const state = n.labels[MIG_CONFIG_STATE_LABEL];
    const before = n.annotations[MIG_DRIFT_ANNOTATION];
    const ourConfig = config?.startsWith('gpu-reflex-') === true;
    let drift: string | undefined;
    if (ourConfig) {
      // mig-manager at work: its answer comes later.
      if (state === 'pending' || state === 'rebooting') continue;
      const { inventory: inv, problem } = readMigInventory(n.annotations);
      if (!inv) {
        deps.logger.info('rebalance-mig', {
          node: n.name,
          note:
            `${config} cannot be checked against the GPUs: ` + (problem ?? 'the node agent has no MIG inventory there'),
        });
        continue;
      }
      // Its agent stopped confirming it (dead, or not reading NVML): the GPUs' layout now is unknown, so it is neither
      // drift nor "holds again"; what was told stays as it was.
      const stale = migInventoryStale(inv, new Date(deps.clock.now()));
      if (stale) {
        deps.logger.info('rebalance-mig', {
          node: n.name,
          note: `${config} cannot be checked against the GPUs: ${stale}`,
        });
        continue;
      }
      if (parted === null) parted = await deps.migParted.read();
      const entry = partedEntryOf(parted, config);
      if (typeof entry === 'string') {
        deps.logger.warn('rebalance-mig', { node: n.name, note: `${config} cannot be checked: ${entry}` });
        continue;
      }
      const gpus = inv.gpus.map((g) => ({
        index: g.index,
        uuid: g.uuid,
        profiles: g.instances.map((i) => i.profile),
        ...(g.migModeUnknown !== undefined ? { migModeUnknown: g.migModeUnknown } : {}),
      }));
      drift = appliedDrift(config, state, entry, { at: inv.at, gpus })?.slice(0, 1024);
    }
    if (drift === before || (drift === undefined && before === undefined)) continue;
    const notices = drift
      ? [{ title: `gpu-reflex: the MIG layout on ${n.name} is not the one gpu-reflex applied`, text: drift }]
      : ourConfig
        ? [{ title: `gpu-reflex: the MIG layout on ${n.name} is again the one gpu-reflex applied`, text: config! }]
        : [];
    await carryOut(
      {
        node: n.name,
        pending: readOutbox(n.annotations),
        actions: {
          ...noActions<never>(),
          nodeEdit: { ...emptyEdit<never>(n.name), annotations: { [MIG_DRIFT_ANNOTATION]: drift ?? null } },
          notices: notices.map((x) => ({ ...x, severity: drift ? ('warning' as const) : ('info' as const) })),
        },
        events: () => [],
        basis: n,
        resentEachRound: true,
      },
      deps,
    );
    told.add(n.name);
    (drift ? deps.logger.warn : deps.logger.info).call(deps.logger, 'rebalance-mig', {
      node: n.name,
      drift: drift ?? `none: ${config ?? `${MIG_CONFIG_LABEL} no longer gpu-reflex's`}`,
    });
  }
  return told;
}
