/**
 * Idle allocations, decided (pure): given one `GPU Utilization Summary` (its windows and who holds each
 * GPU by PodResources), the pods on the node, the node's record and the policy, which held devices sit
 * idle, since when, and what to do — tell the owner once the run reaches the window, evict where the
 * namespace opted in and the deadline passed, cancel when utilization returns. Plain data in and out.
 *
 * Evidence, not time: a window without a reading for the device (MIG instances report no SM
 * utilization: only their framebuffer use counts) or without holders is never read as idle, and a gap
 * between windows longer than `gapMinutes` starts the run again. So an eviction only ever follows a run
 * of windows each of which showed the device idle.
 */
import { createHash } from 'node:crypto';
import type { GpuUtilizationSummaryDetail } from '../../../events/index.ts';
import type { ApprovalRecord } from '../../lib/approvals.ts';
import { migResourceName } from '../../lib/mig-profiles.ts';
import type { PodRef } from '../../lib/plan.ts';
import { ruleFor, type EffectiveRule, type IdlePolicy } from './policy.ts';
import type { IdleRecord, IdleTrack } from '../../lib/idle-record.ts';

/** A pod opts out with this annotation set to `exempt`. */
export const IDLE_OPT_OUT_ANNOTATION = 'gpu-reflex.io/idle-policy';
/** Who to name in chat for the pod (`@alice`); absent: the notice names the pod and team only. */
export const OWNER_ANNOTATION = 'gpu-reflex.io/owner';
/**
 * ACK's node pool label
 * (https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/node-pool-overview).
 */
export const POOL_LABEL = 'alibabacloud.com/nodepool-id';
/** The well-known instance type label
 * (https://kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type). */
export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';

export interface PodFacts {
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  terminating: boolean;
  /** metadata.uid: a loan to the quota planner names the very pod (absent: nothing is lent). */
  uid?: string;
}

export interface IdleFacts {
  node: { name: string; labels: Readonly<Record<string, string>> };
  summary: GpuUtilizationSummaryDetail;
  /** The pods on the node (all namespaces). */
  pods: readonly PodFacts[];
  record: IdleRecord;
  /** The eviction approvals asked for this node's tracks, by id (idleApprovalId), as the store holds them. */
  approvals?: Readonly<Record<string, ApprovalRecord>>;
}

/** An eviction to put to a person (policy evict.approvalMinutes): told first, then recorded (run.ts). */
export interface ApprovalAsk {
  id: string;
  node: string;
  /** namespace/name */
  pod: string;
  device: string;
  expiresAt: number;
  reason: string;
}

export interface IdleCost {
  gpuHours: number;
  amount: number;
  currency: string;
  pricePerGpuHour: number;
}

export interface IdleFinding {
  state: 'idle' | 'evicted' | 'cancelled';
  track: IdleTrack;
  team: string;
  owner?: string;
  rule: EffectiveRule;
  /** Epoch ms: the end of the window that decided it. */
  at: number;
  idleMs: number;
  cost?: IdleCost;
  reason: string;
}

export interface IdlePlan {
  node: string;
  record: IdleRecord;
  /** False when the record is the one read (nothing to write). */
  recordChanged: boolean;
  findings: IdleFinding[];
  evictions: PodRef[];
  /** Evictions waiting for a person: asked this window. */
  asks: ApprovalAsk[];
  /** Open approvals past their expiry, to close as expired (nothing is evicted for them). */
  expired: string[];
  /** Why nothing was decided this window (holders unknown), when so. */
  skipped?: string;
}

type Reading = 'idle' | 'busy' | 'unknown';

/** The device's reading in this summary: max over the window under the threshold, for every measure it has. */
export function readDevice(
  summary: GpuUtilizationSummaryDetail,
  gpu: string,
  mig: string | undefined,
  thresholdPercent: number,
): Reading {
  const g = summary.gpus.find((x) => x.uuid === gpu);
  if (!g) return 'unknown';
  const under = (a: { max: number }) => a.max < thresholdPercent;
  if (mig !== undefined) {
    // NVML gives no SM utilization per MIG instance without GPM: an instance counts idle only while its
    // framebuffer stays (nearly) empty — a loaded model reads busy, never the other way round.
    const m = g.migDevices.find((d) => d.uuid === mig);
    if (!m) return 'unknown';
    return under(m.framebufferUsedPercent) ? 'idle' : 'busy';
  }
  if (!g.utilPercent || !g.memoryUtilPercent) return 'unknown';
  return under(g.utilPercent) && under(g.memoryUtilPercent) ? 'idle' : 'busy';
}

/** The share of a GPU a MIG profile is (`3g.40gb` → 3/7: NVIDIA's A100/H100/H200 have 7 compute slices). */
export function migShare(profile: string | undefined): number {
  const g = /^(\d)g\./.exec(profile ?? '');
  return g ? Math.min(1, Number(g[1]) / 7) : 1;
}

