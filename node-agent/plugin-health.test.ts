import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  criMessage,
  expectedAdvertised,
  judge,
  kubeNodeView,
  PluginHealthCheck,
  pluginErrorLines,
  type GpuView,
  type NodeView,
} from './plugin-health.ts';

const view = (o: Partial<NodeView> = {}): NodeView => ({ labels: {}, capacity: {}, allocatable: {}, ...o });
const eight: GpuView = { gpus: 8, whole: 8, migDevices: 0 };

describe('what a node should advertise, per mode', () => {
  it.each([
    ['exclusive', view({ capacity: { 'nvidia.com/gpu': '8' } }), 'nvidia.com/gpu', 8],
    [
      'time-slicing',
      view({
        labels: { 'nvidia.com/gpu.replicas': '4', 'nvidia.com/gpu.sharing-strategy': 'time-slicing' },
        capacity: { 'nvidia.com/gpu': '32' },
      }),
      'nvidia.com/gpu',
      32,
    ],
    [
      'time-slicing',
      view({ labels: { 'nvidia.com/gpu.replicas': '4' }, capacity: { 'nvidia.com/gpu.shared': '32' } }),
      'nvidia.com/gpu.shared',
      32,
    ],
    [
      'mps',
      view({ labels: { 'nvidia.com/gpu.replicas': '2', 'nvidia.com/gpu.sharing-strategy': 'mps' } }),
      'nvidia.com/gpu',
      16,
    ],
  ])('%s: %s', (mode, node, resource, expected) => {
    const e = expectedAdvertised(eight, node);
    expect(e.mode).toBe(mode);
    expect(e.resources).toMatchObject([{ resource, expected }]);
  });

  it('MIG: every nvidia.com GPU resource summed against whole GPUs plus MIG devices', () => {
    const e = expectedAdvertised(
      { gpus: 2, whole: 1, migDevices: 7 },
      view({ capacity: { 'nvidia.com/gpu': '1', 'nvidia.com/mig-1g.10gb': '7', cpu: '64' } }),
    );
    expect(e).toMatchObject({ mode: 'mig', resources: [{ resource: 'nvidia.com/*', expected: 8, capacity: 8 }] });
  });

  it("ACK cGPU: the gpushare plugin's gpu-count and gpu-mem", () => {
    const e = expectedAdvertised(
      { gpus: 2, whole: 2, migDevices: 0 },
      view({ labels: { 'ack.node.gpu.schedule': 'cgpu' }, capacity: { 'aliyun.com/gpu-mem': '48' } }),
    );
    expect(e.mode).toBe('cgpu');
    expect(e.resources.map((r) => [r.resource, r.expected, r.capacity])).toEqual([
      ['aliyun.com/gpu-count', 2, 0],
      ['aliyun.com/gpu-mem', 2, 48],
    ]);
  });
});

describe('judge', () => {
  const r = (capacity: number, allocatable: number) => [
    { resource: 'nvidia.com/gpu', expected: 8, capacity, allocatable },
  ];
  it('a node advertising every GPU is fine, some out of allocatable too (a fence)', () => {
    expect(judge(eight, r(8, 8))).toEqual({ ok: true });
    expect(judge(eight, r(8, 7))).toEqual({ ok: true });
  });
  it('fewer in capacity: the plugin enumerates fewer, or the kubelet dropped it', () => {
    expect(judge(eight, r(0, 0))).toMatchObject({ ok: false, kind: 'capacity' });
    expect(judge(eight, r(4, 4))).toMatchObject({ ok: false, kind: 'capacity' });
  });
  it('none allocatable: the plugin is down', () => {
    expect(judge(eight, r(8, 0))).toMatchObject({ ok: false, kind: 'none-allocatable' });
  });
});

describe('the plugin log', () => {
  it("keeps only the known error lines, the kubelet's CRI prefix cut", async () => {
    const root = mkdtempSync(join(tmpdir(), 'plugin-log-'));
    const dir = join(root, 'kube-system_nvidia-device-plugin-ds-abcde_uid-1', 'nvidia-device-plugin-ctr');
    mkdirSync(dir, { recursive: true });
    mkdirSync(join(root, 'default_other_uid-2', 'c'), { recursive: true });
    writeFileSync(
      join(dir, '0.log'),
      [
        '2026-12-05T00:00:00Z stderr F I1205 Starting FS watcher.',
        '2026-12-05T00:00:01Z stderr F could not load NVML library: libnvidia-ml.so.1: cannot open shared object file',
        '2026-12-05T00:00:02Z stderr F failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=0',
      ].join('\n'),
    );
    writeFileSync(join(root, 'default_other_uid-2', 'c', '0.log'), 'could not load NVML library (not the plugin)\n');
    expect(await pluginErrorLines(root, 'kube-system_nvidia-device-plugin')).toEqual([
      'could not load NVML library: libnvidia-ml.so.1: cannot open shared object file',
      'failed to inject CDI devices: unresolvable CDI devices nvidia.com/gpu=0',
    ]);
    expect(await pluginErrorLines(join(root, 'absent'), 'x')).toEqual([]);
    expect(criMessage('plain line')).toBe('plain line');
  });
});

