/**
 * One run of the remediation bench, in a process of its own (bench/remediation-child.ts): the
 * functions wire themselves once per process from the environment (kubeconfig included), so each
 * fleet gets a fresh process. Through the embedded stack on the wall clock — PutEvents through the
 * real SDK → local bus → the rule in serverless.yml → the real remediate handler →
 * @kubernetes/client-node → the simulated cluster. Latency runs from the event's `observedAt` (when
 * the agent saw the fault) to the moment the cluster's store holds the node unschedulable (a store
 * listener, so no polling delay is added).
 *
 * 1. Single (optional): one XID 79 at a time on an idle stack, p50/p99.
 * 2. Storm: `pools` × `nodesPerPool` nodes (4 GPU pods each), `failingPerPool` nodes of every pool
 *    failing at once, delivered with Lambda-like concurrency. The policy allows 15% per pool, so
 *    every failing node may be cordoned; we also check no pool went past its limit at any moment.
 *    Meanwhile: the API requests the cluster received (by verb and resource) and where the CPU went.
 * The events are agent-shaped (node-agent/events.ts `xidEvent`); the agent itself is not timed here.
 */
import { performance } from 'node:perf_hooks';
import { APPROVAL_REQUESTED } from '../events/index.ts';
import type { Fleet } from '../infra/local/kube/index.ts';
import { xidEvent } from '../node-agent/events.ts';
import { startRemediationStack, NAMESPACE, type RemediationStack } from '../test/e2e/remediation-stack.ts';
import { startCpuProfile, type CpuShares } from './cpu-profile.ts';
import { countRequests } from './sim-requests.ts';

const PODS_PER_NODE = 4;
const STORM_DEADLINE_MS = 180_000;

export interface RunSpec {
  pools: number;
  nodesPerPool: number;
  failingPerPool: number;
  /** Single-XID latency runs before the storm (0: none). */
  singleRuns: number;
  /** Concurrent remediate invocations, as Lambda would run them (reserved concurrency). */
  concurrency: number;
}

/** Storm pools: 15% and at most 15 nodes per pool within the window, so 10% may all be acted on. */
const BLAST_RADIUS = { maxShare: 0.15, maxCount: 15, windowMinutes: 60 };

function policyFor(spec: RunSpec) {
  // The latency pool is taken out one node per run, so it has no limit that would stop the runs.
  return { blastRadius: BLAST_RADIUS, pools: { latency: { maxQuarantinedShare: 1, maxQuarantinedCount: spec.singleRuns + 1 } } };
}

/** How many nodes of a storm pool the policy lets out at once. */
export function stormLimit(spec: RunSpec): number {
  return Math.min(BLAST_RADIUS.maxCount, Math.floor(BLAST_RADIUS.maxShare * spec.nodesPerPool));
}

const A100 = { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' };
const poolName = (p: number) => `pool${String(p).padStart(3, '0')}`;

/** The benchmark fleet: a latency pool plus the storm pools, PODS_PER_NODE GPU pods on every node. */
export function benchFleet(spec: RunSpec): Fleet {
  // One more latency node than runs: the cold start (import, wiring, first connections) goes there.
  const pools = [{ name: 'latency', count: spec.singleRuns + 1 }, ...Array.from({ length: spec.pools }, (_, p) => ({ name: poolName(p), count: spec.nodesPerPool }))];
  return {
    nodes: pools.map((p) => ({ name: p.name, count: p.count, labels: { 'gpu-reflex.io/pool': p.name, accelerator: 'nvidia-a100' }, allocatable: A100 })),
    namespaces: [{ name: NAMESPACE }, { name: 'train' }],
    // Scheduled by the simulated scheduler (first fit): 4 × 2 GPUs fill each node of the pool.
    pods: pools.map((p) => ({
      name: `${p.name}-worker`,
      namespace: 'train',
      count: p.count * PODS_PER_NODE,
      owner: { kind: 'Job' as const, name: `${p.name}-worker` },
      nodeSelector: { 'gpu-reflex.io/pool': p.name },
      requests: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '2' },
    })),
  };
}

