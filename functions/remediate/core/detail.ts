/**
 * Builds the `Remediation` event detail (events/catalog/remediation.ts) from a plan and what
 * happened to each of its steps, and validates it against the catalog schema. The event id is
 * deterministic (incident + observedAt + the decided phase), so publishing it twice is one event.
 */
import {
  APPROVAL_REQUESTED,
  ApprovalRequestedDetailSchema,
  parseDetail,
  REMEDIATION,
  RemediationDetailSchema,
  SCHEMA_VERSION,
  type ApprovalRequestedDetail,
  type RemediationDetail,
  type RemediationStep,
} from '../../../events/index.ts';
import type { Applied, StepOutcome } from '../../lib/apply.ts';
import type { CloudAction } from '../../lib/plan.ts';
import { nodeTarget, podTarget } from './scope.ts';
import { HISTORY_ANNOTATION } from './state.ts';
import type { Plan, RemediationPhase } from './types.ts';
import { fnv1a } from '../../lib/hash.ts';

export type StepResult = Pick<RemediationStep, 'result' | 'message'>;

/** A step as the event shows it: rendered from the plan's typed actions, never parsed back. */
export interface RenderedStep {
  kind: RemediationStep['kind'];
  target: string;
  message?: string;
  /** Where its outcome is found in `Applied`. */
  from:
    | { part: 'nodeEdit' }
    | { part: 'evictions' | 'notices' | 'cloud' | 'deviceTaints'; index: number }
    | { part: 'approval' }
    | { part: 'cardFences' };
}

/** The plan's actions as Remediation steps, in the order the applier carries them out. */
export function renderSteps(plan: Plan): RenderedStep[] {
  const node = nodeTarget(plan.target.node);
  const steps: RenderedStep[] = [];
  const e = plan.nodeEdit;
  if (e) {
    const from = { part: 'nodeEdit' } as const;
    for (const t of e.addTaints)
      steps.push({ kind: 'taint', target: node, message: `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`, from });
    for (const t of e.removeTaints)
      steps.push({ kind: 'untaint', target: node, message: `${t.key}:${t.effect}`, from });
    if (e.unschedulable !== undefined)
      steps.push({ kind: e.unschedulable ? 'cordon' : 'uncordon', target: node, from });
    for (const [k, v] of Object.entries(e.labels))
      steps.push({ kind: 'label', target: node, message: v === null ? `${k}-` : `${k}=${v}`, from });
    for (const [k, v] of Object.entries(e.annotations))
      steps.push({ kind: 'annotate', target: node, message: v === null ? `${k}-` : `${k}=${v}`, from });
    // The GPU actions (merged into the node's requests by the applier) are shown as what they ask.
    for (const r of plan.gpuActions ?? [])
      steps.push({
        kind: r.action === 'drain-on' || r.action === 'drain-off' || r.action === 'mig-cleanup' ? 'annotate' : r.action,
        target: `${node}/gpu/${r.gpu}`,
        message: `asked of the node agent (${r.id})`,
        from,
      });
    if (e.record !== undefined) steps.push({ kind: 'annotate', target: node, message: HISTORY_ANNOTATION, from });
    if (e.condition)
      steps.push({
        kind: 'condition',
        target: node,
        message: `${e.condition.type}=${e.condition.status}: ${e.condition.message}`,
        from,
      });
  }
  const dra = plan.deviceTaints;
  if (dra) {
    dra.add.forEach((t, index) =>
      steps.push({
        kind: 'fence',
        target: `${node}/gpu/${t.gpuUuid}`,
        message:
          `DeviceTaintRule ${t.name}: ${t.taint.key}=${t.taint.value}:${t.taint.effect} on ` +
          `DRA device ${t.driver}/${t.pool}/${t.device}`,
        from: { part: 'deviceTaints', index },
      }),
    );
    dra.remove.forEach((t, i) =>
      steps.push({
        kind: 'unfence',
        target: `${node}/gpu/${t.gpuUuid}`,
        message: `DeviceTaintRule ${t.name} deleted`,
        from: { part: 'deviceTaints', index: dra.add.length + i },
      }),
    );
  }
  const cards = plan.cardFences;
  if (cards) {
    // One write of ACK gpushare's ConfigMap carries every card's change: each step shares its outcome.
    const cm = `ConfigMap kube-system/unhealthy-gpu-${cards.node}`;
    for (const c of cards.add)
      steps.push({
        kind: 'fence',
        target: `${node}/card/${c}`,
        message: `card ${c} listed in ${cm} (gpus)`,
        from: { part: 'cardFences' },
      });
    for (const c of cards.remove)
      steps.push({
        kind: 'unfence',
        target: `${node}/card/${c}`,
        message: `card ${c} taken out of ${cm} (gpus)`,
        from: { part: 'cardFences' },
      });
  }
  plan.evictions.forEach((p, index) =>
    steps.push({ kind: 'evict', target: podTarget(p), from: { part: 'evictions', index } }),
  );
  if (plan.approval)
    steps.push({ kind: 'approval', target: node, message: plan.approval.summary, from: { part: 'approval' } });
  plan.notices.forEach((n, index) =>
    steps.push({ kind: 'notify', target: node, message: n.text, from: { part: 'notices', index } }),
  );
  plan.cloud.forEach((c, index) =>
    steps.push({
      kind: c.kind,
      target: c.kind === 'scale' ? `pool/${c.pool}` : nodeTarget(c.node),
      ...(c.kind === 'replace' ? { message: replaceStepWords(c) } : {}),
      from: { part: 'cloud', index },
    }),
  );
  return steps;
}

