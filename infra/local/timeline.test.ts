import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { EventEnvelope } from './bus/index.ts';
import {
  clockText,
  deliveryEntry,
  eventEntry,
  formatEntry,
  formatSummary,
  kubeconfigText,
  LINE_WIDTH,
  runningText,
  wrapWords,
  verdictLine,
  type Summary,
} from './timeline.ts';

const example = (name: string) =>
  JSON.parse(
    readFileSync(new URL(`../../events/catalog/${name}.example.json`, import.meta.url), 'utf8'),
  ) as EventEnvelope;

describe('timeline lines', () => {
  it.each([
    [0, '00:00.0'],
    [8_240, '00:08.2'],
    [61_000, '01:01.0'],
  ])('prints %d ms as %s', (ms, text) => expect(clockText(ms)).toBe(text));

  it('names the XID, its meaning, the GPU and the pods', () => {
    const e = eventEntry(8200, example('gpu-xid-error'), () => undefined);
    expect(e).toMatchObject({ who: 'gpu-a100-07', kind: 'event', what: 'GPU XID Error' });
    expect(e.text).toBe('XID 79 (GPU has fallen off the bus) on GPU 3 via both, pods ml-training/llama-ft-worker-3');
  });

  it('says which namespace’s quota changed, from what to what, and why', () => {
    const e = eventEntry(0, example('quota-rewritten'), () => undefined);
    expect(e).toMatchObject({ who: 'rewrite-quotas', kind: 'action', what: 'Quota Rewritten' });
    expect(e.text).toMatch(/^\S+: requests\.nvidia\.com\/gpu \S+ → \S+/);
    expect(e.why).toBe((example('quota-rewritten').detail as { reason: string }).reason);
  });

  it('says which labels of which node changed, from what to what, and what was left alone', () => {
    const e = eventEntry(0, example('node-labels-changed'), () => undefined);
    expect(e).toMatchObject({ who: 'label-nodes', kind: 'action', what: 'Node Labels Changed' });
    expect(e.text).toBe(
      'gpu-h100-mig-01: gpu-reflex.io/mig.enabled false → true, gpu-reflex.io/mig.strategy none → mixed, gpu-reflex.io/driver.version 535.161.08 → 550.54.14; left alone: accelerator=nvidia-tesla-h100',
    );
  });

  it('says which node pool grows, by how much and at what price, and why', () => {
    const e = eventEntry(60_000, example('gpu-pool-scaled'), () => undefined);
    expect(e).toMatchObject({
      who: 'autoscale-pools',
      kind: 'action',
      what: 'GPU Pool Scaled',
      text: 'node pool a100-train grow 3 → 5 (+130 CNY/h)',
    });
    expect(e.why).toBe('4 pods pending on nvidia.com/gpu for 6 min; pool at 3 of max 10');
    const failed = example('gpu-pool-scaled');
    (failed.detail as Record<string, unknown>).state = 'failed';
    expect(eventEntry(0, failed, () => undefined)).toMatchObject({
      kind: 'failure',
      text: 'node pool a100-train failed to grow 3 → 5 (+130 CNY/h)',
    });
    const shrink = example('gpu-pool-scaled');
    Object.assign(shrink.detail as Record<string, unknown>, {
      from: 5,
      to: 3,
      hourlyCostDelta: { amount: -130, currency: 'CNY' },
    });
    expect(eventEntry(0, shrink, () => undefined).text).toBe('node pool a100-train shrink 5 → 3 (−130 CNY/h)');
  });

  it('summarises a Remediation by what its steps did, and keeps its whole reason as the why', () => {
    const event = example('remediation');
    const e = eventEntry(8400, event, () => undefined);
    expect(e.who).toBe('remediate');
    expect(e.text).toBe('drain-node acted: tainted, cordoned, evicting 1 pod');
    expect(e.why).toBe((event.detail as { reason: string }).reason);
  });

  it('says what a dry run would have done, never that it acted', () => {
    const event = example('remediation');
    const d = event.detail as { steps: { result: string }[] };
    const dry = {
      ...event,
      detail: {
        ...d,
        dryRun: true,
        steps: d.steps.map((s) => ({ ...s, result: s.result === 'done' ? 'dry-run' : s.result })),
      },
    };
    const e = eventEntry(8400, dry as EventEnvelope, () => undefined);
    expect(e.text).toBe('drain-node would act: taint, cordon, evict 1 pod (dry run: nothing changed)');
    const held = { ...dry, detail: { ...dry.detail, phase: 'awaiting-approval', steps: [] } };
    expect(eventEntry(8400, held as EventEnvelope, () => undefined).text).toBe(
      'drain-node would wait for approval (dry run: nothing changed)',
    );
  });

  it('prints a long why whole, wrapped on indented lines under the text, none past the line width', () => {
    const why = `XID 79 on GPU 3 of node a100-train-1: ${'power-cycle the machine; '.repeat(8)}then annotate gpu-reflex.io/repaired-at`;
    const lines = formatEntry(
      { atMs: 6000, who: 'remediate', kind: 'action', what: '', text: 'drain-node acted', why },
      false,
    ).split('\n');
    expect(lines[0]).toBe('00:06.0  remediate       drain-node acted');
    expect(lines[1]!.startsWith(`${' '.repeat(25)}why: XID 79`)).toBe(true);
    for (const l of lines.slice(2)) expect(l.startsWith(' '.repeat(30))).toBe(true);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(LINE_WIDTH);
    expect(
      lines
        .slice(1)
        .map((l) => l.trim().replace(/^why: /, ''))
        .join(' '),
    ).toBe(why.replace(/\s+/g, ' ').trim());
  });

  it('gives a word longer than the width a line of its own instead of cutting it', () => {
    expect(wrapWords(`a ${'x'.repeat(12)} b`, 5)).toEqual(['a', 'x'.repeat(12), 'b']);
  });

  it.each([
    [
      'a remediation that changed nothing',
      {
        status: 'done',
        result: {
          kind: 'noop',
          action: 'observe',
          phase: 'skipped',
          reason: 'Incident already open (observing since t, 2 occurrences): observe stands',
        },
      },
      'no change: observe stands',
      'Incident already open (observing since t, 2 occurrences): observe stands',
      'action',
    ],
    [
      'a repeat counted toward escalation',
      {
        status: 'done',
        result: {
          kind: 'noop',
          action: 'observe',
          phase: 'skipped',
          reason: 'r',
          escalation: {
            seen: 2,
            needed: 3,
            workloads: 1,
            neededWorkloads: 2,
            windowMinutes: 60,
            next: 'restart-workload',
          },
        },
      },
      'counted: 2 of 3 toward escalation to restart-workload within 60 min (1 of 2 workloads); observe stands',
      'r',
      'action',
    ],
    [
      'a dropped event',
      { status: 'dropped', reason: 'detail.xid: expected number' },
      'dropped the event: it was not acted on',
      'detail.xid: expected number',
      'failure',
    ],
    [
      'an event already handled',
      { status: 'already-done', reason: 'node gone' },
      'already done: nothing to change',
      'node gone',
      'action',
    ],
    [
      'a sweep with nothing to do',
      { status: 'done', result: { nodes: 3, acted: 0, skipped: [] } },
      'checked 3 nodes: nothing to do',
      undefined,
      'action',
    ],
    [
      'a MIG label set (no event of its own)',
      {
        status: 'done',
        result: {
          migNodes: 2,
          pending: 2,
          satisfiedAfter: 2,
          steps: { 'h100-0': 'label' },
          underWay: ['h100-0'],
          failed: [],
        },
      },
      'nvidia.com/mig.config set on h100-0: mig-manager reconfigures',
      undefined,
      'action',
    ],
    [
      'MIG pods waiting while mig-manager works',
      {
        status: 'done',
        result: { migNodes: 2, pending: 2, satisfiedAfter: 2, steps: {}, underWay: ['h100-0'], failed: [] },
      },
      '2 pods wait for MIG instances; mig-manager is reconfiguring h100-0',
      undefined,
      'action',
    ],
    [
      'MIG pods no idle GPU can serve',
      {
        status: 'done',
        result: { migNodes: 1, pending: 4, satisfiedAfter: 0, steps: {}, underWay: [], failed: ['h100-1'] },
      },
      '4 pods wait for MIG instances: no idle GPU can be relaid for them (h100-1 left cordoned after a failed relayout)',
      undefined,
      'action',
    ],
    [
      'no MIG pod waiting',
      { status: 'done', result: { migNodes: 1, pending: 0, satisfiedAfter: 0, steps: {}, underWay: [], failed: [] } },
      'checked 1 MIG node: no pod waits for a MIG instance',
      undefined,
      'action',
    ],
    [
      'GPU pods waiting for booting nodes',
      {
        status: 'done',
        result: {
          managedPools: 2,
          scaled: {},
          finished: {},
          pending: 3,
          awaitingInFlight: 3,
          deferred: 0,
          unhostable: 0,
        },
      },
      '3 GPU pods pending: 3 wait for nodes on their way',
      undefined,
      'action',
    ],
    [
      'idle nodes being drained',
      {
        status: 'done',
        result: {
          managedPools: 1,
          scaled: {},
          finished: {},
          released: [],
          draining: ['cn-hangzhou.10.0.0.5'],
          pending: 0,
        },
      },
      'draining cn-hangzhou.10.0.0.5 to give back: idle, no GPU pod',
      undefined,
      'action',
    ],
    [
      'GPU pods held by pool limits',
      {
        status: 'done',
        result: {
          managedPools: 1,
          scaled: {},
          finished: {},
          pending: 2,
          awaitingInFlight: 0,
          deferred: 1,
          unhostable: 1,
        },
      },
      '2 GPU pods pending: 1 wait on pool limits (max, step or cooldown); 1 no managed pool can host',
      undefined,
      'action',
    ],
  ])('gives %s a line of its own', (_name, outcome, text, why, kind) => {
    const e = deliveryEntry(18_000, 'remediate', outcome);
    expect(e).toEqual({ atMs: 18_000, who: 'remediate', kind, what: '', text, ...(why ? { why } : {}) });
  });

  it.each([
    [
      'an action (its Remediation event has the line)',
      { status: 'done', result: { kind: 'act', action: 'drain-node', phase: 'decided', reason: 'r' } },
    ],
    ['a sweep that acted', { status: 'done', result: { nodes: 3, acted: 1, skipped: [] } }],
    [
      'a MIG relayout started (its MIG Layout Change has the line)',
      {
        status: 'done',
        result: {
          migNodes: 1,
          pending: 2,
          satisfiedAfter: 2,
          steps: { 'h100-0': 'start' },
          underWay: ['h100-0'],
          failed: [],
        },
      },
    ],
    [
      'an autoscaler round that grew a pool (its GPU Pool Scaled has the line)',
      { status: 'done', result: { managedPools: 1, scaled: { 'np-t4': 3 }, finished: {}, pending: 1 } },
    ],
    ['an autoscaler with no pool to manage', { status: 'done', result: { managedPools: 0 } }],
    [
      'an autoscaler round with no GPU pod waiting',
      { status: 'done', result: { managedPools: 1, scaled: {}, finished: {}, pending: 0 } },
    ],
    ['an unknown shape', 'ok'],
  ])('prints nothing extra for %s', (_name, outcome) => {
    expect(deliveryEntry(0, 'remediate', outcome)).toBeUndefined();
  });

  const summaryEvent = (gpus: object[]) =>
    ({
      ...example('gpu-utilization-summary'),
      detail: { ...(example('gpu-utilization-summary').detail as object), node: 'n', samples: 46, gpus },
    }) as EventEnvelope;
  const agg = (avg: number) => ({ avg, max: avg });

  it('averages utilization over the GPUs that report it', () => {
    const e = eventEntry(
      45_000,
      summaryEvent([
        { utilPercent: agg(60), migDevices: [] },
        { utilPercent: agg(80), migDevices: [] },
      ]),
      () => undefined,
    );
    expect(e.text).toBe('2 GPUs, 46 samples, average utilization 70%');
  });

  it('says a MIG GPU reports no utilization, not 0%, and counts the instances in use', () => {
    const mig = (used: number[]) => ({
      framebufferUsedPercent: agg(10),
      migDevices: used.map((u, i) => ({ gpuInstanceId: i, profile: '1g.10gb', framebufferUsedPercent: agg(u) })),
    });
    const e = eventEntry(45_000, summaryEvent([mig([0, 40, 0]), mig([20, 0, 0])]), () => undefined);
    expect(e.text).toBe(
      '2 GPUs, 46 samples, utilization not reported (MIG on: NVML has none per GPU or instance); 2 of 6 MIG instances in use, framebuffer 10% used',
    );
    expect(e.text).not.toContain('0%,');
  });

  it('names how many GPUs report no utilization on a mixed node', () => {
    const e = eventEntry(
      45_000,
      summaryEvent([
        { utilPercent: agg(50), migDevices: [] },
        {
          framebufferUsedPercent: agg(4),
          migDevices: [{ gpuInstanceId: 1, profile: '7g.80gb', framebufferUsedPercent: agg(4) }],
        },
      ]),
      () => undefined,
    );
    expect(e.text).toBe(
      '2 GPUs, 46 samples, average utilization 50% on 1; utilization not reported on 1 GPU (MIG on: NVML has none per GPU or instance); 1 of 1 MIG instances in use, framebuffer 4% used',
    );
  });

  it.each([
    [Infinity, 'wall', 'running until Ctrl-C, on the wall clock'],
    [45_000, 'wall', 'running 45s of scenario on the wall clock (Ctrl-C ends it)'],
    [45_000, 'virtual', 'running 45s of scenario on the virtual clock'],
  ] as const)('announces a %d ms run on the %s clock as "%s"', (ms, clock, text) => {
    expect(runningText(ms, clock)).toBe(text);
  });

  it('tells where the kubeconfig is and how to use it', () => {
    expect(kubeconfigText('/tmp/w/kubeconfig')).toBe(
      '  kubeconfig: /tmp/w/kubeconfig (while it runs: kubectl --kubeconfig /tmp/w/kubeconfig get nodes,pods -A)',
    );
  });

  it('colours only when asked', () => {
    const e = { atMs: 1000, who: 'n', kind: 'failure' as const, what: '', text: 'x' };
    expect(formatEntry(e, false)).not.toContain('\u001b[');
    const coloured = formatEntry(e, true);
    expect(coloured.startsWith('\u001b[31m') && coloured.endsWith('\u001b[0m')).toBe(true);
  });

  it('prints every summary count', () => {
    const s: Summary = {
      eventsByDetailType: { 'GPU XID Error': 2 },
      actionsByKind: { 'drain-node acted': 1 },
      nodesCordoned: ['a'],
      nodesTainted: ['a'],
      nodesQuarantined: [],
      podsEvicted: 3,
      podsRescheduled: 2,
      podsPending: { 'nvidia.com/gpu': 1 },
      deliveryFailures: {},
      deadLetters: 0,
    };
    const text = formatSummary(s).join('\n');
    for (const part of [
      'GPU XID Error 2',
      'drain-node acted 1',
      'nodes cordoned:    a',
      'pods evicted:      3, rescheduled: 2, pending: nvidia.com/gpu 1',
      'dead letters:      0',
    ])
      expect(text).toContain(part);
  });
});

