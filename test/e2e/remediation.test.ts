/**
 * Remediation end to end on the embedded stack: PutEvents through the real
 * @aws-sdk/client-eventbridge → the local bus → the rule in serverless.yml → the real
 * `functions/remediate/handler.handler` (configured only by its environment: the simulated
 * cluster's kubeconfig, the bus) → @kubernetes/client-node → the simulated cluster. Assertions
 * read the cluster's STATE (nodes, pods) and the events the functions put back on the bus.
 *
 * Honest about the producer: the events are agent-shaped `GPU XID Error`s built by the agent's own
 * `xidEvent` (node-agent/events.ts), put on the bus the way its publisher does; the agent on mock
 * NVML is not in this chain (that is the local stack's test).
 *
 * Time is virtual: one clock drives the bus (schedules, retries), the cluster (grace periods) and
 * the functions (the stack injects it into `currentClock()`, as `simulate` does).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APPROVAL_REQUESTED,
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  REMEDIATION,
  type GpuActionRequest,
  type GpuActionState,
} from '../../events/index.ts';
import { REPAIRED_AT_ANNOTATION, STATE_LABEL } from '../../functions/remediate/core/state.ts';
import type { Fleet } from '../../infra/local/kube/index.ts';
import { resource } from '../../infra/local/kube/resources.ts';
import { xidEvent } from '../../node-agent/events.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';
import { evicted } from './evicted.ts';
import { PASSED_PROBE } from '../../functions/remediate/testing.ts';

const clock = (() => {
  let t = Date.parse('2026-11-21T03:00:00.000Z');
  const hooks: (() => void)[] = [];
  const advance = (ms: number) => {
    t += ms;
    for (const h of hooks) h();
  };
  return {
    now: () => t,
    advance,
    sleep: async (ms: number) => advance(ms),
    onAdvance: (h: () => void) => void hooks.push(h),
  };
})();

const TAINT_KEY = 'gpu-reflex.io/unhealthy';
const GPU = (node: string, i: number) => ({
  index: i,
  uuid: `GPU-${node
    .replace(/[^0-9a-f]/g, '0')
    .padEnd(8, '0')
    .slice(0, 8)}-0000-4000-8000-${String(i).padStart(12, '0')}`,
  pciBusId: `00000000:${(0x10 + i).toString(16)}:00.0`,
  name: 'NVIDIA A100-SXM4-80GB',
});

/** An XID as the agent would report it, observed now on the shared clock. */
function xid(node: string, no: number, opts: { gpu?: number; podUids?: string[]; at?: number } = {}) {
  const at = opts.at ?? clock.now();
  return xidEvent(node, at, {
    gpu: GPU(node, opts.gpu ?? 0),
    xid: no,
    via: 'nvml',
    pid: 4242,
    process: 'python',
    message: `NVRM: Xid (PCI:0000:10:00): ${no}`,
    podUids: opts.podUids ?? [],
  });
}

