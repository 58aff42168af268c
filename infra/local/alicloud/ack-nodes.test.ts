import { describe, expect, it } from 'vitest';
import { gpuResources } from './ack-nodes.ts';

describe("a simulated ACK node offers its GPUs as its pool's ack.node.gpu.schedule mode says", () => {
  it.each<[string | undefined, Record<string, string>]>([
    [undefined, { 'nvidia.com/gpu': '2' }],
    ['default', { 'nvidia.com/gpu': '2' }],
    ['topology', { 'nvidia.com/gpu': '2' }],
    ['exclusive', { 'nvidia.com/gpu': '2' }],
    ['cgpu', { 'aliyun.com/gpu-mem': '48', 'aliyun.com/gpu-count': '2' }],
    ['share', { 'aliyun.com/gpu-mem': '48', 'aliyun.com/gpu-count': '2' }],
    ['mps', { 'aliyun.com/gpu-mem': '48', 'aliyun.com/gpu-count': '2' }],
    ['core_mem', { 'aliyun.com/gpu-mem': '48', 'aliyun.com/gpu-count': '2', 'aliyun.com/gpu-core.percentage': '200' }],
  ])('%s', (mode, resources) => {
    expect(gpuResources(mode, 2, 24)).toEqual(resources);
  });

  it('offers no GPU resource on a node without GPUs', () => {
    expect(gpuResources('cgpu', 0, 0)).toEqual({});
  });
});
