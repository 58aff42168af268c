import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../infra/local/kube/index.ts';
import { commandWorks, requireTool } from './tools.ts';
import { kubectlIn } from './kubectl-run.ts';

/**
 * DRA on a Kubernetes 1.32 cluster as kubectl 1.32 sees it (issue #28): 1.32 serves resource.k8s.io only at
 * v1beta1 (with `--runtime-config=resource.k8s.io/v1beta1` and the DynamicResourceAllocation gate,
 * https://kubernetes.io/docs/tasks/configure-pod-container/assign-resources/set-up-dra-cluster/), whose
 * requests name `deviceClassName` directly (no `exactly`). A template written in that shape is allocated by
 * the simulated scheduler, and the claim reads back in that shape, allocated to the pod.
 */
const kubectlTool = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

const MANIFESTS = `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: { name: one-gpu, namespace: ml }
spec:
  spec:
    devices:
      requests: [{ name: gpu, deviceClassName: gpu.nvidia.com }]
---
apiVersion: v1
kind: Pod
metadata: { name: train, namespace: ml }
spec:
  resourceClaims: [{ name: gpu, resourceClaimTemplateName: one-gpu }]
  containers:
    - name: main
      image: registry.local/train:1
      resources: { claims: [{ name: gpu }] }
`;

describe('kubectl 1.32: DRA claims at resource.k8s.io/v1beta1', kubectlTool.options, () => {
  let sim: KubeSim;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    sim = await startKubeSim({
      apis: {
        kubernetesVersion: '1.32',
        runtimeConfig: ['resource.k8s.io/v1beta1'],
        featureGates: { DynamicResourceAllocation: true },
      },
      fleet: {
        nodes: [
          {
            name: 'dra',
            count: 1,
            labels: { 'nvidia.com/gpu.count': '2', 'nvidia.com/gpu.present': 'true' },
            allocatable: { cpu: '32', memory: '128Gi' },
            draDriver: 'gpu.nvidia.com',
          },
        ],
        namespaces: [{ name: 'ml' }],
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'kube-sim-dra-v1beta1-'));
    kubeconfig = join(dir, 'config');
    sim.writeKubeconfig(kubeconfig);
    writeFileSync(join(dir, 'train.yaml'), MANIFESTS);
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = (args: string[]) => kubectlIn(dir, kubeconfig)(args);
  const json = async (args: string[]) => {
    const r = await kubectl([...args, '-o', 'json']);
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  it('discovery offers resource.k8s.io at v1beta1 only', async () => {
    const r = await kubectl(['api-versions']);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('resource.k8s.io/'))).toEqual(['resource.k8s.io/v1beta1']);
  });

  it('a v1beta1 template (deviceClassName on the request) is allocated; the claim reads back flat', async () => {
    const applied = await kubectl(['apply', '-f', join(dir, 'train.yaml')]);
    expect(applied.stderr).toBe('');
    const pod = (await json(['get', 'pod', '-n', 'ml', 'train'])) as {
      metadata: { uid: string };
      spec: { nodeName?: string };
    };
    expect(pod.spec.nodeName).toBe('dra-0');
    const claims = (await json(['get', 'resourceclaims', '-n', 'ml'])) as {
      items: { apiVersion: string; spec: { devices: { requests: object[] } }; status: object }[];
    };
    expect(claims.items).toHaveLength(1);
    expect(claims.items[0]!.apiVersion).toBe('resource.k8s.io/v1beta1');
    expect(claims.items[0]!.spec.devices.requests).toEqual([{ name: 'gpu', deviceClassName: 'gpu.nvidia.com' }]);
    expect(claims.items[0]!.status).toMatchObject({
      allocation: { devices: { results: [{ request: 'gpu', driver: 'gpu.nvidia.com', pool: 'dra-0' }] } },
      reservedFor: [{ resource: 'pods', name: 'train', uid: pod.metadata.uid }],
    });
    const template = (await json(['get', 'resourceclaimtemplate', '-n', 'ml', 'one-gpu'])) as {
      spec: { spec: { devices: { requests: object[] } } };
    };
    expect(template.spec.spec.devices.requests).toEqual([{ name: 'gpu', deviceClassName: 'gpu.nvidia.com' }]);
  });
});
