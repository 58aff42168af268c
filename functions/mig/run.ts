/**
 * The MIG rebalancer, every minute (`rebalance-mig`): read the MIG nodes and pending pods, plan
 * (core/planner.ts), and move each node along the mig-manager protocol (core/rebalance.ts) on the
 * reflex skeleton: the node's labels, cordon and record in one patch with the MIG Layout Change
 * event recorded in its outbox, then published. At most `maxNodesAtOnce` nodes are reconfigured
 * at a time (a node being reconfigured is cordoned and its MIG allocatable is 0 meanwhile).
 */
import {
  MIG_LAYOUT_CHANGE,
  readMigInventory,
  SCHEMA_VERSION,
  SOURCES,
  type MigLayoutChangeDetail,
} from '../../events/index.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { ConfigFileOps, LeaseOps, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import { closeApproval, getApproval, MIG_APPROVALS_SHARD, recordApproval } from '../lib/approvals.ts';
import { fnv1a } from '../lib/hash.ts';
import { DEFAULT_TAINT_KEY, STATE_LABEL } from '../lib/node-state.ts';
import type { Logger } from '../adapters/logger.ts';
import type { Applied } from '../lib/apply.ts';
import { readOutbox } from '../lib/outbox.ts';
import { emptyEdit, noActions } from '../lib/plan.ts';
import { carryOut, withLease } from '../lib/reflex.ts';
import { countProfiles } from './core/layout.ts';
import { clusterPolicyRefusal, partedConfigRefusal } from './core/parted-owner.ts';
import { withPartedEntry } from './core/parted.ts';
import { planMig, type MigHolder } from './core/planner.ts';
import type { PreemptionPolicy } from './core/policy.ts';
import { migResourceName } from '../lib/mig-profiles.ts';
import {
  MIG_CONFIG_LABEL,
  MIG_REBALANCE_ANNOTATION,
  readMigRecord,
  stepMigNode,
  type MigRebalancePolicy,
  type MigStep,
  type PlannedNodeChange,
} from './core/rebalance.ts';
import { readMigFleet } from './supply.ts';

export interface MigRebalanceConfig extends MigRebalancePolicy {
  /** MIG_POLICY_FILE's preemption (core/policy.ts); absent: off. */
  preemption?: PreemptionPolicy;
  /** Nodes under reconfiguration at once (each is cordoned meanwhile). */
  maxNodesAtOnce: number;
  /** A pending pod counts as demand once it has waited this long (the scheduler may still bind it). */
  minPendingSeconds: number;
}

export const DEFAULT_MIG_REBALANCE_CONFIG: MigRebalanceConfig = {
  configSyncSeconds: 90,
  timeoutMinutes: 20,
  maxNodesAtOnce: 1,
  minPendingSeconds: 60,
};

export interface MigRebalanceDeps {
  nodes: NodeOps;
  pods: PodOps;
  leases: LeaseOps;
  migParted: ConfigFileOps;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  holder: string;
  mig: MigRebalanceConfig;
  /** Where approvals of preempting relayouts are kept (the policy's `approvalMinutes`). */
  state?: StateStore;
}

type NodeChange = PlannedNodeChange['changes'][number];

/** The approval id of a preempting relayout: the node, the GPUs, their new layouts and who is preempted. */
export function migApprovalId(node: string, changes: readonly NodeChange[]): string {
  return (
    'apr-mig-' +
    fnv1a(
      JSON.stringify([
        node,
        changes.map((c) => [
          c.gpu,
          [...c.to].sort(),
          (c.preempts ?? []).map((h) => `${h.namespace}/${h.name}/${h.uid ?? ''}`).sort(),
        ]),
      ]),
    )
  );
}

/**
 * With `approvalMinutes` set, a node's preempting changes go ahead only once approved in chat: the
 * first round asks (a notice with the approval id), later rounds wait; denied, expired or no
 * state store to keep the approval in, those GPUs keep their layouts. The node's other changes
 * go ahead meanwhile. The same pods on the same GPUs are asked about once.
 */