const A100 = { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' };
const pool = (name: string, count: number) => ({
  name,
  count,
  labels: { 'gpu-reflex.io/pool': name, accelerator: 'nvidia-a100' },
  allocatable: A100,
});

/**
 * Pools, one per scenario so the blast-radius windows do not interact:
 * - `drain` (5 nodes): every GPU in use; an inference ReplicaSet `serve` under a minAvailable-1 PDB
 *   has one replica on drain-0 and one Pending (no room anywhere), training Jobs everywhere else.
 * - `dup`, `app`, `repair`: 5 nodes each with a training pod per node; `storm`: 10 nodes.
 */
const FLEET: Fleet = {
  nodes: [pool('drain', 5), pool('dup', 5), pool('app', 5), pool('storm', 10), pool('repair', 5)],
  namespaces: [{ name: NAMESPACE }, { name: 'ml' }, { name: 'serve' }],
  podDisruptionBudgets: [
    { name: 'serve', namespace: 'serve', minAvailable: 1, selector: { matchLabels: { app: 'serve' } } },
  ],
  pods: [
    {
      name: 'serve-a',
      namespace: 'serve',
      node: 'drain-0',
      owner: { kind: 'ReplicaSet', name: 'serve-rs' },
      labels: { app: 'serve' },
      requests: { 'nvidia.com/gpu': 1 },
    },
    {
      name: 'train-d0',
      namespace: 'ml',
      node: 'drain-0',
      owner: { kind: 'Job', name: 'train-d0' },
      requests: { 'nvidia.com/gpu': 7 },
    },
    ...[1, 2, 3, 4].map((i) => ({
      name: `fill-d${i}`,
      namespace: 'ml',
      node: `drain-${i}`,
      owner: { kind: 'Job' as const, name: `fill-d${i}` },
      requests: { 'nvidia.com/gpu': 8 },
    })),
    // The second replica: nowhere to go until some capacity frees up.
    {
      name: 'serve-b',
      namespace: 'serve',
      owner: { kind: 'ReplicaSet', name: 'serve-rs' },
      labels: { app: 'serve' },
      requests: { 'nvidia.com/gpu': 1 },
      nodeSelector: { 'gpu-reflex.io/pool': 'drain' },
    },
    {
      name: 'w-app-0b',
      namespace: 'ml',
      node: 'app-0',
      owner: { kind: 'Job', name: 'w-app-0b' },
      requests: { 'nvidia.com/gpu': 2 },
    },
    ...['dup', 'app', 'repair'].flatMap((p) =>
      [0, 1, 2, 3, 4].map((i) => ({
        name: `w-${p}-${i}`,
        namespace: 'ml',
        node: `${p}-${i}`,
        owner: { kind: 'Job' as const, name: `w-${p}-${i}` },
        requests: { 'nvidia.com/gpu': 2 },
      })),
    ),
    ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => ({
      name: `w-storm-${i}`,
      namespace: 'ml',
      node: `storm-${i}`,
      owner: { kind: 'Job' as const, name: `w-storm-${i}` },
      requests: { 'nvidia.com/gpu': 2 },
    })),
  ],
};

let stack: RemediationStack;

beforeAll(async () => {
  stack = await startRemediationStack({ fleet: FLEET, clock });
  clock.onAdvance(() => stack.sim.cluster.tick());
});
afterAll(async () => {
  await stack?.close();
});

const node = (name: string) => stack.sim.store.node(name)!;
const taintsOf = (name: string) => (node(name).spec?.taints ?? []).filter((t) => t.key === TAINT_KEY);
const remediationsFor = (name: string) =>
  stack.published(REMEDIATION).filter((e) => (e.detail as { target?: { node?: string } }).target?.node === name);
const uidOf = (ns: string, name: string) => stack.sim.store.pod(ns, name)!.metadata.uid!;
const podsOn = (name: string) => stack.sim.store.podsOnNode(name).filter((p) => !p.metadata.deletionTimestamp);

