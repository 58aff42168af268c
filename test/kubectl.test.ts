import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, wallClock, type Fleet, type KubeSim } from '../infra/local/kube/index.ts';
import { clients } from '../infra/local/kube/test-helpers.ts';
import { commandWorks, requireTool } from './tools.ts';
import { loadKubeConfig } from '../functions/adapters/kube/config.ts';
import { kubePorts } from '../functions/adapters/kube/client.ts';
import { applyActions } from '../functions/lib/apply.ts';
import { noActions } from '../functions/lib/plan.ts';
import { RecordingNotifier } from '../functions/adapters/chat/notifier.ts';

/**
 * The simulated cluster driven by the real kubectl. Where kubectl is not installed the tests are
 * skipped and the run says so (test/tools.ts).
 * This suite runs the sim on the wall clock: `kubectl drain` waits for evicted pods to disappear
 * in real time, so their grace period is 1 s, and each kubelet syncs its node status every 1 s
 * (10 s on a real node), when it records a cordon as NodeNotSchedulable.
 */
const kubectlTool = requireTool('kubectl', () => commandWorks('kubectl', ['version', '--client']));

const fleet: Fleet = {
  nodes: [
    {
      name: 'gpu-a',
      labels: { accelerator: 'nvidia-tesla-t4' },
      allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 4 },
    },
    {
      name: 'gpu-b',
      labels: { accelerator: 'nvidia-tesla-t4' },
      allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 4 },
    },
    {
      name: 'spare',
      labels: { accelerator: 'nvidia-tesla-t4' },
      allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 4 },
    },
  ],
  namespaces: [{ name: 'gpu-reflex' }, { name: 'serve' }, { name: 'train' }],
  daemonSets: [{ name: 'agent', namespace: 'gpu-reflex', tolerations: [{ operator: 'Exists' }] }],
  podDisruptionBudgets: [
    { name: 'llm', namespace: 'serve', minAvailable: 2, selector: { matchLabels: { app: 'llm' } } },
  ],
  pods: [
    {
      name: 'llm',
      namespace: 'serve',
      count: 2,
      node: 'gpu-a',
      owner: { kind: 'ReplicaSet', name: 'llm-7d9' },
      labels: { app: 'llm' },
      requests: { 'nvidia.com/gpu': 1 },
      terminationGracePeriodSeconds: 1,
    },
    {
      name: 'trainer',
      namespace: 'train',
      node: 'gpu-a',
      owner: { kind: 'Job', name: 'trainer' },
      emptyDir: true,
      requests: { 'nvidia.com/gpu': 1 },
      terminationGracePeriodSeconds: 1,
    },
  ],
};

