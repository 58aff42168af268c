import { describe, expect, it } from 'vitest';
import { cardArray, cardsFree, fitOnCards, tightestCard, whyNotOnCards } from './cards.ts';
import { whyNot } from './fit.ts';
import { cardsOfNode, equalCards, gpuOffer } from './template.ts';

const T4x2 = equalCards(2, 16);

describe('cGPU fit card by card (gpushare-scheduler-extender pkg/cache/nodeinfo.go)', () => {
  it.each([
    [8, T4x2, true],
    [16, T4x2, true],
    [20, T4x2, false],
    [20, equalCards(1, 24), true],
  ])('a %d GiB share on cards %j fits: %s', (gib, cards, fits) => {
    expect(whyNotOnCards({ 'aliyun.com/gpu-mem': gib }, { cards }) === undefined).toBe(fits);
  });

  it('says why in words: the request and each card', () => {
    expect(
      whyNot(
        { requests: { 'aliyun.com/gpu-mem': 20 } },
        { labels: {}, taints: [], allocatable: { 'aliyun.com/gpu-mem': 32 }, cards: T4x2 },
      ),
    ).toBe('needs 20 GiB on one card (aliyun.com/gpu-mem); its cards have 16 GiB, 16 GiB free');
  });

  it('binpack takes the tightest card that holds the share', () => {
    const cards = cardArray([
      { memory: 16, core: 100 },
      { memory: 6, core: 100 },
      { memory: 9, core: 100 },
    ]);
    expect(tightestCard(cards, { memory: 5, core: 0 })).toBe(1);
    expect(tightestCard(cards, { memory: 7, core: 0 })).toBe(2);
    expect(tightestCard(cards, { memory: 17, core: 0 })).toBe(-1);
  });

  it('counts what fits per card, not in the total: three 10 GiB shares on 2×16 GiB are two', () => {
    expect(fitOnCards(cardArray(T4x2), { memory: 10, core: 0 }, 3)).toBe(2);
    expect(fitOnCards(cardArray(T4x2), { memory: 8, core: 0 }, 5)).toBe(4);
  });

  it('core shares: per card, in steps of 5 (ACK cGPU core_mem)', () => {
    const cards = equalCards(2, 16);
    expect(whyNotOnCards({ 'aliyun.com/gpu-mem': 4, 'aliyun.com/gpu-core.percentage': 60 }, { cards })).toBeUndefined();
    expect(whyNotOnCards({ 'aliyun.com/gpu-mem': 4, 'aliyun.com/gpu-core.percentage': 7 }, { cards })).toMatch(
      /not a multiple of 5/,
    );
    const busy = [
      { memory: 16, core: 50 },
      { memory: 2, core: 100 },
    ];
    expect(whyNotOnCards({ 'aliyun.com/gpu-mem': 4, 'aliyun.com/gpu-core.percentage': 60 }, { cards: busy })).toMatch(
      /60% of one card/,
    );
  });
});

describe("an existing cGPU node's free room per card", () => {
  const pod = (gib: number, idx?: string) => ({
    requests: { 'aliyun.com/gpu-mem': gib },
    annotations: (idx === undefined ? {} : { ALIYUN_COM_GPU_MEM_IDX: idx }) as Record<string, string>,
  });

  it("comes off the card the extender's ALIYUN_COM_GPU_MEM_IDX names", () => {
    expect(cardsFree(T4x2, [pod(10, '0'), pod(4, '1'), pod(2, '0')]).map((c) => c.memory)).toEqual([4, 12]);
  });

  it('a share with no readable card index comes off every card: unknown room is no room', () => {
    expect(cardsFree(T4x2, [pod(6), pod(2, 'x'), pod(1, '7')]).map((c) => c.memory)).toEqual([7, 7]);
  });

  it("the newer ACK scheduler's allocation annotation names the cards, per container", () => {
    const alloc = (v: string) => ({
      requests: { 'aliyun.com/gpu-mem': 12 },
      annotations: { 'scheduler.framework.gpushare.allocation': v } as Record<string, string>,
    });
    expect(cardsFree(T4x2, [alloc('{"main":{"1":8},"side":{"1":4}}')]).map((c) => c.memory)).toEqual([16, 4]);
    expect(cardsFree(T4x2, [alloc('{"main":{"0":6,"1":6}}')]).map((c) => c.memory)).toEqual([10, 10]);
    expect(cardsFree(T4x2, [alloc('not json')]).map((c) => c.memory)).toEqual([4, 4]);
    expect(cardsFree(T4x2, [alloc('{"main":{"5":12}}')]).map((c) => c.memory)).toEqual([4, 4]);
  });

  it('a node reports its cards through aliyun.com/gpu-count, the memory split equally', () => {
    expect(cardsOfNode({ 'aliyun.com/gpu-mem': 32, 'aliyun.com/gpu-count': 2 })).toEqual(T4x2);
    expect(cardsOfNode({ 'aliyun.com/gpu-mem': 32 })).toBeUndefined();
  });
});

describe('a new node of a pool, by its GPU mode (core/template.ts)', () => {
  it.each([
    [undefined, { 'nvidia.com/gpu': 2 }],
    ['default', { 'nvidia.com/gpu': 2 }],
    ['topology', { 'nvidia.com/gpu': 2 }],
    ['cgpu', { 'aliyun.com/gpu-mem': 32, 'aliyun.com/gpu-count': 2 }],
    ['share', { 'aliyun.com/gpu-mem': 32, 'aliyun.com/gpu-count': 2 }],
    ['core_mem', { 'aliyun.com/gpu-mem': 32, 'aliyun.com/gpu-count': 2, 'aliyun.com/gpu-core.percentage': 200 }],
  ])('ack.node.gpu.schedule=%s offers %j', (mode, allocatable) => {
    expect(gpuOffer(2, 16, mode).allocatable).toEqual(allocatable);
  });

  it('cGPU modes carry their cards, all free', () => {
    expect(gpuOffer(2, 16, 'cgpu').cards).toEqual(T4x2);
  });

  it('NVIDIA time-slicing: GPUs × replicas, renamed to nvidia.com/gpu.shared with renameByDefault', () => {
    const ts = { replicas: 4, renameByDefault: false, failRequestsGreaterThanOne: false };
    expect(gpuOffer(2, 24, undefined, ts)).toEqual({
      allocatable: { 'nvidia.com/gpu': 8 },
      labels: { 'nvidia.com/gpu.replicas': '4', 'nvidia.com/gpu.sharing-strategy': 'time-slicing' },
    });
    expect(gpuOffer(2, 24, undefined, { ...ts, renameByDefault: true }).allocatable).toEqual({
      'nvidia.com/gpu.shared': 8,
    });
  });

  it('failRequestsGreaterThanOne: a pod asking 2 time-sliced GPUs fits no node (UnexpectedAdmissionError)', () => {
    const offer = gpuOffer(2, 24, undefined, { replicas: 4, renameByDefault: false, failRequestsGreaterThanOne: true });
    const node = { labels: offer.labels, taints: [], allocatable: offer.allocatable, atMostOne: offer.atMostOne! };
    expect(whyNot({ requests: { 'nvidia.com/gpu': 1 } }, node)).toBeUndefined();
    expect(whyNot({ requests: { 'nvidia.com/gpu': 2 } }, node)).toMatch(/fail requests above 1/);
  });
});
