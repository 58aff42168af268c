import { describe, expect, it } from 'vitest';
import { UsageError } from '../../events/cli-kit/command.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { costCsv, costReport, costTable, gpusOf, type CostPod } from './core/cost.ts';
import { IdlePolicySchema } from './core/policy.ts';
import { encodeIdleRecord } from '../lib/idle-record.ts';
import { costReportCommand, parseSince } from './cost-cli.ts';
import { weeklyNotices } from './core/weekly.ts';
import { readCost } from './read-cost.ts';
import { GPU0, MIN, T0 } from './testing.ts';

const H = 3_600_000;
const NOW = T0 + 48 * H;
const policy = IdlePolicySchema.parse({ prices: { 'ecs.gn6i-c4g1.xlarge': 8.5 } });
const t4 = { name: 't4-0', labels: { 'node.kubernetes.io/instance-type': 'ecs.gn6i-c4g1.xlarge' }, annotations: {} };
const pod = (o: Partial<CostPod> & { name: string }): CostPod => ({
  namespace: 'research',
  nodeName: 't4-0',
  phase: 'Running',
  labels: {},
  extendedResources: { 'nvidia.com/gpu': 1 },
  ...o,
});

describe('costReport', () => {
  it('sums GPU-hours per team and namespace over the period, priced by instance type, the idle share apart', () => {
    const idle = encodeIdleRecord({
      tracks: [{ device: GPU0, gpu: GPU0, namespace: 'research', pod: 'nb', since: NOW - 5 * H, lastEnd: NOW }],
    }).annotations as Record<string, string>;
    const rep = costReport(
      [{ ...t4, annotations: idle }],
      [
        pod({ name: 'nb', createdAt: new Date(NOW - 12 * H).toISOString(), labels: { team: 'vision' } }),
        // Created before the period: counted from its start (24 h), two GPUs.
        pod({
          name: 'train',
          createdAt: new Date(NOW - 100 * H).toISOString(),
          extendedResources: { 'nvidia.com/gpu': 2 },
        }),
        pod({ name: 'done', phase: 'Succeeded' }),
        pod({ name: 'cpu', extendedResources: {} }),
      ],
      policy,
      NOW - 24 * H,
      NOW,
    );
    expect(rep.rows).toEqual([
      {
        team: 'research',
        namespace: 'research',
        pods: 1,
        gpuHours: 48,
        idleGpuHours: 0,
        cost: 408,
        idleCost: 0,
        unpricedGpuHours: 0,
      },
      {
        team: 'vision',
        namespace: 'research',
        pods: 1,
        gpuHours: 12,
        idleGpuHours: 5,
        cost: 102,
        idleCost: 42.5,
        unpricedGpuHours: 0,
      },
    ]);
    expect(costTable(rep)[2]).toMatch(/^research\s+research\s+1\s+48\.00\s+0\.00\s+0%\s+408\.00\s+0\.00$/);
    expect(costTable(rep)[3]).toMatch(/^vision\s+research\s+1\s+12\.00\s+5\.00\s+42%\s+102\.00\s+42\.50$/);
  });

  it('counts pods that ended within the period up to their end, and says which ended pods it could not time', () => {
    const at = (h: number) => new Date(NOW - h * H).toISOString();
    const rep = costReport(
      [t4],
      [
        pod({ name: 'job-a', phase: 'Succeeded', createdAt: at(30), finishedAt: at(20) }), // 4 h in the period
        pod({
          name: 'job-b',
          phase: 'Failed',
          createdAt: at(10),
          finishedAt: at(8),
          extendedResources: { 'nvidia.com/gpu': 2 },
        }),
        pod({ name: 'old', phase: 'Succeeded', createdAt: at(40), finishedAt: at(30) }), // ended before it
        pod({ name: 'lost', phase: 'Failed', createdAt: at(10) }), // no end time: not guessed
      ],
      policy,
      NOW - 24 * H,
      NOW,
    );
    expect(rep.rows).toEqual([expect.objectContaining({ namespace: 'research', pods: 2, gpuHours: 8, cost: 68 })]);
    expect(rep.unknownEnd).toEqual(['research/lost']);
    expect(costTable(rep).at(-1)).toBe('not counted: 1 ended GPU pod without an end time (research/lost)');
  });

  it('tells each team in its weekly notice of its ended pods it could not time, never leaves them out', () => {
    // A team whose only GPU pod of the week ended without an end time was told nothing; one with others was told a
    // smaller sum as if whole.
    const at = (h: number) => new Date(NOW - h * H).toISOString();
    const rep = costReport(
      [t4],
      [
        pod({ name: 'nb', labels: { team: 'vision' } }),
        pod({ name: 'lost', phase: 'Failed', createdAt: at(10), labels: { team: 'vision' } }),
        pod({ name: 'job', namespace: 'train', phase: 'Failed', createdAt: at(10), labels: { team: 'llm' } }),
      ],
      policy,
      NOW - 24 * H,
      NOW,
    );
    expect(rep.unknownEnd).toEqual(['research/lost', 'train/job']);
    const notices = weeklyNotices(rep, policy);
    expect(notices.map((n) => n.team)).toEqual(['llm', 'vision']);
    expect(notices[0]!.notice.text).toBe(
      'GPU-hours unknown: not counted: 1 ended GPU pod without an end time (train/job)',
    );
    expect(notices[1]!.notice.text).toContain('\nnot counted: 1 ended GPU pod without an end time (research/lost)');
  });

  it("says the idle share is unknown, not 0, where a node's idle record cannot be read", () => {
    const rep = costReport(
      [{ ...t4, annotations: { 'gpu-reflex.io/idle-gpus': '{"v":2,"runs":[]}' } }],
      [pod({ name: 'nb', labels: { team: 'vision' } })],
      policy,
      NOW - 2 * H,
      NOW,
    );
    expect(rep.rows[0]).toMatchObject({ gpuHours: 2, cost: 17, idleUnreadGpuHours: 2 });
    expect(rep.rows[0]).not.toHaveProperty('idleCost');
    expect(costTable(rep)[2]).toMatch(
      /^vision\s+research\s+1\s+2\.00\s+unknown \(2 GPU-h unread\)\s+-\s+17\.00\s+unknown$/,
    );
    expect(costCsv(rep)[1]).toBe(`vision,research,1,2,,17,,CNY,${rep.from},${rep.to}`);
    const notice = weeklyNotices(rep, policy)[0]!.notice;
    expect(notice.text).toContain('idle unknown');
    expect(notice.text).not.toContain('idle 0.00');
  });

  it('says unpriced rather than summing a wrong cost when an instance type has no price', () => {
    const rep = costReport([{ ...t4, labels: {} }], [pod({ name: 'nb' })], policy, NOW - H, NOW);
    expect(rep.rows[0]).toMatchObject({ gpuHours: 1, unpricedGpuHours: 1 });
    expect(rep.rows[0]).not.toHaveProperty('cost');
    expect(costTable(rep)[2]).toContain('unpriced (1 GPU-h)');
  });

  it('says GPU-hours and cost are unknown, never leaves the pod out, where its share of a GPU is unknown', () => {
    // ACK cGPU pods ask for GiB of a card (aliyun.com/gpu-mem), DRA pods for a claim: what share of a GPU they hold
    // is not in their requests. Leaving them out told a team whose GPUs are shared that it spent nothing.
    const rep = costReport(
      [t4],
      [
        pod({ name: 'nb' }),
        pod({ name: 'infer', extendedResources: { 'aliyun.com/gpu-mem': 8 } }),
        { ...pod({ name: 'dra', extendedResources: {} }), resourceClaims: 1 },
        pod({
          name: 'serve',
          namespace: 'llm',
          labels: { team: 'llm' },
          extendedResources: { 'aliyun.com/gpu-mem': 4 },
        }),
      ],
      policy,
      NOW - H,
      NOW,
    );
    expect(rep.rows).toEqual([
      expect.objectContaining({ team: 'llm', namespace: 'llm', pods: 1, unmeasuredPods: 1 }),
      expect.objectContaining({ team: 'research', namespace: 'research', pods: 3, gpuHours: 1, unmeasuredPods: 2 }),
    ]);
    for (const r of rep.rows) {
      expect(r).not.toHaveProperty('cost');
      expect(r).not.toHaveProperty('idleCost');
    }
    expect(costTable(rep)[2]).toMatch(
      /^llm\s+llm\s+1\s+unknown \(1 pod unmeasured\)\s+unknown\s+-\s+unknown\s+unknown$/,
    );
    expect(costCsv(rep)[2]).toBe(`research,research,3,,,,,CNY,${rep.from},${rep.to}`);
    const llm = weeklyNotices(rep, policy).find((n) => n.team === 'llm')!.notice.text;
    expect(llm).not.toMatch(/0\.00/);
    expect(llm).toContain('unknown');
  });

  it('counts a time-sliced or MPS replica as its share of a GPU, and one whose node does not say how many as unknown', () => {
    // NVIDIA's device plugin advertises GPUs × replicas (`nvidia.com/gpu`, or `nvidia.com/gpu.shared` renamed) and
    // labels the node `nvidia.com/gpu.replicas`: four pods on one time-sliced GPU hold a quarter each, not one GPU each.
    const sliced = { ...t4, labels: { ...t4.labels, 'nvidia.com/gpu.replicas': '4' } };
    const rep = costReport(
      [sliced, { ...t4, name: 't4-1' }],
      [
        pod({ name: 'a', extendedResources: { 'nvidia.com/gpu.shared': 1 } }),
        pod({ name: 'b', extendedResources: { 'nvidia.com/gpu': 2 } }),
        pod({ name: 'c', namespace: 'llm', nodeName: 't4-1', extendedResources: { 'nvidia.com/gpu.shared': 1 } }),
      ],
      policy,
      NOW - H,
      NOW,
    );
    expect(rep.rows).toEqual([
      expect.objectContaining({ namespace: 'llm', pods: 1, gpuHours: 0, unmeasuredPods: 1 }),
      expect.objectContaining({ namespace: 'research', pods: 2, gpuHours: 0.75, cost: 6.38 }),
    ]);
  });

  it('counts a MIG device as its share of a GPU', () => {
    expect(gpusOf({ 'nvidia.com/mig-3g.40gb': 2, 'nvidia.com/gpu': 1, cpu: 4 })).toBeCloseTo(1 + 6 / 7, 9);
  });

  it('writes RFC 4180 CSV, quoting a field with a comma', () => {
    const rep = costReport([t4], [pod({ name: 'nb', labels: { team: 'a,b' } })], policy, NOW - H, NOW);
    expect(costCsv(rep)).toEqual([
      'team,namespace,pods,gpu_hours,idle_gpu_hours,cost,idle_cost,currency,from,to',
      `"a,b",research,1,1,0,8.5,0,CNY,${rep.from},${rep.to}`,
    ]);
  });
});

