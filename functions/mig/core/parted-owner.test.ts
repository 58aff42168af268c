import { describe, expect, it } from 'vitest';
import { migConfig } from '../wiring.ts';
import { clusterPolicyRefusal, partedConfigRefusal } from './parted-owner.ts';

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

  it('writes when the ClusterPolicy names its ConfigMap, or when no GPU Operator runs (a static mig-manager)', () => {
    expect(clusterPolicyRefusal(ref, undefined)).toBeUndefined();
    expect(clusterPolicyRefusal(ref, [])).toBeUndefined();
    expect(
      clusterPolicyRefusal(ref, [
        { name: 'cluster-policy', configName: 'gpu-reflex-mig-parted-config', ignored: false },
      ]),
    ).toBeUndefined();
    // One the operator ignores (it acts on a single ClusterPolicy) says nothing about mig-manager.
    expect(
      clusterPolicyRefusal(ref, [
        { name: 'cluster-policy', configName: 'gpu-reflex-mig-parted-config', ignored: false },
        { name: 'old', ignored: true },
      ]),
    ).toBeUndefined();
  });

  it.each([
    ['unset', undefined, "unset (mig-manager reads the operator's default-mig-parted-config)"],
    ['another ConfigMap', 'custom-mig-config', 'custom-mig-config'],
  ])('refuses when the ClusterPolicy names %s, giving the kubectl patch that fixes it', (_, configName, says) => {
    const r = clusterPolicyRefusal(ref, [
      { name: 'gpu-cluster-policy', ignored: false, ...(configName ? { configName } : {}) },
    ]);
    expect(r).toBe(
      `the GPU Operator's ClusterPolicy gpu-cluster-policy has spec.migManager.config.name ${says}, not ` +
        "gpu-reflex-mig-parted-config: mig-manager would never see gpu-reflex's layouts (the node would wait for " +
        'a layout that never comes); set it with: kubectl patch clusterpolicies.nvidia.com gpu-cluster-policy ' +
        `--type merge -p '{"spec":{"migManager":{"config":{"name":"gpu-reflex-mig-parted-config"}}}}'`,
    );
  });
});
