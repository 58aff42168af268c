/**
 * XID → fence verified by identity, on the wall clock, through the agents' own processes (issue #27):
 * `gpu-reflex local` with one `gpu-reflex agent` process per node (actuator on, the mock NVML and
 * nvidia-smi), the local bus and the functions in-process, the simulated cluster. Each XID 95 is
 * written into its GPU's NVML and kernel log; the clock runs from the agent's sighting of it to the
 * fence's `verifiedAt` — the agent said the ACK file lists *this* GPU and the allocatable lost it past
 * what was out before (functions/remediate/core/fence-check.ts). One XID at a time, a few seconds
 * apart, each on a node of its own pool (no blast-radius hold): latency, not a storm.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeLocalCommand } from '../infra/local/cli.ts';
import type { StackReport } from '../infra/local/report.ts';
import { below, info, percentile, type Measurement } from './harness.ts';

export interface FenceVerifySpec {
  nodes: number;
  /** XIDs per node, one per GPU (each node has this many GPUs). */
  gpusPerNode: number;
  /** Seconds between two XIDs. */
  everySeconds: number;
  /**
   * Seconds before the first XID: every agent process has started its actuator (it loads the
   * Kubernetes client at start, several seconds on a loaded machine); a fence asked before that
   * measures the agents' start, not the reflex.
   */
  warmUpSeconds: number;
}

export const FENCE_VERIFY: FenceVerifySpec = { nodes: 6, gpusPerNode: 2, everySeconds: 2.5, warmUpSeconds: 20 };

export function scenarioText(s: FenceVerifySpec): {
  text: string;
  faults: { node: string; gpu: number; atMs: number }[];
} {
  const nodes = Array.from({ length: s.nodes }, (_, n) => `fv${n}`);
  const faults = nodes.flatMap((node, n) =>
    Array.from({ length: s.gpusPerNode }, (_, gpu) => ({
      node: `${node}-0`,
      gpu,
      atMs: Math.round((s.warmUpSeconds + (gpu * s.nodes + n) * s.everySeconds) * 1000),
    })),
  );
  const last = Math.max(...faults.map((f) => f.atMs)) / 1000;
  const text = [
    'name: bench-fence-verify',
    `durationSeconds: ${Math.ceil(last + 60)}`,
    'endWhenMet: true',
    'policy:',
    '  repair: { probeSeconds: 0 }',
    'fleet:',
    '  nodes:',
    ...nodes.map(
      (node) =>
        `    - { name: ${node}, count: 1, labels: { nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, ` +
        `nvidia.com/gpu.count: "${s.gpusPerNode}", gpu-reflex.io/pool: ${node} }, allocatable: { cpu: "32", ` +
        `memory: 256Gi, nvidia.com/gpu: ${s.gpusPerNode} } }`,
    ),
    '  namespaces: [{ name: ml }, { name: gpu-reflex }]',
    'timeline:',
    ...faults.map(
      (f) => `  - { at: ${f.atMs / 1000}s, node: ${f.node}, gpu: ${f.gpu}, fault: { kind: xid, xid: 95 } }`,
    ),
    'expect:',
    // The run ends once every GPU was probed after its reset (probeSeconds 0): its fence was seen by then.
    `  - { event: GPU Action Result, says: '"action":"probe"', atLeast: ${faults.length} }`,
  ].join('\n');
  return { text, faults };
}

/** Runs the scenario and returns each XID's latency to its verified fence (ms); unverified: missing. */
export async function measureFenceVerify(
  s: FenceVerifySpec,
  progress: (l: string) => void,
  keep?: string,
): Promise<{ latencies: number[]; xids: number }> {
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'gpu-reflex-bench-fence-'));
  try {
    const { text, faults } = scenarioText(s);
    const path = join(dir, 'fence.yaml');
    writeFileSync(path, text);
    const reportPath = join(dir, 'report.json');
    const io = { out: (l: string) => void (keep && progress(l)), err: (l: string) => progress(l) };
    await makeLocalCommand().run(['--scenario', path, '--report', reportPath], io);
    const r = JSON.parse(readFileSync(reportPath, 'utf8')) as StackReport;
    // From the agent's sighting of the XID (the incident's `firstAt`: the XID event's observedAt) to its
    // fence's `verifiedAt`, both in the node's history (functions/remediate/core/state.ts), one wall
    // clock. The mock NVML fires a fault on its own clock (started at the agent's nvmlInit), so the
    // scenario's schedule is no start time on the wall clock.
    const latencies: number[] = [];
    for (const n of r.final.nodes) {
      const raw = n.metadata.annotations?.['gpu-reflex.io/history'];
      const h = raw
        ? (JSON.parse(raw) as { incidents?: { gpu?: string; firstAt?: string; fence?: { verifiedAt?: string } }[] })
        : {};
      for (const i of h.incidents ?? [])
        if (i.gpu && i.firstAt && i.fence?.verifiedAt)
          latencies.push(Date.parse(i.fence.verifiedAt) - Date.parse(i.firstAt));
    }
    progress(`fence verified after ${latencies.map((l) => `${l} ms`).join(', ')}`);
    return { latencies, xids: faults.length };
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

export function fenceVerifyRows(m: { latencies: number[]; xids: number }): Measurement[] {
  const label = 'XID → fence verified by identity (agent processes, wall clock)';
  return [
    info(`${label}: XIDs`, m.xids, 'XIDs'),
    below(`${label}: XIDs not verified`, m.xids - m.latencies.length, 'XIDs', 1),
    info(`${label}: p50`, percentile(m.latencies, 50) / 1000, 's'),
    below(`${label}: p99`, percentile(m.latencies, 99) / 1000, 's', 2),
  ];
}
