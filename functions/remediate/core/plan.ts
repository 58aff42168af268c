/**
 * planRemediation: one GPU event + the node's facts + the policy → a Plan (plain data). Pure: no
 * I/O, no clock but `facts.now`, no SDK. The handler fetches the facts and applies the plan.
 *
 * Order of decisions: dedupe (event id, then the observation itself) → stale replay → resolved
 * health → rule → escalation → blast radius → steps. Events may arrive late, twice or out of
 * order; what counts is the agent's `observedAt`, never the arrival time.
 */
import type { RemediationAction } from '../../../events/index.ts';
import { checkBlastRadius, checkTenants, takesCapacity } from './blast-radius.ts';
import { decideLevel, ladderOf } from './escalation.ts';
import { resolveRule, type FenceBackend, type Policy, type Rule, type RuleTrigger } from './policy.ts';
import type { Notice } from '../../lib/plan.ts';
import { adoptOrphans, deriveNode, newGpuActions, nodeEdit } from './reconcile.ts';
import { deviceTaintChange } from './fence-dra.ts';
import { cardFenceChange, fenceBackendFor, sharesCards } from './fence-cgpu.ts';
import { recoveryOf } from './recovery.ts';
import { resetSupportOf, skipsReset } from './reset-support.ts';
import { affectedPods, claimMove, evictable, faultSite, holdersAt, type FaultSite } from './scope.ts';
import { approvalIdFor } from './detail.ts';
import { boundState, cmp, isOpen, type Incident, type IncidentPhase, type NodeState } from './state.ts';
import type { NodeFacts, Plan, PlanTarget, PlanTrigger, PodFacts, RemediationFacts, TriggerEvent } from './types.ts';
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

/** Occurrences older than this are dropped from the history (longest sensible escalation window). */
const RECENT_HORIZON_MS = 24 * 3_600_000;