describe('kubectl against the simulated cluster', kubectlTool.options, () => {
  let sim: KubeSim;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet, clock: wallClock, kubeletStatusSeconds: 1 });
    dir = mkdtempSync(join(tmpdir(), 'kube-sim-kubectl-'));
    kubeconfig = join(dir, 'config');
    sim.writeKubeconfig(kubeconfig);
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs kubectl to completion, or until its stderr contains `until` (then ends it by pid):
   * drain sleeps 5 s between refused evictions, and one refusal is all a test needs to see.
   */
  function kubectl(
    args: string[],
    until?: string,
    onStdout?: (stdout: string) => boolean,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn('kubectl', ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args], {
        env: { ...process.env, HOME: dir, KUBECONFIG: '' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (onStdout?.(stdout)) child.kill('SIGTERM');
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (until !== undefined && stderr.includes(until)) child.kill('SIGTERM');
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('kubectl get nodes prints the fleet with Ready status', async () => {
    const r = await kubectl(['get', 'nodes']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2).join(' '))).toEqual([
      'gpu-a Ready',
      'gpu-b Ready',
      'spare Ready',
    ]);
  });

  it('kubectl get -w prints a node row again when the node is cordoned', async () => {
    const { core } = clients(sim);
    let cordoned = false;
    const r = await kubectl(['get', 'nodes', '-w'], undefined, (out) => {
      if (!cordoned && out.includes('spare')) {
        cordoned = true;
        void core.patchNode({ name: 'spare', body: [{ op: 'add', path: '/spec/unschedulable', value: true }] });
      }
      return out.includes('SchedulingDisabled');
    });
    expect(r.stdout).toMatch(/spare\s+Ready,SchedulingDisabled\s+<none>/);
    await core.patchNode({ name: 'spare', body: [{ op: 'remove', path: '/spec/unschedulable' }] });
  });

  it('kubectl cordon marks the node unschedulable', async () => {
    expect((await kubectl(['cordon', 'spare'])).stdout).toContain('node/spare cordoned');
    expect(sim.store.node('spare')!.spec?.unschedulable).toBe(true);
    expect((await kubectl(['get', 'node', 'spare'])).stdout).toContain('Ready,SchedulingDisabled');
    await kubectl(['uncordon', 'spare']);
    expect(sim.store.node('spare')!.spec?.unschedulable).toBeFalsy();
  });

  it('kubectl taint adds and removes a NoSchedule taint', async () => {
    expect((await kubectl(['taint', 'nodes', 'spare', 'gpu-reflex.io/faulty=xid-79:NoSchedule'])).code).toBe(0);
    expect(sim.store.node('spare')!.spec?.taints).toEqual([
      { key: 'gpu-reflex.io/faulty', value: 'xid-79', effect: 'NoSchedule' },
    ]);
    expect((await kubectl(['taint', 'nodes', 'spare', 'gpu-reflex.io/faulty:NoSchedule-'])).code).toBe(0);
    expect(sim.store.node('spare')!.spec?.taints ?? []).toEqual([]);
  });

  it('kubectl label sets, overwrites and removes a node label', async () => {
    await kubectl(['label', 'nodes', 'spare', 'gpu-reflex.io/health=degraded']);
    expect(sim.store.node('spare')!.metadata.labels?.['gpu-reflex.io/health']).toBe('degraded');
    const refused = await kubectl(['label', 'nodes', 'spare', 'gpu-reflex.io/health=ok']);
    expect(refused.code).not.toBe(0);
    await kubectl(['label', '--overwrite', 'nodes', 'spare', 'gpu-reflex.io/health=ok']);
    expect(sim.store.node('spare')!.metadata.labels?.['gpu-reflex.io/health']).toBe('ok');
    await kubectl(['label', 'nodes', 'spare', 'gpu-reflex.io/health-']);
    expect(sim.store.node('spare')!.metadata.labels?.['gpu-reflex.io/health']).toBeUndefined();
  });

  it('kubectl apply -f creates a ResourceQuota, then updates it', async () => {
    const file = join(dir, 'quota.yaml');
    const quota = (gpus: number) =>
      `apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu\n  namespace: train\nspec:\n  hard:\n    requests.nvidia.com/gpu: "${gpus}"\n`;
    writeFileSync(file, quota(8));
    expect((await kubectl(['apply', '-f', file])).stdout).toContain('resourcequota/gpu created');
    writeFileSync(file, quota(12));
    expect((await kubectl(['apply', '-f', file])).stdout).toContain('resourcequota/gpu configured');
    const stored = sim.store.get('resourcequotas', 'train', 'gpu')!;
    expect((stored.spec as { hard: Record<string, string> }).hard['requests.nvidia.com/gpu']).toBe('12');
    expect(stored.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toContain('"12"');
    writeFileSync(file, quota(16).replace('name: gpu', 'name: gpu-ssa'));
    expect((await kubectl(['apply', '--server-side', '-f', file])).stdout).toContain(
      'resourcequota/gpu-ssa serverside-applied',
    );
    expect(
      (sim.store.get('resourcequotas', 'train', 'gpu-ssa')!.spec as { hard: Record<string, string> }).hard[
        'requests.nvidia.com/gpu'
      ],
    ).toBe('16');
  });

  it('DRA: a ResourceSlice kubectl applies is what gpu-reflex reads, and the DeviceTaintRule gpu-reflex creates is what kubectl lists and deletes', async () => {
    const file = join(dir, 'slice.yaml');
    writeFileSync(
      file,
      `apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: gpu-b-gpu.nvidia.com\nspec:\n  driver: gpu.nvidia.com\n  nodeName: gpu-b\n  pool: { name: gpu-b, generation: 1, resourceSliceCount: 1 }\n  devices:\n    - name: gpu-0\n      attributes:\n        uuid: { string: GPU-b0 }\n        index: { int: 0 }\n`,
    );
    expect((await kubectl(['apply', '-f', file])).stdout).toContain(
      'resourceslice.resource.k8s.io/gpu-b-gpu.nvidia.com created',
    );
    const { deviceTaints } = kubePorts(loadKubeConfig({ kubeconfigPath: kubeconfig }), { namespace: 'gpu-reflex' });
    const devices = await deviceTaints.devices('gpu-b', 'gpu.nvidia.com');
    expect(devices).toEqual({ 'GPU-b0': { driver: 'gpu.nvidia.com', pool: 'gpu-b', device: 'gpu-0' } });
    await deviceTaints.create({
      name: 'gpu-reflex-test',
      node: 'gpu-b',
      gpuUuid: 'GPU-b0',
      ...devices['GPU-b0']!,
      taint: { key: 'gpu-reflex.io/unhealthy', value: 'xid-95', effect: 'NoSchedule' },
    });
    const listed = await kubectl([
      'get',
      'devicetaintrules',
      '-l',
      'gpu-reflex.io/node=gpu-b',
      '-o',
      'jsonpath={.items[*].spec.deviceSelector.device}',
    ]);
    expect(listed.stdout).toBe('gpu-0');
    expect((await kubectl(['delete', 'devicetaintrule', 'gpu-reflex-test'])).stdout).toContain('deleted');
    expect(await deviceTaints.rules('gpu-b')).toEqual([]);
  });

  it('kubectl describe node lists the pods on it and their GPU requests', async () => {
    const r = await kubectl(['describe', 'node', 'gpu-a']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Non-terminated Pods:\s+\(4 in total\)/);
    expect(r.stdout).toMatch(/nvidia\.com\/gpu\s+3\s+0/);
  });

  it('kubectl get pods -A -o wide shows where each pod runs, with its IP', async () => {
    const r = await kubectl(['get', 'pods', '-A', '-o', 'wide']);
    expect(r.stdout.split('\n')[0]).toMatch(
      /^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/,
    );
    expect(r.stdout).toMatch(/serve\s+llm-0\s+1\/1\s+Running\s+0\s+\S+\s+10\.244\.\d+\.\d+\s+gpu-a\s+<none>\s+<none>/);
  });

  it('kubectl get nodes -o wide shows the address, OS image, kernel and container runtime', async () => {
    const r = await kubectl(['get', 'nodes', '-o', 'wide']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(
      /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME$/,
    );
    expect(r.stdout).toMatch(
      /spare\s+Ready\S*\s+<none>\s+\S+\s+v1\.37\.0\s+10\.\d+\.\d+\.\d+\s+<none>\s+Ubuntu 22\.04\.4 LTS\s+5\.15\.0-1063-nvidia\s+containerd:\/\/1\.7\.13/,
    );
  });

  it("gpu-reflex's cordon with its taint, and its evictions, show in kubectl get events and describe node as one Event each, with the node's Lease", async () => {
    const ports = kubePorts(loadKubeConfig({ kubeconfigText: sim.kubeconfig() }), { namespace: 'gpu-reflex' });
    await ports.nodes.update('gpu-b', {
      unschedulable: true,
      addTaints: [{ key: 'gpu-reflex.io/xid', value: '79', effect: 'NoSchedule' }],
    });
    const { core } = clients(sim);
    await core.createNamespacedPod({
      namespace: 'train',
      body: {
        metadata: { name: 'evictee' },
        spec: { nodeName: 'gpu-b', terminationGracePeriodSeconds: 1, containers: [{ name: 'm', image: 'cuda:12' }] },
      },
    });
    const applied = await applyActions(
      { ...noActions(), evictions: [{ namespace: 'train', name: 'evictee' }] },
      { ...ports, notifier: new RecordingNotifier() },
      undefined,
      await ports.nodes.get('gpu-b'),
    );
    expect(applied.evictions).toEqual([{ result: 'done' }]);
    const events = await kubectl(['get', 'events', '-A']);
    expect(events.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    expect(events.stdout).toMatch(
      /default\s+\S+\s+Normal\s+Cordoned\s+node\/gpu-b\s+Node marked unschedulable by gpu-reflex; taint gpu-reflex.io\/xid=79:NoSchedule added/,
    );
    expect(events.stdout).toMatch(
      /default\s+\S+\s+Normal\s+PodsEvicted\s+node\/gpu-b\s+1 pod evicted by gpu-reflex through the Eviction API \(PodDisruptionBudgets honoured\): train\/evictee/,
    );
    // The kubelet stops the evicted pod's container as soon as it is deleted (kuberuntime_container.go
    // killContainer: reason Killing, "Stopping container <name>", on the pod's container).
    expect(events.stdout).toMatch(/train\s+\S+\s+Normal\s+Killing\s+pod\/evictee\s+Stopping container m/);
    // The cordon shows as the kubelet's NodeNotSchedulable at its next node status sync, after
    // gpu-reflex's own Events (kubelet_node_status.go recordNodeSchedulableEvent): watched until it comes.
    const watched = await kubectl(
      ['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.name=gpu-b', '--watch'],
      undefined,
      (out) => out.includes('NodeNotSchedulable'),
    );
    expect(watched.stdout).toMatch(
      /Normal\s+NodeNotSchedulable\s+node\/gpu-b\s+Node gpu-b status is now: NodeNotSchedulable/,
    );
    const described = await kubectl(['describe', 'node', 'gpu-b']);
    expect(described.stdout).toMatch(/Lease:\s+HolderIdentity:\s+gpu-b/);
    expect(described.stdout).toMatch(/Boot ID:\s+[0-9a-f-]{36}/);
    // describe node also reads the kubelet's Events, whose node reference carries the node's name as
    // its UID (kubectl describe.go: "kubelet use node.name"), and sorts them all by time.
    expect(described.stdout).toMatch(
      /Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n.*\n\s+Normal\s+Cordoned\s+\S+\s+gpu-reflex\s+Node marked unschedulable by gpu-reflex; taint \S+ added\n\s+Normal\s+PodsEvicted\s+.*\n\s+Normal\s+NodeNotSchedulable\s+\S+\s+kubelet\s+Node gpu-b status is now: NodeNotSchedulable/,
    );
  });

  it('kubectl delete waits for the pod to finish its grace period and go', async () => {
    const { core } = clients(sim);
    await core.createNamespacedPod({
      namespace: 'train',
      body: {
        metadata: { name: 'scratch' },
        spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'm', image: 'x' }] },
      },
    });
    const r = await kubectl(['delete', 'pod', '-n', 'train', 'scratch', '--timeout=10s']);
    expect(r.stdout).toContain('pod "scratch" deleted');
    expect(r.code).toBe(0);
    expect(sim.store.pod('train', 'scratch')).toBeUndefined();
  });

  it('kubectl drain is blocked by the PodDisruptionBudget and says so', async () => {
    const refusal = "Cannot evict pod as it would violate the pod's disruption budget.";
    const r = await kubectl(
      ['drain', 'gpu-a', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=20s'],
      refusal,
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /error when evicting pods\/"llm-[01]" -n "serve" \(will retry after 5s\): Cannot evict pod/,
    );
    expect(sim.store.node('gpu-a')!.spec?.unschedulable).toBe(true);
    expect(sim.store.podsOnNode('gpu-a').filter((p) => p.metadata.namespace === 'serve')).toHaveLength(2);
  });

  it('kubectl drain succeeds once a third replica runs elsewhere, leaving only the DaemonSet pod', async () => {
    const { core } = clients(sim);
    await core.createNamespacedPod({
      namespace: 'serve',
      body: {
        metadata: {
          name: 'llm-extra',
          labels: { app: 'llm' },
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'llm-7d9', uid: 'x', controller: true }],
        },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'm', image: 'llm', resources: { requests: { 'nvidia.com/gpu': '1' } } }],
        },
      },
    });
    const r = await kubectl(['drain', 'gpu-a', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=20s']);
    expect(r.stderr + r.stdout).toContain('node/gpu-a drained');
    expect(r.code).toBe(0);
    expect(sim.store.podsOnNode('gpu-a').map((p) => p.metadata.ownerReferences?.[0]?.kind)).toEqual(['DaemonSet']);
    expect(
      sim.store.pods('serve').filter((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp),
    ).toHaveLength(3);
    // kubectl records no Events of its own; what a drain leaves is the kubelet's: Killing for each
    // evicted pod's container (the two llm replicas here; the trainer's in train).
    const onA = await kubectl([
      'get',
      'events',
      '-n',
      'serve',
      '--field-selector',
      'reason=Killing,source=kubelet',
      '-o',
      'jsonpath={range .items[*]}{.involvedObject.name} {.source.host} {.message}{"\\n"}{end}',
    ]);
    expect(onA.stdout.trim().split('\n').sort()).toEqual([
      'llm-0 gpu-a Stopping container main',
      'llm-1 gpu-a Stopping container main',
    ]);
  });
});
