import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../infra/local/kube/index.ts';
import { commandWorks, requireTool } from './tools.ts';
import { kubectlIn } from './kubectl-run.ts';

/**
 * DRA on the simulated cluster as kubectl (1.32) sees it (issue #28): a pod that claims a GPU through a
 * ResourceClaimTemplate is scheduled by the simulated scheduler onto the device it allocates, and
 * `kubectl get resourceclaims -o json` shows the allocation (driver/pool/device, the node) and the pod
 * it is reserved for; a DeviceTaintRule applied with kubectl keeps the tainted device from the next pod.
 */
const kubectlTool = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

const MANIFESTS = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: { name: one-gpu, namespace: ml }
spec:
  spec:
    devices:
      requests: [{ name: gpu, exactly: { deviceClassName: gpu.nvidia.com } }]
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
const RULE = `
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: { name: gpu-1-broken }
spec:
  deviceSelector: { driver: gpu.nvidia.com, pool: dra-0, device: gpu-1 }
  taint: { key: example.com/broken, value: xid-79, effect: NoSchedule }
`;

describe('kubectl: DRA claims allocated by the simulated scheduler', kubectlTool.options, () => {
  let sim: KubeSim;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    sim = await startKubeSim({
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
    dir = mkdtempSync(join(tmpdir(), 'kube-sim-dra-'));
    kubeconfig = join(dir, 'config');
    sim.writeKubeconfig(kubeconfig);
    writeFileSync(join(dir, 'train.yaml'), MANIFESTS);
    writeFileSync(join(dir, 'rule.yaml'), RULE);
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

  it('the DRA node advertises no nvidia.com/gpu; its GPUs are the devices of its ResourceSlice', async () => {
    const node = (await json(['get', 'node', 'dra-0'])) as { status: { allocatable: Record<string, string> } };
    expect(node.status.allocatable['nvidia.com/gpu']).toBeUndefined();
    const slices = (await json(['get', 'resourceslices'])) as { items: { spec: { devices: { name: string }[] } }[] };
    expect(slices.items[0]!.spec.devices.map((d) => d.name)).toEqual(['gpu-0', 'gpu-1']);
  });

  it('kubectl get resourceclaims shows the claim made for the pod, allocated and reserved for it', async () => {
    const applied = await kubectl(['apply', '-f', join(dir, 'train.yaml')]);
    expect(applied.stderr).toBe('');
    const pod = (await json(['get', 'pod', '-n', 'ml', 'train'])) as {
      metadata: { uid: string };
      spec: { nodeName?: string };
      status: { resourceClaimStatuses?: { name: string; resourceClaimName: string }[] };
    };
    expect(pod.spec.nodeName).toBe('dra-0');
    const claims = (await json(['get', 'resourceclaims', '-n', 'ml'])) as {
      items: { metadata: { name: string }; status: Record<string, unknown> }[];
    };
    expect(claims.items).toHaveLength(1);
    expect(claims.items[0]!.metadata.name).toBe(pod.status.resourceClaimStatuses![0]!.resourceClaimName);
    expect(claims.items[0]!.status).toMatchObject({
      allocation: {
        devices: { results: [{ request: 'gpu', driver: 'gpu.nvidia.com', pool: 'dra-0', device: 'gpu-0' }] },
        nodeSelector: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', values: ['dra-0'] }] }] },
      },
      reservedFor: [{ resource: 'pods', name: 'train', uid: pod.metadata.uid }],
    });
  });

  it('a DeviceTaintRule applied with kubectl keeps its device from the next claim: that pod waits', async () => {
    expect((await kubectl(['apply', '-f', join(dir, 'rule.yaml')])).stderr).toBe('');
    const second = MANIFESTS.split('---')[1]!.replace('name: train,', 'name: train-2,');
    writeFileSync(join(dir, 'train-2.yaml'), second);
    expect((await kubectl(['apply', '-f', join(dir, 'train-2.yaml')])).stderr).toBe('');
    const pod = (await json(['get', 'pod', '-n', 'ml', 'train-2'])) as {
      spec: { nodeName?: string };
      status: { conditions: { type: string; reason: string; message: string }[] };
    };
    expect(pod.spec.nodeName).toBeUndefined();
    expect(pod.status.conditions.find((c) => c.type === 'PodScheduled')).toMatchObject({
      reason: 'Unschedulable',
      message: '0/1 nodes are available: 1 cannot allocate all claims.',
    });
    expect((await kubectl(['delete', '-f', join(dir, 'rule.yaml')])).code).toBe(0);
    const after = (await json(['get', 'pod', '-n', 'ml', 'train-2'])) as { spec: { nodeName?: string } };
    expect(after.spec.nodeName).toBe('dra-0');
  });
});