export function planRemediation(facts: RemediationFacts, policy: Policy): Plan {
  const { event, node, now } = facts;
  const d = event.detail;
  const site = faultSite(facts);
  const prev = facts.state;
  const backend = fenceBackendFor(policy, facts.pool.name, node);
  const ws = (next: NodeState) => withState(prev, next, node, backend);
  const trigger = planTrigger(facts);
  const at = new Date(d.observedAt);
  const base = {
    incident: site.key,
    scope: site.scope,
    trigger,
    target: targetOf(site, []),
    evictions: [],
    notices: [],
    cloud: [],
  };
  const edit = (next: NodeState) => {
    const e = nodeEdit(prev, next, node, policy);
    const asked = newGpuActions(prev, next, policy);
    const taints = deviceTaintChange(next, node, policy);
    const cards = cardFenceChange(next, node);
    return {
      ...(e ? { nodeEdit: e } : {}),
      ...(taints ? { deviceTaints: taints } : {}),
      ...(cards ? { cardFences: cards } : {}),
      ...(asked.length > 0 ? { gpuActions: asked } : {}),
    };
  };
  const noop = (reason: string, action: Plan['action'] = 'observe', nextState: NodeState = prev): Plan => ({
    ...base,
    kind: 'noop',
    action,
    phase: 'skipped',
    // Duplicates and stale replays change nothing at all, not even a stray label.
    ...(nextState === prev ? {} : edit(nextState)),
    reason,
    nextState,
  });

  if (d.node !== node.name)
    return noop(`event ${d.eventId} is about node ${d.node}, not ${node.name}: nothing to do here`);
  if (prev.handled.includes(d.eventId)) return noop(`already handled event ${d.eventId}: nothing to do`);
  if (prev.recent.some((o) => o.key === site.key && o.at === d.observedAt))
    return noop(
      `already handled: ${site.trigger} on ${site.key} observed at ${d.observedAt} ` +
        'was seen before (duplicate delivery)',
    );
  const mine = prev.incidents.filter((i) => i.key === site.key);
  const open = mine.find(isOpen);
  const lastClosed = mine
    .filter((i) => !isOpen(i))
    .sort((a, b) => cmp(a.closedAt ?? a.lastAt, b.closedAt ?? b.lastAt))
    .at(-1);
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

  const state = adoptOrphans({ ...prev, handled: [...prev.handled, d.eventId] }, node.name, now);
  const words = triggerWords(event, site);

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
    const alreadyOut = prev.phase !== 'healthy' && prev.phase !== 'awaiting-approval';
    const byNodes =
      facts.slotDenied && !alreadyOut
        ? {
            allowed: false,
            words:
              `the pool ${facts.pool.name} has no free slot left in its ledger: ` +
              'a concurrent remediation took the last one',
          }
        : checkBlastRadius(policy, facts.pool, node.name, alreadyOut);
    // On a shared card the limit also counts the tenants one fence moves (issue #32).
    const byTenants =
      sharing.mode !== 'exclusive' && scope === 'gpu' ? checkTenants(policy, facts.pool, tenantsOf(moving)) : undefined;
    const verdict = byNodes.allowed && byTenants && !byTenants.allowed ? byTenants : byNodes;
    if (!verdict.allowed) {
      if (retryApproval && open) {
        // Asked once already: count the repeat, do not ask again (no chat spam in a storm).
        return noop(
          `${reasonCore} Still awaiting approval since ${open.since}: ${verdict.words}`,
          action,
          ws(replace(s1, { ...counted, phase: 'awaiting-approval' })),
        );
      }
      const waiting: Incident = {
        ...counted,
        action,
        level: decision.level,
        phase: 'awaiting-approval',
        since: open?.phase === 'awaiting-approval' ? open.since : now.toISOString(),
      };
      const next = ws(replace(s1, waiting));
      // A shared card's approval always says how many teams' pods the fence moves (issue #32).
      const teams = byTenants && verdict !== byTenants ? `; ${byTenants.words}` : '';
      const summary = `${action} on node ${node.name} needs approval: ${verdict.words}${teams}`;
      // The id the store records it under (run.ts): what a person answers in chat.
      const id = approvalIdFor(waiting.key, waiting.firstAt);
      const ask = {
        ...notice(
          action,
          node,
          `${summary}. Answer "approve ${id}" or "deny ${id}" within ${policy.approvals.ttlMinutes} min`,
        ),
        approval: { id },
      };
      return {
        ...base,
        kind: 'approval',
        action,
        scope,
        phase: 'awaiting-approval',
        target,
        ...decided,
        ...edit(next),
        approval: { summary },
        notices: [ask],
        reason:
          `${reasonCore} Held back by the blast radius: ${verdict.words}. ` +
          'A person must approve; the sweep acts by itself once the window has room',
        nextState: next,
      };
    }
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

/**
 * The GPU's product name as profiles match it: NVML's name the agent put in the event, else the node's
 * label from GPU Feature Discovery (`nvidia.com/gpu.product`, NVIDIA/gpu-feature-discovery) or ACK's
 * (`aliyun.accelerator/nvidia_name`, ACK "GPU node labels").
 */
export const GPU_MODEL_LABELS = ['nvidia.com/gpu.product', 'aliyun.accelerator/nvidia_name'] as const;

function ruleTriggerOf(
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
function operatorRule(by: string): Rule {
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

function planTrigger(facts: RemediationFacts): PlanTrigger {
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

/** The recovery action (field 230) an agent's event names; a person's request names none. */
function recoveryActionOf(event: RemediationFacts['event']): Incident['recoveryAction'] {
  return 'recoveryAction' in event.detail ? event.detail.recoveryAction : undefined;
}

function newIncident(
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

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
const maxIso = (a: string, b: string) => (cmp(a, b) >= 0 ? a : b);
const minIso = (a: string, b: string) => (cmp(a, b) <= 0 ? a : b);