describe('PluginHealthCheck', () => {
  const inv = { gpus: Array.from({ length: 8 }, () => ({ migMode: 'disabled' as const, migDevices: [] })) };
  const check = (read: () => Promise<NodeView>) =>
    new PluginHealthCheck({ nodeName: 'n1', readNode: read, errorLines: async () => ['could not load NVML library'] });

  it('fires at the first tick that sees it, again each minute while it lasts, and resolves once', async () => {
    let node = view({ capacity: { 'nvidia.com/gpu': '8' }, allocatable: { 'nvidia.com/gpu': '0' } });
    const c = check(async () => node);
    const first = await c.check(0, inv as never);
    expect(first).toHaveLength(1);
    expect(first[0]!.detail).toMatchObject({
      state: 'firing',
      kind: 'none-allocatable',
      pluginErrors: ['could not load NVML library'],
    });
    expect(await c.check(30_000, inv as never)).toEqual([]);
    expect(await c.check(60_000, inv as never)).toHaveLength(1);
    node = view({ capacity: { 'nvidia.com/gpu': '8' }, allocatable: { 'nvidia.com/gpu': '8' } });
    const resolved = await c.check(65_000, inv as never);
    expect(resolved.map((e) => e.detail.state)).toEqual(['resolved']);
    expect(await c.check(70_000, inv as never)).toEqual([]);
  });

  it("says resolved each minute while the functions' taint holds, until it is gone (lost event, restarted agent)", async () => {
    const ok = { capacity: { 'nvidia.com/gpu': '8' }, allocatable: { 'nvidia.com/gpu': '8' } };
    let node = view({ ...ok, taints: ['node.kubernetes.io/unschedulable', 'gpu-reflex.io/device-plugin'] });
    // A fresh agent (restarted after the firing): the taint is the evidence, its first tick says resolved.
    const c = check(async () => node);
    const states = async (at: number) => (await c.check(at, inv as never)).map((e) => e.detail.state);
    expect(await states(0)).toEqual(['resolved']);
    expect(await states(30_000)).toEqual([]);
    // The functions did not act on it (lost, or restarted meanwhile): said again on the minute.
    expect(await states(60_000)).toEqual(['resolved']);
    // A mismatch again is a firing at once, not held back by the last resolution.
    node = view({ ...node, allocatable: { 'nvidia.com/gpu': '0' } });
    expect(await states(61_000)).toEqual(['firing']);
    node = view({ ...ok, taints: ['gpu-reflex.io/device-plugin'] });
    expect(await states(62_000)).toEqual(['resolved']);
    expect(await states(100_000)).toEqual([]);
    expect(await states(122_000)).toEqual(['resolved']);
    // The taint lifted: nothing more to say.
    node = view(ok);
    expect(await states(300_000)).toEqual([]);
    // Another taint is not this reflex's.
    node = view({ ...ok, taints: ['nvidia.com/gpu'] });
    expect(await check(async () => node).check(0, inv as never)).toEqual([]);
  });

  it('reads an unreadable Node as unknown: no firing, and no resolution of one that fired', async () => {
    let fail = false;
    const c = check(async () => {
      if (fail) throw new Error('403');
      return view({ capacity: { 'nvidia.com/gpu': '0' } });
    });
    expect(await c.check(0, inv as never)).toHaveLength(1);
    fail = true;
    expect(await c.check(120_000, inv as never)).toEqual([]);
  });

  it('expects nothing before the first inventory, or where NVML sees no GPU', async () => {
    const c = check(async () => view());
    expect(await c.check(0, undefined)).toEqual([]);
    expect(await c.check(0, { gpus: [] } as never)).toEqual([]);
  });
});

describe('kubeNodeView', () => {
  it("reads the Node's labels, capacity, allocatable and taint keys", async () => {
    const node = {
      metadata: { labels: { a: 'b' } },
      spec: { taints: [{ key: 'gpu-reflex.io/device-plugin', value: 'capacity', effect: 'NoSchedule' }] },
      status: { capacity: { 'nvidia.com/gpu': '8' }, allocatable: { 'nvidia.com/gpu': '0' } },
    };
    const read = kubeNodeView({ readNode: async () => node } as never, 'n1');
    expect(await read()).toEqual({
      labels: { a: 'b' },
      capacity: { 'nvidia.com/gpu': '8' },
      allocatable: { 'nvidia.com/gpu': '0' },
      taints: ['gpu-reflex.io/device-plugin'],
    });
    expect((await kubeNodeView({ readNode: async () => ({}) } as never, 'n1')()).taints).toEqual([]);
  });
});