const gpu = (i: number) => ({ index: 0, uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`, pciBusId: '00000000:10:00.0', name: 'NVIDIA A100-SXM4-80GB' });
const xid79 = (node: string, n: number, at: number) => xidEvent(node, at, { gpu: gpu(n), xid: 79, via: 'nvml', pid: null, process: null, message: 'NVRM: Xid (PCI:0000:10:00): 79, GPU has fallen off the bus.', podUids: [] });

/** Resolves per node with the wall time (performance clock) it became unschedulable in the store. */
function watchCordons(stack: RemediationStack, nodes: Set<string>): { at: Map<string, number>; stop: () => void; all: Promise<void> } {
  const at = new Map<string, number>();
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => (done = resolve));
  const stop = stack.sim.store.subscribe((e) => {
    if (e.resource !== 'nodes' || !nodes.has(e.object.metadata.name) || at.has(e.object.metadata.name)) return;
    if ((e.object.spec as { unschedulable?: boolean } | undefined)?.unschedulable !== true) return;
    at.set(e.object.metadata.name, performance.now());
    if (at.size === nodes.size) done();
  });
  return { at, stop: () => void stop(), all };
}

/**
 * The most nodes of any storm pool out of service (cordoned) at any moment: counted after every
 * node write, so a limit exceeded and then repaired would still show.
 */
function watchPools(stack: RemediationStack): { most: () => number; stop: () => void } {
  const out = new Map<string, Set<string>>();
  let most = 0;
  const stop = stack.sim.store.subscribe((e) => {
    if (e.resource !== 'nodes') return;
    const pool = e.object.metadata.labels?.['gpu-reflex.io/pool'];
    if (!pool || pool === 'latency') return;
    let members = out.get(pool);
    if (!members) out.set(pool, (members = new Set()));
    if (e.type !== 'DELETED' && (e.object.spec as { unschedulable?: boolean } | undefined)?.unschedulable === true) members.add(e.object.metadata.name);
    else members.delete(e.object.metadata.name);
    most = Math.max(most, members.size);
  });
  return { most: () => most, stop: () => void stop() };
}

/** Wall-clock epoch ms ↔ performance.now(), so an observedAt converts to the watcher's timeline. */
const toPerf = (epochMs: number) => epochMs - Date.now() + performance.now();

async function single(stack: RemediationStack, runs: number, progress: (l: string) => void): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const node = `latency-${i}`;
    const w = watchCordons(stack, new Set([node]));
    const observedAt = Date.now();
    await stack.send([xid79(node, i, observedAt)]);
    // The whole delivery (evictions, the Remediation event) ends before the next run; the cordon
    // was timed by the store listener as it happened.
    await stack.bus.drain();
    w.stop();
    const at = w.at.get(node);
    if (at === undefined) throw new Error(`single XID run ${i}: ${node} was not cordoned (dead letters: ${stack.bus.deadLetters.length})`);
    ms.push(at - toPerf(observedAt));
    if ((i + 1) % 25 === 0) progress(`single XID: ${i + 1}/${runs}`);
  }
  return ms;
}

export interface StormResult {
  failing: number;
  latencies: number[];
  spanMs: number;
  cordoned: number;
  /** The most cordoned nodes any storm pool had at any moment. */
  mostInPool: number;
  approvals: number;
  /** Deliveries that failed and went back to the bus's retry (conflicts, a busy node lease). */
  retried: number;
  /** Sweep invocations (the every-minute schedule) that ran during the storm: their requests are counted too. */
  sweeps: number;
  /** API requests the cluster received during the storm, by `verb resource`. */
  requests: Record<string, number>;
  /** Pods evicted (one eviction each is the irreducible part of a drain). */
  podsEvicted: number;
  cpu: CpuShares;
  /** CPU this process used during the storm (user + system, all threads), ms. */
  processCpuMs: number;
}

async function storm(stack: RemediationStack, spec: RunSpec, progress: (l: string) => void): Promise<StormResult> {
  const failing: { node: string; n: number }[] = [];
  const stride = Math.floor(spec.nodesPerPool / spec.failingPerPool);
  for (let p = 0; p < spec.pools; p++) {
    // Spread over the pool, as independent faults would be.
    for (let k = 0; k < spec.failingPerPool; k++) failing.push({ node: `${poolName(p)}-${k * stride}`, n: 1000 + failing.length });
  }
  // Independent faults arrive in no particular order across pools (seeded shuffle: reproducible).
  let seed = 42;
  const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  for (let i = failing.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [failing[i], failing[j]] = [failing[j]!, failing[i]!];
  }
  const failingNodes = new Set(failing.map((f) => f.node));
  const podsBefore = new Map([...failingNodes].map((n) => [n, stack.sim.store.podsOnNode(n).length]));
  const w = watchCordons(stack, failingNodes);
  const pools = watchPools(stack);
  const approvalsBefore = stack.published(APPROVAL_REQUESTED).length;
  const failures = new Map<string, number>();
  const off = stack.bus.on('failed', ({ error }) => {
    const key = error.message.replace(/[a-z0-9-]+-\d+/g, 'N').slice(0, 120);
    failures.set(key, (failures.get(key) ?? 0) + 1);
  });
  let sweeps = 0;
  const offSweep = stack.bus.on('delivered', ({ function: fn }) => void (fn.includes('sweep') && sweeps++));
  progress(`storm: ${failing.length} nodes fail at once (${spec.pools} pools of ${spec.nodesPerPool})`);
  const requests = countRequests(stack.sim.server);
  const profile = await startCpuProfile();
  const cpu0 = process.cpuUsage();
  const observedAt = Date.now();
  // Every agent puts its own event on the bus at the same moment.
  await Promise.all(failing.map((f) => stack.send([xid79(f.node, f.n, observedAt)])));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([w.all, new Promise<void>((resolve) => (timer = setTimeout(resolve, STORM_DEADLINE_MS)))]);
  clearTimeout(timer);
  w.stop();
  const t0 = toPerf(observedAt);
  const latencies = [...w.at.values()].map((t) => t - t0);
  progress(`storm: ${w.at.size}/${failing.length} cordoned; waiting for the deliveries to finish`);
  await stack.bus.drain();
  const used = process.cpuUsage(cpu0);
  const cpu = await profile.stop();
  requests.stop();
  pools.stop();
  off();
  offSweep();
  for (const [why, n] of failures) progress(`storm: ${n} deliveries failed and were retried: ${why}`);
  const podsEvicted = [...podsBefore].reduce((sum, [n, before]) => sum + before - stack.sim.store.podsOnNode(n).filter((p) => !p.metadata.deletionTimestamp).length, 0);
  return {
    failing: failing.length,
    latencies,
    spanMs: Math.max(0, ...latencies),
    cordoned: w.at.size,
    mostInPool: pools.most(),
    approvals: stack.published(APPROVAL_REQUESTED).length - approvalsBefore,
    retried: [...failures.values()].reduce((a, b) => a + b, 0),
    sweeps,
    requests: Object.fromEntries([...requests.counts].sort((a, b) => b[1] - a[1])),
    podsEvicted,
    cpu,
    processCpuMs: (used.user + used.system) / 1000,
  };
}

export interface RunResult {
  spec: RunSpec;
  fleetNodes: number;
  setupSeconds: number;
  single: number[];
  storm: StormResult;
}

export async function runRemediationBench(spec: RunSpec, progress: (l: string) => void): Promise<RunResult> {
  const t = performance.now();
  const stack = await startRemediationStack({ fleet: benchFleet(spec), policy: policyFor(spec), concurrency: spec.concurrency });
  const setupSeconds = (performance.now() - t) / 1000;
  progress(`stack up: ${stack.sim.store.count('nodes')} nodes, ${stack.sim.store.count('pods')} pods in ${setupSeconds.toFixed(1)} s`);
  try {
    // Cold start (module import, wiring) once, on a node outside the measured sets.
    await stack.send([xid79(`latency-${spec.singleRuns}`, 999, Date.now())]);
    await stack.bus.drain();
    const one = await single(stack, spec.singleRuns, progress);
    const s = await storm(stack, spec, progress);
    return { spec, fleetNodes: stack.sim.store.count('nodes'), setupSeconds, single: one, storm: s };
  } finally {
    await stack.close();
  }
}