describe('remediation on the embedded stack', () => {
  it('XID 79 taints and cordons the node, evicts its GPU pods within the PDB, and says so once; the sweep evicts the blocked replica once the budget allows', async () => {
    const t0 = clock.now();
    await stack.send([xid('drain-0', 79, { podUids: [stack.sim.store.pod('ml', 'train-d0')!.metadata.uid!] })]);
    await stack.advance(0);

    expect(node('drain-0').spec?.unschedulable).toBe(true);
    expect(taintsOf('drain-0')).toEqual([{ key: TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' }]);
    expect(node('drain-0').metadata.labels?.[STATE_LABEL]).toBe('draining');
    // The Job pod was evicted (terminating); the PDB-covered replica was not: its twin is Pending.
    expect(stack.sim.store.pod('ml', 'train-d0')?.metadata.deletionTimestamp).toBeDefined();
    expect(stack.sim.store.pod('serve', 'serve-a')?.metadata.deletionTimestamp).toBeUndefined();
    expect(stack.sim.store.pod('serve', 'serve-b')?.status?.phase).toBe('Pending');
    const rem = remediationsFor('drain-0');
    expect(rem).toHaveLength(1);
    expect(rem[0]!.detail).toMatchObject({ action: 'drain-node', phase: 'partial' });
    // All of it within the same virtual instant the event was observed in.
    expect(clock.now() - t0).toBe(0);
    // As `kubectl describe node` shows it: one Event for the patch (cordon and taint), one for the
    // evictions, naming the pod evicted (not the one the budget kept); none per pod from gpu-reflex.
    type Ev = {
      reason?: string;
      message?: string;
      reportingComponent?: string;
      involvedObject?: { kind?: string; name?: string };
    };
    const onNode = () =>
      (stack.sim!.store.list('events') as Ev[])
        .filter((e) => e.involvedObject?.name === 'drain-0')
        .map((e) => [e.reportingComponent, e.reason, e.message]);
    expect(onNode().sort()).toEqual([
      ['gpu-reflex', 'Cordoned', `Node marked unschedulable by gpu-reflex; taint ${TAINT_KEY}=xid-79:NoSchedule added`],
      [
        'gpu-reflex',
        'PodsEvicted',
        '1 pod evicted by gpu-reflex through the Eviction API (PodDisruptionBudgets honoured): ml/train-d0',
      ],
    ]);
    // The pod Events a real cluster shows are the kubelet's: it stops the evicted pod's container at
    // once (kuberuntime_container.go killContainer), and the kept replica's is left alone.
    expect(
      (stack.sim.store.list('events') as Ev[])
        .filter((e) => e.involvedObject?.kind === 'Pod')
        .map((e) => [e.reportingComponent, e.reason, e.involvedObject?.name]),
    ).toEqual([['kubelet', 'Killing', 'train-d0']]);

    // Capacity frees up elsewhere (the job on drain-1 completes): the twin schedules and runs there.
    stack.sim.cluster.patch(
      resource('pods'),
      'ml',
      'fill-d1',
      'application/merge-patch+json',
      { status: { phase: 'Succeeded' } },
      { subresource: 'status' },
    );
    stack.sim.cluster.tick();
    expect(stack.sim.store.pod('serve', 'serve-b')?.spec?.nodeName).toBe('drain-1');
    await stack.advance(60_000); // the sweep runs
    // By now the kubelet's node status sync (every 10 s) has recorded the cordon, which it had not in
    // the instant gpu-reflex acted (kubelet_node_status.go recordNodeSchedulableEvent).
    expect(onNode()).toContainEqual([
      'kubelet',
      'NodeNotSchedulable',
      'Node drain-0 status is now: NodeNotSchedulable',
    ]);
    expect(evicted(stack.sim.store.pod('serve', 'serve-a')), 'serve/serve-a evicted').toBe(true);
    expect(podsOn('drain-0').filter((p) => p.metadata.namespace !== 'kube-system')).toEqual([]);
    expect(node('drain-0').spec?.unschedulable).toBe(true);
  });

  it('the same XID event delivered five times acts once and says so once', async () => {
    const event = xid('dup-0', 79, { podUids: [uidOf('ml', 'w-dup-0')] });
    await stack.send([event]);
    await stack.advance(0);
    const after = node('dup-0').metadata.resourceVersion;
    expect(node('dup-0').spec?.unschedulable).toBe(true);
    await stack.send([event, event, event, event]);
    await stack.advance(0);
    // No write at all to the node, one taint, one Remediation event, nothing dead-lettered.
    expect(node('dup-0').metadata.resourceVersion).toBe(after);
    expect(taintsOf('dup-0')).toHaveLength(1);
    expect(remediationsFor('dup-0')).toHaveLength(1);
    expect(
      stack.bus.events.filter((e) => (e.detail as { eventId?: string }).eventId === event.detail.eventId),
    ).toHaveLength(5);
    expect(stack.bus.deadLetters).toEqual([]);
  });

  it('an application XID 13 is only observed once, and escalates when it repeats on one GPU across different workloads', async () => {
    const [a, b] = [uidOf('ml', 'w-app-0'), uidOf('ml', 'w-app-0b')];
    const before = node('app-0').metadata.resourceVersion;
    await stack.send([xid('app-0', 13, { podUids: [a] })]);
    await stack.advance(60_000);
    expect(node('app-0').spec?.unschedulable).toBeFalsy();
    expect(taintsOf('app-0')).toEqual([]);
    // Nothing evicted (replacements from the other scenarios may have landed here meanwhile).
    expect(podsOn('app-0').map((p) => p.metadata.name)).toEqual(expect.arrayContaining(['w-app-0', 'w-app-0b']));
    expect(remediationsFor('app-0').map((e) => (e.detail as { action: string }).action)).toEqual(['observe']);
    expect(node('app-0').metadata.resourceVersion).not.toBe(before); // the history annotation counts it

    // Two more on the same GPU, from a second workload and the first again: 3 across 2 workloads.
    await stack.send([xid('app-0', 13, { podUids: [b] })]);
    await stack.advance(60_000);
    await stack.send([xid('app-0', 13, { podUids: [a] })]);
    await stack.advance(0);
    const actions = remediationsFor('app-0').map((e) => e.detail as { action: string; escalated?: boolean });
    expect(actions.at(-1)).toMatchObject({ action: 'restart-workload' });
    expect(actions.filter((x) => x.action === 'restart-workload')).toHaveLength(1);
    // The workload is restarted (evicted), the GPU and the node stay in service.
    expect(evicted(stack.sim.store.pod('ml', 'w-app-0')), 'ml/w-app-0 evicted').toBe(true);
    expect(node('app-0').spec?.unschedulable).toBeFalsy();
    expect(taintsOf('app-0')).toEqual([]);
  });

  it('an XID storm across 60% of a pool acts on the allowed share only and asks for approval for the rest', async () => {
    const failing = [0, 1, 2, 3, 4, 5].map((i) => `storm-${i}`);
    await stack.send(failing.map((n) => xid(n, 79)));
    await stack.advance(0);
    const cordoned = failing.filter((n) => node(n).spec?.unschedulable === true);
    const held = failing.filter((n) => node(n).metadata.labels?.[STATE_LABEL] === 'awaiting-approval');
    // The default policy: at most 20% of the pool's 10 nodes within the window.
    expect(cordoned).toHaveLength(2);
    expect(held).toHaveLength(4);
    expect(cordoned.every((n) => taintsOf(n).length === 1)).toBe(true);
    expect(held.every((n) => taintsOf(n).length === 0 && podsOn(n).length === 1)).toBe(true);
    const asked = stack.published(APPROVAL_REQUESTED).map((e) => (e.detail as { plan: { node: string } }).plan.node);
    expect(asked.sort()).toEqual(held.sort());
    expect(failing.every((n) => remediationsFor(n).length === 1)).toBe(true);
    // The pool's blast-radius ledger is its own ConfigMap (no contention with other pools), two slots.
    const ledgers = stack.sim.store
      .list('configmaps', NAMESPACE)
      .filter((c) => c.metadata.name.startsWith('gpu-reflex-state-ledger-storm-'));
    expect(ledgers).toHaveLength(1);
    expect(
      JSON.parse((ledgers[0] as unknown as { data: Record<string, string> }).data['blast-radius.storm']!)
        .entries.map((e: { node: string }) => e.node)
        .sort(),
    ).toEqual(cordoned.sort());
    // The rest of the pool never saw a fault and is untouched.
    expect([6, 7, 8, 9].every((i) => !node(`storm-${i}`).spec?.unschedulable)).toBe(true);
  });

  it('after a repair the node is back in service on a passed probe of its GPU, never on quiet time', async () => {
    await stack.send([xid('repair-0', 79)]);
    await stack.advance(0);
    expect(node('repair-0').metadata.labels?.[STATE_LABEL]).toBe('draining');
    await stack.advance(2 * 60_000); // pods leave after their grace period; the sweep sees it drained
    expect(podsOn('repair-0')).toEqual([]);
    expect(node('repair-0').metadata.labels?.[STATE_LABEL]).toBe('awaiting-repair');
    expect(node('repair-0').spec?.unschedulable).toBe(true);

    // A person (or the repair adapter) power-cycles it and says so.
    stack.sim.cluster.patch(resource('nodes'), '', 'repair-0', 'application/merge-patch+json', {
      metadata: { annotations: { [REPAIRED_AT_ANNOTATION]: new Date(clock.now()).toISOString() } },
    });
    await stack.advance(2 * 60_000);
    const probe = (
      JSON.parse(node('repair-0').metadata.annotations?.[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]
    ).find((r) => r.action === 'probe');
    expect(probe).toBeDefined();
    // No agent answers here: past the 30 min quiet period the node is still out (quiet time restores nothing).
    await stack.advance(31 * 60_000);
    expect(node('repair-0').spec?.unschedulable).toBe(true);
    // The node agent's probe passes (played here as its actuator writes it).
    const probed: GpuActionState = {
      state: 'done',
      action: 'probe',
      gpuUuid: probe!.gpuUuid,
      at: new Date(clock.now()).toISOString(),
      probe: PASSED_PROBE,
    };
    stack.sim.cluster.patch(resource('nodes'), '', 'repair-0', 'application/merge-patch+json', {
      metadata: { annotations: { [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify({ [probe!.id]: probed }) } },
    });
    await stack.advance(2 * 60_000);
    expect(node('repair-0').spec?.unschedulable).toBeFalsy();
    expect(taintsOf('repair-0')).toEqual([]);
    expect(node('repair-0').metadata.labels?.[STATE_LABEL]).toBe('healthy');
    expect(remediationsFor('repair-0').some((e) => (e.detail as { phase: string }).phase === 'restored')).toBe(true);
  });
});
