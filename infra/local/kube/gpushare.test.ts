import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients } from './test-helpers.ts';
import { tightestCard, unhealthyCards } from './gpushare.ts';
import type { KubeObject } from './types.ts';

/** ACK's gpushare extender and plugin as the simulated scheduler plays them (gpushare.ts). */
const fleet: Fleet = {
  nodes: [
    {
      name: 'a10-share',
      labels: { 'ack.node.gpu.schedule': 'cgpu' },
      allocatable: { cpu: '62', memory: '230Gi', 'aliyun.com/gpu-mem': 48, 'aliyun.com/gpu-count': 2 },
    },
  ],
  namespaces: [{ name: 'work' }],
};

const cm = (gpus: string | undefined): KubeObject =>
  ({ metadata: { name: 'x' }, ...(gpus === undefined ? {} : { data: { gpus } }) }) as unknown as KubeObject;

describe('ACK gpushare extender rules', () => {
  it.each([
    [[24, 24], 8, 0],
    [[16, 24], 8, 0],
    [[24, 16], 8, 1],
    [[4, 24], 8, 1],
    [[undefined, 24], 8, 1],
    [[undefined, 4], 8, undefined],
  ])('free %j, request %d GiB: the tightest card that fits is %s', (room, req, card) =>
    expect(tightestCard(room, req)).toBe(card),
  );

  it.each([
    [undefined, []],
    ['1', [1]],
    ['0,1', [0, 1]],
    // strconv.Atoi refuses these; the extender's id stays 0, so card 0 is skipped.
    [' 1', [0]],
    ['', [0]],
    ['1,', [1, 0]],
  ])('ConfigMap gpus %j skips cards %j', (gpus, cards) => expect([...unhealthyCards(cm(gpus))]).toEqual(cards));
});

describe('the scheduler on a node that shares its GPUs', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  async function place(
    name: string,
    gib: number,
  ): Promise<{ node?: string; card?: string; ann: Record<string, string> }> {
    const requests = { cpu: '1', 'aliyun.com/gpu-mem': String(gib) };
    await c.core.createNamespacedPod({
      namespace: 'work',
      body: {
        metadata: { name },
        spec: { containers: [{ name: 'main', image: 'x', resources: { requests, limits: requests } }] },
      },
    });
    const p = sim.store.pod('work', name)!;
    const ann = p.metadata.annotations ?? {};
    return { node: p.spec.nodeName, card: ann['ALIYUN_COM_GPU_MEM_IDX'], ann };
  }

  it('binpacks each pod onto the tightest card that fits, annotated as the extender does, assigned by the plugin', async () => {
    const a = await place('a', 16);
    expect(a).toMatchObject({ node: 'a10-share', card: '0' });
    expect(a.ann).toMatchObject({
      ALIYUN_COM_GPU_MEM_POD: '16',
      ALIYUN_COM_GPU_MEM_DEV: '24',
      ALIYUN_COM_GPU_MEM_ASSIGNED: 'true',
      ALIYUN_COM_GPU_MEM_ASSUME_TIME: expect.stringMatching(/^\d+$/),
    });
    expect((await place('b', 16)).card).toBe('1');
    expect((await place('c', 8)).card).toBe('0');
    expect((await place('d', 4)).card).toBe('1');
  });

  it('writes the card with ASSIGNED=false at bind, before the plugin flips it', () => {
    const seen: string[] = [];
    const off = sim.store.subscribe((e) => {
      const a = e.object.metadata.annotations;
      if (e.resource === 'pods' && e.object.metadata.name === 'e' && a?.['ALIYUN_COM_GPU_MEM_ASSIGNED'])
        seen.push(a['ALIYUN_COM_GPU_MEM_ASSIGNED']);
    });
    return place('e', 4).then((e) => {
      off?.();
      expect(e.card).toBe('1');
      expect(seen.slice(0, 2)).toEqual(['false', 'true']);
    });
  });

  it('leaves a pod pending when no single card has room, even if the node has it in total', async () => {
    // Both cards are full (a, c on card 0; b, d, e on card 1). Freeing c and d leaves 8 + 4 GiB:
    // 12 GiB on the node, but 10 GiB on no single card.
    await c.core.deleteNamespacedPod({ namespace: 'work', name: 'c', gracePeriodSeconds: 0 });
    await c.core.deleteNamespacedPod({ namespace: 'work', name: 'd', gracePeriodSeconds: 0 });
    const f = await place('f', 10);
    expect(f.node).toBeUndefined();
    const cond = sim.store.pod('work', 'f')!.status?.conditions?.find((x) => x.type === 'PodScheduled') as
      { message?: string } | undefined;
    expect(cond?.message).toContain('Insufficient GPU Memory in one device');
    await c.core.deleteNamespacedPod({ namespace: 'work', name: 'f', gracePeriodSeconds: 0 });
  });

  it('skips the cards ConfigMap kube-system/unhealthy-gpu-<node> lists, and uses them again once unlisted', async () => {
    await c.core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'unhealthy-gpu-a10-share' }, data: { gpus: '0' } },
    });
    // card 0 has 8 free (the tighter), card 1 has 4: with card 0 listed, a 4 GiB pod goes to card 1.
    expect((await place('g', 4)).card).toBe('1');
    const h = await place('h', 6);
    expect(h.node).toBeUndefined();
    await c.core.replaceNamespacedConfigMap({
      namespace: 'kube-system',
      name: 'unhealthy-gpu-a10-share',
      body: { metadata: { name: 'unhealthy-gpu-a10-share' }, data: {} },
    });
    const now = sim.store.pod('work', 'h')!;
    expect(now.spec.nodeName).toBe('a10-share');
    expect(now.metadata.annotations?.['ALIYUN_COM_GPU_MEM_IDX']).toBe('0');
  });
});
