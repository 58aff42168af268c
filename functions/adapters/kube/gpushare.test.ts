import { describe, expect, it } from 'vitest';
import { gpushareCards } from './gpushare.ts';

describe("the cards ACK's GPU sharing gave a pod (its scheduler's annotations)", () => {
  it.each([
    ['no annotation', {}, undefined],
    ['the extender index', { ALIYUN_COM_GPU_MEM_IDX: '1' }, [1]],
    ['an index that is not a number', { ALIYUN_COM_GPU_MEM_IDX: '-1' }, undefined],
    [
      "the newer scheduler's allocation, several containers and cards",
      { 'scheduler.framework.gpushare.allocation': '{"main":{"1":8},"side":{"0":2,"1":2}}' },
      [0, 1],
    ],
    [
      'both, merged',
      { ALIYUN_COM_GPU_MEM_IDX: '0', 'scheduler.framework.gpushare.allocation': '{"c":{"1":4}}' },
      [0, 1],
    ],
    ['allocation that is not JSON', { 'scheduler.framework.gpushare.allocation': '{main' }, undefined],
    ['allocation of the wrong shape', { 'scheduler.framework.gpushare.allocation': '[1,2]' }, undefined],
  ])('%s', (_, annotations, cards) => expect(gpushareCards(annotations)).toEqual(cards));
});
