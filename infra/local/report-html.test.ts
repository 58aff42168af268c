import { describe, expect, it } from 'vitest';
import type { Node } from './kube/types.ts';
import type { StackReport } from './report.ts';
import { lanesOf, reportHtml } from './report-html.ts';
import type { Summary, TimelineEntry } from './timeline.ts';

const node = (name: string, labels: Record<string, string> = {}): Node =>
  ({ metadata: { name, labels }, spec: {}, status: {} }) as unknown as Node;

const summary: Summary = {
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
  expectations: [{ check: 'node gpu-1 cordoned', ok: true, detail: 'as expected' }],
};

const cluster = (atMs: number, text: string): TimelineEntry => ({
  atMs,
  who: 'cluster',
  kind: 'cluster',
  what: '',
  text,
});

function report(): StackReport {
  return {
    scenario: { name: 'lanes', description: 'a <b>fault</b> & its repair', source: 'x.yaml', durationSeconds: 100 },
    clock: 'virtual',
    cluster: 'simulated',
    wallMs: 1,
    events: [],
    deliveries: [],
    deadLetters: [],
    actions: [
      {
        atMs: 10_000,
        detailType: 'Remediation',
        detail: {
          action: 'drain-node',
          phase: 'acted',
          reason: 'XID 79 on GPU 3',
          target: { node: 'gpu-1' },
          steps: [{ kind: 'cordon', result: 'done' }],
        },
      },
      {
        atMs: 12_000,
        detailType: 'Approval Requested',
        detail: { approvalId: 'apr-00c0ffee', summary: 'drain 2 more?', plan: { nodes: ['gpu-2', 'nope'] } },
      },
    ],
    evicted: [],
    rescheduled: [],
    timeline: [
      { atMs: 9_000, who: 'gpu-1', kind: 'event', what: 'GPU XID Error', text: 'XID 79 on GPU 3', why: 'fell off' },
      cluster(10_000, 'node gpu-1 labelled gpu-reflex.io/state=draining'),
      cluster(10_000, 'node gpu-1 cordoned'),
      cluster(11_000, 'pod ml/train-0 terminating on gpu-1 (grace 30s)'),
      cluster(60_000, 'node gpu-1 labelled gpu-reflex.io/driver.version=550, gpu-reflex.io/state=healthy'),
      cluster(60_000, 'node gpu-1 uncordoned'),
      { atMs: 50_000, who: 'alicloud', kind: 'cluster', what: '', text: 'gpu-3 joined the cluster: i-1, ecs.x' },
    ],
    dropped: { events: 0, deliveries: 0, timeline: 0, deadLetters: 0 },
    initial: { nodes: [node('gpu-1'), node('gpu-2', { 'gpu-reflex.io/state': 'quarantined' })], pods: [] },
    final: { nodes: [node('gpu-1'), node('gpu-2'), node('gpu-3')], pods: [] },
    summary,
  };
}

describe('the HTML report (issue #31)', () => {
  it('has one lane per node the run saw, with its state over time and its cordoned span', () => {
    const lanes = lanesOf(report());
    expect(lanes.map((l) => l.node)).toEqual(['gpu-1', 'gpu-2', 'gpu-3']);
    const [g1, g2, g3] = lanes;
    expect(g1!.states).toEqual([
      { atMs: 0, state: 'healthy' },
      { atMs: 10_000, state: 'draining' },
      { atMs: 60_000, state: 'healthy' },
    ]);
    expect(g1!.cordoned).toEqual([{ fromMs: 10_000, toMs: 60_000 }]);
    expect(g2!.states).toEqual([{ atMs: 0, state: 'quarantined' }]);
    expect(g3!.fromMs).toBe(50_000);
  });

  it('marks faults, remediations, evictions and approvals on the right lane, with the why to hover', () => {
    const [g1, g2, g3] = lanesOf(report());
    expect(g1!.marks.map((m) => [m.atMs, m.kind])).toEqual([
      [9_000, 'fault'],
      [10_000, 'remediation'],
      [11_000, 'evict'],
    ]);
    expect(g1!.marks[1]!.why).toBe('XID 79 on GPU 3');
    expect(g2!.marks).toEqual([
      expect.objectContaining({
        kind: 'approval',
        why: 'drain 2 more?',
        text: expect.stringContaining('gpu-reflex approve apr-00c0ffee'),
      }),
    ]);
    expect(g3!.marks.map((m) => m.kind)).toEqual(['join']);
  });

  it('writes one self-contained page: no script, no external resource, text escaped, the why in the title', () => {
    const html = reportHtml(report());
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\//i);
    expect(html.match(/class="lane"/g)).toHaveLength(3);
    expect(html).toContain('a &lt;b&gt;fault&lt;/b&gt; &amp; its repair');
    expect(html).toContain('why: XID 79 on GPU 3');
    expect(html).toContain('verdict: PASS, 1 of 1 expectations hold');
  });
});
