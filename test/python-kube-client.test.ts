import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../functions/adapters/kube/config.ts';
import { kubePorts } from '../functions/adapters/kube/client.ts';
import { startKubeSim, type Fleet, type KubeSim } from '../infra/local/kube/index.ts';

/**
 * The simulated cluster through a client the project does not own: the official Python client
 * (Debian's python3-kubernetes). It deserializes every answer into typed models that refuse a
 * missing required field, so a Node without a complete nodeInfo, an events.k8s.io Event without
 * eventTime or a watch that is not a stream fails here. Skipped, loudly, where no Python has
 * the module (`apt-get install python3-kubernetes`).
 */
const SCRIPT = fileURLToPath(new URL('./clients/kube_client.py', import.meta.url));

function findPython(): string | undefined {
  // The pyenv shim first on PATH may lack the Debian package; /usr/bin/python3 has it.
  for (const candidate of ['python3', '/usr/bin/python3', 'python']) {
    if (spawnSync(candidate, ['-c', 'import kubernetes'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return undefined;
}

const python = findPython();
if (!python)
  console.warn(
    'SKIPPED test/python-kube-client.test.ts: no Python interpreter can `import kubernetes` (install python3-kubernetes)',
  );

const fleet: Fleet = {
  nodes: [{ name: 'gpu', count: 2, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 8 } }],
  namespaces: [
    { name: 'gpu-reflex' },
    {
      name: 'serve',
      quotas: [{ name: 'gpu', hard: { 'requests.nvidia.com/gpu': 8 } }],
      limitRanges: [{ name: 'defaults', limits: [{ type: 'Container', default: { cpu: '1' } }] }],
    },
  ],
  daemonSets: [{ name: 'agent', namespace: 'gpu-reflex', tolerations: [{ operator: 'Exists' }] }],
  podDisruptionBudgets: [
    { name: 'llm', namespace: 'serve', minAvailable: 1, selector: { matchLabels: { app: 'llm' } } },
  ],
  pods: [
    {
      name: 'llm',
      namespace: 'serve',
      count: 2,
      node: 'gpu-0',
      labels: { app: 'llm' },
      owner: { kind: 'ReplicaSet', name: 'llm-1' },
    },
  ],
};

interface Answers {
  nodes: string[];
  nodeInfo: Record<string, string>;
  conditions: string[];
  patchedLabel: string;
  patchedWithJsonPatch: boolean;
  watch: string[];
  watchedLabel: string;
  pods: number;
  containerStatuses: number;
  evictedPodTerminating: boolean;
  badLimit: { status: number; message: string };
  coreEvents: string[];
  eventsV1: string[];
  leaseHolder: string;
  pdbs: number[];
  daemonSets: number[];
  namespaces: string[];
  configMaps: number;
  quotas: Record<string, string>[];
  limitRanges: string[];
  nodeLeases: number;
}

describe.skipIf(!python)('the official Python Kubernetes client against the simulated cluster', () => {
  let sim: KubeSim;
  let dir: string;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    dir = mkdtempSync(join(tmpdir(), 'kube-sim-python-'));
    sim.writeKubeconfig(join(dir, 'config'));
    // Something for the events APIs to return: what the adapter records for a cordon.
    await kubePorts(loadKubeConfig({ kubeconfigText: sim.kubeconfig() }), { namespace: 'gpu-reflex' }).nodes.cordon(
      'gpu-1',
    );
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the script to completion (asynchronously: the sim answers from this process). */
  function runScript(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(python!, [SCRIPT, join(dir, 'config'), ...args], { env: { ...process.env, HOME: dir } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('lists, patches and watches nodes, evicts a pod and reads events, parsing every answer', async () => {
    const r = await runScript('gpu-1', 'serve', 'llm-0');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const a = JSON.parse(r.stdout) as Answers;
    expect(a.nodes).toEqual(['gpu-0', 'gpu-1']);
    expect(Object.keys(a.nodeInfo).sort()).toEqual([
      'architecture',
      'boot_id',
      'container_runtime_version',
      'kernel_version',
      'kube_proxy_version',
      'kubelet_version',
      'machine_id',
      'operating_system',
      'os_image',
      'system_uuid',
    ]);
    expect(a.conditions).toEqual(['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready']);
    expect(a.patchedLabel).toBe('yes');
    expect(a.patchedWithJsonPatch).toBe(true);
    expect(a.watch).toEqual(['ADDED gpu-0', 'ADDED gpu-1', 'MODIFIED gpu-1']);
    expect(a.watchedLabel).toBe('watched');
    expect(a.pods).toBe(4);
    expect(a.containerStatuses).toBe(4);
    expect(a.evictedPodTerminating).toBe(true);
    expect(a.badLimit).toEqual({ status: 400, message: 'strconv.ParseInt: parsing "abc": invalid syntax' });
    expect(a.coreEvents).toEqual(['Cordoned']);
    // The eviction's own Event is the kubelet's, stopping the pod's container (kuberuntime_container.go
    // killContainer), and the Python client parses it through events.k8s.io/v1 as well.
    expect(a.eventsV1).toEqual(['Cordoned Node/gpu-1 by gpu-reflex', 'Killing Pod/llm-0 by kubelet']);
    expect(a.leaseHolder).toBe('gpu-1');
    expect(a.pdbs).toEqual([1]);
    expect(a.daemonSets).toEqual([2]);
    expect(a.namespaces).toEqual(['default', 'gpu-reflex', 'kube-node-lease', 'kube-public', 'kube-system', 'serve']);
    expect(a.configMaps).toBe(0);
    expect(a.quotas).toEqual([{ 'requests.nvidia.com/gpu': '8' }]);
    expect(a.limitRanges).toEqual(['Container']);
    expect(a.nodeLeases).toBe(2);
    expect(sim.store.node('gpu-1')?.metadata.labels?.['python-client']).toBe('watched');
  });
});