describe('gpu-reflex cost report', () => {
  it('reads nodes and pods through the ports and writes nothing', async () => {
    const kube = fakeKube();
    kube.cluster.addNode(t4);
    kube.cluster.addPod({ ...pod({ name: 'nb' }), createdAt: new Date(NOW - 30 * MIN).toISOString() });
    const rep = await readCost(kube, policy, 7 * 24 * H, NOW);
    expect(rep.rows.map((r) => [r.team, r.gpuHours, r.cost])).toEqual([['research', 0.5, 4.25]]);
    expect(kube.cluster.calls.filter((c) => !/\.(get|list)/.test(c.op))).toEqual([]);
  });

  it.each([
    [['--kubeconfig', 'k', '--since', '7x'], /--since takes a duration such as 30m, 12h or 7d, not "7x"/],
    [[], /--kubeconfig FILE is required/],
    [['--kubeconfig', 'k', '--csv', '--json'], /choose one/],
    [['--kubeconfig', 'k', '--bogus'], /Unknown option '--bogus'/],
    [['--kubeconfig'], /Option '--kubeconfig <value>' argument missing/],
    [['--kubeconfig', 'k', 'extra'], /Unexpected argument 'extra'/],
  ])('refuses %j with a usage error', async (args, msg) => {
    await expect(costReportCommand.run(args, { out: () => undefined, err: () => undefined })).rejects.toThrow(msg);
    await expect(costReportCommand.run(args, { out: () => undefined, err: () => undefined })).rejects.toBeInstanceOf(
      UsageError,
    );
  });

  it('takes 30m, 12h and 7d', () => {
    expect([parseSince('30m'), parseSince('12h'), parseSince('7d')]).toEqual([30 * MIN, 12 * H, 7 * 24 * H]);
  });
});