async function approvedChanges(
  deps: MigRebalanceDeps,
  node: string,
  planned: PlannedNodeChange,
  why: (gpu: number) => string,
): Promise<PlannedNodeChange | undefined> {
  const minutes = deps.mig.preemption?.approvalMinutes;
  const preempting = planned.changes.filter((c) => (c.preempts ?? []).length > 0);
  if (!minutes || preempting.length === 0) return planned;
  const others = planned.changes.filter((c) => !preempting.includes(c));
  const without = others.length > 0 ? { ...planned, changes: others } : undefined;
  if (!deps.state) {
    deps.logger.warn('rebalance-mig', {
      node,
      problem: 'preempting relayouts need approval, and there is no state store to keep approvals in: not preempting',
    });
    return without;
  }
  const id = migApprovalId(node, preempting);
  const now = new Date(deps.clock.now());
  const rec = await getApproval(deps.state, id, MIG_APPROVALS_SHARD);
  if (rec?.status === 'approved-applied') return planned;
  if (rec?.status === 'open' && now.getTime() >= Date.parse(rec.expiresAt))
    await closeApproval(deps.state, id, 'expired', { at: now, note: 'expired undecided' }, MIG_APPROVALS_SHARD);
  if (rec) {
    deps.logger.info('rebalance-mig', {
      node,
      approval: id,
      status: rec.status,
      why: 'preempting relayout not approved (yet): those GPUs keep their layouts',
    });
    return without;
  }
  const pods = preempting.flatMap((c) => (c.preempts ?? []).map((h) => `${h.namespace}/${h.name}`));
  // Told first, then recorded: a notice that fails is asked again next round, never lost.
  await deps.notifier.notify({
    title: `gpu-reflex: approve preempting ${pods.length} pod(s) on ${node} for a MIG relayout?`,
    text: (
      `${preempting.map((c) => why(c.gpu)).join('; ')}. Answer "approve ${id}" or "deny ${id}" ` +
      `within ${minutes} min`
    ).slice(0, 1500),
    severity: 'warning',
    approval: { id },
  });
  await recordApproval(
    deps.state,
    {
      id,
      node,
      incident: `mig/${node}`,
      action: 'mig-preempt',
      scope: 'gpu',
      target: { gpus: preempting.map((c) => String(c.gpu)), pods },
      requestedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + minutes * 60_000).toISOString(),
      approvers: [],
      status: 'open',
      mig: { gpus: preempting.map((c) => c.gpu), preempts: pods },
    },
    MIG_APPROVALS_SHARD,
  );
  deps.logger.info('rebalance-mig', { node, approval: id, why: 'preempting relayout asked for approval' });
  return without;
}

export interface MigRebalanceOutcome {
  /** MIG nodes read. */
  nodes: number;
  /** Node → what this round did (`start`, `evict`, `label`, `done`, `failed`). */
  steps: Record<string, MigStep['kind']>;
  /** Pending MIG pods, and how many the plan would let run. */
  pending: number;
  satisfiedAfter: number;
  /** Nodes whose relayout is under way after this round, and ones left failed for a person. */
  underWay: string[];
  failed: string[];
  /** Why no relayout started: the mig-parted ConfigMap is not gpu-reflex's to write (core/parted-owner.ts). */
  refused?: string;
}

const profileCounts = (l: readonly string[]) => Object.fromEntries(countProfiles(l));

