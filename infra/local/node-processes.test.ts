import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { podUidOfPid } from '../../node-agent/collectors/pods.ts';
import type { Node, Pod } from './kube/types.ts';
import { allocateGpus, gpuSpecsOf } from './node-gpus.ts';
import { NodeProcesses } from './node-processes.ts';

const node: Node = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'n',
    uid: 'u',
    resourceVersion: '1',
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { 'nvidia.com/gpu.count': '2' },
  },
  status: { allocatable: { 'nvidia.com/gpu': 2 } },
};
const pod = (n: number, phase?: 'Succeeded'): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: `p${n}`,
    namespace: 'ml',
    uid: `00000000-0000-4000-8000-00000000000${n}`,
    resourceVersion: '1',
    creationTimestamp: `2026-01-01T00:00:0${n}Z`,
  },
  spec: { nodeName: 'n', containers: [{ name: 'c', resources: { requests: { 'nvidia.com/gpu': 1 } } }] },
  ...(phase ? { status: { phase } } : {}),
});

describe('NodeProcesses', () => {
  it('keeps running pods on their GPUs, gives a newcomer the freed GPU with a fresh pid, and rewrites /proc and the processes file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-procs-'));
    const gpus = gpuSpecsOf(node);
    const t = new NodeProcesses(gpus, dir, join(dir, 'processes.json'), allocateGpus(gpus, [pod(1), pod(2)]));
    expect(JSON.parse(readFileSync(join(dir, 'processes.json'), 'utf8'))).toEqual([
      [{ pid: 4100, usedMiB: 9830 }],
      [{ pid: 4101, usedMiB: 9830 }],
    ]);
    expect(t.update([pod(1), pod(2)])).toBe(false);
    expect(t.update([pod(2), pod(3)])).toBe(true); // p1 left GPU 0; p3 takes it
    expect(t.current.map((p) => [p.pod.name, p.gpu, p.pid])).toEqual([
      ['p2', 1, 4101],
      ['p3', 0, 4102],
    ]);
    expect(existsSync(join(dir, '4100'))).toBe(false);
    expect(await podUidOfPid(4102, dir)).toBe(pod(3).metadata.uid);
    expect(JSON.parse(readFileSync(join(dir, 'processes.json'), 'utf8'))).toEqual([
      [{ pid: 4102, usedMiB: 9830 }],
      [{ pid: 4101, usedMiB: 9830 }],
    ]);
    expect(t.update([pod(2, 'Succeeded'), pod(3)])).toBe(true); // a finished pod runs nothing
    expect(t.current.map((p) => p.pod.name)).toEqual(['p3']);
  });

  it('without hostPID, NVML still lists the processes but no /proc entry names their pod', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-procs-'));
    const gpus = gpuSpecsOf(node);
    const t = new NodeProcesses(gpus, dir, join(dir, 'processes.json'), allocateGpus(gpus, [pod(1)]), undefined, false);
    expect(JSON.parse(readFileSync(join(dir, 'processes.json'), 'utf8'))).toEqual([[{ pid: 4100, usedMiB: 9830 }], []]);
    expect(t.update([pod(1), pod(2)])).toBe(true);
    expect(await podUidOfPid(4100, dir)).toBeUndefined();
    expect(await podUidOfPid(4101, dir)).toBeUndefined();
  });
});
