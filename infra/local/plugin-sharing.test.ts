import { describe, expect, it } from 'vitest';
import { advertised, nodeSharing, parsePluginSharing, sharingLabels } from './plugin-sharing.ts';
import type { Node } from './kube/types.ts';

const config = (strategy: 'timeSlicing' | 'mps', replicas: number, rename = false) =>
  `version: v1\nsharing:\n  ${strategy}:\n    renameByDefault: ${rename}\n    resources:\n      - name: nvidia.com/gpu\n        replicas: ${replicas}\n`;

describe("NVIDIA's plugin sharing config, as the stand-in reads it (issue #32)", () => {
  it.each([
    [config('timeSlicing', 4), { strategy: 'time-slicing', resource: 'nvidia.com/gpu', replicas: 4, renamed: false }],
    [config('timeSlicing', 4, true), { strategy: 'time-slicing', resource: 'nvidia.com/gpu.shared', renamed: true }],
    [config('mps', 2), { strategy: 'mps', resource: 'nvidia.com/gpu', replicas: 2 }],
  ])('reads %j', (text, want) => expect(parsePluginSharing(text)).toMatchObject(want));

  it('refuses what the plugin refuses (replicas below 2) and ignores other resources', () => {
    expect(parsePluginSharing(config('timeSlicing', 1))).toBeUndefined();
    expect(
      parsePluginSharing('version: v1\nsharing:\n  timeSlicing:\n    resources: [{ name: x.com/y, replicas: 4 }]'),
    ).toBeUndefined();
  });

  it('labels the product -SHARED only when not renamed, and MPS nodes mps.capable', () => {
    const ts = parsePluginSharing(config('timeSlicing', 4))!;
    expect(sharingLabels(ts, 'NVIDIA-A100-SXM4-80GB')['nvidia.com/gpu.product']).toBe('NVIDIA-A100-SXM4-80GB-SHARED');
    const renamed = parsePluginSharing(config('timeSlicing', 4, true))!;
    expect(sharingLabels(renamed, 'NVIDIA-A100-SXM4-80GB')['nvidia.com/gpu.product']).toBe('NVIDIA-A100-SXM4-80GB');
    expect(sharingLabels(parsePluginSharing(config('mps', 2))!, undefined)).toMatchObject({
      'nvidia.com/mps.capable': 'true',
      'nvidia.com/gpu.sharing-strategy': 'mps',
      'nvidia.com/gpu.replicas': '2',
    });
  });

  it('picks the node’s config by its nvidia.com/device-plugin.config label; the pre-1930 annotation is the #1929 plugin', () => {
    const source = { configMaps: [{ data: { a: config('timeSlicing', 4) } }] };
    expect(nodeSharing({ 'nvidia.com/device-plugin.config': 'a' }, {}, source)?.preFix1929).toBe(false);
    const old = { 'sim.gpu-reflex.io/nvidia-plugin-health': 'pre-1930' };
    expect(nodeSharing({ 'nvidia.com/device-plugin.config': 'a' }, old, source)?.preFix1929).toBe(true);
    expect(nodeSharing({}, {}, source)).toBeUndefined();
  });

  it('advertises GPUs × replicas, under nvidia.com/gpu.shared instead of nvidia.com/gpu when renamed', () => {
    const node = {
      metadata: { name: 'n', labels: {} },
      status: { allocatable: { 'nvidia.com/gpu': '2' }, capacity: { 'nvidia.com/gpu': '2' } },
    } as unknown as Node;
    const out = advertised(node, parsePluginSharing(config('timeSlicing', 4, true))!, 2);
    expect(out.status?.allocatable).toEqual({ 'nvidia.com/gpu.shared': '8' });
    expect(out.status?.capacity).toEqual({ 'nvidia.com/gpu.shared': '8' });
  });
});