describe('what a person needs on screen (issue #31)', () => {
  it('puts the approval ID and how to decide it on the line of an Approval Requested', () => {
    const ev = example('approval-requested');
    const id = (ev.detail as { approvalId: string }).approvalId;
    const e = eventEntry(0, ev, () => undefined);
    expect(e).toMatchObject({ kind: 'action', what: 'Approval Requested' });
    expect(e.text).toContain(`gpu-reflex approve ${id}`);
    expect(e.text).toContain(`"approve ${id}" in chat`);
    expect(e.why).toBe((ev.detail as { summary: string }).summary);
  });

  it('says who decided an approval and how', () => {
    const ev = example('approval-decided');
    const d = ev.detail as { approvalId: string; decision: string };
    expect(eventEntry(0, ev, () => undefined).text).toMatch(new RegExp(`^${d.approvalId} ${d.decision}( by .+)?$`));
  });

  const summary = (expectations?: Summary['expectations']): Summary => ({
    eventsByDetailType: {},
    actionsByKind: {},
    nodesCordoned: [],
    nodesTainted: [],
    nodesQuarantined: [],
    podsEvicted: 0,
    podsRescheduled: 0,
    podsPending: {},
    deliveryFailures: {},
    deadLetters: 0,
    ...(expectations ? { expectations } : {}),
  });

  it('ends a run with one verdict line: PASS with the count, FAIL naming what did not hold', () => {
    const ok = { check: 'node a schedulable', ok: true, detail: 'as expected' };
    const bad = { check: 'node b cordoned', ok: false, detail: 'schedulable' };
    expect(verdictLine(summary([ok, ok]))).toBe('verdict: PASS, 2 of 2 expectations hold');
    expect(verdictLine(summary([ok, bad]))).toBe('verdict: FAIL, 1 of 2 expectations do not hold: node b cordoned');
    expect(verdictLine(summary())).toMatch(/^verdict: not judged/);
  });
});
