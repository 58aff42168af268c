/**
 * One run of the remediation bench, in a process of its own (bench/remediation-child.ts): the
 * functions wire themselves once per process from the environment (kubeconfig included), so each
 * fleet gets a fresh process. The simulated API server runs in a second process
 * (bench/remediation-sim.ts), as a real API server never shares a CPU with the Lambdas calling it;
 * this process holds what a deployment holds elsewhere: the agents' PutEvents through the real SDK
 * → local bus → the rule in serverless.yml → the real remediate handler → @kubernetes/client-node →
 * (loopback HTTP) the simulated cluster. Wall clock. Latency runs from the event's `observedAt` (when
 * the agent saw the fault) to the moment the cluster's store holds the node unschedulable (a store
 * listener in the API server's process, so no polling delay is added).
 *
 * 1. Single (optional): one XID 79 at a time on an idle stack, p50/p99.
 * 2. Storm: `pools` × `nodesPerPool` nodes (4 GPU pods each), `failingPerPool` nodes of every pool
 *    failing at once, delivered with Lambda-like concurrency. The policy allows 15% per pool, so
 *    every failing node may be cordoned; we also check no pool went past its limit at any moment.
 *    Meanwhile: the API requests the cluster received (by verb and resource) and where the CPU of
 *    each process went.
 * The events are agent-shaped (node-agent/events.ts `xidEvent`); the agent itself is not timed here.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APPROVAL_REQUESTED } from '../events/index.ts';
import { xidEvent } from '../node-agent/events.ts';
import { startFunctionsStack, type FunctionsStack } from '../test/e2e/remediation-stack.ts';
import { startCpuProfile, type CpuShares } from './cpu-profile.ts';
import { epochNow, policyFor, poolName, type RunSpec } from './remediation-fleet.ts';
import type { SimCommand, SimReply, SimStormReport } from './remediation-sim.ts';

export { stormLimit, type RunSpec } from './remediation-fleet.ts';

const STORM_DEADLINE_MS = 180_000;
const SIM = fileURLToPath(new URL('./remediation-sim.ts', import.meta.url));

/** The simulated API server's process: commands out, replies in. */
interface SimProcess {
  child: ChildProcess;
  request<T extends SimReply['type']>(cmd: SimCommand, want: T): Promise<Extract<SimReply, { type: T }>>;
  /** Resolves with each node's cordon time (epoch ms) once every node of `nodes` is unschedulable. */
  watch(nodes: readonly string[]): { at: Map<string, number>; all: Promise<void> };
  close(): Promise<void>;
}

function forkSim(): SimProcess {
  const child = fork(SIM, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiters: { type: SimReply['type']; resolve: (r: SimReply) => void; reject: (e: Error) => void }[] = [];
  const watches = new Map<number, { at: Map<string, number>; size: number; done: () => void }>();
  let nextWatch = 0;
  let failed: Error | undefined;
  const fail = (err: Error) => {
    failed ??= err;
    for (const w of waiters.splice(0)) w.reject(err);
  };
  child.on('message', (reply: SimReply) => {
    if (reply.type === 'cordoned') {
      const w = watches.get(reply.id);
      if (!w) return;
      w.at.set(reply.node, reply.atEpochMs);
      if (w.at.size === w.size) {
        watches.delete(reply.id);
        w.done();
      }
      return;
    }
    if (reply.type === 'error') return fail(new Error(`simulated API server: ${reply.message}`));
    const i = waiters.findIndex((w) => w.type === reply.type);
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(reply);
  });
  child.on('exit', (code) => fail(new Error(`simulated API server exited (${code})`)));
  return {
    child,
    request(cmd, want) {
      if (failed) return Promise.reject(failed);
      return new Promise((resolve, reject) => {
        waiters.push({ type: want, resolve: resolve as (r: SimReply) => void, reject });
        child.send(cmd);
      });
    },
    watch(nodes) {
      const id = nextWatch++;
      const at = new Map<string, number>();
      let done: () => void = () => {};
      const all = new Promise<void>((resolve) => (done = resolve));
      watches.set(id, { at, size: new Set(nodes).size, done });
      child.send({ type: 'watch', id, nodes: [...nodes] } satisfies SimCommand);
      return { at, all };
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'close' } satisfies SimCommand);
      await exited;
    },
  };
}

