import { describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionResultDetail,
  type GpuActionState,
} from '../../events/index.ts';
import { GpuActuator, type ActuatorGpus } from './actuator.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const T0 = Date.parse('2026-11-21T03:00:00.000Z');

function rig(o: { holders?: string[]; drain?: boolean; refuse?: string } = {}) {
  const annotations: Record<string, string> = {};
  const published: GpuActionResultDetail[] = [];
  const drained: [string, boolean][] = [];
  const gpus: ActuatorGpus = {
    indexOf: (u) => (u === G0 ? 0 : undefined),
    holders: () => o.holders ?? [],
    reset: async () => ({ ok: true }),
    health: () => ({
      nvmlAnswers: true,
      recoveryAction: 'none',
      remapPending: false,
      remapFailed: false,
      eccUncorrected: 0,
    }),
    ...(o.drain === false
      ? {}
      : {
          drain: (u: string, on: boolean) =>
            o.refuse ? { ok: false as const, reason: o.refuse } : (drained.push([u, on]), { ok: true as const }),
        }),
  };
  const actuator = new GpuActuator({
    node: 'n1',
    nodeApi: {
      annotations: async () => ({ ...annotations }),
      writeResults: async (json) => void (annotations[GPU_ACTION_RESULTS_ANNOTATION] = json),
    },
    gpus,
    fence: { read: () => ({ index: [], uuid: [] }), ours: () => [], add: () => undefined, remove: () => false },
    publish: async (_t, d) => void published.push(d),
    xids: () => [],
    now: () => T0,
  });
  const ask = (...actions: string[]) => {
    annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify(
      actions.map((action, i) => ({
        id: `req.${i}.${action}`,
        action,
        gpuUuid: G0,
        incident: 'n1/GPU-0/xid-95',
        requestedAt: new Date(T0).toISOString(),
        timeoutSeconds: 600,
      })),
    );
  };
  const results = () =>
    JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>;
  return { actuator, ask, results, published, drained };
}

describe('GpuActuator drain-on / drain-off', () => {
  it('sets NVML drain state on, then off, once each', async () => {
    const r = rig();
    r.ask('drain-on');
    await r.actuator.tick();
    await r.actuator.tick();
    expect(r.drained).toEqual([[G0, true]]);
    expect(r.results()['req.0.drain-on']).toMatchObject({
      state: 'done',
      reason: 'NVML drain state on: the GPU accepts no new work',
    });
    r.ask('drain-on', 'drain-off');
    await r.actuator.tick();
    expect(r.drained).toEqual([
      [G0, true],
      [G0, false],
    ]);
    expect(r.published.map((d) => `${d.action} ${d.state}`)).toEqual(['drain-on done', 'drain-off done']);
  });

  it("refuses to drain a GPU in use, naming what holds it; says NVML's own words when it refuses", async () => {
    const busy = rig({ holders: ['ml/train-0'] });
    busy.ask('drain-on');
    await busy.actuator.tick();
    expect(busy.results()['req.0.drain-on']).toMatchObject({
      state: 'failed',
      reason: 'busy',
      holders: ['ml/train-0'],
    });
    expect(busy.drained).toEqual([]);
    const refused = rig({ refuse: 'nvmlDeviceModifyDrainState: NVML_ERROR_NO_PERMISSION (Insufficient Permissions)' });
    refused.ask('drain-on');
    await refused.actuator.tick();
    expect(refused.results()['req.0.drain-on']).toMatchObject({
      state: 'failed',
      reason: expect.stringContaining('NVML_ERROR_NO_PERMISSION'),
    });
  });

  it('answers not-supported where NVML has no drain state, and for mig-cleanup', async () => {
    const r = rig({ drain: false });
    r.ask('drain-on', 'mig-cleanup');
    await r.actuator.tick();
    expect(r.results()['req.0.drain-on']).toMatchObject({
      state: 'failed',
      reason: 'not-supported: this NVML library has no drain state',
    });
    expect(r.results()['req.1.mig-cleanup']).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^not-supported/),
    });
  });
});
