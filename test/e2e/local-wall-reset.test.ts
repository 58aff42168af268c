import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeLocalCommand } from '../../infra/local/cli.ts';
import type { StackReport } from '../../infra/local/report.ts';

/**
 * `gpu-reflex local` on the wall clock with the actuator in its agent processes: an XID 95 GPU is
 * fenced by the agent's fence file (allocatable 2 → 1, within about a second), reset through the mock `nvidia-smi` (a
 * separate process reaching the agent's mock NVML), probed (probeSeconds 0 to keep it short) and
 * only then returned (1 → 2). Its own file: one stack run per module graph (see local-wall.test.ts).
 * The run ends as soon as the GPU is back (endWhenMet): on an idle machine in about 5 s, on a loaded
 * 2-core CI machine later, never judged at an arbitrary cut-off (10 s once failed there).
 */
const dir = mkdtempSync(join(tmpdir(), 'local-wall-reset-'));

describe('gpu-reflex local, on the wall clock, repairs a GPU through the agent process', () => {
  it('fences, resets with the mock nvidia-smi, probes and returns the GPU', async () => {
    const path = join(dir, 'reset.yaml');
    writeFileSync(
      path,
      `name: wall-reset
durationSeconds: 75
endWhenMet: true
policy:
  repair: { probeSeconds: 0 }
fleet:
  nodes:
    - { name: a100, count: 1, labels: { nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: "2", gpu-reflex.io/pool: a100 }, allocatable: { cpu: "32", memory: 256Gi, nvidia.com/gpu: 2 } }
  namespaces: [{ name: ml }, { name: gpu-reflex }]
timeline:
  - { at: 0.5s, node: a100-0, gpu: 1, fault: { kind: xid, xid: 95 } }
expect:
  - { node: a100-0, cordoned: false, label: { gpu-reflex.io/state: healthy }, allocatable: { nvidia.com/gpu: 2 } }
  - { event: GPU Action Result, node: a100-0, atLeast: 4 }
`,
    );
    const reportPath = join(dir, 'reset.json');
    const lines: string[] = [];
    const io = { out: (l: string) => void lines.push(l), err: (l: string) => void lines.push(l) };
    expect(await makeLocalCommand().run(['--scenario', path, '--report', reportPath], io)).toBe(0);
    const r = JSON.parse(readFileSync(reportPath, 'utf8')) as StackReport;
    expect(r.clock).toBe('wall');
    // endWhenMet: the run ended when the GPU was back, not at the 75 s deadline (kept for a loaded CI machine).
    expect(r.scenario.durationSeconds).toBeLessThan(75);
    const answered = r.events
      .filter((e) => e.detailType === 'GPU Action Result')
      .map((e) => e.detail as { action: string; state: string; reason?: string });
    expect(answered.map((a) => `${a.action} ${a.state}`)).toEqual(
      expect.arrayContaining(['fence done', 'reset done', 'probe done', 'unfence done']),
    );
    // The reset came from the mock nvidia-smi, in its words, after the fence and before the probe.
    const order = answered.map((a) => a.action);
    expect(order.indexOf('fence')).toBeLessThan(order.indexOf('reset'));
    expect(order.indexOf('reset')).toBeLessThan(order.indexOf('probe'));
    expect(order.indexOf('probe')).toBeLessThan(order.indexOf('unfence'));
    const text = lines.join('\n');
    expect(text).toMatch(/allocatable nvidia\.com\/gpu 2 → 1/);
    expect(text).toMatch(/allocatable nvidia\.com\/gpu 1 → 2/);
    const node = r.final.nodes.find((n) => n.metadata.name === 'a100-0');
    expect(node?.status?.allocatable?.['nvidia.com/gpu']).toBe('2');
  }, 120_000);
});
