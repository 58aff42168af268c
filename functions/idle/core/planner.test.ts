import { describe, expect, it } from 'vitest';
import { GPU0, GPU1, holder, MIG0, MIN, pod, summary, T0, type GpuReading } from '../testing.ts';
import type { ApprovalRecord } from '../../lib/approvals.ts';
import { idleApprovalId, planIdle, type IdleFinding, type IdlePlan, type PodFacts } from './planner.ts';
import { IdlePolicySchema, parseIdlePolicy, type IdlePolicy } from './policy.ts';
import type { IdleRecord } from '../../lib/idle-record.ts';
import type { GpuUtilizationSummaryDetail } from '../../../events/index.ts';

const NODE = { name: 'gpu-1', labels: { 'node.kubernetes.io/instance-type': 'ecs.gn7i-c8g1.2xlarge' } };
const policy = (o: object = {}): IdlePolicy =>
  IdlePolicySchema.parse({ prices: { 'ecs.gn7i-c8g1.2xlarge': 9.8 }, ...o });
const idle: GpuReading = { uuid: GPU0, util: 0, mem: 0 };
const busy: GpuReading = { uuid: GPU0, util: 60, mem: 30 };
const NB = [holder('research', 'notebook', GPU0)];
const PODS = [
  pod('research', 'notebook', { labels: { team: 'vision' }, annotations: { 'gpu-reflex.io/owner': '@alice' } }),
];

/** Runs the planner window by window (10 min each) from T0, carrying the record; every plan and finding. */
function run(
  readings: GpuReading[][],
  p: IdlePolicy,
  o: {
    pods?: PodFacts[];
    holders?: ReturnType<typeof holder>[] | null;
    gapAt?: number;
    approvals?: (record: IdleRecord) => Record<string, ApprovalRecord>;
    /** The summary of window `i` as the agent would send it otherwise (a stall, an older agent). */
    edit?: (i: number, s: GpuUtilizationSummaryDetail) => GpuUtilizationSummaryDetail;
  } = {},
): { plans: IdlePlan[]; findings: IdleFinding[]; record: IdleRecord } {
  let record: IdleRecord = { tracks: [] };
  const plans: IdlePlan[] = [];
  readings.forEach((gpus, i) => {
    const start = T0 + i * 10 * MIN + (o.gapAt !== undefined && i >= o.gapAt ? 30 * MIN : 0);
    const s = summary(start, gpus, o.holders === undefined ? NB : o.holders);
    const plan = planIdle(
      {
        node: NODE,
        summary: o.edit ? o.edit(i, s) : s,
        pods: o.pods ?? PODS,
        record,
        ...(o.approvals ? { approvals: o.approvals(record) } : {}),
      },
      p,
    );
    plans.push(plan);
    record = plan.record;
  });
  return { plans, findings: plans.flatMap((x) => x.findings), record };
}
const times = <T>(n: number, v: T): T[] => Array.from({ length: n }, () => v);

