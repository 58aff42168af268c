/**
 * The planner's early answers (split from plan.ts): an event for another node, a duplicate, a
 * stale replay, a peer's report of one NVLink incident, a resolve. Each is a noop plan.
 */
import { isOpen, cmp, type Incident, type NodeState } from './state.ts';
import type { FaultSite } from './scope.ts';
import type { Plan } from './types.ts';
import { recoveryOf } from './recovery.ts';
import { maxIso, replace } from './incident-edit.ts';
import type { PlanFrame } from './plan-frame.ts';

/** A delivery that changes nothing: for another node, seen before, or older than a close or restore. */
export function replayed(f: PlanFrame, open: Incident | undefined, lastClosed: Incident | undefined): Plan | undefined {
  const { prev, site, noop } = f;
  const { node } = f.facts;
  const d = f.facts.event.detail;
  if (d.node !== node.name)
    return noop(`event ${d.eventId} is about node ${d.node}, not ${node.name}: nothing to do here`);
  if (prev.handled.includes(d.eventId)) return noop(`already handled event ${d.eventId}: nothing to do`);
  if (prev.recent.some((o) => o.key === site.key && o.at === d.observedAt))
    return noop(
      `already handled: ${site.trigger} on ${site.key} observed at ${d.observedAt} ` +
        'was seen before (duplicate delivery)',
    );
  if (!open && lastClosed?.closedAt && cmp(d.observedAt, lastClosed.closedAt) <= 0) {
    return noop(
      `stale replay: observed at ${d.observedAt}, before incident ${site.key} was closed at ${lastClosed.closedAt}; ` +
        'it never reopens a closed incident',
    );
  }
  if (!open && !lastClosed && prev.restoredAt && cmp(d.observedAt, prev.restoredAt) <= 0) {
    return noop(
      `stale replay: observed at ${d.observedAt}, before node ${node.name} was restored at ${prev.restoredAt}`,
    );
  }
  return undefined;
}

/** A peer's XID 74 of an open link incident, or a resolve: counted or closed, nothing more. */
export function linkOrResolved(
  f: PlanFrame,
  state: NodeState,
  words: string,
  open: Incident | undefined,
): Plan | undefined {
  const { site, ws, noop, policy } = f;
  const { event } = f.facts;
  const d = event.detail;
  // Peers on one NVLink report XID 74 together: a 74 on another GPU of this node within the link
  // window of an open 74 incident is that incident's sympathetic report, not a second quarantine.
  const link =
    !open && event.detailType === 'GPU XID Error' && event.detail.xid === LINK_XID
      ? linkIncident(state, site, d.observedAt)
      : undefined;
  if (link) {
    const next = ws(replace(state, { ...link, count: link.count + 1, lastAt: maxIso(link.lastAt, d.observedAt) }));
    return noop(
      `${words}: the same NVLink incident as ${link.gpu} (XID 74 first at ${link.firstAt}): ` +
        `peers on one link report 74 together, so ${link.action} of ${link.gpu} stands ` +
        'and this GPU is not quarantined for it',
      link.action,
      next,
    );
  }

  if (event.detailType === 'GPU Health Changed' && event.detail.state === 'resolved') {
    if (!open) return noop(`${words}: resolved, and nothing is open for it`, 'observe', ws(state));
    if (cmp(d.observedAt, open.lastAt) < 0)
      return noop(
        `${words}: a resolve observed before the last firing (${open.lastAt}) is out of order: ignored`,
        open.action,
        ws(state),
      );
    const closes = open.phase === 'observing' || open.phase === 'acted';
    const updated: Incident = closes
      ? { ...open, phase: 'closed', closedAt: d.observedAt, resolvedAt: d.observedAt }
      : { ...open, resolvedAt: d.observedAt };
    const next = ws(replace(state, updated));
    const cure = recoveryOf(open);
    const after =
      cure === 'replace'
        ? 'NVIDIA says this GPU must be replaced, so it stays out until it is repaired, ' +
          'whatever the condition reads now'
        : cure === 'reset'
          ? 'it returns to service only after its reset and a passed health probe, never on quiet time'
          : open.phase === 'awaiting-repair' || open.phase === 'draining'
            ? 'its node returns after its repair and ' +
              (open.gpu ? 'a passed probe' : `${policy.quietPeriodMinutes} quiet minutes`)
            : `the sweep returns it to service after ${policy.quietPeriodMinutes} quiet minutes`;
    return noop(closes ? `${words}: resolved; incident closed` : `${words}: resolved; ${after}`, open.action, next);
  }
  return undefined;
}

/** XID 74 (NVLink error), which the GPUs on both ends of a link report. */
const LINK_XID = 74;
/** How close together two GPUs' XID 74s must be to be one link incident. */
export const LINK_INCIDENT_WINDOW_MS = 10_000;

/** An open XID 74 incident on another GPU of the node that began within the window of `at`. */
function linkIncident(state: NodeState, site: FaultSite, at: string): Incident | undefined {
  if (site.scope !== 'gpu' || !site.gpu) return undefined;
  const t = Date.parse(at);
  return state.incidents.find(
    (i) =>
      isOpen(i) &&
      i.xid === LINK_XID &&
      i.gpu !== undefined &&
      i.gpu !== site.gpu!.uuid &&
      Math.abs(t - Date.parse(i.firstAt)) <= LINK_INCIDENT_WINDOW_MS,
  );
}
