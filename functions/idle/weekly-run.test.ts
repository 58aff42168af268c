import { describe, expect, it } from 'vitest';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { IdlePolicySchema } from './core/policy.ts';
import { lastDue } from './core/weekly.ts';
import { sendWeeklyReport, weeklyKey, type WeeklyDeps } from './weekly-run.ts';
import { createIdleHandler } from './handler.ts';

const HOUR = 3_600_000;
// Monday 2026-12-07 09:00 UTC is the first due instant after these pods started.
const MONDAY_9 = Date.UTC(2026, 11, 7, 9);

function fleet(now: { ms: number }, policy: object, notifier = new RecordingNotifier()) {
  const clock = { now: () => now.ms, sleep: async () => undefined };
  const kube = fakeKube({ clock });
  kube.cluster.addNode({ name: 'gpu-1', labels: { 'node.kubernetes.io/instance-type': 'ecs.gn7i-c8g1.2xlarge' } });
  const started = new Date(MONDAY_9 - 48 * HOUR).toISOString();
  for (const [ns, name, team] of [
    ['research', 'nb', 'vision'],
    ['train', 'job', 'llm'],
  ] as const)
    kube.cluster.addPod({
      namespace: ns,
      name,
      nodeName: 'gpu-1',
      labels: { team },
      extendedResources: { 'nvidia.com/gpu': 1 },
      createdAt: started,
    } as never);
  const deps: WeeklyDeps = {
    nodes: kube.nodes,
    pods: kube.pods,
    state: kube.state,
    notifier,
    clock,
    logger: silentLogger,
    policy: IdlePolicySchema.parse({ prices: { 'ecs.gn7i-c8g1.2xlarge': 10 }, ...policy }),
  };
  return { deps, notifier, kube };
}

describe('lastDue', () => {
  it('is the latest day-at-hour at or before now, in UTC', () => {
    expect(lastDue(MONDAY_9, 'monday', 9)).toBe(MONDAY_9);
    expect(lastDue(MONDAY_9 - 1, 'monday', 9)).toBe(MONDAY_9 - 7 * 24 * HOUR);
    expect(lastDue(MONDAY_9 + 50 * HOUR, 'monday', 9)).toBe(MONDAY_9);
    expect(new Date(lastDue(MONDAY_9, 'friday', 17)).toISOString()).toBe('2026-12-04T17:00:00.000Z');
  });
});

