import { describe, expect, it } from 'vitest';
import { MIG_INVENTORY_ANNOTATION } from '../../events/index.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { resolveGpu } from './actions.ts';

const uuid = (i: number) => `GPU-5f2c3a0${i}-8d41-4b7a-9e0f-1c2d3e4f5a6b`;
const inventory = JSON.stringify({
  v: 1,
  at: '2026-11-21T03:00:00.000Z',
  gpus: [0, 1].map((i) => ({ index: i, uuid: uuid(i), instances: [] })),
});
const node = (o: { gpus?: string; annotations?: Record<string, string> } = {}): NodeInfo =>
  ({
    name: 'gpu-0',
    labels: {},
    annotations: o.annotations ?? {},
    taints: [],
    unschedulable: false,
    allocatable: o.gpus ? { 'nvidia.com/gpu': o.gpus } : {},
  }) as unknown as NodeInfo;

describe('which GPU a person named', () => {
  it.each([
    [
      'an index the node lists',
      node({ annotations: { [MIG_INVENTORY_ANNOTATION]: inventory } }),
      '1',
      { uuid: uuid(1), index: 1 },
    ],
    [
      'a UUID the node lists, any case',
      node({ annotations: { [MIG_INVENTORY_ANNOTATION]: inventory } }),
      uuid(0).toLowerCase(),
      { uuid: uuid(0), index: 0 },
    ],
    ['a UUID on a node that lists none', node({ gpus: '8' }), uuid(5), { uuid: uuid(5) }],
    ['an index past the node’s GPUs', node({ gpus: '8' }), '8', 'node gpu-0 has no GPU 8: it has 8 (0–7)'],
    [
      'an index past the listed GPUs',
      node({ annotations: { [MIG_INVENTORY_ANNOTATION]: inventory } }),
      '2',
      'node gpu-0 has no GPU 2: it has 2 (0–1)',
    ],
    [
      'an index with no UUID to map it to',
      node({ gpus: '8' }),
      '3',
      "node gpu-0 does not list its GPUs' UUIDs (no gpu-reflex.io/mig-inventory): name GPU 3 by its UUID (nvidia-smi -L)",
    ],
    [
      'a UUID the node does not list',
      node({ annotations: { [MIG_INVENTORY_ANNOTATION]: inventory } }),
      uuid(7),
      `node gpu-0 has no GPU ${uuid(7)} (it lists 0: ${uuid(0)}, 1: ${uuid(1)})`,
    ],
    [
      'a malformed UUID',
      node({ gpus: '8' }),
      'GPU-1234abcd',
      '"GPU-1234abcd" is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)',
    ],
    ['any GPU of a node without GPUs', node({ gpus: '0' }), '0', 'node gpu-0 has no GPU'],
  ])('%s', (_what, n, arg, want) => {
    expect(resolveGpu(n, arg)).toEqual(want);
  });
});
