import { describe, expect, it } from 'vitest';
import type { DevicePluginMismatchDetail } from '../../../events/index.ts';
import { at, pod } from '../testing.ts';
import {
  PLUGIN_RECORD_ANNOTATION,
  PLUGIN_TAINT_KEY,
  planPluginHealth,
  readPluginRecord,
  type PluginHealthFacts,
} from './plugin-health.ts';
import { DEFAULT_POLICY } from './policy.ts';
import type { Incident } from './state.ts';

const NODE = 'gpu-a100-07';

function mismatch(o: Partial<DevicePluginMismatchDetail> = {}): DevicePluginMismatchDetail {
  return {
    schemaVersion: 1,
    eventId: `plugin:${NODE}:firing:0`,
    node: NODE,
    observedAt: at(0),
    state: 'firing',
    mode: 'exclusive',
    gpus: 8,
    resources: [{ resource: 'nvidia.com/gpu', expected: 8, capacity: 8, allocatable: 0 }],
    kind: 'none-allocatable',
    message: 'NVML sees 8 GPU(s); the node advertises 8 nvidia.com/gpu but none allocatable',
    ...o,
  };
}

const plugin = pod('nvidia-device-plugin-ds-x7k2p', {
  namespace: 'kube-system',
  labels: { name: 'nvidia-device-plugin-ds' },
  daemonSet: true,
  requestsGpu: false,
});
const gpushare = pod('gpushare-device-plugin-ds-abcde', {
  namespace: 'kube-system',
  labels: { name: 'gpushare-device-plugin-ds' },
  daemonSet: true,
  requestsGpu: false,
});

function facts(o: Partial<PluginHealthFacts> & { annotations?: Record<string, string>; tainted?: boolean } = {}) {
  const { annotations = {}, tainted = false, ...rest } = o;
  return {
    now: new Date(at(0)),
    event: mismatch(),
    node: {
      name: NODE,
      annotations,
      taints: tainted ? [{ key: PLUGIN_TAINT_KEY, value: 'none-allocatable', effect: 'NoSchedule' as const }] : [],
    },
    pods: [plugin, pod('serve-0')],
    state: { incidents: [] },
    ...rest,
  } satisfies PluginHealthFacts;
}

const record = (r: Record<string, string>) => ({ [PLUGIN_RECORD_ANNOTATION]: JSON.stringify(r) });

