import type { EscalationProgress } from '../../functions/remediate/core/escalation.ts';
import type { EntryKind, TimelineEntry } from './timeline-entry.ts';

/** "2 of 3 toward escalation to restart-workload within 60 min (1 of 2 workloads)". */
export function countedText(e: EscalationProgress): string {
  const workloads =
    e.neededWorkloads > 1 ? ` (${Math.min(e.workloads, e.neededWorkloads)} of ${e.neededWorkloads} workloads)` : '';
  return (
    `${Math.min(e.seen, e.needed)} of ${e.needed} toward escalation to ${e.next} within ${e.windowMinutes} ` +
    `min${workloads}`
  );
}

/**
 * A delivery whose function changed nothing publishes nothing, so the bus's `delivered` report is
 * the only trace: this renders the function's returned outcome (functions/lib/handler.ts
 * HandlerOutcome) as a line. Outcomes that did change something (a published Remediation) and
 * shapes it does not know give undefined: those are printed from their events.
 */
export function deliveryEntry(atMs: number, fn: string, outcome: unknown): TimelineEntry | undefined {
  if (typeof outcome !== 'object' || outcome === null) return undefined;
  const o = outcome as { status?: unknown; reason?: unknown; result?: unknown };
  const line = (text: string, why?: unknown, kind: EntryKind = 'action'): TimelineEntry => ({
    atMs,
    who: fn,
    kind,
    what: '',
    text,
    ...(typeof why === 'string' && why ? { why } : {}),
  });
  if (o.status === 'dropped') return line('dropped the event: it was not acted on', o.reason, 'failure');
  if (o.status === 'already-done') return line('already done: nothing to change', o.reason);
  if (o.status !== 'done' || typeof o.result !== 'object' || o.result === null) return undefined;
  const r = o.result as {
    kind?: unknown;
    action?: unknown;
    phase?: unknown;
    reason?: unknown;
    nodes?: unknown;
    acted?: unknown;
    escalation?: EscalationProgress;
  };
  if (r.phase === 'skipped' && r.escalation)
    return line(`counted: ${countedText(r.escalation)}; ${String(r.action)} stands`, r.reason);
  if (r.phase === 'skipped') return line(`no change: ${String(r.action)} stands`, r.reason);
  if (r.acted === 0 && typeof r.nodes === 'number')
    return line(`checked ${r.nodes} node${r.nodes === 1 ? '' : 's'}: nothing to do`);
  if (typeof (r as { migNodes?: unknown }).migNodes === 'number') return migLine(r as unknown as MigOutcome, line);
  if (typeof (r as { managedPools?: unknown }).managedPools === 'number')
    return autoscaleLine(r as unknown as AutoscaleOutcome, line);
  return undefined;
}

/** autoscale-pools' outcome (functions/autoscale/handler.ts): its GPU Pool Scaled events print the rest. */
interface AutoscaleOutcome {
  managedPools: number;
  scaled?: Record<string, number>;
  finished?: Record<string, string>;
  released?: string[];
  draining?: string[];
  pending?: number;
  awaitingInFlight?: number;
  deferred?: number;
  unhostable?: number;
  /** Waiting GPU pods that are no demand (functions/autoscale/demand.ts), by why. */
  notDemand?: { gated?: number; nominated?: number; fitsExisting?: number };
  /** Idle nodes scale-in kept, with why (a pod that blocks their drain, the pool's minimum...). */
  kept?: { node: string; why: string }[];
  /** Gangs given no node, with why (functions/autoscale/core/gangs.ts). */
  gangs?: { held?: string[] };
}

function autoscaleLine(a: AutoscaleOutcome, line: (text: string) => TimelineEntry): TimelineEntry | undefined {
  if (
    a.managedPools === 0 ||
    Object.keys(a.scaled ?? {}).length > 0 ||
    Object.keys(a.finished ?? {}).length > 0 ||
    (a.released ?? []).length > 0
  )
    return undefined;
  if ((a.draining ?? []).length > 0) return line(`draining ${a.draining!.join(', ')} to give back: idle, no GPU pod`);
  const nd = a.notDemand ?? {};
  const noDemand = [
    nd.gated ? `${nd.gated} held by scheduling gates` : '',
    nd.nominated ? `${nd.nominated} nominated to a node preemption frees` : '',
    nd.fitsExisting ? `${nd.fitsExisting} fit an existing node` : '',
  ].filter(Boolean);
  const blocked = (a.kept ?? []).filter((k) => k.why.includes(' blocks '));
  if (!a.pending && noDemand.length > 0) return line(`no GPU pod to buy a node for: ${noDemand.join('; ')}`);
  if (!a.pending && blocked.length > 0)
    return line(`idle ${blocked.map((k) => `${k.node} kept: ${k.why}`).join('; ')}`);
  const parts = [
    a.awaitingInFlight ? `${a.awaitingInFlight} wait for nodes on their way` : '',
    a.deferred ? `${a.deferred} wait on pool limits (max, step or cooldown)` : '',
    a.unhostable ? `${a.unhostable} no managed pool can host` : '',
    ...(a.gangs?.held ?? []),
  ].filter(Boolean);
  if (!a.pending) return undefined;
  return line(
    `${a.pending} GPU pod${a.pending === 1 ? '' : 's'} pending: ${parts.join('; ') || 'none needs a new node'}`,
  );
}

/** rebalance-mig's outcome (functions/mig/handler.ts): its MIG Layout Change events print the rest. */
interface MigOutcome {
  migNodes: number;
  pending: number;
  satisfiedAfter: number;
  steps: Record<string, string>;
  underWay: string[];
  failed: string[];
}

function migLine(m: MigOutcome, line: (text: string) => TimelineEntry): TimelineEntry | undefined {
  const labelled = Object.entries(m.steps)
    .filter(([, k]) => k === 'label')
    .map(([n]) => n);
  if (labelled.length > 0) return line(`nvidia.com/mig.config set on ${labelled.join(', ')}: mig-manager reconfigures`);
  if (Object.keys(m.steps).length > 0) return undefined;
  const pods = `${m.pending} pod${m.pending === 1 ? '' : 's'}`;
  if (m.underWay.length > 0)
    return line(`${pods} wait for MIG instances; mig-manager is reconfiguring ${m.underWay.join(', ')}`);
  const failed = m.failed.length > 0 ? ` (${m.failed.join(', ')} left cordoned after a failed relayout)` : '';
  if (m.pending === 0)
    return line(
      `checked ${m.migNodes} MIG node${m.migNodes === 1 ? '' : 's'}: no pod waits for a MIG instance${failed}`,
    );
  return line(`${pods} wait for MIG instances: no idle GPU can be relaid for them${failed}`);
}