const gpu = (i: number) => ({
  index: 0,
  uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`,
  pciBusId: '00000000:10:00.0',
  name: 'NVIDIA A100-SXM4-80GB',
});
const xid79 = (node: string, n: number, at: number) =>
  xidEvent(node, at, {
    gpu: gpu(n),
    xid: 79,
    via: 'nvml',
    pid: null,
    process: null,
    message: 'NVRM: Xid (PCI:0000:10:00): 79, GPU has fallen off the bus.',
    podUids: [],
  });

async function single(
  stack: FunctionsStack,
  sim: SimProcess,
  runs: number,
  progress: (l: string) => void,
): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const node = `latency-${i}`;
    const w = sim.watch([node]);
    const observedAt = Date.now();
    await stack.send([xid79(node, i, observedAt)]);
    // The whole delivery (evictions, the Remediation event) ends before the next run; the cordon
    // was timed by the store listener as it happened.
    await stack.bus.drain();
    await Promise.race([
      w.all,
      new Promise<void>((_, reject) =>
        setTimeout(
          () =>
            reject(
              new Error(
                `single XID run ${i}: ${node} was not cordoned (dead letters: ${stack.bus.deadLetters.length})`,
              ),
            ),
          10_000,
        ).unref(),
      ),
    ]);
    ms.push(w.at.get(node)! - observedAt);
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
  /** Where the functions' process (bus, functions, SDK, HTTP client) spent its CPU. */
  cpu: CpuShares;
  /** Where the simulated API server's process spent its CPU. */
  simCpu: CpuShares;
  /** CPU the functions' process used during the storm (user + system, all threads), ms. */
  processCpuMs: number;
  /** CPU the simulated API server's process used during the storm, ms. */
  simProcessCpuMs: number;
}

async function storm(
  stack: FunctionsStack,
  sim: SimProcess,
  spec: RunSpec,
  progress: (l: string) => void,
): Promise<StormResult> {
  const failing: { node: string; n: number }[] = [];
  const stride = Math.floor(spec.nodesPerPool / spec.failingPerPool);
  for (let p = 0; p < spec.pools; p++) {
    // Spread over the pool, as independent faults would be.
    for (let k = 0; k < spec.failingPerPool; k++)
      failing.push({ node: `${poolName(p)}-${k * stride}`, n: 1000 + failing.length });
  }
  // Independent faults arrive in no particular order across pools (seeded shuffle: reproducible).
  let seed = 42;
  const rnd = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  for (let i = failing.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [failing[i], failing[j]] = [failing[j]!, failing[i]!];
  }
  const nodes = failing.map((f) => f.node);
  const w = sim.watch(nodes);
  const approvalsBefore = stack.published(APPROVAL_REQUESTED).length;
  const failures = new Map<string, number>();
  const off = stack.bus.on('failed', ({ error }) => {
    const key = error.message.replace(/[a-z0-9-]+-\d+/g, 'N').slice(0, 120);
    failures.set(key, (failures.get(key) ?? 0) + 1);
  });
  let sweeps = 0;
  const offSweep = stack.bus.on('delivered', ({ function: fn }) => void (fn.includes('sweep') && sweeps++));
  progress(`storm: ${failing.length} nodes fail at once (${spec.pools} pools of ${spec.nodesPerPool})`);
  await sim.request({ type: 'storm-begin', nodes }, 'storm-begun');
  const profile = await startCpuProfile(1000, 'functions');
  const cpu0 = process.cpuUsage();
  const observedAt = Date.now();
  // Every agent puts its own event on the bus at the same moment.
  await Promise.all(failing.map((f) => stack.send([xid79(f.node, f.n, observedAt)])));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([w.all, new Promise<void>((resolve) => (timer = setTimeout(resolve, STORM_DEADLINE_MS)))]);
  clearTimeout(timer);
  const latencies = [...w.at.values()].map((t) => t - observedAt);
  progress(`storm: ${w.at.size}/${failing.length} cordoned; waiting for the deliveries to finish`);
  await stack.bus.drain();
  const used = process.cpuUsage(cpu0);
  const cpu = await profile.stop();
  const simReport: SimStormReport = (await sim.request({ type: 'storm-end' }, 'storm-ended')).report;
  off();
  offSweep();
  for (const [why, n] of failures) progress(`storm: ${n} deliveries failed and were retried: ${why}`);
  return {
    failing: failing.length,
    latencies,
    spanMs: Math.max(0, ...latencies),
    cordoned: w.at.size,
    mostInPool: simReport.mostInPool,
    approvals: stack.published(APPROVAL_REQUESTED).length - approvalsBefore,
    retried: [...failures.values()].reduce((a, b) => a + b, 0),
    sweeps,
    requests: simReport.requests,
    podsEvicted: simReport.podsEvicted,
    cpu,
    simCpu: simReport.cpu,
    processCpuMs: (used.user + used.system) / 1000,
    simProcessCpuMs: simReport.processCpuMs,
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
  const dir = mkdtempSync(join(tmpdir(), 'gpu-reflex-bench-sim-'));
  const sim = forkSim();
  try {
    const kubeconfig = join(dir, 'kubeconfig');
    const ready = await sim.request({ type: 'start', spec, kubeconfig }, 'ready');
    progress(
      `stack up: ${ready.nodes} nodes, ${ready.pods} pods in ${ready.setupSeconds.toFixed(1)} s (simulated API ` +
        `server in its own process, pid ${sim.child.pid})`,
    );
    const stack = await startFunctionsStack({ kubeconfig, policy: policyFor(spec), concurrency: spec.concurrency });
    try {
      // Cold start (module import, wiring) once, on a node outside the measured sets.
      await stack.send([xid79(`latency-${spec.singleRuns}`, 999, epochNow())]);
      await stack.bus.drain();
      const one = await single(stack, sim, spec.singleRuns, progress);
      const s = await storm(stack, sim, spec, progress);
      return { spec, fleetNodes: ready.nodes, setupSeconds: ready.setupSeconds, single: one, storm: s };
    } finally {
      await stack.close();
    }
  } finally {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
