/**
 * Applying a MIG plan through NVIDIA's mig-manager, one node at a time (issue #12). Pure: it
 * takes a node's labels, cordon and record, the planned GPU changes and the time, and returns
 * what to write. The protocol (docs/mig.md "How a layout is applied"):
 *
 *   writing   the node's whole layout (every GPU: changed ones with their new layout, the rest as
 *             they are, so mig-parted touches only the changed) goes into the mig-parted config
 *             under a name of its own, and the node is cordoned (new pods would land on instances
 *             about to be wiped); the label waits `configSyncSeconds`, as the kubelet takes up to
 *             a minute to show a ConfigMap's change in mig-manager's mounted file;
 *   applying  `nvidia.com/mig.config=<name>`; mig-manager writes `nvidia.com/mig.config.state`
 *             pending → (rebooting) → success | failed. Meanwhile the node's MIG allocatable drops
 *             to 0: that is not a fault;
 *   success   uncordoned (only if we cordoned it), the record removed;
 *   failed    (or no success within `timeoutMinutes`): the previous config label is put back, the
 *             node stays cordoned with the reason in the record, a person is told.
 *
 * Preemption (only where the policy allows it, core/policy.ts): the pods a change preempts are
 * evicted (Eviction API: PodDisruptionBudgets hold) in the same step that cordons, and the label
 * waits until every one of them has left the node, however long the config sync; an eviction a
 * budget blocks is asked again each round, so that GPU is not relaid this round; still blocked
 * after `timeoutMinutes`, the relayout fails before anything was relaid.
 */
import { fnv1a } from '../../lib/hash.ts';
import { layoutWords } from './layout.ts';
import { MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, MIG_REBALANCE_ANNOTATION, type MigRecord } from './mig-record.ts';
import {
  DEFAULT_MIG_REBALANCE,
  type MigNodeFacts,
  type MigRebalancePolicy,
  type MigStep,
  type PlannedNodeChange,
} from './rebalance-types.ts';
import { allocatableGap, inventoryGap } from './relayout-evidence.ts';

// Importable from here as before.
export {
  MIG_CONFIG_LABEL,
  MIG_CONFIG_STATE_LABEL,
  MIG_REBALANCE_ANNOTATION,
  MigRecordSchema,
  readMigRecord,
  type MigRecord,
} from './mig-record.ts';
export {
  DEFAULT_MIG_REBALANCE,
  type MigNodeFacts,
  type MigRebalancePolicy,
  type MigStep,
  type PlannedNodeChange,
} from './rebalance-types.ts';

/** A config name of our own for one node's layout: a label value (≤ 63 of [A-Za-z0-9._-]). */
export function migConfigName(node: string, layout: readonly (readonly string[])[]): string {
  const slug = node
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .slice(0, 40)
    .replace(/[-.]+$/, '');
  return `gpu-reflex-${slug}-${fnv1a(JSON.stringify([node, layout])).slice(0, 8)}`;
}

/**
 * A relayout whose `nvidia.com/mig.config` could not be set within its timeout (`why`: what kept it, a preempted pod
 * that never left, a GPU found in use right before the label, holds.ts): failed, nothing relaid, the node left
 * cordoned for a person, who is told (run.ts) — never waited on round after round with nobody knowing.
 */
export function neverLabelled(r: MigRecord, why: string, now: Date): MigStep {
  const reason = `${why}; ${MIG_CONFIG_LABEL} was never set, nothing was relaid`;
  return {
    kind: 'failed',
    labels: {},
    record: { ...r, phase: 'failed', since: now.toISOString(), reason },
    state: 'failed',
    why:
      `${reason}; the node stays cordoned for a person to look (remove ${MIG_REBALANCE_ANNOTATION} and ` +
      `uncordon when done)`,
  };
}

