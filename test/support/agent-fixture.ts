/**
 * Test support: the real agent on the mock NVML library (real koffi binding, manual mock clock)
 * with a fake proc root whose cgroup files put the scenario's pids in pods. No TypeScript-level
 * NVML fake: everything below the agent is the production code.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openMockNvml } from './mock-nvml.ts';
import { Agent, type AgentOptions } from '../../node-agent/agent.ts';
import { DEFAULT_THRESHOLDS } from '../../node-agent/collectors/health.ts';
import type { OutgoingEvent } from '../../node-agent/events.ts';
import type { MockNvmlControls } from '../../node-agent/nvml/mock-controls.ts';
import type { Nvml } from '../../node-agent/nvml/nvml.ts';

/** A deterministic pod UID per pid, as the kubelet's cgroup path would carry it. */
export const podUidOf = (pid: number): string => `7c1e4b52-93a0-4d8e-b6f1-${pid.toString(16).padStart(12, '0')}`;

/** Writes `<root>/<pid>/cgroup` (cgroup v2, systemd driver) for each pid. */
export async function fakeProcRoot(pids: readonly number[]): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'gr-proc-'));
  for (const pid of pids) {
    await mkdir(join(root, String(pid)));
    const uid = podUidOf(pid).replaceAll('-', '_');
    await writeFile(
      join(root, String(pid), 'cgroup'),
      `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uid}.slice/cri-containerd-4f1e.scope\n`,
    );
  }
  return root;
}

export interface AgentFixture {
  agent: Agent;
  nvml: Nvml;
  mock: MockNvmlControls;
  library: string;
  /** Everything the agent published, in order. */
  published: OutgoingEvent[];
  /** Moves the agent's clock and the mock's together. */
  advance(ms: number): void;
  now(): number;
  close(): Promise<void>;
}

export const START = Date.UTC(2026, 0, 1);

export async function startAgent(
  scenario: string | object,
  options: { pids?: number[]; overrides?: Partial<AgentOptions> } = {},
): Promise<AgentFixture> {
  const { nvml, mock, library } = await openMockNvml(scenario);
  const procRoot = await fakeProcRoot(options.pids ?? []);
  let t = START;
  const published: OutgoingEvent[] = [];
  const agent = new Agent({
    nodeName: 'gpu-node-1',
    nvml,
    sink: { publish: (e) => published.push(e) },
    now: () => t,
    procRoot,
    thresholds: DEFAULT_THRESHOLDS,
    utilizationWindowMs: 60_000,
    inventoryIntervalMs: 300_000,
    ...options.overrides,
  });
  return {
    agent,
    nvml,
    mock,
    library,
    published,
    advance(ms) {
      t += ms;
      mock.advanceMs(ms);
    },
    now: () => t,
    async close() {
      await agent.close();
      nvml.close();
    },
  };
}
