/**
 * GPU cost per team (pure): the GPU-hours the pods running now, and those that ended within the period
 * (Succeeded/Failed, still in the API, with their end time), have held over a period, × the price per
 * GPU-hour of their node's instance type (the idle policy's `prices`), per namespace and team, with the
 * idle share apart — the idle runs idle-gpus keeps on each node, open and ended (lib/idle-record.ts). A pod
 * deleted from the API is not counted (its idle runs went out as `GPU Idle Allocation` events); an ended pod
 * without an end time is not guessed at: it is counted in `unknownEnd`. A GPU pod whose share of a GPU its
 * requests do not say (ACK cGPU's GiB of a card, a DRA claim) is counted in its row as unmeasured: that row's
 * GPU-hours and cost are unknown, never the sum without it.
 */
import { holdsDevices } from '../../adapters/kube/model.ts';
import { INSTANCE_TYPE_LABEL } from './planner.ts';
import { gpusOf } from './readings.ts';
import type { IdlePolicy } from './policy.ts';
import { readIdleRecord } from '../../lib/idle-record.ts';
import { HISTORY_RETENTION_MS, historyIdleMs } from './history.ts';

export interface CostNode {
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
}

export interface CostPod {
  namespace: string;
  name: string;
  nodeName: string | undefined;
  phase: string | undefined;
  labels: Readonly<Record<string, string>>;
  extendedResources: Readonly<Record<string, number>>;
  /** How many DRA ResourceClaims the pod names (PodInfo.resourceClaims): devices its requests do not count. */
  resourceClaims?: number;
  /** ISO; absent: counted from the start of the period. */
  createdAt?: string;
  /** ISO: when a Succeeded/Failed pod ended; absent on one: its hours are unknown, not counted. */
  finishedAt?: string;
}

export interface CostRow {
  team: string;
  namespace: string;
  pods: number;
  gpuHours: number;
  idleGpuHours: number;
  /** Absent: some of its GPU-hours ran on an instance type with no price (`unpriced` says how many). */
  cost?: number;
  idleCost?: number;
  unpricedGpuHours: number;
  /**
   * Present: some of its GPU-hours ran on a node whose idle record could not be read, so its idle share is unknown
   * (`idleGpuHours` counts only what was read; `idleCost` is left out).
   */
  idleUnreadGpuHours?: number;
  /**
   * Present: GPU pods whose share of a GPU is unknown (ACK cGPU `aliyun.com/gpu-mem` or
   * `aliyun.com/gpu-core.percentage`, `nvidia.com/vgpu`, a DRA claim, …): counted in `pods`, not in the GPU-hours,
   * so `gpuHours` and `idleGpuHours` are what the others held (a floor), and `cost` and `idleCost` are left out.
   */
  unmeasuredPods?: number;
}

export interface CostReport {
  from: string;
  to: string;
  currency: string;
  rows: CostRow[];
  /** Ended GPU pods (namespace/name) the API gives no end time for: left out, not guessed. */
  unknownEnd: string[];
  /** The same by team (absent: none), so each team's weekly notice says what of its own was left out. */
  unknownEndByTeam?: Record<string, string[]>;
  /**
   * Set when the period reaches back past what the idle history keeps (HISTORY_RETENTION_MS): before it, only runs
   * still open count as idle — ended ones are gone, so the idle share there is a floor, said so, never a total.
   */
  idleKeptFrom?: string;
}

export { gpusOf } from './readings.ts';

const round = (v: number, d: number) => Math.round(v * 10 ** d) / 10 ** d;
const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));