export function stepMigNode(
  n: MigNodeFacts,
  planned: PlannedNodeChange | undefined,
  now: Date,
  policy: MigRebalancePolicy = DEFAULT_MIG_REBALANCE,
): MigStep {
  const at = now.toISOString();
  const r = n.record;
  if (!r) {
    if (!planned || planned.changes.length === 0) return { kind: 'none', labels: {}, why: '' };
    const layout = planned.current.map((l, gpu) => planned.changes.find((c) => c.gpu === gpu)?.to ?? l);
    const config = migConfigName(n.name, layout);
    const record: MigRecord = {
      v: 1,
      phase: 'writing',
      config,
      previous: n.labels[MIG_CONFIG_LABEL] ?? null,
      cordoned: !n.unschedulable,
      since: at,
      gpus: planned.changes.map((c) => ({ gpu: c.gpu, from: c.from, to: c.to })),
      layout,
      unblocks: [...new Set(planned.changes.flatMap((c) => c.unblocks))].slice(0, 64),
    };
    const preempt = planned.changes
      .flatMap((c) => c.preempts ?? [])
      .map((p) => ({ namespace: p.namespace, name: p.name, ...(p.uid ? { uid: p.uid } : {}) }));
    if (preempt.length > 0) record.preempt = preempt.slice(0, 64);
    const what = planned.changes.map((c) => `GPU ${c.gpu} ${layoutWords(c.from)} → ${layoutWords(c.to)}`).join(', ');
    const touched =
      preempt.length === 0
        ? 'no instance in use is touched'
        : `preempting ${preempt.map((p) => `${p.namespace}/${p.name}`).join(', ')}: evicted now, the label waits ` +
          `until they have left`;
    return {
      kind: 'start',
      config: { name: config, layout },
      labels: {},
      ...(n.unschedulable ? {} : { unschedulable: true }),
      record,
      ...(preempt.length > 0 ? { evictions: preempt } : {}),
      state: 'pending',
      why:
        `${what} for ${record.unblocks.length} pending pod(s); mig-parted config ${config} written, node cordoned ` +
        `while mig-manager works (${touched}); the label follows in ${policy.configSyncSeconds} s`,
    };
  }
  if (r.phase === 'failed') return { kind: 'none', labels: {}, why: '' };
  const elapsed = now.getTime() - Date.parse(r.since);
  if (r.phase === 'writing') {
    const left = n.remaining ?? [];
    if (left.length > 0) {
      const names = left.map((p) => `${p.namespace}/${p.name}`).join(', ');
      if (elapsed < policy.timeoutMinutes * 60_000) {
        // Asked again each round: a budget that blocked may allow it now; a terminating pod answers evicted.
        return {
          kind: 'evict',
          labels: {},
          evictions: left,
          why:
            `waiting for preempted pod(s) ${names} to leave ${n.name} before ${MIG_CONFIG_LABEL} is set: ` +
            `GPU(s) ${r.gpus.map((g) => g.gpu).join(', ')} not relaid this round`,
        };
      }
      return neverLabelled(
        r,
        `preempted pod(s) ${names} did not leave within ${policy.timeoutMinutes} min (a ` +
          `PodDisruptionBudget blocks the eviction, or they do not terminate)`,
        now,
      );
    }
    if (elapsed < policy.configSyncSeconds * 1000) return { kind: 'wait', labels: {}, why: '' };
    return {
      kind: 'label',
      // The state label is the *last* run's result: removed with our write, so a `success` read later
      // is mig-manager's answer to this change, never the one before (issue #30).
      labels: { [MIG_CONFIG_LABEL]: r.config, [MIG_CONFIG_STATE_LABEL]: null },
      record: { ...r, phase: 'applying', since: at, stateCleared: true },
      why:
        `${MIG_CONFIG_LABEL}=${r.config} set; mig-manager ` +
        `reconfigures ${r.gpus.map((g) => `GPU ${g.gpu}`).join(', ')}`,
    };
  }
  const state = n.labels[MIG_CONFIG_STATE_LABEL];
  const ours = n.labels[MIG_CONFIG_LABEL] === r.config;
  const late = elapsed >= policy.timeoutMinutes * 60_000;
  if (ours && (state === 'pending' || state === 'rebooting') && !r.sawPending)
    return {
      kind: 'observe',
      labels: {},
      record: { ...r, sawPending: true },
      why: `mig-manager took ${r.config} on ${n.name} (${MIG_CONFIG_STATE_LABEL}=${state})`,
    };
  // Completion from evidence: mig-manager ran for this change (pending seen, or a state written after
  // ours removed the old one) and the agent's NVML inventory, newer than the change, shows the layout.
  const ran = r.sawPending === true || (r.stateCleared === true && state !== undefined);
  const gap =
    ours && state === 'success' && ran ? (inventoryGap(r, n.inventory) ?? allocatableGap(r, n.allocatable)) : undefined;
  if (ours && state === 'success' && ran && !gap) {
    const uncordon = r.cordoned && !n.heldBy;
    const after = uncordon
      ? '; uncordoned'
      : r.cordoned
        ? `; left cordoned: ${n.heldBy}`
        : '; left cordoned as it was before';
    return {
      kind: 'done',
      labels: {},
      ...(uncordon ? { unschedulable: false } : {}),
      state: 'success',
      why:
        `mig-manager applied ${r.config} ` +
        `(${r.gpus.map((g) => `GPU ${g.gpu} ${layoutWords(g.to)}`).join(', ')})${after}`,
    };
  }
  const failed = ours && state === 'failed' && ran;
  if (!failed && !late && ours) return { kind: 'wait', labels: {}, why: '' };
  const reason = failed
    ? `mig-manager reports ${MIG_CONFIG_STATE_LABEL}=failed for ${r.config}`
    : !ours
      ? `${MIG_CONFIG_LABEL} was changed to ${n.labels[MIG_CONFIG_LABEL] ?? '(removed)'} by someone else ` +
        `while ${r.config} was applying`
      : !ran
        ? `mig-manager never took ${r.config} within ${policy.timeoutMinutes} min (${MIG_CONFIG_STATE_LABEL} ` +
          `${state === undefined ? 'never written' : `still ${state} from before`} since ` +
          `${MIG_CONFIG_LABEL} was set: is mig-manager running on the node?)`
        : gap
          ? `mig-manager reported success for ${r.config}, but within ${policy.timeoutMinutes} min ${gap}`
          : `mig-manager did not report success for ${r.config} within ${policy.timeoutMinutes} min ` +
            `(state: ${state ?? 'none'})`;
  return {
    kind: 'failed',
    // Put the previous layout's name back only where the label is still ours.
    labels: ours ? { [MIG_CONFIG_LABEL]: r.previous } : {},
    record: { ...r, phase: 'failed', since: at, reason },
    state: 'failed',
    why:
      `${reason}; ${ours ? `${MIG_CONFIG_LABEL} set back to ${r.previous ?? '(none)'}, ` : ''}the node stays ` +
      `cordoned for a person to look (remove ${MIG_REBALANCE_ANNOTATION} and uncordon when done)`,
  };
}
