/**
 * Remediation is one client of the kernel's GPU-action channel (functions/lib/gpu-actions.ts): another
 * owner's requests on the node survive its fence, and its sweeps do not rewrite the node for them.
 */
import { describe, expect, it } from 'vitest';
import { GPU_ACTIONS_ANNOTATION, type GpuActionRequest } from '../../../events/index.ts';
import { carriedGpuActions } from '../../lib/gpu-actions.ts';
import { apply, at, factsFor, gpu, node, pod, pool, stateOf, xid } from '../testing.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { planSweep } from './sweep.ts';
import type { NodeFacts, PodFacts } from './types.ts';

// As the kernel writes MIG's entries (toRequest's key order, not the schema's).
const MIG: GpuActionRequest = {
  gpuUuid: gpu(5).uuid,
  incident: 'gpu-a100-07/layout-7',
  timeoutSeconds: 600,
  id: 'mig-cleanup.0001',
  action: 'mig-cleanup',
  requestedAt: at(0),
  owner: 'mig',
};
const PODS = [pod('train-3', { gpus: [gpu(3).uuid] })];
const requested = (n: NodeFacts) =>
  (JSON.parse(n.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).map(
    (r) => `${r.owner ?? 'remediate'} ${r.action} ${r.gpuUuid === gpu(3).uuid ? 'gpu3' : 'gpu5'}`,
  );

describe('remediation beside another owner of GPU actions', () => {
  it("fences its GPU without touching MIG's request, and its later sweeps rewrite the requests only when its own change", async () => {
    const P = DEFAULT_POLICY;
    const seeded = { ...node(), annotations: { [GPU_ACTIONS_ANNOTATION]: JSON.stringify([MIG]) } };
    const plan = planRemediation(factsFor(xid(48, { gpu: 3 }), seeded, { pods: PODS, now: new Date(at(0)) }), P);
    let w: { node: NodeFacts; pods: PodFacts[] } = { node: seeded, pods: PODS };
    w = await apply(w.node, w.pods, plan, new Set(), 'honours');
    expect(requested(w.node)).toEqual(['remediate fence gpu3', 'mig mig-cleanup gpu5']);
    // MIG's entry reads exactly as MIG wrote it, key order included (else each owner's write would reorder
    // the other's entries, and each would read the node as changed and write it again, pass after pass).
    expect(JSON.stringify(JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION]!)[1])).toBe(JSON.stringify(MIG));
    const asked: string[] = [];
    const merged: number[] = [];
    for (const minute of [1, 2, 3, 4]) {
      const next = planSweep(
        { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
        P,
      ).plans[0];
      // A merge is planned only when remediation's own set changes, never for MIG's entry beside it.
      const set = next?.nodeEdit?.gpuActions;
      if (set) expect(set.actions, `minute ${minute}`).not.toEqual(carriedGpuActions(w.node.annotations, 'remediate'));
      if (set) merged.push(minute);
      asked.push(...(next?.gpuActions ?? []).map((a) => `${minute} ${a.action}`));
      if (next) w = await apply(w.node, w.pods, next, new Set(), 'honours');
      expect(requested(w.node)).toContain('mig mig-cleanup gpu5');
    }
    // Its pods gone, remediation asks for the reset (minute 1), then waits for the agent: no rewrite.
    expect(asked).toEqual(['1 reset']);
    expect(merged).toEqual([1]);
    expect(requested(w.node)).toEqual(['remediate fence gpu3', 'remediate reset gpu3', 'mig mig-cleanup gpu5']);
  });
});