export function costReport(
  nodes: readonly CostNode[],
  pods: readonly CostPod[],
  policy: IdlePolicy,
  fromMs: number,
  toMs: number,
  /** Per GPU-hour by node name, for nodes the policy does not price (live-prices.ts); the policy's win. */
  nodePrices: ReadonlyMap<string, number> = new Map(),
): CostReport {
  const byNode = new Map(nodes.map((n) => [n.name, n]));
  const idleByPod = new Map<string, number>();
  // A record that does not parse (another version's, a hand edit) says nothing of idle time: unknown, not none.
  const unread = new Set<string>();
  for (const n of nodes) {
    const { record, warning } = readIdleRecord(n.annotations);
    // History dropped to keep the annotation small: the ended runs before `historyFrom` are unknown, as unread.
    if (warning || (record.historyFrom !== undefined && record.historyFrom > fromMs)) unread.add(n.name);
    // Open runs exactly; ended runs by their day buckets, pro rata on a day the period starts or ends in.
    for (const t of record.tracks) {
      const key = `${t.namespace}/${t.pod}`;
      const share = t.share ?? 1;
      idleByPod.set(key, (idleByPod.get(key) ?? 0) + overlap(t.since, t.lastEnd, fromMs, toMs) * share);
    }
    for (const [key, ms] of historyIdleMs(record, fromMs, toMs)) idleByPod.set(key, (idleByPod.get(key) ?? 0) + ms);
  }
  const rows = new Map<string, CostRow>();
  const unknownEnd: string[] = [];
  const unknownEndByTeam: Record<string, string[]> = {};
  for (const p of pods) {
    const ended = p.phase === 'Succeeded' || p.phase === 'Failed';
    if ((p.phase !== 'Running' && !ended) || !p.nodeName) continue;
    const share = gpusOf(p.extendedResources, byNode.get(p.nodeName)?.labels);
    // A GPU pod whose requests (or its node) do not say what share of a GPU it holds: unknown, never nothing.
    const unmeasured = share === undefined || (share === 0 && holdsDevices(p));
    const gpus = share ?? 0;
    if (gpus === 0 && !unmeasured) continue;
    const end = ended ? (p.finishedAt !== undefined ? Date.parse(p.finishedAt) : NaN) : toMs;
    const team = p.labels[policy.teamLabel] ?? p.namespace;
    if (Number.isNaN(end)) {
      unknownEnd.push(`${p.namespace}/${p.name}`);
      (unknownEndByTeam[team] ??= []).push(`${p.namespace}/${p.name}`);
      continue;
    }
    if (ended && end <= fromMs) continue; // ended before the period
    const start = p.createdAt !== undefined ? Date.parse(p.createdAt) : fromMs;
    const gpuHours = (overlap(start, end, fromMs, toMs) / 3_600_000) * gpus;
    const idleGpuHours = Math.min(gpuHours, (idleByPod.get(`${p.namespace}/${p.name}`) ?? 0) / 3_600_000);
    const type = byNode.get(p.nodeName)?.labels[INSTANCE_TYPE_LABEL];
    const price = (type !== undefined ? policy.prices[type] : undefined) ?? nodePrices.get(p.nodeName);
    const key = `${team}\u0000${p.namespace}`;
    const row = rows.get(key) ?? {
      team,
      namespace: p.namespace,
      pods: 0,
      gpuHours: 0,
      idleGpuHours: 0,
      cost: 0,
      idleCost: 0,
      unpricedGpuHours: 0,
    };
    if (unread.has(p.nodeName)) row.idleUnreadGpuHours = (row.idleUnreadGpuHours ?? 0) + gpuHours;
    row.pods += 1;
    if (unmeasured) row.unmeasuredPods = (row.unmeasuredPods ?? 0) + 1;
    row.gpuHours += gpuHours;
    row.idleGpuHours += idleGpuHours;
    if (price === undefined) row.unpricedGpuHours += gpuHours;
    else {
      row.cost = (row.cost ?? 0) + gpuHours * price;
      row.idleCost = (row.idleCost ?? 0) + idleGpuHours * price;
    }
    rows.set(key, row);
  }
  const out = [...rows.values()]
    .map((r) => ({
      ...r,
      gpuHours: round(r.gpuHours, 2),
      idleGpuHours: round(r.idleGpuHours, 2),
      unpricedGpuHours: round(r.unpricedGpuHours, 2),
      ...(r.idleUnreadGpuHours !== undefined ? { idleUnreadGpuHours: round(r.idleUnreadGpuHours, 2) } : {}),
      ...(r.unpricedGpuHours > 0 || r.unmeasuredPods !== undefined
        ? { cost: undefined, idleCost: undefined }
        : {
            cost: round(r.cost ?? 0, 2),
            idleCost: r.idleUnreadGpuHours !== undefined ? undefined : round(r.idleCost ?? 0, 2),
          }),
    }))
    .map(({ cost, idleCost, ...r }) => ({
      ...r,
      ...(cost !== undefined ? { cost } : {}),
      ...(idleCost !== undefined ? { idleCost } : {}),
    }))
    .sort((a, b) => (a.team === b.team ? (a.namespace < b.namespace ? -1 : 1) : a.team < b.team ? -1 : 1));
  return {
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    currency: policy.currency,
    rows: out,
    unknownEnd: unknownEnd.sort(),
    ...(unknownEnd.length > 0
      ? { unknownEndByTeam: Object.fromEntries(Object.entries(unknownEndByTeam).map(([t, l]) => [t, l.sort()])) }
      : {}),
    ...(fromMs < toMs - HISTORY_RETENTION_MS
      ? { idleKeptFrom: new Date(toMs - HISTORY_RETENTION_MS).toISOString() }
      : {}),
  };
}

