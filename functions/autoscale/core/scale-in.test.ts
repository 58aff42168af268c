import { describe, expect, it } from 'vitest';
import { planScaleIn, type ScaleInPool } from './scale-in.ts';

const MIN = 60_000;
const template = {
  labels: { pool: 't4' },
  taints: [],
  allocatable: { 'nvidia.com/gpu': 1, cpu: 4, memory: 16 * 2 ** 30 },
};
const pool = (o: Partial<ScaleInPool> = {}): ScaleInPool => ({
  id: 'np-t4',
  name: 't4',
  min: 1,
  maxStep: 10,
  nodes: ['a', 'b', 'c', 'd'].map((name) => ({ name, eligible: true, gpuPods: name === 'a' ? 1 : 0 })),
  desired: 4,
  leaving: [],
  template,
  ...o,
});

describe('planScaleIn', () => {
  it('remembers when each node went idle and releases only after idleMinutes, longest idle first', () => {
    const first = planScaleIn(pool(), {}, [], 0, 10);
    expect(first.idleSince).toEqual({ b: 0, c: 0, d: 0 });
    expect(first.release).toEqual([]);
    const later = planScaleIn(pool(), { b: 0, c: 5 * MIN, d: 0 }, [], 10 * MIN, 10);
    expect(later.release.map((r) => r.node)).toEqual(['b', 'd']);
    expect(later.release[0]!.why).toBe('b has run no GPU pod for 10 min (idle since 1970-01-01T00:00:00.000Z)');
    // A node that ran a GPU pod again starts over.
    const busy = pool({
      nodes: [
        { name: 'b', eligible: true, gpuPods: 1 },
        { name: 'c', eligible: true, gpuPods: 0 },
      ],
    });
    expect(planScaleIn(busy, { b: 0, c: 0 }, [], 20 * MIN, 10).idleSince).toEqual({ c: 0 });
  });

  it('never goes under the minimum, nor past the step, counting nodes already leaving', () => {
    const idle = { b: 0, c: 0, d: 0 };
    expect(planScaleIn(pool({ min: 3 }), idle, [], 30 * MIN, 10).release.map((r) => r.node)).toEqual(['b']);
    expect(planScaleIn(pool({ min: 3 }), idle, [], 30 * MIN, 10).kept).toContainEqual({
      node: 'c',
      why: 't4 is at its minimum of 3 nodes',
    });
    expect(
      planScaleIn(pool({ maxStep: 2, leaving: ['b'] }), idle, [], 30 * MIN, 10).release.map((r) => r.node),
    ).toEqual(['c']);
  });

  it('never goes under the minimum by the desired size either: nodes there beyond it are on their way out', () => {
    const idle = { b: 0, c: 0, d: 0 };
    // Four nodes there, but the pool asks for 2 (lowered by a person; ACK removes the others): one may leave.
    const d = planScaleIn(pool({ desired: 2 }), idle, [], 30 * MIN, 10);
    expect(d.release.map((r) => r.node)).toEqual(['b']);
    expect(d.kept).toContainEqual({ node: 'c', why: 't4 is at its minimum of 1 nodes' });
    expect(planScaleIn(pool({ desired: 2, leaving: ['b'] }), idle, [], 30 * MIN, 10).release).toEqual([]);
  });

  it('keeps nodes remediation or a person holds, and keeps everything while a waiting pod could use the pool', () => {
    const nodes = [
      { name: 'b', eligible: false, heldBy: 'remediation holds it (gpu-reflex.io/state=draining)', gpuPods: 0 },
      { name: 'c', eligible: true, gpuPods: 0 },
    ];
    const d = planScaleIn(pool({ nodes }), { b: 0, c: 0 }, [], 30 * MIN, 10);
    expect(d.release.map((r) => r.node)).toEqual(['c']);
    expect(d.kept).toEqual([{ node: 'b', why: 'remediation holds it (gpu-reflex.io/state=draining)' }]);
    const waiting = [{ key: 'ml/embed-0', priority: 0, requests: { 'nvidia.com/gpu': 1 } }];
    expect(planScaleIn(pool({ nodes }), { b: 0, c: 0 }, waiting, 30 * MIN, 10).release).toEqual([]);
    // A pod that could never run here does not hold the pool.
    const elsewhere = [{ key: 'ml/big', priority: 0, requests: { 'nvidia.com/gpu': 8 } }];
    expect(planScaleIn(pool({ nodes }), { b: 0, c: 0 }, elsewhere, 30 * MIN, 10).release.map((r) => r.node)).toEqual([
      'c',
    ]);
    expect(
      planScaleIn(pool({ nodes, frozen: 't4 grew within its cooldown' }), { b: 0, c: 0 }, [], 30 * MIN, 10).release,
    ).toEqual([]);
  });
});
