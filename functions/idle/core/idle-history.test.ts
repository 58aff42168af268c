import { describe, expect, it } from 'vitest';
import { GPU0, GPU1, holder, MIG0, MIN, pod, summary, T0, type GpuReading } from '../testing.ts';
import { encodeIdleRecord, readIdleRecord, type IdleHistoryEntry, type IdleRecord } from '../../lib/idle-record.ts';
import { costReport, costTable, type CostPod } from './cost.ts';
import { HISTORY_BUDGET_BYTES } from './history.ts';
import { planIdle, type IdlePlan } from './planner.ts';
import { IdlePolicySchema } from './policy.ts';
import { weeklyNotices } from './weekly.ts';

const H = 60 * MIN;
const TYPE = 'ecs.gn7i-c8g1.2xlarge';
const NODE = { name: 'gpu-1', labels: { 'node.kubernetes.io/instance-type': TYPE } };
const policy = IdlePolicySchema.parse({ prices: { [TYPE]: 10 } });
const idle: GpuReading = { uuid: GPU0, util: 0, mem: 0 };
const busy: GpuReading = { uuid: GPU0, util: 60, mem: 30 };
const NB = [holder('research', 'notebook', GPU0)];
const PODS = [pod('research', 'notebook', { uid: 'uid-1' })];

/** The planner window by window (10 min each) from `start`, carrying the record. */
function run(start: number, readings: GpuReading[], record: IdleRecord = { tracks: [] }): IdlePlan[] {
  const plans: IdlePlan[] = [];
  readings.forEach((r, i) => {
    const plan = planIdle({ node: NODE, summary: summary(start + i * 10 * MIN, [r], NB), pods: PODS, record }, policy);
    plans.push(plan);
    record = plan.record;
  });
  return plans;
}
const times = <T>(n: number, v: T): T[] => Array.from({ length: n }, () => v);
const last = (plans: IdlePlan[]) => plans[plans.length - 1]!.record;
const costPod: CostPod = {
  namespace: 'research',
  name: 'notebook',
  nodeName: 'gpu-1',
  phase: 'Running',
  labels: {},
  extendedResources: { 'nvidia.com/gpu': 1 },
};
const report = (record: IdleRecord, from: number, to: number) =>
  costReport(
    [{ ...NODE, annotations: encodeIdleRecord(record).annotations as Record<string, string> }],
    [costPod],
    policy,
    from,
    to,
  ).rows[0]!;

describe('closed idle runs (the idle history)', () => {
  it('counts the idle hours of a pod that was idle, then busy, within the period', () => {
    // 20 h idle from T0, then busy for 10 h: the run is closed, its track gone; its 20 h still count.
    const plans = run(T0, [...times(120, idle), ...times(60, busy)]);
    const to = T0 + 30 * H;
    const row = report(last(plans), to - 7 * 24 * H, to);
    expect(row.idleGpuHours).toBe(20);
    expect(row.idleCost).toBe(200);
  });
});

describe('a period longer than the history keeps', () => {
  it('says that ended runs before the retention are not counted, instead of reading them as no idle time', () => {
    const plans = run(T0, [...times(120, idle), ...times(60, busy)]);
    const to = T0 + 30 * H;
    const rep = costReport(
      [{ ...NODE, annotations: encodeIdleRecord(last(plans)).annotations as Record<string, string> }],
      [costPod],
      policy,
      to - 30 * 24 * H,
      to,
    );
    expect(rep.idleKeptFrom).toBe(new Date(to - 8 * 24 * H).toISOString());
    expect(costTable(rep).join('\n')).toContain(
      `idle share before ${new Date(to - 8 * 24 * H).toISOString()}: ended idle runs are kept 8 days`,
    );
    // A week is within it: nothing to say.
    expect(costReport([], [costPod], policy, to - 7 * 24 * H, to).idleKeptFrom).toBeUndefined();
  });
});

