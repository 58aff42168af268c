/**
 * Building blocks of the planner's state changes (split from plan.ts): a new incident, the plan's
 * target, replacing an open incident, and the bounded, derived next state.
 */
import type { RemediationAction } from '../../../events/index.ts';
import type { FenceBackend } from './policy.ts';
import { deriveNode } from './reconcile.ts';
import { sharesCards } from './fence-cgpu.ts';
import type { FaultSite } from './scope.ts';
import { boundState, cmp, isOpen, type Incident, type NodeState } from './state.ts';
import type { PlanTarget, PodFacts, RemediationFacts } from './types.ts';
import { recoveryActionOf } from './plan-trigger.ts';

export function newIncident(
  site: FaultSite,
  facts: RemediationFacts,
  ladder: RemediationAction[],
  level: number,
  action: RemediationAction,
  podUids: string[],
): Incident {
  const d = facts.event.detail;
  const ev = facts.event;
  return {
    key: site.key,
    trigger: site.trigger,
    ...(ev.detailType === 'GPU XID Error'
      ? { xid: ev.detail.xid }
      : ev.detailType === 'GPU Health Changed'
        ? { condition: ev.detail.condition }
        : {}),
    ...(recoveryActionOf(ev) ? { recoveryAction: recoveryActionOf(ev) } : {}),
    ...(site.gpu ? { gpu: site.gpu.uuid } : {}),
    // ACK gpushare names a card by its index (fence-cgpu.ts): kept where the node shares its GPUs.
    ...(site.gpu?.index !== undefined && sharesCards(facts.node) ? { gpuIndex: site.gpu.index } : {}),
    ...(site.mig
      ? {
          mig: {
            gi: site.mig.gpuInstanceId,
            ...(site.mig.computeInstanceId !== undefined ? { ci: site.mig.computeInstanceId } : {}),
            ...(site.mig.uuid ? { uuid: site.mig.uuid } : {}),
          },
        }
      : {}),
    scope: site.scope,
    action,
    ladder,
    level,
    phase: 'observing',
    firstAt: d.observedAt,
    lastAt: d.observedAt,
    count: 1,
    workloads: podUids,
    pods: [],
    since: facts.now.toISOString(),
    eventId: d.eventId,
  };
}

export function targetOf(site: FaultSite, pods: readonly PodFacts[], nodeGpus?: string[]): PlanTarget {
  const gpus = site.gpu ? [site.gpu.uuid] : (nodeGpus ?? []);
  return {
    node: site.node,
    gpus: gpus.slice(0, 16),
    migInstances:
      site.gpu && site.mig
        ? [
            {
              gpuUuid: site.gpu.uuid,
              gpuInstanceId: site.mig.gpuInstanceId,
              ...(site.mig.computeInstanceId !== undefined ? { computeInstanceId: site.mig.computeInstanceId } : {}),
            },
          ]
        : [],
    pods: pods.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid })),
  };
}

/** Replaces (or adds) the open incident with the same key. */
export function replace(state: NodeState, incident: Incident): NodeState {
  const idx = state.incidents.findIndex((i) => i.key === incident.key && isOpen(i));
  const incidents =
    idx >= 0 ? state.incidents.map((i, n) => (n === idx ? incident : i)) : [...state.incidents, incident];
  return { ...state, incidents };
}

/** Bounds the state and derives its node-level fields (phase, taint, cordon, quarantined GPUs). */
export function withState(
  prev: NodeState,
  next: NodeState,
  node: RemediationFacts['node'],
  backend: FenceBackend,
): NodeState {
  return deriveNode(prev, boundState(next), node, backend);
}

export function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
export const maxIso = (a: string, b: string) => (cmp(a, b) >= 0 ? a : b);
export const minIso = (a: string, b: string) => (cmp(a, b) <= 0 ? a : b);
