import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from './index.ts';
import { clients } from './test-helpers.ts';

/**
 * Pod scheduling readiness as kube-scheduler keeps it (scheduler.ts `schedulingGated`): a gated pod
 * is never tried and says SchedulingGated; once its gates are removed it is scheduled like any pod,
 * and a pod that fits nowhere says Unschedulable.
 */
describe('the scheduler and scheduling gates', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu', allocatable: { cpu: '8', memory: '32Gi', 'nvidia.com/gpu': 1 } }],
        namespaces: [{ name: 'work' }],
      },
    });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  const body = (name: string, gates: string[] = []) => ({
    metadata: { name },
    spec: {
      containers: [{ name: 'main', image: 'x', resources: { limits: { 'nvidia.com/gpu': '1' } } }],
      ...(gates.length > 0 ? { schedulingGates: gates.map((g) => ({ name: g })) } : {}),
    },
  });
  const condition = (name: string) =>
    sim.store.pod('work', name)!.status?.conditions?.find((x) => x.type === 'PodScheduled');

  it('leaves a gated pod untried, PodScheduled False/SchedulingGated, then schedules it once ungated', async () => {
    await c.core.createNamespacedPod({ namespace: 'work', body: body('gated', ['kueue.x-k8s.io/admission']) });
    expect(sim.store.pod('work', 'gated')!.spec.nodeName).toBeUndefined();
    expect(condition('gated')).toMatchObject({
      status: 'False',
      reason: 'SchedulingGated',
      message: 'Scheduling is blocked due to non-empty scheduling gates',
    });
    const pod = sim.store.pod('work', 'gated')!;
    await c.core.replaceNamespacedPod({
      name: 'gated',
      namespace: 'work',
      body: { ...pod, spec: { ...pod.spec, schedulingGates: [] } } as never,
    });
    expect(sim.store.pod('work', 'gated')!.spec.nodeName).toBe('gpu');
  });

  it('marks a pod that fits nowhere PodScheduled False/Unschedulable', async () => {
    await c.core.createNamespacedPod({ namespace: 'work', body: body('second') });
    expect(condition('second')).toMatchObject({ status: 'False', reason: 'Unschedulable' });
  });
});
