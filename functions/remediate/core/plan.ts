/**
 * planRemediation: one GPU event + the node's facts + the policy → a Plan (plain data). Pure: no
 * I/O, no clock but `facts.now`, no SDK. The handler fetches the facts and applies the plan.
 *
 * Order of decisions: dedupe (event id, then the observation itself) → stale replay → resolved
 * health → rule → escalation → blast radius → steps. Events may arrive late, twice or out of
 * order; what counts is the agent's `observedAt`, never the arrival time.
 */
import type { RemediationAction } from '../../../events/index.ts';
import { takesCapacity } from './blast-radius.ts';
import { decideLevel, ladderOf } from './escalation.ts';
import { resolveRule, type Policy } from './policy.ts';
import { adoptOrphans } from './reconcile.ts';
import { sharesCards } from './fence-cgpu.ts';
import { recoveryOf } from './recovery.ts';
import { resetSupportOf, skipsReset } from './reset-support.ts';
import { affectedPods, claimMove, evictable, holdersAt } from './scope.ts';
import { cmp, isOpen, type Incident, type IncidentPhase, type NodeState } from './state.ts';
import type { Plan, PodFacts, RemediationFacts } from './types.ts';
import {
  actionWords,
  claimMoveWords,
  evidenceWords,
  fenceWords,
  unknownWorkloadWords,
  letFinishWords,
  nextWords,
  resetSkippedWords,
  tenantPodNote,
  tenantWords,
  triggerWords,
  xid45FollowsWords,
} from './words.ts';
import { xid45Follows, xid48Workflow } from './workflows.ts';
import { blameOf, sharingOf, tenantsOf } from './sharing.ts';
import { notice, operatorRule, recoveryActionOf, ruleTriggerOf } from './plan-trigger.ts';
import { maxIso, minIso, newIncident, replace, targetOf, union } from './incident-edit.ts';
import { planFrame } from './plan-frame.ts';
import { linkOrResolved, replayed } from './plan-screen.ts';
import { holdForApproval } from './plan-hold.ts';

// Names that other files import from here (sweep*.ts, tests).
export { GPU_MODEL_LABELS, notice } from './plan-trigger.ts';
export { replace, targetOf, withState } from './incident-edit.ts';
export { LINK_INCIDENT_WINDOW_MS } from './plan-screen.ts';

/** Occurrences older than this are dropped from the history (longest sensible escalation window). */
const RECENT_HORIZON_MS = 24 * 3_600_000;

