import { describe, expect, it } from 'vitest';
import { migConfig } from '../wiring.ts';
import { partedConfigRefusal } from './parted-owner.ts';

const ref = { namespace: 'gpu-operator', name: 'gpu-reflex-mig-parted-config' };

describe("the mig-parted ConfigMap must be gpu-reflex's own", () => {
  it('writes into its own ConfigMap, or one nobody else claims, or one that does not exist yet', () => {
    expect(partedConfigRefusal(ref, undefined)).toBeUndefined();
    expect(partedConfigRefusal(ref, { labels: {}, ownerReferences: [] })).toBeUndefined();
    expect(
      partedConfigRefusal(ref, { labels: { 'app.kubernetes.io/managed-by': 'gpu-reflex' }, ownerReferences: [] }),
    ).toBeUndefined();
  });

  it.each([
    [
      'the shipped default',
      { namespace: 'gpu-operator', name: 'default-mig-parted-config' },
      undefined,
      "is the GPU Operator's own mig-parted ConfigMap",
    ],
    [
      'one the ClusterPolicy owns',
      ref,
      {
        labels: {},
        ownerReferences: [
          { apiVersion: 'nvidia.com/v1', kind: 'ClusterPolicy', name: 'cluster-policy', controller: true },
        ],
      },
      "is owned by the GPU Operator's ClusterPolicy cluster-policy",
    ],
    [
      "the operator chart's own",
      ref,
      { labels: { 'app.kubernetes.io/managed-by': 'Helm' }, ownerReferences: [] },
      'is managed by Helm',
    ],
  ])('refuses %s, saying what to set', (_, where, owner, why) => {
    const r = partedConfigRefusal(where, owner);
    expect(r).toContain(why);
    expect(r).toContain("name it in the ClusterPolicy's spec.migManager.config.name");
    expect(r).toContain('MIG_PARTED_CONFIGMAP=gpu-operator/gpu-reflex-mig-parted-config');
  });

  it('is its own by default, and refuses the operator default at cold start', () => {
    expect(migConfig({}).kube.migParted).toEqual({
      namespace: 'gpu-operator',
      name: 'gpu-reflex-mig-parted-config',
      key: 'config.yaml',
    });
    expect(() => migConfig({ MIG_PARTED_CONFIGMAP: 'gpu-operator/default-mig-parted-config' })).toThrow(
      /MIG_PARTED_CONFIGMAP: gpu-operator\/default-mig-parted-config is the GPU Operator's own/,
    );
  });
});
