import { describe, expect, it } from 'vitest';
import { gpuLabels, wellKnownLabels } from './template.ts';

describe('template node labels', () => {
  // The labels cluster-autoscaler's alicloud provider puts on a template node
  // (cloudprovider/alicloud/alicloud_manager.go buildGenericLabels), hostname aside.
  it("carries cluster-autoscaler's alicloud template labels, and the kubelet's beta aliases", () => {
    const labels = wellKnownLabels({
      instanceType: 'ecs.gn7i-c8g1.2xlarge',
      regionId: 'cn-hangzhou',
      zoneId: 'cn-hangzhou-k',
    });
    expect(labels).toMatchObject({
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'node.kubernetes.io/instance-type': 'ecs.gn7i-c8g1.2xlarge',
      'topology.kubernetes.io/region': 'cn-hangzhou',
      'topology.kubernetes.io/zone': 'cn-hangzhou-k',
      'beta.kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/instance-type': 'ecs.gn7i-c8g1.2xlarge',
      'failure-domain.beta.kubernetes.io/region': 'cn-hangzhou',
      'failure-domain.beta.kubernetes.io/zone': 'cn-hangzhou-k',
    });
    expect(labels['kubernetes.io/hostname']).toBeUndefined();
  });

  it('says no zone when the pool may land in several, and arm64 for an Arm family', () => {
    const labels = wellKnownLabels({ instanceType: 'ecs.g8y.2xlarge', regionId: 'cn-beijing' });
    expect(labels['topology.kubernetes.io/zone']).toBeUndefined();
    expect(labels['kubernetes.io/arch']).toBe('arm64');
  });

  it("labels the type's GPUs as GPU feature discovery will", () => {
    expect(gpuLabels(8, 'NVIDIA A100', 80)).toEqual({
      'nvidia.com/gpu.product': 'NVIDIA-A100',
      'nvidia.com/gpu.count': '8',
      'nvidia.com/gpu.memory': '81920',
    });
    expect(gpuLabels(0, '', 0)).toEqual({});
  });
});
