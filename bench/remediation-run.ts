/**
 * `gpu-reflex bench remediation`: how fast a GPU fault takes a node out of scheduling, through the
 * embedded stack on the wall clock — PutEvents through the real SDK → local bus → the rule in
 * serverless.yml → the real remediate handler → @kubernetes/client-node → the simulated cluster.
 * Latency runs from the event's `observedAt` (when the agent saw the fault) to the moment the
 * cluster's store holds the node unschedulable (a store listener, so no polling delay is added).
 *
 * 1. Single: one XID 79 at a time on an idle stack, p50/p99.
 * 2. Storm: a 1,500-node fleet (15 pools of 100, 4 GPU pods per node), 10% of it (10 nodes per
 *    pool) failing at once, delivered with Lambda-like concurrency. The policy allows 15% per pool,
 *    so every failing node may be cordoned; we also check no pool went past its limit.
 * The events are agent-shaped (node-agent/events.ts `xidEvent`); the agent itself is not timed here.
 */
import { performance } from 'node:perf_hooks';
import { APPROVAL_REQUESTED } from '../events/index.ts';
import type { Fleet } from '../infra/local/kube/index.ts';
import { xidEvent } from '../node-agent/events.ts';
import { startRemediationStack, NAMESPACE, type RemediationStack } from '../test/e2e/remediation-stack.ts';
import { atLeast, below, info, percentile, type BenchSuite, type Measurement } from './harness.ts';

const POOLS = 15;
const NODES_PER_POOL = 100;
const PODS_PER_NODE = 4;
const FAILING_PER_POOL = 10; // 10% of the fleet
const SINGLE_RUNS = 100;
/** Concurrent remediate invocations, as Lambda would run them (reserved concurrency). */
const CONCURRENCY = 32;
const STORM_DEADLINE_MS = 120_000;

const POLICY = {
  // Storm pools: 15% and at most 15 nodes per pool within the window, so 10% may all be acted on.
  blastRadius: { maxShare: 0.15, maxCount: 15, windowMinutes: 60 },
  // The latency pool is taken out one node per run, so it has no limit that would stop the runs.
  pools: { latency: { maxQuarantinedShare: 1, maxQuarantinedCount: SINGLE_RUNS + 1 } },
};

const A100 = { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' };

/** The benchmark fleet: a latency pool plus POOLS × NODES_PER_POOL storm nodes, PODS_PER_NODE GPU pods each. */
export function benchFleet(): Fleet {
  // One more latency node than runs: the cold start (import, wiring, first connections) goes there.
  const pools = [{ name: 'latency', count: SINGLE_RUNS + 1 }, ...Array.from({ length: POOLS }, (_, p) => ({ name: `pool${String(p).padStart(2, '0')}`, count: NODES_PER_POOL }))];
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

/** Wall-clock epoch ms ↔ performance.now(), so an observedAt converts to the watcher's timeline. */
const toPerf = (epochMs: number) => epochMs - Date.now() + performance.now();

async function single(stack: RemediationStack, progress: (l: string) => void): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < SINGLE_RUNS; i++) {
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
    if ((i + 1) % 25 === 0) progress(`single XID: ${i + 1}/${SINGLE_RUNS}`);
  }
  return ms;
}

interface StormResult {
  latencies: number[];
  spanMs: number;
  cordoned: number;
  perPool: Map<string, number>;
  approvals: number;
  /** Deliveries that failed and went back to the bus's retry (conflicts, a busy node lease). */
  retried: number;
}