function replaceStepWords(c: Extract<CloudAction, { kind: 'replace' }>): string {
  return c.step === 'grow'
    ? `node pool ${c.pool}: desired size ${c.from} → ${c.to} (capacity first)`
    : `node pool ${c.pool}: instance ${c.instanceId} removed and released (RemoveNodePoolNodes)`;
}

function outcomeOf(step: RenderedStep, applied: Applied): StepOutcome | undefined {
  const f = step.from;
  if (f.part === 'nodeEdit') return applied.nodeEdit;
  if (f.part === 'approval') return { result: 'done' };
  if (f.part === 'deviceTaints') return applied.deviceTaints?.[f.index];
  if (f.part === 'cardFences') return applied.cardFences;
  return applied[f.part][f.index];
}

/**
 * The Remediation event of a plan. `applied` is what the applier answered; leave it out to
 * describe the decision before acting. `dryRun` marks a run whose ports were the recording
 * decorator: every step that would have acted reads `dry-run`.
 */
export function toRemediationDetail(
  plan: Plan,
  applied: Applied | undefined,
  opts: { occurredAt: Date; dryRun?: boolean },
): RemediationDetail {
  const rendered = renderSteps(plan).slice(0, 600);
  const outcomes = applied ? rendered.map((s) => outcomeOf(s, applied)) : undefined;
  // A notice that failed never fails a remediation (STYLE.md "Errors").
  const phase = phaseOf(
    plan,
    outcomes?.filter((_, i) => rendered[i]!.kind !== 'notify'),
  );
  const steps: RemediationStep[] = rendered.map((s, i) => {
    const r = outcomes?.[i];
    const acted = r?.result === 'done' || r?.result === 'already';
    const result: RemediationStep['result'] = opts.dryRun && (acted || !r) ? 'dry-run' : (r?.result ?? 'skipped');
    const message = r?.message ?? s.message;
    return {
      kind: s.kind,
      target: s.target.slice(0, 300),
      result,
      ...(message ? { message: message.slice(0, 512) } : {}),
    };
  });
  const detail: RemediationDetail = {
    schemaVersion: SCHEMA_VERSION,
    // From the decision, not the outcome: the report kept in the outbox before acting and the one
    // sent after carry one id, so a consumer that saw either dedupes the other.
    eventId: remediationEventId(plan.incident, plan.trigger.observedAt, phaseOf(plan, undefined)),
    occurredAt: opts.occurredAt.toISOString(),
    incident: plan.incident.slice(0, 300),
    trigger: {
      eventId: plan.trigger.eventId,
      detailType: plan.trigger.detailType,
      node: plan.trigger.node,
      ...(plan.trigger.gpuUuid ? { gpuUuid: plan.trigger.gpuUuid } : {}),
      ...(plan.trigger.xid !== undefined ? { xid: plan.trigger.xid } : {}),
      ...(plan.trigger.condition ? { condition: plan.trigger.condition } : {}),
      observedAt: plan.trigger.observedAt,
    },
    action: plan.action,
    ...(plan.profile ? { profile: plan.profile } : {}),
    phase,
    scope: plan.scope,
    target: {
      node: plan.target.node,
      gpus: plan.target.gpus.slice(0, 16),
      ...(plan.target.migInstances.length > 0 ? { migInstances: plan.target.migInstances.slice(0, 56) } : {}),
      pods: plan.target.pods.slice(0, 512).map((p) => ({ namespace: p.namespace, name: p.name })),
    },
    steps,
    reason: plan.reason.slice(0, 2048),
    dryRun: opts.dryRun ?? false,
  };
  return parseDetail(REMEDIATION, RemediationDetailSchema, detail);
}

