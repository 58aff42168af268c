/**
 * Kubernetes Events for gpu-reflex's actions: the real adapters (kubePorts) record them through
 * events.k8s.io against the simulated API server, and they read back as core/v1 Events, which is
 * what `kubectl get events` and `kubectl describe node` list.
 */
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet } from '../../../infra/local/kube/index.ts';
import { manualClock } from '../clock.ts';
import { createLogger } from '../logger.ts';
import { loadKubeConfig } from './config.ts';
import { dryRunPorts } from './dry-run.ts';
import { drain } from './drain.ts';
import { applyActions } from '../../lib/apply.ts';
import { noActions } from '../../lib/plan.ts';
import { RecordingNotifier } from '../chat/notifier.ts';
import { kubePorts } from './client.ts';
import type { KubePorts } from './index.ts';

type Sim = Awaited<ReturnType<typeof startKubeSim>>;

const fleet: Fleet = {
  nodes: [{ name: 'gpu', count: 2, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 8 } }],
  namespaces: [{ name: 'gpu-reflex' }, { name: 'serve' }],
  podDisruptionBudgets: [
    { name: 'llm', namespace: 'serve', minAvailable: 2, selector: { matchLabels: { app: 'llm' } } },
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

describe('Events recorded by the Kubernetes adapter', () => {
  let sim: Sim;
  let ports: KubePorts;
  let core: CoreV1Api;
  let logged: Record<string, unknown>[];
  const clock = manualClock(Date.UTC(2026, 0, 1));

  beforeEach(async () => {
    sim = await startKubeSim({ fleet });
    const kc = loadKubeConfig({ kubeconfigText: sim.kubeconfig() });
    logged = [];
    const logger = createLogger({ service: 'test', sink: (line) => logged.push(line) });
    ports = kubePorts(kc, { namespace: 'gpu-reflex', events: { clock, logger, instance: 'remediate' } });
    core = kc.makeApiClient(CoreV1Api);
  });
  afterEach(() => sim.close());

  /** Core/v1 Events about one object, as `kubectl describe` asks for them. */
  async function eventsAbout(kind: string, name: string, uid: string): Promise<CoreV1Event[]> {
    const list = await core.listEventForAllNamespaces({
      fieldSelector: `involvedObject.name=${name},involvedObject.kind=${kind},involvedObject.uid=${uid}`,
    });
    return list.items;
  }

  it('a cordon and a taint in one node change are one Event on the node, found as kubectl describe node looks', async () => {
    expect(
      await ports.nodes.update('gpu-1', {
        unschedulable: true,
        addTaints: [{ key: 'gpu-reflex.io/xid', value: '79', effect: 'NoSchedule' }],
      }),
    ).toBe(true);
    const events = await eventsAbout('Node', 'gpu-1', 'gpu-1');
    expect(events.map((e) => [e.type, e.reason, e.message])).toEqual([
      ['Normal', 'Cordoned', 'Node marked unschedulable by gpu-reflex; taint gpu-reflex.io/xid=79:NoSchedule added'],
    ]);
    expect(events[0]).toMatchObject({
      metadata: { namespace: 'default' },
      reportingComponent: 'gpu-reflex',
      reportingInstance: 'remediate',
      action: 'Cordon',
      involvedObject: { kind: 'Node', name: 'gpu-1' },
    });
    expect(events[0]?.eventTime).toBeDefined();
  });

  it('records nothing when nothing changed (a repeated cordon)', async () => {
    await ports.nodes.cordon('gpu-1');
    expect(await ports.nodes.cordon('gpu-1')).toBe(false);
    await ports.nodes.uncordon('gpu-1');
    expect((await eventsAbout('Node', 'gpu-1', 'gpu-1')).map((e) => e.reason)).toEqual(['Cordoned', 'Uncordoned']);
  });

  it('records taint removal, and not label changes', async () => {
    await ports.nodes.addTaint('gpu-1', { key: 'k', effect: 'NoExecute' });
    await ports.nodes.setLabels('gpu-1', { 'gpu-reflex.io/state': 'quarantined' });
    await ports.nodes.removeTaint('gpu-1', 'k');
    expect((await eventsAbout('Node', 'gpu-1', 'gpu-1')).map((e) => `${e.reason}: ${e.message}`)).toEqual([
      'Tainted: Taint k:NoExecute added by gpu-reflex',
      'Untainted: Taint k:NoExecute removed by gpu-reflex',
    ]);
  });

  it("a plan's evictions are one PodsEvicted Event on the node naming the pods evicted; a PDB refusal is not named, and pods get none of their own", async () => {
    await core.createNamespacedPod({
      namespace: 'serve',
      body: {
        metadata: { name: 'batch', labels: { app: 'batch' } },
        spec: { nodeName: 'gpu-0', containers: [{ name: 'main', image: 'cuda:12' }] },
      },
    });
    const applied = await applyActions(
      {
        ...noActions(),
        evictions: [
          { namespace: 'serve', name: 'batch' },
          { namespace: 'serve', name: 'llm-0' },
        ],
      },
      { ...ports, notifier: new RecordingNotifier() },
      undefined,
      await ports.nodes.get('gpu-0'),
    );
    expect(applied.evictions.map((e) => e.result)).toEqual(['done', 'blocked']);
    expect((await eventsAbout('Node', 'gpu-0', 'gpu-0')).map((e) => [e.reason, e.action, e.message])).toEqual([
      [
        'PodsEvicted',
        'Evict',
        '1 pod evicted by gpu-reflex through the Eviction API (PodDisruptionBudgets honoured): serve/batch',
      ],
    ]);
    // gpu-reflex records none per pod; the one pod Event is the simulated kubelet's, stopping the
    // evicted pod's container as a real kubelet does (infra/local/kube/kubelet-events.ts).
    expect(
      (await core.listNamespacedEvent({ namespace: 'serve' })).items.map((e) => [
        e.reportingComponent,
        e.reason,
        e.involvedObject.name,
      ]),
    ).toEqual([['kubelet', 'Killing', 'batch']]);
  });

  it('a drain that runs out of time is a DrainStuck Warning naming what is left and why', async () => {
    const report = await drain(ports, 'gpu-0', { deadlineMs: 10_000, intervalMs: 5_000, clock });
    expect(report.done).toBe(false);
    const stuck = (await eventsAbout('Node', 'gpu-0', 'gpu-0')).filter((e) => e.reason === 'DrainStuck');
    expect(stuck).toHaveLength(1);
    expect(stuck[0]).toMatchObject({ type: 'Warning', action: 'Drain' });
    expect(stuck[0]?.message).toMatch(
      /^Drain gave up after 3 passes in 10s with 2 pod\(s\) left: serve\/llm-0 \(Cannot evict pod as it would violate the pod's disruption budget\.\)/,
    );
  });

  it('the same Events read through events.k8s.io/v1 carry regarding, note and reportingController', async () => {
    await ports.nodes.cordon('gpu-0');
    const res = await fetch(
      `${sim.url}/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dgpu-0`,
    );
    const list = (await res.json()) as { kind: string; items: Record<string, unknown>[] };
    expect(list.kind).toBe('EventList');
    expect(list.items).toEqual([
      expect.objectContaining({
        apiVersion: 'events.k8s.io/v1',
        reason: 'Cordoned',
        note: 'Node marked unschedulable by gpu-reflex',
        reportingController: 'gpu-reflex',
        regarding: expect.objectContaining({ kind: 'Node', name: 'gpu-0' }),
      }),
    ]);
  });

  it('a failure to record is logged and never fails the action', async () => {
    sim.faults.inject({ method: 'POST', path: '/events', code: 500, times: 1 });
    expect(await ports.nodes.cordon('gpu-1')).toBe(true);
    expect(sim.store.node('gpu-1')?.spec?.unschedulable).toBe(true);
    expect(logged).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'recording event failed',
        reason: 'Cordoned',
        regarding: 'Node/gpu-1',
      }),
    ]);
  });

  it('a dry run records no Event, only notes the one it would have', async () => {
    const writes: { op: string; args: unknown[] }[] = [];
    const dry = dryRunPorts(ports, (a) => writes.push(a));
    await dry.events.record(
      { kind: 'Node', name: 'gpu-1' },
      { type: 'Normal', reason: 'Cordoned', action: 'Cordon', note: 'x' },
    );
    expect(await dry.nodes.cordon('gpu-1')).toBe(true);
    expect(writes.map((w) => w.op)).toEqual(['events.record', 'nodes.cordon']);
    expect(sim.store.list('events')).toEqual([]);
  });
});