describe('planPluginHealth: a node that advertises fewer GPUs than NVML sees', () => {
  it("restarts the plugin first: evicts NVIDIA's plugin pod on the node, and records when", () => {
    const p = planPluginHealth(facts(), DEFAULT_POLICY);
    expect(p.step).toBe('restart');
    expect(p.actions.evictions).toEqual([{ namespace: 'kube-system', name: plugin.name, uid: plugin.uid }]);
    expect(readPluginRecord(p.actions.nodeEdit!.annotations as Record<string, string>)).toEqual({
      since: at(0),
      restartedAt: at(0),
    });
    expect(p.actions.nodeEdit!.addTaints).toEqual([]);
  });

  it("restarts ACK's gpushare plugin on a cGPU node, never NVIDIA's", () => {
    const p = planPluginHealth(facts({ event: mismatch({ mode: 'cgpu' }), pods: [plugin, gpushare] }), DEFAULT_POLICY);
    expect(p.actions.evictions.map((e) => e.name)).toEqual([gpushare.name]);
  });

  it('waits while the restart is younger than fence.verifyMinutes (the event may describe the old pod)', () => {
    const f = facts({
      annotations: record({ since: at(0), restartedAt: at(0) }),
      event: mismatch({ observedAt: at(1) }),
    });
    const p = planPluginHealth(f, DEFAULT_POLICY);
    expect(p.step).toBe('none');
    expect(p.actions.evictions).toEqual([]);
  });

  it('taints the node and tells a person, with the error lines, when it is still wrong after the restart', () => {
    const f = facts({
      annotations: record({ since: at(0), restartedAt: at(0) }),
      event: mismatch({ observedAt: at(2), pluginErrors: ['could not load NVML library'] }),
      now: new Date(at(2)),
    });
    const p = planPluginHealth(f, DEFAULT_POLICY);
    expect(p.step).toBe('taint');
    expect(p.actions.nodeEdit!.addTaints).toEqual([
      { key: PLUGIN_TAINT_KEY, value: 'none-allocatable', effect: 'NoSchedule' },
    ]);
    expect(p.actions.notices).toHaveLength(1);
    expect(p.actions.notices[0]!.text).toContain('could not load NVML library');
    expect(p.actions.evictions).toEqual([]);
  });

  it('does nothing more once tainted (a person was told)', () => {
    const f = facts({ annotations: record({ since: at(0), restartedAt: at(0), taintedAt: at(2) }), tainted: true });
    expect(planPluginHealth({ ...f, event: mismatch({ observedAt: at(9) }) }, DEFAULT_POLICY).step).toBe('none');
  });

  it('taints at once when no plugin pod runs on the node to restart', () => {
    const p = planPluginHealth(facts({ pods: [pod('serve-0')] }), DEFAULT_POLICY);
    expect(p.step).toBe('taint');
    expect(p.reason).toContain('no device plugin pod runs on the node in kube-system (name=nvidia-device-plugin-ds)');
  });

  it("never restarts NVIDIA's plugin while its latch fences a GPU of the node: held, tainted, a person told", () => {
    const latched = {
      key: 'i1',
      phase: 'repairing',
      scope: 'gpu',
      gpu: 'GPU-1',
      action: 'quarantine-gpu',
      outAt: at(-5),
      ladder: ['quarantine-gpu'],
      level: 0,
      fence: { backend: 'nvidia-plugin' },
    } as unknown as Incident;
    const p = planPluginHealth(facts({ state: { incidents: [latched] } }), DEFAULT_POLICY);
    expect(p.step).toBe('held');
    expect(p.actions.evictions).toEqual([]);
    expect(p.reason).toContain('fences GPU-1 by its latch');
    expect(p.actions.nodeEdit!.addTaints.map((t) => t.key)).toEqual([PLUGIN_TAINT_KEY]);
  });

  it('lifts its taint and forgets the record once the GPUs are advertised again', () => {
    const f = facts({
      annotations: record({ since: at(0), restartedAt: at(0), taintedAt: at(2) }),
      tainted: true,
      event: mismatch({
        state: 'resolved',
        kind: undefined,
        resources: [{ resource: 'nvidia.com/gpu', expected: 8, capacity: 8, allocatable: 8 }],
      }),
    });
    const p = planPluginHealth(f, DEFAULT_POLICY);
    expect(p.step).toBe('untaint');
    expect(p.actions.nodeEdit!.removeTaints).toEqual([{ key: PLUGIN_TAINT_KEY, effect: 'NoSchedule' }]);
    expect(p.actions.nodeEdit!.annotations).toEqual({ [PLUGIN_RECORD_ANNOTATION]: null });
    expect(p.actions.notices).toHaveLength(1);
  });

  it('lifts its taint on a resolution even where the record is gone (the agent re-says it while the taint holds)', () => {
    const f = facts({ tainted: true, event: mismatch({ state: 'resolved', kind: undefined }) });
    const p = planPluginHealth(f, DEFAULT_POLICY);
    expect(p.step).toBe('untaint');
    expect(p.actions.nodeEdit!.removeTaints).toEqual([{ key: PLUGIN_TAINT_KEY, effect: 'NoSchedule' }]);
  });

  it('ignores a resolution it never acted on', () => {
    const p = planPluginHealth(facts({ event: mismatch({ state: 'resolved', kind: undefined }) }), DEFAULT_POLICY);
    expect(p.step).toBe('none');
  });
});

describe('planPluginHealth on a DRA pool (issue #28: found by the simulated cluster, whose DRA nodes advertise no GPU)', () => {
  const dra = { ...DEFAULT_POLICY, pools: { 'a100-dra': { fenceBackend: 'dra' as const } } };
  const none = mismatch({
    resources: [{ resource: 'nvidia.com/gpu', expected: 8, capacity: 0, allocatable: 0 }],
    kind: 'capacity',
  });
  const draNode = (o: Partial<PluginHealthFacts> = {}) =>
    facts({
      event: none,
      pods: [pod('serve-0')],
      ...o,
      node: { ...facts().node, labels: { 'gpu-reflex.io/pool': 'a100-dra' } },
    });

  it('leaves a DRA node that advertises no nvidia.com/gpu alone: its GPUs are ResourceSlice devices', () => {
    const p = planPluginHealth(draNode(), dra);
    expect(p.step).toBe('none');
    expect(p.actions.nodeEdit).toBeUndefined();
    expect(p.reason).toMatch(/DRA driver hands out its GPUs/);
  });

  it('still taints a node of a device-plugin pool that advertises none (the dead plugin case)', () => {
    expect(planPluginHealth(draNode(), DEFAULT_POLICY).step).toBe('taint');
  });

  it('still acts on a DRA-pool node that advertises some GPUs but fewer (a device plugin is there, and wrong)', () => {
    const fewer = mismatch({ resources: [{ resource: 'nvidia.com/gpu', expected: 8, capacity: 6, allocatable: 6 }] });
    expect(planPluginHealth(draNode({ event: fewer }), dra).step).not.toBe('none');
  });
});
