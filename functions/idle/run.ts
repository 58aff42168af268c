/**
 * idle-gpus: on each `GPU Utilization Summary`, read the node and its pods, plan (core/planner.ts, pure)
 * and carry the plan out on the reflex skeleton: the node's idle record and the `GPU Idle Allocation`
 * events and chat notices (the outbox) in one patch sent against the node as read (its resourceVersion
 * is the lock: a summary of one node touches only that node), then the evictions an opted-in namespace's
 * deadline calls for, through the Eviction API (a PodDisruptionBudget holds it: asked again next window).
 */
import {
  GPU_IDLE_ALLOCATION,
  SCHEMA_VERSION,
  SOURCES,
  type GpuIdleAllocationDetail,
  type GpuUtilizationSummaryDetail,
} from '../../events/index.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { EventRecorder, NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';
import {
  closeApproval,
  getApproval,
  IDLE_APPROVALS_SHARD,
  recordApproval,
  type ApprovalRecord,
} from '../lib/approvals.ts';
import { readOutbox } from '../lib/outbox.ts';
import { emptyEdit, noActions, type Actions } from '../lib/plan.ts';
import { carryOut } from '../lib/reflex.ts';
import { idleApprovalId, planIdle, type IdleFinding, type IdlePlan } from './core/planner.ts';
import type { IdlePolicy } from './core/policy.ts';
import { encodeIdleRecord, readIdleRecord, type IdleRecord } from '../lib/idle-record.ts';

export interface IdleDeps {
  nodes: Pick<NodeOps, 'get' | 'update' | 'setCondition'>;
  pods: Pick<PodOps, 'listOnNode' | 'evict'>;
  publisher: EventPublisher;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  policy: IdlePolicy;
  /** Kubernetes Events on the pods (`kubectl describe pod` says why); absent: none recorded. */
  events?: EventRecorder;
  /** The approval store (evict.approvalMinutes); absent: an eviction that needs approval never happens. */
  state?: StateStore;
}

export interface IdleOutcome {
  plan: IdlePlan;
  published: number;
  evictions: { pod: string; result: string }[];
}

const iso = (ms: number) => new Date(ms).toISOString();

export function idleEvent(plan: IdlePlan, f: IdleFinding, now: number): PublishedEvent {
  const t = f.track;
  const detail: GpuIdleAllocationDetail = {
    schemaVersion: SCHEMA_VERSION,
    // One per idle run and state: a redelivered summary renders the same event.
    eventId: `idle:${plan.node}:${t.device}:${t.since}:${f.state}`.slice(0, 128),
    occurredAt: iso(now),
    state: f.state,
    node: plan.node,
    gpu: t.gpu,
    ...(t.mig ? { mig: t.mig } : {}),
    pod: { namespace: t.namespace, name: t.pod },
    team: f.team.slice(0, 63),
    idleSince: iso(t.since),
    idleSeconds: Math.max(0, Math.round(f.idleMs / 1000)),
    thresholdPercent: f.rule.thresholdPercent,
    windowSeconds: Math.round(f.rule.windowMs / 1000),
    ...(f.cost ? { cost: f.cost } : {}),
    ...(t.evictAt !== undefined && f.state !== 'cancelled' ? { evictAt: iso(t.evictAt) } : {}),
    reason: f.reason.slice(0, 1024),
    dryRun: false,
  };
  return {
    source: SOURCES.functions,
    detailType: GPU_IDLE_ALLOCATION,
    detail,
    resources: [`node/${plan.node}`, `pod/${t.namespace}/${t.pod}`],
  };
}

/** What the owner reads in chat: the pod, the hours idle, what they cost, and what happens next. */
export function idleNotice(f: IdleFinding): Notice {
  const who = `${f.track.namespace}/${f.track.pod}`;
  const to = f.owner ? `${f.owner} ` : '';
  const title =
    f.state === 'idle'
      ? `Idle GPU: ${who} (team ${f.team})`
      : f.state === 'evicted'
        ? `Idle GPU reclaimed: ${who} evicted`
        : `GPU working again: ${who}`;
  return { title, text: `${to}${f.reason}`, severity: f.state === 'cancelled' ? 'info' : 'warning' };
}

export function idleActions(plan: IdlePlan): Actions<IdleRecord> {
  return {
    ...noActions<IdleRecord>(),
    ...(plan.recordChanged ? { nodeEdit: { ...emptyEdit<IdleRecord>(plan.node), record: plan.record } } : {}),
    evictions: plan.evictions,
    notices: plan.findings.map(idleNotice),
    // What the pod's owner sees in `kubectl describe pod`: told idle, reclaimed (after the eviction).
    podEvents: plan.findings
      .filter((f) => f.state !== 'cancelled')
      .map((f) => ({
        pod: { namespace: f.track.namespace, name: f.track.pod },
        note:
          f.state === 'idle'
            ? { type: 'Warning' as const, reason: 'GpuIdle', action: 'Notify', note: f.reason }
            : { type: 'Warning' as const, reason: 'IdleGpuReclaimed', action: 'Evict', note: f.reason },
      })),
  };
}

