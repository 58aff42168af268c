import { describe, expect, it } from 'vitest';
import { RemediationDetailSchema } from '../../../events/index.ts';
import { approvalIdOf, remediationEventId, renderSteps, toRemediationDetail } from './detail.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { planSweep } from './sweep.ts';
import { allDone, apply, at, factsFor, health, node, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';

const occurredAt = new Date('2026-11-21T03:02:46.410Z');

describe('toRemediationDetail', () => {
  const plan = planRemediation(factsFor(xid(79, { pods: [{ uid: 'uid-train-0' }] }), node()), DEFAULT_POLICY);

  it('builds a valid Remediation detail for the XID 79 drain once every step is done', async () => {
    const detail = toRemediationDetail(plan, allDone(plan), { occurredAt });
    expect(RemediationDetailSchema.safeParse(detail).success).toBe(true);
    expect(detail).toMatchObject({
      phase: 'acted',
      action: 'drain-node',
      scope: 'node',
      incident: `gpu-a100-07/${plan.trigger.gpuUuid}/xid-79`,
    });
    expect(detail.trigger).toMatchObject({ xid: 79, node: 'gpu-a100-07' });
    expect(detail.steps[0]).toEqual({
      kind: 'taint',
      target: 'node/gpu-a100-07',
      result: 'done',
      message: 'gpu-reflex.io/unhealthy=xid-79:NoSchedule',
    });
  });

  it.each([
    ['blocked', 'partial'],
    ['failed', 'failed'],
    ['already', 'acted'],
  ] as const)('reports a step %s as phase %s', (result, phase) => {
    // every step done except the first eviction
    const done = allDone(plan);
    const applied = { ...done, evictions: done.evictions.map((d, i) => (i === 0 ? { result } : d)) };
    expect(toRemediationDetail(plan, applied, { occurredAt }).phase).toBe(phase);
  });

  it('publishes the decision before acting, and approvals and noops as their own phase', async () => {
    expect(toRemediationDetail(plan, undefined, { occurredAt }).phase).toBe('decided');
    const held = planRemediation(factsFor(xid(79), node(), { pool: pool({ quarantinedInWindow: 9 }) }), DEFAULT_POLICY);
    expect(toRemediationDetail(held, undefined, { occurredAt }).phase).toBe('awaiting-approval');
    const noop = planRemediation({ ...factsFor(xid(79), node()), state: { ...plan.nextState } }, DEFAULT_POLICY);
    expect(toRemediationDetail(noop, allDone(noop), { occurredAt }).phase).toBe('skipped');
  });

  it('never reports a failed notice as a failed remediation', async () => {
    const done = allDone(plan);
    expect(
      toRemediationDetail(
        plan,
        { ...done, notices: done.notices.map(() => ({ result: 'failed' as const })) },
        { occurredAt },
      ).phase,
    ).toBe('acted');
  });

  it('renders the typed actions as steps: taint, cordon, label, annotations, evictions, notice', async () => {
    expect(renderSteps(plan).map((s) => `${s.kind} ${s.target}`)).toEqual([
      'taint node/gpu-a100-07',
      'cordon node/gpu-a100-07',
      'label node/gpu-a100-07',
      'annotate node/gpu-a100-07',
      ...plan.evictions.map((p) => `evict pod/${p.namespace}/${p.name}`),
      'notify node/gpu-a100-07',
    ]);
    expect(renderSteps(plan).find((s) => s.kind === 'label')?.message).toBe('gpu-reflex.io/state=draining');
  });

  it('derives the same event id from the same incident, observation and decision, whatever the outcome', async () => {
    const a = toRemediationDetail(plan, undefined, { occurredAt });
    const b = toRemediationDetail(plan, undefined, { occurredAt: new Date(occurredAt.getTime() + 5000) });
    expect(a.eventId).toBe(b.eventId);
    expect(a.eventId).toBe(
      `rem:gpu-a100-07:${plan.trigger.gpuUuid}:xid-79:${Date.parse(plan.trigger.observedAt)}:decided`,
    );
    // the outcome does not change the id: the outbox's copy and the sent report are one event
    expect(toRemediationDetail(plan, allDone(plan), { occurredAt }).eventId).toBe(a.eventId);
  });

  it('hashes incident keys too long for an event id', async () => {
    const id = remediationEventId('n'.repeat(200) + '/GPU-x/xid-79', '2026-11-21T03:00:00.000Z', 'acted');
    expect(id.length).toBeLessThanOrEqual(128);
    expect(id).toMatch(/^rem:[0-9a-f]{16}:\d+:acted$/);
    expect(remediationEventId('n'.repeat(201) + '/GPU-x/xid-79', '2026-11-21T03:00:00.000Z', 'acted')).not.toBe(id);
  });
});

describe('approvalIdOf', () => {
  it('gives one valid approval id per incident episode, the same for a repeat', async () => {
    const full = pool({ quarantinedInWindow: 9 });
    const first = planRemediation(factsFor(xid(79, { minute: 0 }), node(), { pool: full }), DEFAULT_POLICY);
    const w = await apply(node(), STANDARD_PODS, first);
    const again = planRemediation(factsFor(xid(79, { minute: 2 }), w.node, { pool: full }), DEFAULT_POLICY);
    expect(approvalIdOf(first)).toMatch(/^apr-[a-z0-9-]{4,64}$/);
    expect(approvalIdOf(again)).toBe(approvalIdOf(first));
    const other = planRemediation(
      factsFor(xid(79, { minute: 0, node: 'gpu-a100-08' }), node('gpu-a100-08'), { pool: full }),
      DEFAULT_POLICY,
    );
    expect(approvalIdOf(other)).not.toBe(approvalIdOf(first));
  });
});

describe('toRemediationDetail for sweep plans', () => {
  it('publishes a restore as phase restored with a valid trigger', async () => {
    // A condition that clears by itself (a reset-class fault returns only on a reset and a probe: sweep.test.ts).
    const first = planRemediation(factsFor(health('temperature', { minute: 0 }), node()), DEFAULT_POLICY);
    const hot = await apply(node(), STANDARD_PODS, first);
    const w = await apply(
      hot.node,
      hot.pods,
      planRemediation(
        factsFor(health('temperature', { minute: 1, state: 'resolved' }), hot.node, { pods: hot.pods }),
        DEFAULT_POLICY,
      ),
    );
    const sweep = planSweep(
      { now: new Date(at(45)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
      DEFAULT_POLICY,
    );
    const plan = sweep.plans[0]!;
    const detail = toRemediationDetail(plan, allDone(plan), { occurredAt });
    expect(detail).toMatchObject({
      action: 'restore',
      phase: 'restored',
      trigger: { detailType: 'Scheduled Event', node: 'gpu-a100-07' },
    });
  });
});
