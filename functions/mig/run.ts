/**
 * The MIG rebalancer, every minute (`rebalance-mig`): read the MIG nodes and pending pods, plan
 * (core/planner.ts), and move each node along the mig-manager protocol (core/rebalance.ts) on the
 * reflex skeleton: the node's labels, cordon and record in one patch with the MIG Layout Change
 * event recorded in its outbox, then published. At most `maxNodesAtOnce` nodes are reconfigured
 * at a time (a node being reconfigured is cordoned and its MIG allocatable is 0 meanwhile).
 */
import { readMigInventory } from '../../events/index.ts';
import type { Applied } from '../lib/apply.ts';
import { migResourceName } from '../lib/mig-profiles.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { readOutbox } from '../lib/outbox.ts';
import { emptyEdit, noActions } from '../lib/plan.ts';
import { carryOut } from '../lib/reflex.ts';
import { withLease } from '../lib/lease.ts';
import { checkAppliedLayouts } from './applied-check.ts';
import { approvedChanges } from './approval.ts';
import { clusterPolicyRefusal, partedConfigRefusal } from './core/parted-owner.ts';
import { withPartedEntry } from './core/parted.ts';
import { planMig } from './core/planner.ts';
import {
  MIG_CONFIG_LABEL,
  MIG_REBALANCE_ANNOTATION,
  readMigRecord,
  stepMigNode,
  type MigStep,
  type PlannedNodeChange,
} from './core/rebalance.ts';
import type { MigRebalanceDeps, MigRebalanceOutcome } from './deps.ts';
import { labelHeld, remediationHold } from './holds.ts';
import { blockedWords, layoutEvent } from './layout-event.ts';
import { remember, tellRefusal } from './refusal-memory.ts';
import { readMigFleet } from './supply.ts';

// Importable from here as before.
export {
  DEFAULT_MIG_REBALANCE_CONFIG,
  type MigRebalanceConfig,
  type MigRebalanceDeps,
  type MigRebalanceOutcome,
} from './deps.ts';
export { migApprovalId } from './approval.ts';