describe('the idle history', () => {
  const D = 24 * H;
  const entry = (o: Partial<IdleHistoryEntry> = {}): IdleHistoryEntry => ({
    namespace: 'research',
    pod: 'notebook',
    day: '2026-12-04',
    ms: H,
    ...o,
  });
  /** One busy window at `at` over a record: the record after it. */
  const busyAt = (at: number, record: IdleRecord) => run(at, [busy], record)[0]!;

  it('splits a run across UTC midnight into its days; a day the period only partly covers counts pro rata', () => {
    // Idle 22:00 → 02:00 UTC, then busy.
    const record = last(run(T0 - 2 * H, [...times(24, idle), busy]));
    expect(record.tracks).toEqual([]);
    expect(record.history).toEqual([
      { namespace: 'research', pod: 'notebook', uid: 'uid-1', day: '2026-12-04', ms: 2 * H },
      { namespace: 'research', pod: 'notebook', uid: 'uid-1', day: '2026-12-05', ms: 2 * H },
    ]);
    expect(report(record, T0 - D, T0 + D).idleGpuHours).toBe(4);
    expect(report(record, T0, T0 + D).idleGpuHours).toBe(2);
    // The period starts at noon: half of each day's bucket (docs/cost.md: pro rata on a partial first/last day).
    expect(report(record, T0 - 12 * H, T0 + 12 * H).idleGpuHours).toBe(2);
  });

  it('adds an ended run to the idle time of a run still open, and a run replaced after a gap to its day', () => {
    const plans = run(T0, [...times(6, idle), ...times(3, busy), ...times(6, idle)]);
    const record = last(plans);
    expect(record.history).toEqual([expect.objectContaining({ day: '2026-12-05', ms: H })]);
    expect(record.tracks).toEqual([expect.objectContaining({ since: T0 + 90 * MIN, lastEnd: T0 + 150 * MIN })]);
    expect(report(record, T0 - D, T0 + D).idleGpuHours).toBe(2);
  });

  it('counts nothing twice for a summary delivered twice or late, and writes nothing for it', () => {
    const plans = run(T0, [...times(6, idle), busy]);
    const record = last(plans);
    // The last one again, then an idle window of the closed run that arrives late: nothing changes.
    for (const at of [T0 + 60 * MIN, T0 + 30 * MIN]) {
      const again = planIdle(
        { node: NODE, summary: summary(at, [at > T0 + 50 * MIN ? busy : idle], NB), pods: PODS, record },
        policy,
      );
      expect([again.recordChanged, again.record]).toEqual([false, record]);
    }
    // And the next windows go on as before.
    const next = last(run(T0 + 70 * MIN, [idle, busy], record));
    expect(report(next, T0 - D, T0 + D).idleGpuHours).toBeCloseTo(70 / 60, 2);
  });

  it('drops the days that ended more than 8 days before the window, and the record once nothing is left', () => {
    const now = T0 + 9 * D; // 2026-12-14
    const record: IdleRecord = {
      tracks: [],
      history: [entry({ day: '2026-12-04' }), entry({ day: '2026-12-05' }), entry({ day: '2026-12-06' })],
      closedTo: T0,
    };
    const plan = busyAt(now, record);
    // 12-05 ended at 12-06 00:00, 8 days and 10 min before the window's end: dropped; 12-06 kept.
    expect(plan.record.history!.map((e) => e.day)).toEqual(['2026-12-06']);
    expect(plan.recordChanged).toBe(true);
    const later = busyAt(now + 2 * D, plan.record);
    expect(later.record).toEqual({ tracks: [] });
    expect(encodeIdleRecord(later.record).annotations).toEqual({ 'gpu-reflex.io/idle-gpus': null });
  });

  it('keeps the history under its budget by dropping the oldest days: the idle share before is unknown', () => {
    // 9 days × 20 pods with long names: far over 16 KiB.
    const history = Array.from({ length: 9 }, (_, d) =>
      Array.from({ length: 20 }, (_, i) =>
        entry({
          pod: `a-rather-long-notebook-name-${i}`,
          uid: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}`,
          day: new Date(T0 + d * D).toISOString().slice(0, 10),
        }),
      ),
    ).flat();
    const now = T0 + 8 * D + 12 * H;
    const plan = busyAt(now, { tracks: [], history, closedTo: T0 });
    const kept = plan.record.history!;
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThanOrEqual(HISTORY_BUDGET_BYTES);
    const firstDay = kept[0]!.day;
    expect(plan.record.historyFrom).toBe(Date.parse(`${firstDay}T00:00:00Z`));
    expect(firstDay > '2026-12-05').toBe(true);
    // A week back reaches before it: the notebook's idle share on this node is unknown, never a smaller sum.
    const rep = costReport(
      [{ ...NODE, annotations: encodeIdleRecord(plan.record).annotations as Record<string, string> }],
      [costPod],
      policy,
      now - 7 * D,
      now,
    );
    expect(rep.rows[0]!.idleUnreadGpuHours).toBe(168);
    expect(rep.rows[0]!.idleCost).toBeUndefined();
    expect(costTable(rep)[2]).toMatch(/unknown \(168 GPU-h unread\)/);
    // From the first day it keeps whole: known.
    expect(report(plan.record, plan.record.historyFrom!, now).idleUnreadGpuHours).toBeUndefined();
  });

  it("keeps a MIG device's share apart, and counts its ended idle time as that share of a GPU", () => {
    const mig = (fb: number): GpuReading => ({ uuid: GPU1, mig: [{ uuid: MIG0, profile: '3g.40gb', fb }] });
    let record: IdleRecord = { tracks: [] };
    [...times(6, 0), 50].forEach((fb, i) => {
      const s = summary(T0 + i * 10 * MIN, [mig(fb)], [holder('research', 'notebook', GPU1, MIG0)]);
      record = planIdle({ node: NODE, summary: s, pods: PODS, record }, policy).record;
    });
    expect(record.history).toEqual([expect.objectContaining({ share: 0.4286, day: '2026-12-05', ms: H })]);
    const rep = costReport(
      [{ ...NODE, annotations: encodeIdleRecord(record).annotations as Record<string, string> }],
      [{ ...costPod, extendedResources: { 'nvidia.com/mig-3g.40gb': 1 } }],
      policy,
      T0 - D,
      T0 + D,
    );
    expect(rep.rows[0]!.idleGpuHours).toBe(0.43);
  });

  it('reads a record written before the history (v 1, tracks only)', () => {
    const raw = JSON.stringify({ v: 1, tracks: [] });
    expect(readIdleRecord({ 'gpu-reflex.io/idle-gpus': raw })).toEqual({ record: { tracks: [] } });
  });

  it("tells a team in Monday's weekly report the idle hours of a pod idle on Tuesday and busy since", () => {
    const monday = Date.UTC(2026, 11, 7, 9); // 2026-12-07 09:00, a Monday
    const tuesday = Date.UTC(2026, 11, 1, 2);
    const record = last(run(tuesday, [...times(120, idle), busy]));
    const rep = costReport(
      [{ ...NODE, annotations: encodeIdleRecord(record).annotations as Record<string, string> }],
      [{ ...costPod, labels: { team: 'vision' } }],
      policy,
      monday - 7 * D,
      monday,
    );
    const [notice] = weeklyNotices(rep, { ...policy, weeklyReport: { day: 'monday', hourUtc: 9 } });
    expect(notice!.notice.text).toMatch(/^168\.00 GPU-hours \(idle 20\.00\): 1680\.00 CNY, of which idle 200\.00 CNY/);
  });
});