export function planRemediation(facts: RemediationFacts, policy: Policy): Plan {
  const f = planFrame(facts, policy);
  const { site, prev, base, ws, edit, noop } = f;
  const { event, node, now } = facts;
  const d = event.detail;
  const at = new Date(d.observedAt);
  const mine = prev.incidents.filter((i) => i.key === site.key);
  const open = mine.find(isOpen);
  const lastClosed = mine
    .filter((i) => !isOpen(i))
    .sort((a, b) => cmp(a.closedAt ?? a.lastAt, b.closedAt ?? b.lastAt))
    .at(-1);
  const stale = replayed(f, open, lastClosed);
  if (stale) return stale;

  const state = adoptOrphans({ ...prev, handled: [...prev.handled, d.eventId] }, node.name, now);
  const words = triggerWords(event, site);
  const settled = linkOrResolved(f, state, words, open);
  if (settled) return settled;

  const resolved =
    event.detailType === 'Operator Request'
      ? operatorRule(event.detail.by)
      : resolveRule(policy, facts.pool.name, ruleTriggerOf(event, node));
  // NVIDIA's WORKFLOW_XID_48: a DBE with a recorded (63) or failed (64) row remap beside it.
  const w48 =
    event.detailType === 'GPU XID Error'
      ? xid48Workflow(event.detail.xid, resolved, state, site, d.observedAt)
      : ({ kind: 'rule', rule: resolved } as const);
  if (w48.kind === 'belongs') return noop(`${words}: ${w48.words}`, 'observe');
  const rule = w48.rule;
  if (rule.action === 'ignore') return noop(`${words}: informational (${rule.source} → ignore)`, 'ignore');
  // The profile that decided is said on the plans that publish (and so on their Remediation event).
  const decided = rule.profile ? { profile: rule.profile } : {};
  // NVIDIA's WORKFLOW_XID_45: with another XID on the GPU just before, it is that XID's cleanup.
  const follows =
    event.detailType === 'GPU XID Error' && event.detail.xid === 45
      ? xid45Follows(state, site, d.observedAt)
      : undefined;
  if (follows) return noop(xid45FollowsWords(words, follows), 'ignore');

  if (event.detailType === 'GPU Health Changed' && event.detail.condition === 'monitoring-degraded') {
    // Never a hardware verdict: the agent cannot see, which says nothing about the GPUs.
    const next = ws(state);
    const notices = [notice('observe', node, `gpu-reflex cannot watch node ${node.name}: ${event.detail.message}`)];
    return {
      ...base,
      kind: 'act',
      action: 'observe',
      phase: 'decided',
      ...edit(next),
      notices,
      reason:
        `${words}. Monitoring is degraded: this is not a hardware verdict, ` +
        'so nothing is quarantined; a person is told',
      nextState: next,
    };
  }

  const reported = d.pods ?? [];
  // An application XID whose kernel line named the process: that pod is the one workload it restarts
  // and counts toward escalation; a quarantine still moves every pod on the GPU (`reported`). On a
  // shared card an unresolved pid is one unknown workload, never one per co-tenant: time-slicing and
  // MPS by sharing.ts; on a card ACK shares (cGPU) every tenant's process runs on it, so an XID whose
  // process names no pod is one incident of an unknown workload (restarting them all would move
  // neighbours that did nothing).
  const xidDetail = event.detailType === 'GPU XID Error' ? event.detail : undefined;
  const namedPod = xidDetail?.culprit;
  const sharing = sharingOf(node, xidDetail?.sharing);
  const blame = blameOf(
    sharing,
    site.gpu?.uuid,
    namedPod?.uid,
    reported.map((p) => p.uid),
  );
  const cgpuUnknown = !namedPod && sharesCards(node) && site.gpu !== undefined;
  const culprit = cgpuUnknown
    ? []
    : blame.restart === 'culprit' && namedPod
      ? [namedPod]
      : blame.restart === 'none'
        ? []
        : reported;
  const podUids = cgpuUnknown ? [] : blame.workloads;
  // An agent sends repeats of an application XID on one GPU and pid as one event with `count`
  // (node-agent/xid-aggregate.ts): it is that many occurrences toward escalation.
  const carried = event.detailType === 'GPU XID Error' ? event.detail.count : undefined;
  const recent = [
    ...state.recent.filter((o) => now.getTime() - Date.parse(o.at) <= RECENT_HORIZON_MS),
    { key: site.key, at: d.observedAt, pods: podUids, ...(carried ? { count: carried } : {}) },
  ].sort((a, b) => cmp(a.at, b.at));
  const ladder = open?.ladder ?? ladderOf(rule);
  const decision = decideLevel(rule, ladder, open, lastClosed, recent, site.key, at, policy.escalation.recurrenceHours);
  let action: RemediationAction = ladder[decision.level] ?? rule.action;
  // A GPU action needs a GPU; a node-wide event asking for one drains the node instead.
  if (action === 'quarantine-gpu' && !site.gpu) action = 'drain-node';
  // The recovery action the newest firing names: DRAIN_P2P quiesces, a later GPU_RESET resets.
  const named = recoveryActionOf(event);
  const counted: Incident = open
    ? {
        ...open,
        lastAt: maxIso(open.lastAt, d.observedAt),
        firstAt: minIso(open.firstAt, d.observedAt),
        count: open.count + (carried ?? 1),
        workloads: union(open.workloads, podUids),
        eventId: d.eventId,
        ...(open.resolvedAt && cmp(d.observedAt, open.resolvedAt) > 0 ? { resolvedAt: undefined } : {}),
        ...(named && cmp(d.observedAt, open.lastAt) >= 0 ? { recoveryAction: named } : {}),
      }
    : { ...newIncident(site, facts, ladder, decision.level, action, podUids), ...decided };
  const s1: NodeState = { ...state, recent };
  const retryApproval = open?.phase === 'awaiting-approval';

  if (open && !decision.escalated && !retryApproval && action !== 'restart-workload') {
    const next = ws(replace(s1, counted));
    const stands = noop(
      `${words}. Incident already open (${open.phase} since ${open.since}, ${counted.count} occurrences): ` +
        `${ladder[open.level]} stands`,
      open.action,
      next,
    );
    return decision.progress ? { ...stands, escalation: decision.progress } : stands;
  }

  const unknownWorkload = action === 'restart-workload' && culprit.length === 0 && sharesCards(node);
  const held = {
    holders: event.detailType === 'Operator Request' ? undefined : event.detail.holders,
    draDevices: facts.node.dra?.devices,
  };
  // A restart on a shared card that nothing names the culprit of restarts no tenant.
  const direct =
    unknownWorkload || (action === 'restart-workload' && blame.restart === 'none')
      ? []
      : affectedPods(site, action === 'restart-workload' ? culprit : reported, facts.pods, held);
  // A GPU leaving service takes its shared DRA claims' other consumers along (scope.ts claimMove).
  const claims = action === 'quarantine-gpu' ? claimMove(site, direct, facts.pods, held) : undefined;
  const affected = claims ? claims.pods : direct;
  // DRAIN_AND_RESET (rule letWorkFinish): the GPU is fenced now, its running pods are left to end
  // by themselves until the deadline; the sweep evicts what is left then, and the reset waits for them.
  const patient = action === 'quarantine-gpu' && rule.letWorkFinish !== null && rule.action === 'quarantine-gpu';
  const evictAt = patient
    ? new Date(now.getTime() + rule.letWorkFinish!.deadlineMinutes * 60_000).toISOString()
    : undefined;
  const moving: PodFacts[] = ['drain-node', 'reboot-node', 'replace-node'].includes(action)
    ? evictable(facts.pods)
    : action === 'restart-workload' || (action === 'quarantine-gpu' && !patient)
      ? affected
      : [];
  const scope = ['drain-node', 'reboot-node', 'replace-node'].includes(action) ? 'node' : site.scope;
  const target = targetOf(site, moving, scope === 'node' ? node.gpus : undefined);
  const escalation = decision.escalated ? ` Escalated: ${decision.why}.` : '';
  // Who is blamed matters where repeats escalate or a workload restarts, not for a hardware fault.
  const shared = blame.words && (rule.escalate || action === 'restart-workload') ? ` ${blame.words}.` : '';
  const reasonCore = `${words}. ${rule.source} → ${action}.${shared}${escalation}`;

  if (takesCapacity(action) && !facts.approved) {
    const waits = holdForApproval(f, {
      action,
      open,
      retryApproval,
      counted,
      level: decision.level,
      s1,
      scope,
      moving,
      sharing,
      target,
      decided,
      reasonCore,
    });
    if (waits) return waits;
  }

  const phase: IncidentPhase =
    action === 'observe'
      ? 'observing'
      : action === 'restart-workload'
        ? 'acted'
        : action === 'quarantine-gpu'
          ? 'quarantined'
          : 'draining';
  const acted: Incident = {
    ...counted,
    action,
    level: decision.level,
    phase,
    since: open && open.phase === phase ? open.since : now.toISOString(),
    pods: union(
      counted.pods,
      (patient ? affected : moving).map((p) => p.uid),
    ),
    ...(evictAt ? { evictAt } : {}),
    ...(decision.escalated ? { escalatedAt: d.observedAt } : {}),
    ...(takesCapacity(action) && !counted.outAt ? { outAt: now.toISOString() } : {}),
    ...(takesCapacity(action) && site.quarantineId && action === 'quarantine-gpu' ? { qid: site.quarantineId } : {}),
  };
  const next = ws(replace(s1, acted));
  const evictions = moving.map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid }));
  const stamped = next.incidents.find((i) => i.key === acted.key);
  const fence = stamped?.fence && !open?.fence ? ` ${fenceWords(stamped, policy)}` : '';
  const doing = patient
    ? letFinishWords(site, affected.length, evictAt!)
    : unknownWorkload
      ? unknownWorkloadWords(site)
      : actionWords(action, node.name, site, moving.length);
  const basis = moving === affected && reported.length === 0 ? evidenceWords(site, holdersAt(site, held)) : '';
  const together = claims && moving === affected ? claimMoveWords(claims, direct.length) : '';
  const tenants = sharing.mode !== 'exclusive' && site.gpu ? tenantsOf(moving) : [];
  const who = tenants.length > 0 ? tenantWords(sharing.mode, tenants, moving.length) : '';
  const support = resetSupportOf(node.labels);
  // Where NVIDIA does not support resetting this GPU alone, the next step is the reboot (reset-support.ts).
  const then =
    action === 'quarantine-gpu' && recoveryOf(acted) === 'reset' && skipsReset(support)
      ? `next: ${resetSkippedWords(acted.gpu, support)}`
      : nextWords(ladder, decision.level, facts.capabilities, recoveryOf(acted));
  const reason = `${reasonCore} Now ${doing}${basis}${together};${fence} ${then}${who}`;
  // Every tenant whose pod moves off the shared card is told why, on its own pod.
  const podEvents = tenants.length
    ? moving.map((p) => ({
        pod: { namespace: p.namespace, name: p.name, uid: p.uid },
        note: tenantPodNote(action, site.gpu!.uuid, node.name, words, tenants.filter((t) => t !== p.namespace).length),
      }))
    : [];
  const notify = rule.notify || takesCapacity(action) || decision.escalated;
  const notices = notify ? [notice(action, node, reason.slice(0, 500))] : [];
  return {
    ...base,
    kind: 'act',
    action,
    scope,
    phase: 'decided',
    target,
    ...decided,
    ...edit(next),
    evictions,
    notices,
    ...(podEvents.length > 0 ? { podEvents } : {}),
    reason,
    nextState: next,
  };
}