async function storm(stack: RemediationStack, progress: (l: string) => void): Promise<StormResult> {
  const failing: { node: string; pool: string; n: number }[] = [];
  for (let p = 0; p < POOLS; p++) {
    const pool = `pool${String(p).padStart(2, '0')}`;
    // Spread over the pool, as independent faults would be.
    for (let k = 0; k < FAILING_PER_POOL; k++) failing.push({ node: `${pool}-${k * Math.floor(NODES_PER_POOL / FAILING_PER_POOL)}`, pool, n: 1000 + failing.length });
  }
  // Independent faults arrive in no particular order across pools (seeded shuffle: reproducible).
  let seed = 42;
  const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  for (let i = failing.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [failing[i], failing[j]] = [failing[j]!, failing[i]!];
  }
  const w = watchCordons(stack, new Set(failing.map((f) => f.node)));
  const approvalsBefore = stack.published(APPROVAL_REQUESTED).length;
  const failures = new Map<string, number>();
  const off = stack.bus.on('failed', ({ error }) => {
    const key = error.message.replace(/[a-z0-9-]+-\d+/g, 'N').slice(0, 120);
    failures.set(key, (failures.get(key) ?? 0) + 1);
  });
  progress(`storm: ${failing.length} nodes fail at once (${POOLS} pools of ${NODES_PER_POOL})`);
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
  off();
  for (const [why, n] of failures) progress(`storm: ${n} deliveries failed and were retried: ${why}`);
  const retried = [...failures.values()].reduce((a, b) => a + b, 0);
  const perPool = new Map<string, number>();
  for (const n of stack.sim.store.nodes()) {
    if (!n.spec?.unschedulable) continue;
    const pool = n.metadata.labels?.['gpu-reflex.io/pool'] ?? 'default';
    perPool.set(pool, (perPool.get(pool) ?? 0) + 1);
  }
  return { latencies, spanMs: Math.max(0, ...latencies), cordoned: w.at.size, perPool, approvals: stack.published(APPROVAL_REQUESTED).length - approvalsBefore, retried };
}

export const remediationSuite: BenchSuite = {
  name: 'remediation',
  summary: 'XID → node unschedulable through bus + remediate handler + simulated cluster; 1,500-node storm',
  async run(progress) {
    const t = performance.now();
    const stack = await startRemediationStack({ fleet: benchFleet(), policy: POLICY, concurrency: CONCURRENCY });
    progress(`stack up: ${stack.sim.store.count('nodes')} nodes, ${stack.sim.store.count('pods')} pods in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    try {
      // Cold start (module import, wiring) once, on a node outside the measured sets.
      await stack.send([xid79(`latency-${SINGLE_RUNS}`, 999, Date.now())]);
      await stack.bus.drain();
      const one = await single(stack, progress);
      const s = await storm(stack, progress);
      const limit = Math.min(POLICY.blastRadius.maxCount, Math.floor(POLICY.blastRadius.maxShare * NODES_PER_POOL));
      const breached = [...s.perPool].filter(([pool, n]) => pool !== 'latency' && n > limit).length;
      const stormNodes = POOLS * FAILING_PER_POOL;
      const rows: Measurement[] = [
        info('single XID: runs', one.length, 'runs'),
        info('single XID → node unschedulable p50', percentile(one, 50), 'ms'),
        below('single XID → node unschedulable p99', percentile(one, 99), 'ms', 2000),
        info(`storm: fleet nodes (storm pools)`, POOLS * NODES_PER_POOL, 'nodes'),
        info('storm: concurrent invocations', CONCURRENCY, 'invocations'),
        atLeast('storm: failing nodes cordoned', s.cordoned, 'nodes', stormNodes),
        info('storm: detection → cordon p50', percentile(s.latencies, 50) / 1000, 's'),
        info('storm: detection → cordon p90', percentile(s.latencies, 90) / 1000, 's'),
        below('storm: detection → cordon p99', percentile(s.latencies, 99) / 1000, 's', 5),
        atLeast('storm: cordons per second', s.cordoned / (s.spanMs / 1000), 'nodes/s', 50),
        below('storm: pools over their blast-radius limit', breached, 'pools', 1),
        info(`storm: most cordoned in one pool (limit ${limit})`, Math.max(0, ...[...s.perPool].filter(([p]) => p !== 'latency').map(([, n]) => n)), 'nodes'),
        info('storm: approval requests (none expected)', s.approvals, 'events'),
        info('storm: deliveries retried by the bus', s.retried, 'deliveries'),
        info('NVSentinel published (1,503 nodes, 10%): detection → cordon p90', 28.15, 's'),
        info('NVSentinel published: cordon throughput', 1, 'nodes/s'),
      ];
      return rows;
    } finally {
      await stack.close();
    }
  },
};
