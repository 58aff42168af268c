import type { Clock } from '../../node-agent/clock.ts';
import { LocalAgentHost } from './agent-host.ts';
import { AgentProcess, type AlibabaAgentBus } from './agent-process.ts';
import type { NodeFiles } from './node-files.ts';

/**
 * The stack's agents, one per GPU node, either way they run:
 *  - `simulate`: in-process `Agent`s stepped on the virtual clock (agent-host.ts);
 *  - `local`: `gpu-reflex agent` child processes on the wall clock (agent-process.ts).
 * `leadMs(node)`: how far the node's mock NVML clock runs ahead of scenario time. Zero in-process;
 * for a child, the time between its NVML start and the scenario's start (the mock fires faults at
 * `atMs` after its own init), so the stack writes the matching kernel-log line when NVML fires.
 */
export interface StackAgents {
  readonly count: number;
  readonly how: string;
  leadMs(node: string): number;
  step(ms: number): Promise<void>;
  whenIdle(): Promise<void>;
  /** Starts the agent of a node that joined during the run (a booted cloud instance). */
  add(files: NodeFiles): Promise<void>;
  /** Stops the agent of a node that left (its instance was removed). */
  remove(node: string): Promise<void>;
  close(): Promise<void>;
}

export interface AgentCommon {
  busUrl: string;
  /** Publish to Alibaba EventBridge's data plane instead of the local EventBridge (`--target alibaba`). */
  alibaba?: AlibabaAgentBus;
  busName: string;
  region: string;
  sampleIntervalMs: number;
  log: (line: string) => void;
  /** The cluster the agents' actuators read their Nodes from (GPU actions); none: no actuator. */
  kubeconfig?: string;
  /** Their actuators pause the GPU Operator's clients around a reset (scenario `agents.pauseOperator`). */
  pauseOperator?: boolean;
}

export async function startInProcessAgents(
  files: readonly NodeFiles[],
  c: AgentCommon & { clock: Clock },
): Promise<StackAgents> {
  const hosts: LocalAgentHost[] = [];
  const nodeOf = new Map<LocalAgentHost, string>();
  const start = async (f: NodeFiles) => {
    const h = await LocalAgentHost.start({ ...c, files: f, log: (l) => c.log(`  agent ${f.node}: ${l}`) });
    hosts.push(h);
    nodeOf.set(h, f.node);
  };
  try {
    for (const f of files) await start(f);
  } catch (err) {
    await Promise.allSettled(hosts.map((h) => h.close()));
    throw err;
  }
  return {
    get count() {
      return hosts.length;
    },
    how: 'in-process, each on its own copy of the mock NVML library',
    add: start,
    async remove(node) {
      const h = hosts.find((x) => nodeOf.get(x) === node);
      if (!h) return;
      hosts.splice(hosts.indexOf(h), 1);
      await h.close();
    },
    leadMs: () => 0,
    async step(ms) {
      for (const h of hosts) await h.step(ms);
    },
    whenIdle: async () => void (await Promise.all(hosts.map((h) => h.whenIdle()))),
    close: async () => void (await Promise.allSettled(hosts.map((h) => h.close()))),
  };
}

/** Spawns the agents and waits until every one logged "agent started" (or one exits: an error). */
export async function startAgentProcesses(
  files: readonly NodeFiles[],
  c: AgentCommon,
  timeoutMs = 60_000,
): Promise<StackAgents> {
  const procs = files.map((f) => new AgentProcess({ ...c, files: f }));
  const stopAll = async () => void (await Promise.allSettled(procs.map((p) => p.stop())));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = procs.find((p) => p.exitCode !== undefined);
    if (dead) {
      await stopAll();
      throw new Error(`the agent of ${dead.node} exited with code ${dead.exitCode} before starting:\n${dead.tail()}`);
    }
    if (procs.every((p) => p.startedAt !== undefined)) break;
    if (Date.now() > deadline) {
      await stopAll();
      throw new Error(
        `agents did not start within ${timeoutMs / 1000}s: ${procs
          .filter((p) => p.startedAt === undefined)
          .map((p) => p.node)
          .join(', ')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const p of procs) c.log(`  agent ${p.node}: running (pid ${p.pid}), log ${p.logPath}`);
  const t0 = Date.now();
  return {
    get count() {
      return procs.length;
    },
    how: 'child processes: node bin/gpu-reflex.js agent, one per node',
    // A joined node's agent starts as a DaemonSet pod would on a new node: it reports once it is up.
    async add(f) {
      procs.push(new AgentProcess({ ...c, files: f }));
    },
    async remove(node) {
      const p = procs.find((x) => x.node === node);
      if (!p) return;
      procs.splice(procs.indexOf(p), 1);
      await p.stop();
    },
    leadMs: (node) => {
      const p = procs.find((x) => x.node === node);
      return p?.startedAt !== undefined ? t0 - p.startedAt : 0;
    },
    step: async () => undefined,
    whenIdle: async () => undefined,
    close: stopAll,
  };
}
