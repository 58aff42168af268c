import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { planSweep } from './sweep.ts';
import { mpsDaemonHolding } from './mps-reset.ts';
import { apply, at, factsFor, node, pod, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';
import type { NodeFacts, PodFacts } from './types.ts';
import type { Incident } from './state.ts';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionRequest,
  type GpuActionState,
} from '../../../events/index.ts';

const P = DEFAULT_POLICY;
const daemon = pod('nvidia-device-plugin-mps-control-daemon-x7k2p', {
  namespace: 'gpu-operator',
  daemonSet: true,
  requestsGpu: false,
});
const busy = (holders: string[]): GpuActionState => ({
  state: 'failed',
  action: 'reset',
  gpuUuid: 'GPU-0',
  at: at(2),
  reason: 'busy',
  holders,
});

describe('mpsDaemonHolding', () => {
  const i = { gpu: 'GPU-0', repair: { step: 'reset', id: 'r1', at: at(1) } } as unknown as Incident;
  const pods = [daemon, pod('stray', {})];

  it('names the MPS control daemon pod the busy reset names as its holder, and only it', () => {
    const s = mpsDaemonHolding(i, { r1: busy([`gpu-operator/${daemon.name}`, 'ml/stray']) }, pods);
    expect(s?.pods.map((p) => p.name)).toEqual([daemon.name]);
    expect(s?.why).toContain('held by the MPS control daemon');
  });

  it('leaves any other holder, answer or step alone', () => {
    expect(mpsDaemonHolding(i, { r1: busy(['ml/stray']) }, pods)).toBeUndefined();
    // a pod merely named like it but no DaemonSet's
    const lookalike = { ...daemon, daemonSet: false };
    expect(mpsDaemonHolding(i, { r1: busy([`gpu-operator/${daemon.name}`]) }, [lookalike])).toBeUndefined();
    expect(mpsDaemonHolding(i, { r1: { ...busy([]), reason: 'nvml: 999' } }, pods)).toBeUndefined();
    expect(
      mpsDaemonHolding(i, { r1: { ...busy([`gpu-operator/${daemon.name}`]), reason: 'timeout' } }, pods),
    ).toBeUndefined();
    expect(mpsDaemonHolding({ ...i, repair: undefined }, { r1: busy([daemon.name]) }, pods)).toBeUndefined();
  });
});

describe('a reset held by the MPS server', () => {
  interface World {
    node: NodeFacts;
    pods: PodFacts[];
  }
  const requested = (w: World) => JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[];
  const answer = (w: World, id: string, s: GpuActionState): World => {
    const results = { ...JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}'), [id]: s };
    return {
      ...w,
      node: {
        ...w.node,
        annotations: { ...w.node.annotations, [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify(results) },
      },
    };
  };
  const sweep = async (w: World, minute: number) => {
    const out = planSweep(
      { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
      P,
    );
    const plan = out.plans[0];
    return { plan, world: plan ? await apply(w.node, w.pods, plan) : w };
  };

  it("evicts the control daemon's pod when it holds the card, and asks for the reset again", async () => {
    const start: World = { node: node(), pods: [...STANDARD_PODS, daemon] };
    let w = await apply(
      start.node,
      start.pods,
      planRemediation(factsFor(xid(95, { minute: 0 }), start.node, { pods: start.pods }), P),
    );
    w = (await sweep(w, 1)).world;
    const reset = requested(w).find((r) => r.action === 'reset')!;
    w = answer(w, reset.id, { ...busy([`gpu-operator/${daemon.name}`]), gpuUuid: reset.gpuUuid });
    const again = await sweep(w, 3);
    expect(again.plan?.reason).toContain('held by the MPS control daemon');
    expect(again.world.pods.map((p) => p.name)).not.toContain(daemon.name);
    expect(requested(again.world).find((r) => r.action === 'reset')!.id).toBe(`${reset.id}.2`);
  });

  it('a busy reset held by anything else is asked again quietly, nothing evicted', async () => {
    const start: World = { node: node(), pods: [...STANDARD_PODS, daemon] };
    let w = await apply(
      start.node,
      start.pods,
      planRemediation(factsFor(xid(95, { minute: 0 }), start.node, { pods: start.pods }), P),
    );
    w = (await sweep(w, 1)).world;
    const reset = requested(w).find((r) => r.action === 'reset')!;
    w = answer(w, reset.id, { ...busy(['ml/stray-0']), gpuUuid: reset.gpuUuid });
    const again = await sweep(w, 3);
    expect(again.plan?.kind).toBe('noop');
    expect(again.world.pods.map((p) => p.name)).toContain(daemon.name);
  });
});