const COLUMNS = ['TEAM', 'NAMESPACE', 'PODS', 'GPU-HOURS', 'IDLE GPU-HOURS', 'IDLE %', 'COST', 'IDLE COST'];

const pct = (r: CostRow) =>
  r.gpuHours > 0 && r.idleUnreadGpuHours === undefined && r.unmeasuredPods === undefined
    ? `${Math.round((100 * r.idleGpuHours) / r.gpuHours)}%`
    : '-';
const money = (v: number | undefined, r: CostRow) =>
  r.unmeasuredPods !== undefined
    ? 'unknown'
    : v === undefined
      ? `unpriced (${r.unpricedGpuHours} GPU-h)`
      : v.toFixed(2);
/** The GPU-hours, or why they are unknown (pods whose share of a GPU is unknown). */
export const gpuHoursWords = (r: CostRow) =>
  r.unmeasuredPods !== undefined
    ? `unknown (${r.unmeasuredPods} pod${r.unmeasuredPods === 1 ? '' : 's'} unmeasured)`
    : r.gpuHours.toFixed(2);
/** The idle GPU-hours, or why they are unknown (a node's idle record unread, pods unmeasured). */
export const idleHours = (r: CostRow) =>
  r.idleUnreadGpuHours !== undefined
    ? `unknown (${r.idleUnreadGpuHours} GPU-h unread)`
    : r.unmeasuredPods !== undefined
      ? 'unknown'
      : r.idleGpuHours.toFixed(2);

export function costTable(rep: CostReport): string[] {
  const rows = rep.rows.map((r) => [
    r.team,
    r.namespace,
    String(r.pods),
    gpuHoursWords(r),
    idleHours(r),
    pct(r),
    money(r.cost, r),
    r.idleUnreadGpuHours !== undefined && r.cost !== undefined ? 'unknown' : money(r.idleCost, r),
  ]);
  const width = COLUMNS.map((c, j) => Math.max(c.length, ...rows.map((r) => r[j]!.length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, j) => c.padEnd(width[j]!))
      .join('  ')
      .trimEnd();
  return [
    `GPU cost ${rep.from} → ${rep.to} (${rep.currency})`,
    line(COLUMNS),
    ...rows.map(line),
    ...(rep.unknownEnd.length > 0 ? [unknownEndWords(rep.unknownEnd)] : []),
    ...(rep.idleKeptFrom ? [idleKeptWords(rep.idleKeptFrom)] : []),
  ];
}

/** Ended GPU pods the report could not time (CostReport.unknownEnd), named: left out, not guessed. */
export const unknownEndWords = (pods: readonly string[]) =>
  `not counted: ${pods.length} ended GPU pod${pods.length === 1 ? '' : 's'} without an end time ` +
  `(${pods.slice(0, 5).join(', ')}${pods.length > 5 ? ', …' : ''})`;

/** What the idle share leaves out of a period longer than the idle history keeps (CostReport.idleKeptFrom). */
export const idleKeptWords = (from: string) =>
  `idle share before ${from}: ended idle runs are kept ${HISTORY_RETENTION_MS / 86_400_000} days, ` +
  'so before it only runs still open count (a floor, not the total)';

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
const csvField = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);

export function costCsv(rep: CostReport): string[] {
  const head = [
    'team',
    'namespace',
    'pods',
    'gpu_hours',
    'idle_gpu_hours',
    'cost',
    'idle_cost',
    'currency',
    'from',
    'to',
  ];
  return [
    head.join(','),
    ...rep.rows.map((r) =>
      [
        r.team,
        r.namespace,
        String(r.pods),
        r.unmeasuredPods !== undefined ? '' : String(r.gpuHours),
        r.idleUnreadGpuHours !== undefined || r.unmeasuredPods !== undefined ? '' : String(r.idleGpuHours),
        r.cost === undefined ? '' : String(r.cost),
        r.idleCost === undefined ? '' : String(r.idleCost),
        rep.currency,
        rep.from,
        rep.to,
      ]
        .map(csvField)
        .join(','),
    ),
  ];
}
