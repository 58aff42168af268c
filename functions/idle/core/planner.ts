/**
 * Idle allocations, decided (pure): given one `GPU Utilization Summary` (its windows and who holds each
 * GPU by PodResources), the pods on the node, the node's record and the policy, which held devices sit
 * idle, since when, and what to do — tell the owner once the run reaches the window, evict where the
 * namespace opted in and the deadline passed, cancel when utilization returns. Plain data in and out.
 *
 * Evidence, not time: a window without a reading for the device (MIG instances report no SM
 * utilization: only their framebuffer use counts), one the agent did not sample throughout (a stall:
 * `unsampledMs`) or without holders (the node's open runs end) is never read as idle, and a gap between
 * windows longer than `gapMinutes` starts the run again. So an eviction only ever follows a run
 * of windows each of which showed the device idle, and is made only in a window that reads every device the
 * pod holds idle (one busy or unknown may be doing its work).
 */
import { migResourceName } from '../../lib/mig-profiles.ts';
import type { IdleTrack } from '../../lib/idle-record.ts';
import { idleApprovalId, verdictOf } from './approval-verdict.ts';
import { withHistory } from './history.ts';
import { endRunsWithoutHolders } from './no-holders.ts';
import { ruleFor, type IdlePolicy } from './policy.ts';
import type { PodRef } from '../../lib/plan.ts';
import {
  IDLE_OPT_OUT_ANNOTATION,
  INSTANCE_TYPE_LABEL,
  OWNER_ANNOTATION,
  POOL_LABEL,
  type ApprovalAsk,
  type IdleCost,
  type IdleFacts,
  type IdleFinding,
  type IdlePlan,
} from './plan-types.ts';
import { idleCost, migShare, readDevice, round, unsampled } from './readings.ts';

// Importable from here as before.
export { idleApprovalId } from './approval-verdict.ts';
export {
  IDLE_OPT_OUT_ANNOTATION,
  INSTANCE_TYPE_LABEL,
  OWNER_ANNOTATION,
  POOL_LABEL,
  type ApprovalAsk,
  type IdleCost,
  type IdleFacts,
  type IdleFinding,
  type IdlePlan,
  type PodFacts,
} from './plan-types.ts';
export { idleCost, migShare, readDevice } from './readings.ts';

const hours = (ms: number) => (ms / 3_600_000).toFixed(1);
const same = (t: IdleTrack, device: string, ns: string, pod: string) =>
  t.device === device && t.namespace === ns && t.pod === pod;

function withoutLend(t: IdleTrack): IdleTrack {
  const { lend: _lend, ...rest } = t;
  return rest;
}

