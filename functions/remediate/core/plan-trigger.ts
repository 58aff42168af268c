/**
 * What the planner reads off the triggering event (split from plan.ts): the rule's trigger, a
 * person's rule, the plan's trigger record, the recovery action, and the notice people get.
 */
import type { Notice } from '../../lib/plan.ts';
import type { Rule, RuleTrigger } from './policy.ts';
import type { Incident } from './state.ts';
import type { NodeFacts, Plan, PlanTrigger, RemediationFacts, TriggerEvent } from './types.ts';

/**
 * The GPU's product name as profiles match it: NVML's name the agent put in the event, else the node's
 * label from GPU Feature Discovery (`nvidia.com/gpu.product`, NVIDIA/gpu-feature-discovery) or ACK's
 * (`aliyun.accelerator/nvidia_name`, ACK "GPU node labels").
 */
export const GPU_MODEL_LABELS = ['nvidia.com/gpu.product', 'aliyun.accelerator/nvidia_name'] as const;

export function ruleTriggerOf(
  event: Exclude<TriggerEvent, { detailType: 'Operator Request' }>,
  node: Pick<NodeFacts, 'labels'>,
): RuleTrigger {
  const model = event.detail.gpu?.name ?? GPU_MODEL_LABELS.map((l) => node.labels[l]).find((v) => v);
  return event.detailType === 'GPU XID Error'
    ? {
        kind: 'xid',
        xid: event.detail.xid,
        ...(model ? { gpuModel: model } : {}),
        ...(event.detail.recoveryAction ? { recoveryAction: event.detail.recoveryAction } : {}),
        ...(event.detail.severity ? { severity: event.detail.severity } : {}),
        ...(event.detail.nvlink ? { nvlink: event.detail.nvlink } : {}),
      }
    : {
        kind: 'condition',
        condition: event.detail.condition,
        severity: event.detail.severity,
        ...(event.detail.recoveryAction ? { recoveryAction: event.detail.recoveryAction } : {}),
      };
}

/**
 * A person's quarantine: the GPU is fenced, its pods moved, and it comes back after a verified
 * reset and probe, as any quarantine; no rung above it (a person asked for this, not more).
 */
export function operatorRule(by: string): Rule {
  return {
    action: 'quarantine-gpu',
    then: [],
    escalate: null,
    notify: true,
    source: `asked by ${by}`,
    letWorkFinish: null,
  };
}

/** What people are told about a node, as a typed notice (rendered to chat by the notifier). */
export function notice(
  action: Plan['action'],
  node: Pick<NodeFacts, 'name'>,
  text: string,
  severity: Notice['severity'] = 'warning',
): Notice {
  return { title: `gpu-reflex: ${action} on ${node.name}`, text, severity };
}

export function planTrigger(facts: RemediationFacts): PlanTrigger {
  const { event } = facts;
  const d = event.detail;
  return {
    eventId: d.eventId,
    detailType: event.detailType,
    node: d.node,
    ...(d.gpu ? { gpuUuid: d.gpu.uuid } : {}),
    ...(event.detailType === 'GPU XID Error'
      ? { xid: event.detail.xid }
      : event.detailType === 'GPU Health Changed'
        ? { condition: event.detail.condition }
        : {}),
    observedAt: d.observedAt,
  };
}

/** The recovery action (field 230) an agent's event names; a person's request names none. */
export function recoveryActionOf(event: RemediationFacts['event']): Incident['recoveryAction'] {
  return 'recoveryAction' in event.detail ? event.detail.recoveryAction : undefined;
}