export async function watchIdle(deps: IdleDeps, s: GpuUtilizationSummaryDetail): Promise<IdleOutcome> {
  // A node gone is NotFoundError: already done (the handler acknowledges it).
  const node = await deps.nodes.get(s.node);
  const read = readIdleRecord(node.annotations);
  const warning = read.warning;
  if (warning) deps.logger.warn('idle-gpus', { node: node.name, warning });
  // A record that does not parse (another version's: a rollback) held runs now lost. The cost report reads such a
  // node's idle share as unknown; the record written over it says from when it is whole again (historyFrom), so
  // the lost idle time never reads as none (docs/cost.md, Cost per team).
  const record: IdleRecord = warning ? { tracks: [], historyFrom: Date.parse(s.windowStart) } : read.record;
  // Without holders the planner ends the node's open runs: their pods name the owners it tells.
  const listPods = s.holders ? s.holders.length > 0 : record.tracks.length > 0;
  const pods = listPods ? await deps.pods.listOnNode(node.name) : [];
  const approvals = await approvalsOf(deps, node.name, record);
  const plan = planIdle({ node, summary: s, pods, record, approvals }, deps.policy);
  if (plan.skipped) deps.logger.info('idle-gpus: nothing decided', { node: node.name, why: plan.skipped });
  for (const why of plan.held ?? []) deps.logger.info('idle-gpus: eviction held', { node: node.name, why });
  const out = await carryOut(
    {
      node: node.name,
      pending: readOutbox(node.annotations),
      actions: idleActions(plan),
      events: () => plan.findings.map((f) => idleEvent(plan, f, deps.clock.now())),
      codec: encodeIdleRecord,
      basis: node,
    },
    deps,
  );
  for (const f of plan.findings) deps.logger.info('idle-gpus', { node: node.name, state: f.state, reason: f.reason });
  await askApprovals(deps, plan);
  return {
    plan,
    published: out.published.length,
    evictions: plan.evictions.map((p, i) => ({
      pod: `${p.namespace}/${p.name}`,
      result: out.applied.evictions[i]?.result ?? 'unknown',
    })),
  };
}

/** The approvals asked for the record's tracks past their deadline, by id (none without a store). */
async function approvalsOf(deps: IdleDeps, node: string, record: IdleRecord): Promise<Record<string, ApprovalRecord>> {
  const out: Record<string, ApprovalRecord> = {};
  if (!deps.state) return out;
  const now = deps.clock.now();
  for (const t of record.tracks) {
    if (t.evictAt === undefined || t.evictedAt !== undefined || now < t.evictAt - 3_600_000) continue;
    const id = idleApprovalId(node, t);
    const rec = await getApproval(deps.state, id, IDLE_APPROVALS_SHARD);
    if (rec) out[id] = rec;
  }
  return out;
}

/**
 * Evictions a person must approve: told first (the chat notice carries the approval id), then recorded
 * open — a notice that fails is asked again next window, never lost; expired ones closed.
 */
async function askApprovals(deps: IdleDeps, plan: IdlePlan): Promise<void> {
  const now = new Date(deps.clock.now());
  if (!deps.state) {
    for (const a of plan.asks)
      deps.logger.warn('idle-gpus', {
        node: plan.node,
        pod: a.pod,
        problem: 'eviction needs approval, no store: kept',
      });
    return;
  }
  for (const id of plan.expired)
    await closeApproval(deps.state, id, 'expired', { at: now, note: 'expired undecided' }, IDLE_APPROVALS_SHARD);
  for (const a of plan.asks) {
    await deps.notifier.notify({
      title: `gpu-reflex: approve evicting idle ${a.pod}?`,
      text: a.reason.slice(0, 1500),
      severity: 'warning',
      approval: { id: a.id },
    });
    await recordApproval(
      deps.state,
      {
        id: a.id,
        node: a.node,
        incident: `idle/${a.node}`,
        action: 'idle-evict',
        scope: 'pod',
        target: { gpus: [a.device], pods: [a.pod] },
        requestedAt: now.toISOString(),
        expiresAt: new Date(a.expiresAt).toISOString(),
        approvers: [],
        status: 'open',
        idle: { pod: a.pod, device: a.device },
      },
      IDLE_APPROVALS_SHARD,
    );
  }
}
