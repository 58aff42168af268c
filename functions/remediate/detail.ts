/**
 * Builds the `Remediation` event detail (events/catalog/remediation.ts) from a plan and what
 * happened to each of its steps, and validates it against the catalog schema. The event id is
 * deterministic (incident + observedAt + phase), so publishing the same outcome twice is one event.
 */
import { RemediationDetailSchema, SCHEMA_VERSION, type RemediationDetail, type RemediationStep } from '../../events/index.ts';
import type { Plan, RemediationPhase } from './types.ts';

export type StepResult = Pick<RemediationStep, 'result' | 'message'>;

/**
 * `results[i]` is the outcome of `plan.steps[i]`; leave `results` out to publish the decision
 * before acting (phase `decided`, or the plan's own phase for noop and approval plans).
 */
export function toRemediationDetail(plan: Plan, results: readonly StepResult[] | undefined, opts: { occurredAt: Date }): RemediationDetail {
  const phase = phaseOf(plan, results);
  const steps: RemediationStep[] = plan.steps.slice(0, 600).map((s, i) => {
    const r = results?.[i];
    const result: RemediationStep['result'] = r?.result ?? (plan.dryRun ? 'dry-run' : 'skipped');
    const message = r?.message ?? s.value;
    return { kind: s.kind, target: s.target.slice(0, 300), result, ...(message ? { message: message.slice(0, 512) } : {}) };
  });
  const detail: RemediationDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: remediationEventId(plan.incident, plan.trigger.observedAt, phase),
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
    dryRun: plan.dryRun,
  };
  return RemediationDetailSchema.parse(detail);
}

/** The phase the outcome reaches: blocked evictions → partial (the sweep retries), failures → failed. */
export function phaseOf(plan: Plan, results: readonly StepResult[] | undefined): RemediationPhase {
  if (plan.kind === 'noop') return 'skipped';
  if (plan.kind === 'approval') return 'awaiting-approval';
  if (!results) return plan.phase;
  if (results.some((r) => r.result === 'failed')) return 'failed';
  if (results.some((r) => r.result === 'blocked')) return 'partial';
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
  return `apr-${fnv1a(`${plan.incident}@${incident?.firstAt ?? plan.trigger.observedAt}`)}`;
}

/** FNV-1a, 64-bit as two 32-bit halves: short, stable, dependency-free (not for security). */
function fnv1a(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x01000193 + 2) >>> 0;
  }
  return h1.toString(16).padStart(8, '0') + h2.toString(16).padStart(8, '0');
}