export function idleCost(policy: IdlePolicy, instanceType: string | undefined, idleMs: number, share: number) {
  const price = instanceType !== undefined ? policy.prices[instanceType] : undefined;
  if (price === undefined) return undefined;
  const gpuHours = round((idleMs / 3_600_000) * share, 3);
  return { gpuHours, amount: round(gpuHours * price, 2), currency: policy.currency, pricePerGpuHour: price };
}

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
const hours = (ms: number) => (ms / 3_600_000).toFixed(1);
const same = (t: IdleTrack, device: string, ns: string, pod: string) =>
  t.device === device && t.namespace === ns && t.pod === pod;

/** One approval per idle run of a pod's device: a new run asks again. */
export function idleApprovalId(node: string, t: Pick<IdleTrack, 'device' | 'namespace' | 'pod' | 'since'>): string {
  const h = createHash('sha256').update(`${node}\u0000${t.device}\u0000${t.namespace}/${t.pod}\u0000${t.since}`);
  return `idle-${h.digest('hex').slice(0, 12)}`;
}

type Verdict = 'ask' | 'wait' | 'expire' | 'approved' | 'refused';

/**
 * What the approval store says of this eviction. Only an approval closed as approved, for exactly this
 * eviction (action, node, pod, device), decided before it expired, lets it go on; anything else — absent,
 * open, rejected, expired, or a record that does not match — never evicts.
 */
function verdictOf(rec: ApprovalRecord | undefined, node: string, pod: string, device: string, now: number): Verdict {
  if (!rec) return 'ask';
  if (rec.status === 'open') return now >= Date.parse(rec.expiresAt) ? 'expire' : 'wait';
  if (rec.status !== 'approved-applied') return 'refused';
  const matches =
    rec.action === 'idle-evict' && rec.node === node && rec.idle?.pod === pod && rec.idle.device === device;
  const inTime = rec.decidedAt !== undefined && Date.parse(rec.decidedAt) <= Date.parse(rec.expiresAt);
  return matches && inTime ? 'approved' : 'refused';
}

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
  // Unknown holders: nothing is decided; a long enough silence breaks the runs by the gap rule.
  if (!holders) return unchanged('the summary names no holders (PodResources unknown on the node)');
  const ws = Date.parse(f.summary.windowStart);
  const we = Date.parse(f.summary.windowEnd);
  const gapMs = policy.gapMinutes * 60_000;
  const pool = f.node.labels[POOL_LABEL];
  const instanceType = f.node.labels[INSTANCE_TYPE_LABEL];
  const pods = new Map(f.pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  const tracks: IdleTrack[] = [];
  const findings: IdleFinding[] = [];
  const evictions: PodRef[] = [];
  const asks: ApprovalAsk[] = [];
  const expired: string[] = [];
  const seen = new Set<string>();

  for (const h of holders) {
    if (h.gpu === undefined) continue; // a DRA holder of no GPU this agent names
    const device = h.mig ?? h.gpu;
    const key = `${device} ${h.namespace}/${h.name}`;
    if (seen.has(key)) continue; // one pod, one device: several containers name it once
    seen.add(key);
    const prev = f.record.tracks.find((t) => same(t, device, h.namespace, h.name));
    const pod = pods.get(`${h.namespace}/${h.name}`);
    if (!pod || pod.terminating || pod.annotations[IDLE_OPT_OUT_ANNOTATION] === 'exempt') continue;
    const rule = ruleFor(policy, pod.namespace, pool);
    if (rule.ignore) continue;
    // A redelivered or older summary: the track stays as it is.
    if (prev && we <= prev.lastEnd) {
      tracks.push(prev);
      continue;
    }
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
    const what = h.mig ? `MIG device ${h.mig} (${profile ?? 'unknown profile'})` : `GPU ${h.gpu}`;
    const reading = readDevice(f.summary, h.gpu, h.mig, rule.thresholdPercent);
    const continuing = prev !== undefined && ws - prev.lastEnd <= gapMs;
    if (prev?.notifiedAt !== undefined && (reading !== 'idle' || !continuing)) {
      const why =
        reading === 'busy'
          ? `utilization came back to ${what} on ${node}`
          : reading === 'unknown'
            ? `${what} on ${node} has no utilization reading: it is not counted idle`
            : `no utilization of ${what} on ${node} was seen for ${Math.round((ws - prev.lastEnd) / 60_000)} min`;
      const cancelled = prev.evictAt !== undefined ? '; its eviction is cancelled' : '';
      findings.push(finding('cancelled', prev, prev.lastEnd - prev.since, `${who}: ${why}${cancelled}`));
    }
    if (reading !== 'idle') continue; // busy or unknown: no track
    let t: IdleTrack = continuing
      ? { ...prev, lastEnd: we }
      : {
          device,
          gpu: h.gpu,
          ...(h.mig ? { mig: h.mig, share: round(share, 4) } : {}),
          namespace: pod.namespace,
          pod: pod.name,
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
        evictions.push({ namespace: pod.namespace, name: pod.name });
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
      evictions.push({ namespace: pod.namespace, name: pod.name });
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
  const record = { tracks };
  return {
    node,
    record,
    recordChanged: JSON.stringify(record) !== JSON.stringify(f.record),
    findings,
    evictions,
    asks,
    expired,
  };
}