/** The phase the outcome reaches: blocked evictions → partial (the sweep retries), failures → failed. */
export function phaseOf(plan: Plan, results: readonly (StepOutcome | undefined)[] | undefined): RemediationPhase {
  if (plan.kind === 'noop') return 'skipped';
  if (plan.kind === 'approval') return 'awaiting-approval';
  if (!results) return plan.phase;
  if (results.some((r) => r?.result === 'failed')) return 'failed';
  if (results.some((r) => r?.result === 'blocked')) return 'partial';
  if (plan.action === 'restore') return 'restored';
  if (plan.phase === 'awaiting-repair' || plan.phase === 'restored') return plan.phase;
  return 'acted';
}

/** `rem:<incident with ":" for "/">:<observedAt ms>:<phase>`, hashed when longer than 128. */
export function remediationEventId(incident: string, observedAt: string, phase: RemediationPhase): string {
  const ms = Date.parse(observedAt);
  const plain = `rem:${incident.replace(/\//g, ':').replace(/[^A-Za-z0-9._:-]/g, '-')}:${ms}:${phase}`;
  return plain.length <= 128 ? plain : `rem:${fnv1a(incident)}:${ms}:${phase}`;
}

/**
 * The `Approval Requested` id of an approval plan: one per incident episode (key + when it was
 * first seen), so a redelivered event or a second invocation asks under the same id.
 */
export function approvalIdOf(plan: Plan): string {
  const incident = plan.nextState.incidents.find((i) => i.key === plan.incident && i.phase !== 'closed');
  return approvalIdFor(plan.incident, incident?.firstAt ?? plan.trigger.observedAt);
}

/** The approval id of one incident episode: its key and when it was first seen. */
export function approvalIdFor(incident: string, firstAt: string): string {
  return `apr-${fnv1a(`${incident}@${firstAt}`)}`;
}

/** The `Approval Requested` event of an approval plan; its id is stable per incident episode. */
export function toApprovalDetail(plan: Plan, opts: { now: Date; ttlMs?: number }): ApprovalRequestedDetail {
  const approvalId = approvalIdOf(plan);
  return parseDetail(APPROVAL_REQUESTED, ApprovalRequestedDetailSchema, {
    schemaVersion: SCHEMA_VERSION,
    eventId: `${approvalId}:requested`,
    occurredAt: opts.now.toISOString(),
    approvalId,
    requestedBy: 'remediate',
    summary: (plan.approval?.summary ?? plan.reason).slice(0, 2048),
    plan: {
      incident: plan.incident,
      action: plan.action,
      scope: plan.scope,
      node: plan.target.node,
      gpus: plan.target.gpus,
      pods: plan.target.pods.map((p) => `${p.namespace}/${p.name}`),
      reason: plan.reason,
    },
    expiresAt: new Date(opts.now.getTime() + (opts.ttlMs ?? 3_600_000)).toISOString(),
  });
}