export async function rebalanceMig(deps: MigRebalanceDeps): Promise<MigRebalanceOutcome> {
  const idle = (): MigRebalanceOutcome => (
    deps.logger.info('rebalance-mig already running elsewhere'),
    { nodes: 0, steps: {}, pending: 0, satisfiedAfter: 0, underWay: [], failed: [] }
  );
  return withLease(
    'rebalance-mig',
    120,
    deps,
    async () => {
      const [nodes, pods] = await Promise.all([deps.nodes.list(), deps.pods.list()]);
      const fleet = readMigFleet(nodes, pods, undefined, {
        now: new Date(deps.clock.now()),
        seconds: deps.mig.minPendingSeconds,
      });
      for (const note of fleet.notes) deps.logger.info('rebalance-mig', { note });
      const records = new Map(nodes.map((n) => [n.name, readMigRecord(n.annotations)] as const));
      for (const [name, r] of records)
        if (r.problem) deps.logger.warn('rebalance-mig', { node: name, problem: r.problem });
      // A node under way is not planned again until it is done. Nor is one whose record cannot be read (a newer
      // gpu-reflex's, a hand edit): unknown, not absent — it may be a relayout under way or a failed one left for a
      // person, and a new start over it would record the in-flight config as the one to restore.
      const unreadable = (name: string) => records.get(name)?.problem !== undefined;
      for (const n of fleet.nodes) {
        if (records.get(n.name)?.record) for (const g of n.gpus) g.locked = 'a relayout is under way';
        else if (unreadable(n.name))
          for (const g of n.gpus)
            g.locked = `its ${MIG_REBALANCE_ANNOTATION} cannot be read: a person must fix or remove it`;
      }
      const plan = planMig(fleet.nodes, fleet.pending, deps.mig.preemption ? { preemption: deps.mig.preemption } : {});
      const byNode = new Map<string, PlannedNodeChange>();
      for (const c of plan.changes) {
        const n = fleet.nodes.find((x) => x.name === c.node)!;
        const p = byNode.get(c.node) ?? { current: n.gpus.map((g) => g.instances.map((i) => i.profile)), changes: [] };
        p.changes.push({ gpu: c.gpu, from: c.from, to: c.to, unblocks: c.unblocks, preempts: c.preempts });
        byNode.set(c.node, p);
      }
      const demand: Record<string, number> = {};
      for (const p of fleet.pending)
        for (const [profile, k] of Object.entries(p.requests))
          demand[migResourceName(profile)] = (demand[migResourceName(profile)] ?? 0) + k;
      let refusal: string | undefined;
      let refused: string | undefined;
      // An unreadable record counts as under way: MIG_MAX_NODES_AT_ONCE holds while it may be one.
      let underWay = [...records.values()].filter(
        (r) => (r.record && r.record.phase !== 'failed') || r.problem !== undefined,
      ).length;
      const steps: Record<string, MigStep['kind']> = {};
      for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
        const record = records.get(n.name)?.record;
        const proposed = byNode.get(n.name);
        const planned =
          proposed && !record
            ? await approvedChanges(
                deps,
                n.name,
                proposed,
                (gpu) => plan.changes.find((x) => x.node === n.name && x.gpu === gpu)?.why ?? `GPU ${gpu}`,
              )
            : proposed;
        if (!record && (!planned || underWay >= deps.mig.maxNodesAtOnce)) continue;
        const now = new Date(deps.clock.now());
        const held = remediationHold(n);
        // Preempted pods still there: the same pod (by uid, a StatefulSet's replacement keeps the name).
        const remaining = (record?.preempt ?? []).filter((r) =>
          pods.some(
            (p) =>
              p.namespace === r.namespace && p.name === r.name && p.nodeName === n.name && (!r.uid || p.uid === r.uid),
          ),
        );
        const inv = readMigInventory(n.annotations).inventory;
        let step = stepMigNode(
          {
            name: n.name,
            labels: n.labels,
            unschedulable: n.unschedulable,
            ...(inv
              ? {
                  inventory: {
                    at: inv.at,
                    gpus: inv.gpus.map((g) => ({ index: g.index, profiles: g.instances.map((i) => i.profile) })),
                  },
                }
              : {}),
            // What the scheduler can place: the relayout is done only once the kubelet reports the new devices.
            allocatable: Object.fromEntries(
              Object.entries(n.allocatable)
                .filter(([k]) => k.startsWith('nvidia.com/mig-'))
                .map(([k, v]) => [k, Number(v)]),
            ),
            ...(record ? { record } : {}),
            ...(held ? { heldBy: held } : {}),
            remaining,
          },
          planned,
          now,
          deps.mig,
        );
        if (step.kind === 'none' || step.kind === 'wait') continue;
        // Right before the label, the Node read again: the GPUs it relays must still be free (holds.ts).
        const hold = step.kind === 'label' && record ? await labelHeld(deps, n.name, record, now) : undefined;
        if (hold === 'held') continue;
        if (hold) step = hold;
        if (step.kind === 'evict') {
          const { applied } = await carryOut(
            {
              node: n.name,
              pending: readOutbox(n.annotations),
              actions: { ...noActions<never>(), evictions: step.evictions ?? [] },
              events: () => [],
              basis: n,
              resentEachRound: true,
            },
            deps,
          );
          deps.logger.info('rebalance-mig', {
            node: n.name,
            step: step.kind,
            why: `${step.why}${blockedWords(step, applied)}`,
          });
          steps[n.name] = step.kind;
          continue;
        }
        if (step.kind === 'start') {
          // Checked before the first write of each round: the ConfigMap must be gpu-reflex's own.
          // And mig-manager must read it: the ClusterPolicy names it (spec.migManager.config.name).
          refusal ??=
            partedConfigRefusal(deps.migParted.ref, await deps.migParted.ownership()) ??
            clusterPolicyRefusal(deps.migParted.ref, await deps.migParted.clusterPolicies()) ??
            '';
          if (refusal) {
            deps.logger.error('rebalance-mig', { node: n.name, refused: refusal });
            // The person running the cluster is told on the bus: the layout planned, not started, and the
            // command that fixes it (once a round, for the first node refused, as long as it holds).
            if (!refused) {
              const planned = layoutEvent(
                n.name,
                { ...step, state: 'planned', why: `not started: ${refusal}` },
                now,
                demand,
              );
              await tellRefusal(deps, refusal, planned);
            }
            refused = refusal;
            continue;
          }
          underWay++;
        }
        // The config first: the label that names it comes a sync later (core/rebalance.ts).
        if (step.config) {
          const { name, layout } = step.config;
          const keep = new Set([n.labels[MIG_CONFIG_LABEL]].filter((x): x is string => x !== undefined));
          await deps.migParted.update((text) => withPartedEntry(text, name, layout, keep));
        }
        const edit = {
          ...emptyEdit<never>(n.name),
          labels: step.labels,
          annotations: { [MIG_REBALANCE_ANNOTATION]: step.kind === 'done' ? null : JSON.stringify(step.record) },
          ...(step.unschedulable !== undefined ? { unschedulable: step.unschedulable } : {}),
        };
        const preempted =
          step.kind === 'start'
            ? (planned?.changes ?? []).flatMap(
                (c) => plan.changes.find((x) => x.node === n.name && x.gpu === c.gpu)?.preempts ?? [],
              )
            : [];
        const notices =
          step.kind === 'failed'
            ? [
                {
                  title: `gpu-reflex: MIG relayout failed on ${n.name}`,
                  text: step.why.slice(0, 500),
                  severity: 'warning' as const,
                },
              ]
            : [];
        if (preempted.length > 0 && deps.mig.preemption?.notify)
          notices.push({
            title: `gpu-reflex: preempting ${preempted.length} pod(s) on ${n.name} for a MIG relayout`,
            text: step.why.slice(0, 500),
            severity: 'warning' as const,
          });
        const eventRecord = step.record ?? record;
        const eventStep = { ...step, ...(eventRecord ? { record: eventRecord } : {}) };
        const events = (applied?: Applied) => {
          const e = layoutEvent(n.name, eventStep, now, step.kind === 'start' ? demand : {}, preempted, applied);
          return e ? [e] : [];
        };
        const { applied } = await carryOut(
          {
            node: n.name,
            pending: readOutbox(n.annotations),
            actions: { ...noActions<never>(), nodeEdit: edit, notices, evictions: step.evictions ?? [] },
            events,
            basis: n,
            resentEachRound: true,
          },
          deps,
        );
        if (blockedWords(step, applied))
          deps.logger.warn('rebalance-mig', { node: n.name, blocked: blockedWords(step, applied).slice(2) });
        deps.logger.info('rebalance-mig', { node: n.name, step: step.kind, why: step.why });
        steps[n.name] = step.kind;
      }
      const phaseAfter = (name: string) =>
        steps[name] === 'done'
          ? undefined
          : steps[name] === 'failed'
            ? 'failed'
            : steps[name] === 'start'
              ? 'writing'
              : records.get(name)?.record?.phase;
      // Checked and not refused: the refusal lifted, and the next one is news again.
      if (refusal === '') await remember(deps, undefined);
      // A layout gpu-reflex applied is checked every round, long after its relayout was done (applied-check.ts).
      const told = await checkAppliedLayouts(
        deps,
        nodes,
        (name) => steps[name] !== undefined || records.get(name)?.record !== undefined || !!records.get(name)?.problem,
      );
      // This round is the MIG nodes' sweep: a node it did not carry anything out on may still hold what an earlier
      // round never got out (a refused publish, a failed chat notice). A `done` or `failed` relayout is never
      // stepped again, and remediation's sweep lists only nodes with its state label, so nothing else sends it (a
      // node with that label is the sweep's to send: two senders would say a notice twice in chat).
      const ours = new Set([
        ...fleet.nodes.map((n) => n.name),
        ...[...records].filter(([, r]) => r.record).map(([k]) => k),
      ]);
      for (const n of nodes) {
        const pending = readOutbox(n.annotations);
        const quiet = pending.events.length === 0 && pending.notices.length === 0;
        if (steps[n.name] || told.has(n.name) || !ours.has(n.name) || STATE_LABEL in n.labels || quiet) continue;
        await carryOut(
          { node: n.name, pending, actions: noActions<never>(), events: () => [], basis: n, resentEachRound: true },
          deps,
        );
      }
      const names = nodes.map((n) => n.name).sort();
      return {
        nodes: fleet.nodes.length,
        steps,
        pending: fleet.pending.length,
        satisfiedAfter: plan.satisfiedAfter,
        underWay: names.filter((n) => phaseAfter(n) === 'writing' || phaseAfter(n) === 'applying'),
        failed: names.filter((n) => phaseAfter(n) === 'failed'),
        ...(refused ? { refused } : {}),
      };
    },
    idle,
  );
}