function layoutEvent(
  node: string,
  step: Omit<MigStep, 'state'> & { state?: MigLayoutChangeDetail['state'] },
  now: Date,
  demand: Record<string, number>,
  preempted: readonly MigHolder[] = [],
  applied?: Applied,
): PublishedEvent | undefined {
  const r = step.record;
  if (!step.state || !r) return undefined;
  const detail: MigLayoutChangeDetail = {
    schemaVersion: SCHEMA_VERSION,
    // A refused start (`planned`) must not share the id of the start that may follow once fixed.
    eventId: `mig:${node}:${r.config}:${step.state === 'planned' ? 'planned' : step.kind}`.slice(0, 128),
    occurredAt: now.toISOString(),
    node,
    config: r.config,
    state: step.state,
    gpus: r.gpus.map((g) => ({ index: g.gpu, from: profileCounts(g.from), to: profileCounts(g.to) })),
    ...(Object.keys(demand).length > 0 ? { demand } : {}),
    evictedPods: applied?.evictions.filter((e) => e.result === 'done' || e.result === 'already').length ?? 0,
    ...(preempted.length > 0
      ? {
          preempted: preempted
            .slice(0, 64)
            .map((p) => ({ namespace: p.namespace, name: p.name, priority: p.priority })),
        }
      : {}),
    reason: `${step.why}${blockedWords(step, applied)}`.slice(0, 2048),
    dryRun: false,
  };
  return { source: SOURCES.functions, detailType: MIG_LAYOUT_CHANGE, detail, resources: [`node/${node}`] };
}

/**
 * The refusal to write the mig-parted ConfigMap is told once, not every round while it holds (one 'planned' event
 * per refusal text; a state store remembers what was told, and forgets it once a round starts or finds nothing
 * refused). Without a state store it is told every round, as before.
 */
const REFUSAL_KEY = 'mig-parted-refusal';

async function toldBefore(deps: MigRebalanceDeps, refusal: string): Promise<boolean> {
  if (!deps.state) return false;
  const told = (await deps.state.get(REFUSAL_KEY)) as { refusal?: string } | undefined;
  return told?.refusal === refusal;
}

async function remember(deps: MigRebalanceDeps, refusal: string | undefined): Promise<void> {
  if (!deps.state) return;
  if (refusal === undefined && (await deps.state.get(REFUSAL_KEY)) === undefined) return;
  await deps.state.update(REFUSAL_KEY, () =>
    refusal === undefined ? undefined : { refusal, at: new Date(deps.clock.now()).toISOString() },
  );
}

/** What the Eviction API refused, in words: that GPU is not relaid this round. */
function blockedWords(step: Pick<MigStep, 'evictions'>, applied?: Applied): string {
  const blocked = (step.evictions ?? []).filter(
    (_, i) => applied?.evictions[i]?.result === 'blocked' || applied?.evictions[i]?.result === 'failed',
  );
  if (blocked.length === 0) return '';
  return (
    `; eviction of ${blocked.map((p) => `${p.namespace}/${p.name}`).join(', ')} refused ` +
    `(${applied!.evictions.find((e) => e.result === 'blocked' || e.result === 'failed')?.message ?? ''}): not ` +
    `relaid this round, asked again each minute`
  );
}

/** A remediation that keeps the node out (its state label or taint): the relayout must not uncordon it. */
function remediationHold(n: NodeInfo): string | undefined {
  const state = n.labels[STATE_LABEL];
  if (state && state !== 'healthy' && state !== 'quarantined')
    return `gpu-reflex remediation holds it (${STATE_LABEL}=${state})`;
  if (n.taints.some((t) => t.key === DEFAULT_TAINT_KEY))
    return `gpu-reflex remediation holds it (taint ${DEFAULT_TAINT_KEY})`;
  return undefined;
}

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
      // A node under way is not planned again until it is done.
      for (const n of fleet.nodes)
        if (records.get(n.name)?.record) for (const g of n.gpus) g.locked = 'a relayout is under way';
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
      let underWay = [...records.values()].filter((r) => r.record && r.record.phase !== 'failed').length;
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
        const step = stepMigNode(
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
        if (step.kind === 'evict') {
          const { applied } = await carryOut(
            {
              node: n.name,
              pending: readOutbox(n.annotations),
              actions: { ...noActions<never>(), evictions: step.evictions ?? [] },
              events: () => [],
              basis: n,
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
            if (!refused && !(await toldBefore(deps, refusal))) {
              const planned = layoutEvent(
                n.name,
                { ...step, state: 'planned', why: `not started: ${refusal}` },
                now,
                demand,
              );
              if (planned) await deps.publisher.publish([planned]);
              await remember(deps, refusal);
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
