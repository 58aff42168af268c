import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../infra/local/kube/index.ts';
import { commandWorks, requireTool } from './tools.ts';
import { kubectlIn } from './kubectl-run.ts';

/**
 * Preemption on the simulated cluster as kubectl (1.32) sees it (issue #28): a PriorityClass applied with kubectl is
 * listed by `kubectl get priorityclasses`, a pod of that class that fits nowhere shows its nominated node in
 * `kubectl get pods -o wide`, its victim shows the scheduler's `Preempted` Event, and once the victim is gone the pod
 * runs there.
 */
const kubectlTool = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

const MANIFESTS = `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: { name: serving }
value: 1000
description: online inference
---
apiVersion: v1
kind: Pod
metadata: { name: serve, namespace: ml }
spec:
  priorityClassName: serving
  containers:
    - name: main
      image: registry.local/serve:1
      resources: { requests: { nvidia.com/gpu: "1" } }
`;

describe('kubectl: preemption by the simulated scheduler', kubectlTool.options, () => {
  let sim: KubeSim;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu', count: 1, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 1 } }],
        namespaces: [{ name: 'ml' }],
        pods: [{ name: 'batch', namespace: 'ml', count: 1, node: 'gpu-0', requests: { 'nvidia.com/gpu': 1 } }],
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'kube-sim-preempt-'));
    kubeconfig = join(dir, 'config');
    sim.writeKubeconfig(kubeconfig);
    writeFileSync(join(dir, 'serve.yaml'), MANIFESTS);
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = (args: string[]) => kubectlIn(dir, kubeconfig)(args);

  it('kubectl get priorityclasses lists the applied class; the pod is nominated to the node it preempts', async () => {
    expect((await kubectl(['apply', '-f', join(dir, 'serve.yaml')])).stderr).toBe('');
    const pcs = await kubectl(['get', 'priorityclasses']);
    expect(pcs.stdout).toMatch(/serving\s+1000/);
    const wide = await kubectl(['get', 'pods', '-n', 'ml', '-o', 'wide']);
    expect(wide.stdout).toMatch(/NOMINATED NODE/);
    expect(wide.stdout.split('\n').find((l) => l.startsWith('serve '))).toMatch(/Pending.*gpu-0/);
    const nominated = await kubectl(['get', 'pod', 'serve', '-n', 'ml', '-o', 'jsonpath={.status.nominatedNodeName}']);
    expect(nominated.stdout).toBe('gpu-0');
  });

  it('the victim carries the scheduler’s Preempted Event; the pod runs once the victim is gone', async () => {
    const events = await kubectl(['get', 'events', '-n', 'ml', '--field-selector', 'reason=Preempted', '-o', 'json']);
    const items = (JSON.parse(events.stdout) as { items: { involvedObject: { name: string }; message: string }[] })
      .items;
    expect(items.map((e) => e.involvedObject.name)).toEqual(['batch-0']);
    expect(items[0]!.message).toMatch(/^Preempted by pod [0-9a-f-]+ on node gpu-0$/);
    sim.advance(31_000);
    const node = await kubectl(['get', 'pod', 'serve', '-n', 'ml', '-o', 'jsonpath={.spec.nodeName}']);
    expect(node.stdout).toBe('gpu-0');
  });
});