describe('planIdle', () => {
  it('tells the owner once the run reaches the window, with the team and the cost so far', () => {
    const { plans, findings } = run(times(14, [idle]), policy());
    expect(findings.map((f) => [f.state, f.at - T0])).toEqual([['idle', 120 * MIN]]);
    expect(plans.findIndex((p) => p.findings.length > 0)).toBe(11);
    const f = findings[0]!;
    expect(f).toMatchObject({ team: 'vision', owner: '@alice', idleMs: 120 * MIN });
    expect(f.cost).toEqual({ gpuHours: 2, amount: 19.6, currency: 'CNY', pricePerGpuHour: 9.8 });
    expect(f.reason).toMatch(/research\/notebook has held GPU .* for 2\.0 h under 5%.*19\.60 CNY.*nothing is evicted/);
  });

  it('never evicts without a policy that says so, however long the GPU sits idle', () => {
    const { plans } = run(times(60, [idle]), policy());
    expect(plans.flatMap((p) => p.evictions)).toEqual([]);
  });

  it('evicts an opted-in namespace at the deadline, asks again while the pod holds on, says so once', () => {
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 60 } } } });
    const { plans, findings } = run(times(20, [idle]), p);
    expect(findings.map((f) => [f.state, (f.at - T0) / MIN])).toEqual([
      ['idle', 120],
      ['evicted', 180],
    ]);
    expect(findings[0]!.track.evictAt).toBe(T0 + 180 * MIN);
    expect(plans.map((x) => x.evictions.length)).toEqual([...times(17, 0), 1, 1, 1]);
    expect(plans[17]!.evictions).toEqual([{ namespace: 'research', name: 'notebook' }]);
  });

  it('never evicts a pod one of whose devices works, or reads unknown, however idle its other device sits', () => {
    // A training pod holds two GPUs and works on one: evicting it for the idle one kills the work on the other. A
    // device whose reading is missing (NVML gave no utilization) or that the agent names no GPU for is unknown.
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 30 } } } });
    const two = [holder('research', 'notebook', GPU0), holder('research', 'notebook', GPU1)];
    const working = run(times(20, [idle, { uuid: GPU1, util: 90, mem: 50 }]), p, { holders: two });
    expect(working.plans.flatMap((x) => x.evictions)).toEqual([]);
    expect(working.findings.map((f) => f.state)).toEqual(['idle']); // the owner is still told of the idle one
    expect(working.plans.at(-1)!.held).toEqual([
      expect.stringMatching(/research\/notebook: not evicted: it also holds GPU GPU-.*1, busy/),
    ]);
    const unknown = run(times(20, [idle, { uuid: GPU1 }]), p, { holders: two });
    expect(unknown.plans.flatMap((x) => x.evictions)).toEqual([]);
    const unnamed = run(times(20, [idle]), p, {
      holders: [holder('research', 'notebook', GPU0), { namespace: 'research', name: 'notebook', deviceId: 'x' }],
    });
    expect(unnamed.plans.flatMap((x) => x.evictions)).toEqual([]);
    // Both idle: evicted at the deadline, as a pod of one GPU is.
    const both = run(times(20, [idle, { uuid: GPU1, util: 0, mem: 0 }]), p, { holders: two });
    expect(both.plans[14]!.evictions).toEqual([{ namespace: 'research', name: 'notebook' }]);
  });

  it('starts afresh for a pod of the same name made since (a StatefulSet pod recreated): never its eviction', () => {
    // Kubeflow's notebooks are StatefulSets: the evicted notebook-0 comes back as notebook-0, on the freed GPU,
    // and idles while it starts. It was never told, nor idle for a window: the old run is not its own.
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 60 } } } });
    const as = (uid: string) => [{ ...PODS[0]!, uid }];
    let record: IdleRecord = { tracks: [] };
    const plans: IdlePlan[] = [];
    for (let i = 0; i < 20; i++) {
      const plan = planIdle(
        {
          node: NODE,
          summary: summary(T0 + i * 10 * MIN, [idle], NB),
          pods: as(i < 18 ? 'uid-old' : 'uid-new'),
          record,
        },
        p,
      );
      plans.push(plan);
      record = plan.record;
    }
    expect(plans[18]!.evictions).toEqual([]);
    expect(plans[19]!.evictions).toEqual([]);
    expect(plans[17]!.evictions).toEqual([{ namespace: 'research', name: 'notebook', uid: 'uid-old' }]);
    expect(plans.slice(18).flatMap((x) => x.findings)).toEqual([]);
    expect(record.tracks).toEqual([
      expect.objectContaining({ uid: 'uid-new', since: T0 + 180 * MIN, lastEnd: T0 + 200 * MIN }),
    ]);
    expect(record.tracks[0]!.notifiedAt).toBeUndefined();
  });

  describe('eviction after approval (evict.approvalMinutes)', () => {
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 60, approvalMinutes: 30 } } } });
    const idOf = (r: IdleRecord) => idleApprovalId('gpu-1', r.tracks[0]!);
    const rec = (r: IdleRecord, o: Partial<ApprovalRecord>): Record<string, ApprovalRecord> =>
      r.tracks[0]?.evictAt === undefined
        ? {}
        : {
            [idOf(r)]: {
              id: idOf(r),
              node: 'gpu-1',
              incident: 'idle/gpu-1',
              action: 'idle-evict',
              scope: 'pod',
              target: { gpus: [GPU0], pods: ['research/notebook'] },
              requestedAt: new Date(T0 + 180 * MIN).toISOString(),
              expiresAt: new Date(T0 + 210 * MIN).toISOString(),
              approvers: [],
              status: 'approved-applied',
              decidedAt: new Date(T0 + 195 * MIN).toISOString(),
              decidedBy: 'U123',
              idle: { pod: 'research/notebook', device: GPU0 },
              ...o,
            },
          };
    it('asks at the deadline instead of evicting, and waits while the question is open', () => {
      const { plans } = run(times(20, [idle]), p, { approvals: (r) => rec(r, { status: 'open' }) });
      expect(plans.flatMap((x) => x.evictions)).toEqual([]);
      expect(plans[17]!.asks).toEqual([]); // recorded open (by run.ts) at the first ask: here it already is
      const first = run(times(18, [idle]), p).plans[17]!;
      expect(first.asks).toEqual([
        expect.objectContaining({ pod: 'research/notebook', device: GPU0, expiresAt: T0 + 210 * MIN }),
      ]);
      expect(first.asks[0]!.reason).toMatch(/approve idle-[0-9a-f]{12}/);
      expect(first.evictions).toEqual([]);
    });
    it('evicts on an approval of exactly this eviction, decided in time, and says so once', () => {
      const { plans, findings } = run(times(20, [idle]), p, { approvals: (r) => rec(r, {}) });
      expect(plans.map((x) => x.evictions.length)).toEqual([...times(17, 0), 1, 1, 1]);
      expect(findings.map((f) => f.state)).toEqual(['idle', 'evicted']);
      expect(findings[1]!.reason).toMatch(/evicted on approval idle-/);
    });
    it('never evicts on a rejected, expired, late, or mismatched (forged) approval', () => {
      const never = (o: Partial<ApprovalRecord>) =>
        run(times(20, [idle]), p, { approvals: (r) => rec(r, o) }).plans.flatMap((x) => x.evictions);
      expect(never({ status: 'rejected' })).toEqual([]);
      expect(never({ status: 'expired' })).toEqual([]);
      expect(never({ decidedAt: new Date(T0 + 211 * MIN).toISOString() })).toEqual([]);
      expect(never({ decidedAt: undefined })).toEqual([]);
      expect(never({ idle: { pod: 'research/other', device: GPU0 } })).toEqual([]);
      expect(never({ idle: { pod: 'research/notebook', device: GPU1 } })).toEqual([]);
      expect(never({ node: 'gpu-2' })).toEqual([]);
      expect(never({ action: 'mig-preempt' })).toEqual([]);
    });
    it('closes an open question past its expiry, evicting nothing', () => {
      const late = run(times(22, [idle]), p, { approvals: (r) => rec(r, { status: 'open' }) });
      expect(late.plans[20]!.expired).toEqual([idOf(late.record)]); // window ending 210 min
      expect(late.plans[19]!.expired).toEqual([]);
      expect(late.plans.flatMap((x) => x.evictions)).toEqual([]);
    });
  });

  it('cancels the eviction when utilization returns before the deadline', () => {
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 60 } } } });
    const { plans, findings, record } = run([...times(14, [idle]), [busy], ...times(6, [idle])], p);
    expect(findings.map((f) => f.state)).toEqual(['idle', 'cancelled']);
    expect(findings[1]!.reason).toMatch(/utilization came back.*eviction is cancelled/);
    expect(plans.flatMap((x) => x.evictions)).toEqual([]);
    // The run starts again after the busy window: six idle windows are an hour, under the window.
    expect(record.tracks[0]!.since).toBe(T0 + 150 * MIN);
  });

  it('reads a window without utilization as not idle, and says the eviction is cancelled', () => {
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 60 } } } });
    const { findings, plans } = run([...times(13, [idle]), [{ uuid: GPU0 }], ...times(6, [idle])], p);
    expect(findings.map((f) => f.state)).toEqual(['idle', 'cancelled']);
    expect(findings[1]!.reason).toMatch(/no utilization reading/);
    expect(plans.flatMap((x) => x.evictions)).toEqual([]);
  });

  it('never counts a window the agent did not sample throughout as idle: a stall in it is unknown time', () => {
    // The agent's event loop blocked (or NVML hung, or the process was stopped) 8 of the 10 minutes of window 15:
    // its summary spans the stall with the samples taken before it. Read as idle, the minutes nobody measured took
    // the run past its deadline and the pod was evicted; unknown, they end the run and cancel its eviction.
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 60 } } } });
    const stalled = (i: number, s: GpuUtilizationSummaryDetail) => (i === 15 ? { ...s, unsampledMs: 8 * MIN } : s);
    const { findings, plans, record } = run(times(19, [idle]), p, { edit: stalled });
    expect(findings.map((f) => [f.state, (f.at - T0) / MIN])).toEqual([
      ['idle', 120],
      ['cancelled', 160],
    ]);
    expect(findings[1]!.reason).toMatch(
      /did not sample for 480 s of the window.*not counted idle.*eviction is cancelled/,
    );
    expect(plans.flatMap((x) => x.evictions)).toEqual([]);
    // The run ended before the stalled window (its idle time kept in the history up to there) and starts after it.
    expect(record.tracks[0]!.since).toBe(T0 + 160 * MIN);
    expect(record.history).toEqual([expect.objectContaining({ ms: 150 * MIN })]);
  });

  it("never counts an older agent's summary as idle: it does not say whether it sampled the whole window", () => {
    // Functions are upgraded before agents (docs/upgrade.md): until its agent is, a node's idle runs wait.
    const older = (_: number, s: GpuUtilizationSummaryDetail) => {
      const { unsampledMs: _unsampled, ...rest } = s;
      return rest;
    };
    const { findings, record } = run(times(14, [idle]), policy(), { edit: older });
    expect([findings, record.tracks]).toEqual([[], []]);
  });

  it('reads a stalled window whose samples show work as busy: work seen is work', () => {
    const stalled = (i: number, s: GpuUtilizationSummaryDetail) => (i === 13 ? { ...s, unsampledMs: 8 * MIN } : s);
    const { findings } = run([...times(13, [idle]), [busy]], policy(), { edit: stalled });
    expect(findings.map((f) => f.state)).toEqual(['idle', 'cancelled']);
    expect(findings[1]!.reason).toMatch(/utilization came back/);
  });

  it('counts memory activity: a GPU whose memory controller works is not idle', () => {
    expect(run(times(14, [{ uuid: GPU0, util: 0, mem: 40 }]), policy()).findings).toEqual([]);
  });

  it('starts the run again after a gap longer than gapMinutes (unseen time is not idle)', () => {
    const { findings, record } = run(times(14, [idle]), policy(), { gapAt: 6 });
    expect(findings).toEqual([]);
    expect(record.tracks[0]!.since).toBe(T0 + 90 * MIN);
  });

  it('leaves out pods that opt out by annotation, and namespaces the policy ignores', () => {
    const exempt = [pod('research', 'notebook', { annotations: { 'gpu-reflex.io/idle-policy': 'exempt' } })];
    expect(run(times(14, [idle]), policy(), { pods: exempt }).findings).toEqual([]);
    expect(run(times(14, [idle]), policy({ namespaces: { research: { ignore: true } } })).findings).toEqual([]);
  });

  it('decides nothing and writes nothing when the holders are unknown', () => {
    const { plans } = run(times(14, [idle]), policy(), { holders: null });
    expect(plans.every((p) => p.skipped && !p.recordChanged && p.findings.length === 0)).toBe(true);
  });

  it('never carries a run across a summary without holders: its windows may have been busy', () => {
    // The kubelet restarted (or PodResources failed) for windows 12 and 13 while the notebook worked; the gap rule
    // alone (30 min here) carried the run over those 20 busy minutes, counted them idle and evicted the pod at its
    // deadline. Unknown holders end the node's open runs: the told owner hears why, no eviction follows.
    const p = policy({ gapMinutes: 30, namespaces: { research: { evict: { afterMinutes: 60 } } } });
    const blind = (i: number, s: GpuUtilizationSummaryDetail) => {
      if (i !== 12 && i !== 13) return s;
      const { holders: _holders, ...rest } = s;
      return { ...rest, gpus: summary(0, [busy], null).gpus };
    };
    const { findings, plans, record } = run(times(20, [idle]), p, { edit: blind });
    expect(findings.map((f) => [f.state, (f.at - T0) / MIN])).toEqual([
      ['idle', 120],
      ['cancelled', 130],
    ]);
    expect(findings[1]!.reason).toMatch(/names no holders.*not counted idle.*eviction is cancelled/);
    expect(findings[1]!).toMatchObject({ team: 'vision', owner: '@alice' });
    expect(plans.flatMap((x) => x.evictions)).toEqual([]);
    expect(plans[12]!.skipped).toMatch(/names no holders/);
    // The run ended at its last window read with holders (its idle time kept) and starts again after.
    expect(record.tracks[0]!.since).toBe(T0 + 140 * MIN);
    expect(record.history).toEqual([expect.objectContaining({ ms: 120 * MIN })]);
  });

  it('takes the pool rule under the namespace rule, and the namespace team when the pod has no team label', () => {
    const p = policy({ windowMinutes: 600, pools: { 'np-nb': { windowMinutes: 60 } } });
    const node = { name: 'gpu-1', labels: { 'alibabacloud.com/nodepool-id': 'np-nb' } };
    const plan = [0, 1, 2, 3, 4, 5].reduce<IdlePlan | undefined>(
      (prev, i) =>
        planIdle(
          {
            node,
            summary: summary(T0 + i * 10 * MIN, [idle], NB),
            pods: [pod('research', 'notebook')],
            record: prev?.record ?? { tracks: [] },
          },
          p,
        ),
      undefined,
    )!;
    expect(plan.findings.map((f) => [f.state, f.team, f.cost])).toEqual([['idle', 'research', undefined]]);
  });

  it('counts a MIG device idle only while its framebuffer is empty, and its cost as its share of the GPU', () => {
    const mig = (fb: number): GpuReading => ({ uuid: GPU1, mig: [{ uuid: MIG0, profile: '3g.40gb', fb }] });
    const holders = [holder('research', 'notebook', GPU1, MIG0)];
    expect(run(times(14, [mig(40)]), policy(), { holders }).findings).toEqual([]);
    const [f] = run(times(12, [mig(0)]), policy(), { holders }).findings;
    expect(f!.track).toMatchObject({ device: MIG0, gpu: GPU1, mig: MIG0 });
    expect(f!.cost).toEqual({ gpuHours: 0.857, amount: 8.4, currency: 'CNY', pricePerGpuHour: 9.8 });
  });

  it('never counts a MIG device idle while its framebuffer is unknown (NVML gave no memory for it)', () => {
    const unknown: GpuReading = { uuid: GPU1, mig: [{ uuid: MIG0, profile: '3g.40gb' }] };
    const holders = [holder('research', 'notebook', GPU1, MIG0)];
    const { plans, findings } = run(times(14, [unknown]), policy(), { holders });
    expect(findings).toEqual([]);
    expect(plans.every((p) => p.record.tracks.length === 0)).toBe(true);
  });

  describe('lending to the quota planner (policy lend)', () => {
    const LEND = policy({ namespaces: { research: { lend: true } } });
    const withUid = [{ ...PODS[0]!, uid: 'uid-nb' }];
    it("lends the told device on this window's evidence only, never before the owner is told", () => {
      const { plans } = run(times(13, [idle]), LEND, { pods: withUid });
      expect(plans[10]!.record.tracks[0]!.lend).toBeUndefined(); // 110 min: not told yet
      expect(plans[11]!.record.tracks[0]!.lend).toEqual({
        resource: 'nvidia.com/gpu',
        uid: 'uid-nb',
        until: T0 + 120 * MIN + 5 * MIN,
      });
      expect(plans[12]!.record.tracks[0]!.lend!.until).toBe(T0 + 130 * MIN + 5 * MIN);
    });
    it('takes the loan back when utilization returns, and lends nothing without the policy or the pod UID', () => {
      const back = run([...times(12, [idle]), [busy]], LEND, { pods: withUid });
      expect(back.record.tracks).toEqual([]);
      expect(run(times(13, [idle]), policy(), { pods: withUid }).record.tracks[0]!.lend).toBeUndefined();
      expect(run(times(13, [idle]), LEND).record.tracks[0]!.lend).toBeUndefined();
    });
    it("lends a MIG device under its profile's resource", () => {
      const holders = [holder('research', 'notebook', GPU1, MIG0)];
      const mig: GpuReading = { uuid: GPU1, mig: [{ uuid: MIG0, profile: '3g.40gb', fb: 0 }] };
      const { record } = run(times(13, [mig]), LEND, { pods: withUid, holders });
      expect(record.tracks[0]!.lend!.resource).toBe('nvidia.com/mig-3g.40gb');
    });
  });

  it('keeps the record as it is for a redelivered summary', () => {
    const first = planIdle(
      { node: NODE, summary: summary(T0, [idle], NB), pods: PODS, record: { tracks: [] } },
      policy(),
    );
    const again = planIdle(
      { node: NODE, summary: summary(T0, [idle], NB), pods: PODS, record: first.record },
      policy(),
    );
    expect(again.recordChanged).toBe(false);
  });

  it('never moves a run back for a summary that arrives late (EventBridge does not keep order)', () => {
    const { record } = run(times(3, [idle]), policy());
    const late = planIdle({ node: NODE, summary: summary(T0, [idle], NB), pods: PODS, record }, policy());
    expect([late.recordChanged, late.record.tracks[0]!.lastEnd]).toEqual([false, T0 + 30 * MIN]);
  });

  it('drops the track of a pod that no longer holds the device, silently', () => {
    const { record } = run([...times(3, [idle])], policy());
    const gone = planIdle({ node: NODE, summary: summary(T0 + 30 * MIN, [idle], []), pods: [], record }, policy());
    expect([gone.record.tracks, gone.findings, gone.recordChanged]).toEqual([[], [], true]);
  });
});

describe('parseIdlePolicy', () => {
  it('names the bad field', () => {
    expect(() => parseIdlePolicy('thresholdPercent: 500\nnamespaces: { Bad_NS: {} }')).toThrow(
      /thresholdPercent: .*\n.*namespaces\.Bad_NS/s,
    );
  });
});