describe('the weekly cost report (opt-in)', () => {
  it('is off without weeklyReport in the policy', async () => {
    const now = { ms: MONDAY_9 + HOUR };
    const f = fleet(now, {});
    expect(await sendWeeklyReport(f.deps)).toMatchObject({ sent: [] });
    expect(f.notifier.notices).toEqual([]);
  });

  it('tells each team its week once: the next ticks of the week send nothing, the next week sends again', async () => {
    const now = { ms: MONDAY_9 + 20 * 60_000 };
    const f = fleet(now, { weeklyReport: { day: 'monday', hourUtc: 9 } });
    expect(await sendWeeklyReport(f.deps)).toEqual({ due: '2026-12-07T09:00:00.000Z', sent: ['llm', 'vision'] });
    expect(f.notifier.notices.map((n) => n.title)).toEqual([
      "gpu-reflex: team llm's GPU cost, 2026-11-30 → 2026-12-07",
      "gpu-reflex: team vision's GPU cost, 2026-11-30 → 2026-12-07",
    ]);
    // 48 h of one GPU at 10 CNY an hour, none of it idle.
    expect(f.notifier.notices[0]!.text).toBe(
      '48.00 GPU-hours (idle 0.00): 480.00 CNY, of which idle 0.00 CNY\n• train: 1 pod(s), 48.00 GPU-h (idle 0.00), 480.00 CNY',
    );
    now.ms += HOUR;
    expect((await sendWeeklyReport(f.deps)).sent).toEqual([]);
    now.ms = MONDAY_9 + 7 * 24 * HOUR + HOUR;
    expect((await sendWeeklyReport(f.deps)).sent).toEqual(['llm', 'vision']);
    expect(f.notifier.notices).toHaveLength(4);
  });

  it('tells only the teams the policy names', async () => {
    const f = fleet({ ms: MONDAY_9 }, { weeklyReport: { teams: ['vision'] } });
    expect((await sendWeeklyReport(f.deps)).sent).toEqual(['vision']);
  });

  it('two containers on one tick: each team is told once', async () => {
    const now = { ms: MONDAY_9 + HOUR };
    const f = fleet(now, { weeklyReport: {} });
    const [a, b] = await Promise.all([sendWeeklyReport(f.deps), sendWeeklyReport(f.deps)]);
    expect([...a.sent, ...b.sent].sort()).toEqual(['llm', 'vision']);
    expect(f.notifier.notices).toHaveLength(2);
  });

  it('a failed send is tried again at the next tick, never lost', async () => {
    const now = { ms: MONDAY_9 + HOUR };
    let down = true;
    const notices: string[] = [];
    const f = fleet(now, { weeklyReport: {} });
    f.deps.notifier = {
      notify: async (n) => {
        if (down) throw new Error('chat down');
        notices.push(n.title);
      },
    };
    expect((await sendWeeklyReport(f.deps)).sent).toEqual([]);
    down = false;
    now.ms += 5 * 60_000;
    expect((await sendWeeklyReport(f.deps)).sent).toEqual(['llm', 'vision']);
    expect(notices).toHaveLength(2);
  });

  it('a sender that died mid-send leaves a claim that lapses: the team is told at a later tick', async () => {
    const now = { ms: MONDAY_9 + HOUR };
    const f = fleet(now, { weeklyReport: {} });
    // What a container that claimed vision's notice just now and died left behind.
    const claim = { due: '2026-12-07T09:00:00.000Z', state: 'sending', until: now.ms + 10 * 60_000 };
    await f.deps.state.update(weeklyKey('vision'), () => claim);
    expect((await sendWeeklyReport(f.deps)).sent).toEqual(['llm']);
    now.ms += 5 * 60_000;
    expect((await sendWeeklyReport(f.deps)).sent).toEqual([]);
    now.ms += 6 * 60_000;
    expect((await sendWeeklyReport(f.deps)).sent).toEqual(['vision']);
  });
});

describe('the idle-gpus handler', () => {
  it('runs the weekly report on its schedule’s tick (a Scheduled Event), not the idle watch', async () => {
    const f = fleet({ ms: MONDAY_9 + HOUR }, { weeklyReport: {} });
    const wiring = { ...f.deps, kube: f.kube, idlePolicy: f.deps.policy } as never;
    const handler = createIdleHandler(() => wiring);
    const tick = {
      version: '0',
      id: 'tick-1',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '123456789012',
      time: '2026-12-07T10:00:00Z',
      region: 'us-east-1',
      resources: ['arn:aws:events:us-east-1:123456789012:rule/idle-gpus-hourly'],
      detail: {},
    };
    const out = await handler(tick, { awsRequestId: 'r-1', functionName: 'idle-gpus' } as never);
    expect(out).toMatchObject({ status: 'done', result: { sent: ['llm', 'vision'] } });
  });
});

describe('a told week costs the hourly ticks nothing', () => {
  it('once every team is told, the week’s later ticks list no pods; the next week reads again', async () => {
    const now = { ms: MONDAY_9 + HOUR };
    const f = fleet(now, { weeklyReport: {} });
    let lists = 0;
    const pods = { list: async () => (lists++, f.kube.pods.list()) };
    expect((await sendWeeklyReport({ ...f.deps, pods })).sent).toEqual(['llm', 'vision']);
    expect(lists).toBe(1);
    now.ms += HOUR;
    expect((await sendWeeklyReport({ ...f.deps, pods })).sent).toEqual([]);
    expect(lists).toBe(1);
    now.ms = MONDAY_9 + 7 * 24 * HOUR;
    expect((await sendWeeklyReport({ ...f.deps, pods })).sent).toEqual(['llm', 'vision']);
    expect(lists).toBe(2);
  });
});
