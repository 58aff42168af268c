import { describe, expect, it } from 'vitest';
import { FakeCluster } from '../adapters/kube/fake-cluster.ts';
import { FakePodOps } from '../adapters/kube/fake-node-pod-ops.ts';
import { podsOf } from './facts.ts';

describe('podsOf: the pods a remediation moves or waits for', () => {
  it('leaves out finished pods (they hold no GPU) and pods already terminating', async () => {
    const cluster = new FakeCluster();
    cluster.addNode({ name: 'n1' });
    cluster.addPod({ name: 'running', nodeName: 'n1', uid: 'u1' });
    cluster.addPod({ name: 'pending', nodeName: 'n1', uid: 'u2', phase: 'Pending' });
    cluster.addPod({ name: 'done', nodeName: 'n1', uid: 'u3', phase: 'Succeeded' });
    cluster.addPod({ name: 'crashed', nodeName: 'n1', uid: 'u4', phase: 'Failed' });
    cluster.addPod({ name: 'leaving', nodeName: 'n1', uid: 'u5', terminating: true });
    cluster.addPod({ name: 'elsewhere', nodeName: 'n2', uid: 'u6' });
    expect((await podsOf(new FakePodOps(cluster), 'n1')).map((p) => p.name).sort()).toEqual(['pending', 'running']);
  });
});