export function planIdle(f: IdleFacts, policy: IdlePolicy): IdlePlan {
  const node = f.node.name;
  const unchanged = (skipped: string): IdlePlan => ({
    node,
    record: f.record,
    recordChanged: false,
    findings: [],
    evictions: [],
    asks: [],
    expired: [],
    skipped,
  });
  const holders = f.summary.holders;
  const ws = Date.parse(f.summary.windowStart);
  const we = Date.parse(f.summary.windowEnd);
  // A redelivered or older summary (EventBridge does not keep order): its windows were seen, and the runs they
  // ended were moved to the history already; reading them again could only count that idle time twice.
  if (we <= Math.max(f.record.closedTo ?? 0, ...f.record.tracks.map((t) => t.lastEnd)))
    return unchanged('a summary whose windows were seen already (redelivered or late)');
  // Unknown holders: nothing is counted idle, and the node's open runs end (no-holders.ts: why not the gap rule).
  if (!holders)
    return endRunsWithoutHolders(
      f,
      policy,
      unchanged('the summary names no holders (PodResources unknown on the node)'),
      we,
    );
  const gapMs = policy.gapMinutes * 60_000;
  // A window the agent did not sample throughout reads unknown for every device it saw idle (readings.ts: why whole).
  const stalled = unsampled(f.summary);
  const pool = f.node.labels[POOL_LABEL];
  const instanceType = f.node.labels[INSTANCE_TYPE_LABEL];
  const pods = new Map(f.pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  const tracks: IdleTrack[] = [];
  const findings: IdleFinding[] = [];
  const evictions: PodRef[] = [];
  const asks: ApprovalAsk[] = [];
  const expired: string[] = [];
  const held: string[] = [];
  // One eviction per pod, however many of its devices are past their deadline.
  const evict = (p: PodRef) => {
    if (!evictions.some((e) => e.namespace === p.namespace && e.name === p.name)) evictions.push(p);
  };
  const seen = new Set<string>();
  // Every device each pod holds, as this window reads it. A pod is evicted (or a person asked) only while all of
  // them read idle: one that works may be doing the pod's work, and one whose reading is missing, or that the agent
  // names no GPU for (a DRA claim's device: its use is not measured), is unknown — never idle.
  const notIdle = new Map<string, string>();
  for (const h of holders) {
    const who = `${h.namespace}/${h.name}`;
    if (notIdle.has(who)) continue;
    const threshold = ruleFor(policy, h.namespace, pool).thresholdPercent;
    const r = h.gpu === undefined ? 'unknown' : readDevice(f.summary, h.gpu, h.mig, threshold);
    const what =
      h.gpu === undefined
        ? `${h.dra ? `DRA device ${h.dra.driver}/${h.dra.device}` : `device ${h.deviceId ?? '?'}`}, unmeasured`
        : `${h.mig ? `MIG device ${h.mig}` : `GPU ${h.gpu}`}, ${r}`;
    if (r !== 'idle') notIdle.set(who, what);
  }

  for (const h of holders) {
    if (h.gpu === undefined) continue; // a DRA holder of no GPU this agent names
    const device = h.mig ?? h.gpu;
    const key = `${device} ${h.namespace}/${h.name}`;
    if (seen.has(key)) continue; // one pod, one device: several containers name it once
    seen.add(key);
    const found = f.record.tracks.find((t) => same(t, device, h.namespace, h.name));
    const pod = pods.get(`${h.namespace}/${h.name}`);
    if (!pod || pod.terminating || pod.annotations[IDLE_OPT_OUT_ANNOTATION] === 'exempt') continue;
    const rule = ruleFor(policy, pod.namespace, pool);
    if (rule.ignore) continue;
    // The run is the very pod's (metadata.uid): a pod of the same name made since (a StatefulSet's pod recreated
    // after its eviction, on the freed GPU) was never told nor idle for a window, so its run starts afresh. A track
    // or pod without a UID (a record written before tracks kept it, a fake) is taken as the same pod.
    const prev =
      found && (found.uid === undefined || pod.uid === undefined || found.uid === pod.uid) ? found : undefined;
    const team = pod.labels[policy.teamLabel] ?? pod.namespace;
    const owner = pod.annotations[OWNER_ANNOTATION];
    const profile = h.mig
      ? f.summary.gpus.find((g) => g.uuid === h.gpu)?.migDevices.find((m) => m.uuid === h.mig)?.profile
      : undefined;
    const share = h.mig ? migShare(profile) : 1;
    const finding = (state: IdleFinding['state'], track: IdleTrack, idleMs: number, reason: string): IdleFinding => {
      const cost = idleCost(policy, instanceType, idleMs, share);
      return {
        state,
        track,
        team,
        ...(owner ? { owner } : {}),
        rule,
        at: we,
        idleMs,
        ...(cost ? { cost } : {}),
        reason,
      };
    };
    const who = `${pod.namespace}/${pod.name}`;
    // The eviction names the pod's UID: the API refuses it for another pod of that name (a precondition).
    const podRef: PodRef = { namespace: pod.namespace, name: pod.name, ...(pod.uid ? { uid: pod.uid } : {}) };
    const what = h.mig ? `MIG device ${h.mig} (${profile ?? 'unknown profile'})` : `GPU ${h.gpu}`;
    const reading = readDevice(f.summary, h.gpu, h.mig, rule.thresholdPercent);
    const continuing = prev !== undefined && ws - prev.lastEnd <= gapMs;
    if (prev?.notifiedAt !== undefined && (reading !== 'idle' || !continuing)) {
      const why =
        reading === 'busy'
          ? `utilization came back to ${what} on ${node}`
          : reading === 'unknown'
            ? stalled !== undefined
              ? `${what} on ${node}: ${stalled}: it is not counted idle`
              : `${what} on ${node} has no utilization reading: it is not counted idle`
            : `no utilization of ${what} on ${node} was seen for ${Math.round((ws - prev.lastEnd) / 60_000)} min`;
      const cancelled = prev.evictAt !== undefined ? '; its eviction is cancelled' : '';
      findings.push(finding('cancelled', prev, prev.lastEnd - prev.since, `${who}: ${why}${cancelled}`));
    }
    if (reading !== 'idle') continue; // busy or unknown: no track
    let t: IdleTrack = continuing
      ? { ...prev, lastEnd: we, ...(pod.uid ? { uid: pod.uid } : {}) }
      : {
          device,
          gpu: h.gpu,
          ...(h.mig ? { mig: h.mig, share: round(share, 4) } : {}),
          namespace: pod.namespace,
          pod: pod.name,
          ...(pod.uid ? { uid: pod.uid } : {}),
          since: ws,
          lastEnd: we,
        };
    const idleMs = we - t.since;
    const spent = (c: IdleCost | undefined) =>
      c ? `, ${c.gpuHours} GPU-hours, ${c.amount.toFixed(2)} ${c.currency}` : '';
    if (t.notifiedAt === undefined && idleMs >= rule.windowMs) {
      t = {
        ...t,
        notifiedAt: we,
        ...(rule.evictAfterMs !== undefined ? { evictAt: we + rule.evictAfterMs } : {}),
      };
      const c = idleCost(policy, instanceType, idleMs, share);
      const then =
        t.evictAt !== undefined
          ? `; evicted at ${new Date(t.evictAt).toISOString()} if still idle`
          : '; the namespace has no eviction policy: nothing is evicted';
      findings.push(
        finding(
          'idle',
          t,
          idleMs,
          `${who} has held ${what} on ${node} for ${hours(idleMs)} h under ${rule.thresholdPercent}% ` +
            `utilization and memory activity${spent(c)}${then}`,
        ),
      );
    } else if (t.evictAt !== undefined && we >= t.evictAt && notIdle.has(who)) {
      // Past its deadline, but the pod holds a device that is not idle: nothing is evicted or asked this window.
      held.push(`${who}: not evicted: it also holds ${notIdle.get(who)} (${what} on ${node} is idle)`);
    } else if (
      t.evictAt !== undefined &&
      we >= t.evictAt &&
      t.evictedAt === undefined &&
      rule.approvalMs !== undefined
    ) {
      // The policy asks a person first: evicted only on an approval of exactly this eviction.
      const id = idleApprovalId(node, t);
      const verdict = verdictOf(f.approvals?.[id], node, who, t.device, we);
      if (verdict === 'ask')
        asks.push({
          id,
          node,
          pod: who,
          device: t.device,
          expiresAt: we + rule.approvalMs,
          reason:
            `${who} has held ${what} on ${node} idle for ${hours(idleMs)} h` +
            `${spent(idleCost(policy, instanceType, idleMs, share))}, past its deadline: evict it? ` +
            `Answer "approve ${id}" or "deny ${id}" within ${rule.approvalMs / 60_000} min`,
        });
      if (verdict === 'expire') expired.push(id);
      if (verdict === 'approved') {
        evict(podRef);
        t = { ...t, evictedAt: we };
        findings.push(
          finding(
            'evicted',
            t,
            idleMs,
            `${who} evicted on approval ${id}: ${what} on ${node} idle for ${hours(idleMs)} h` +
              `${spent(idleCost(policy, instanceType, idleMs, share))} (namespace policy ${pod.namespace})`,
          ),
        );
      }
    } else if (t.evictAt !== undefined && we >= t.evictAt) {
      // No approval asked for, or one given (evictedAt set above at the approved window).
      const deadline = t.evictAt;
      // Asked again each window while the pod still holds the device (a PodDisruptionBudget may hold it).
      evict(podRef);
      if (t.evictedAt === undefined) {
        t = { ...t, evictedAt: we };
        const c = idleCost(policy, instanceType, idleMs, share);
        findings.push(
          finding(
            'evicted',
            t,
            idleMs,
            `${who} evicted: ${what} on ${node} idle for ${hours(idleMs)} h${spent(c)}, past its deadline ` +
              `${new Date(deadline).toISOString()} (namespace policy ${pod.namespace})`,
          ),
        );
      }
    }
    // Lent to the quota planner while told and idle, on this window's evidence only (docs/cost.md, Lending).
    const resource = h.mig ? (profile ? migResourceName(profile) : undefined) : 'nvidia.com/gpu';
    if (rule.lend && t.notifiedAt !== undefined && resource !== undefined && pod.uid)
      t = { ...t, lend: { resource, uid: pod.uid, until: t.lastEnd + gapMs } };
    else if (t.lend !== undefined) t = withoutLend(t);
    tracks.push(t);
  }
  // A run not carried on (utilization back, the pod gone, a gap, another pod of the name) ended: its idle time
  // goes to the history, so the cost report still counts it (history.ts).
  const closed = f.record.tracks.filter(
    (o) => !tracks.some((t) => same(t, o.device, o.namespace, o.pod) && t.since === o.since),
  );
  const record = withHistory(f.record, tracks, closed, we);
  return {
    node,
    record,
    recordChanged: JSON.stringify(record) !== JSON.stringify(f.record),
    findings,
    evictions,
    asks,
    expired,
    ...(held.length > 0 ? { held } : {}),
  };
}
