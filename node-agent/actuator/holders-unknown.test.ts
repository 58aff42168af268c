import { afterEach, describe, expect, it } from 'vitest';
import { GPU_ACTION_RESULTS_ANNOTATION, GPU_ACTIONS_ANNOTATION, type GpuActionState } from '../../events/index.ts';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import { NvmlError, type Nvml } from '../nvml/nvml.ts';
import { GpuActuator, type ActuatorGpus } from './actuator.ts';
import { OPERATOR_PAUSED_ANNOTATION, OperatorPause } from './operator-pause.ts';
import { nvmlGpus } from './ports.ts';

// NVML answers nvmlDeviceGetComputeRunningProcesses_v3 with NVML_ERROR_NOT_SUPPORTED on a GPU that cannot
// list its processes, and with NVML_ERROR_NO_PERMISSION / GPU_IS_LOST / UNKNOWN where it could not read them
// (docs.nvidia.com/deploy/nvml-api, nvmlDeviceGetComputeRunningProcesses_v3): no list is not an empty list.
const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const G0 = 'GPU-00000000-1111-2222-3333-444444444444';
let open: Nvml | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

function rig(gpus: ActuatorGpus, pause?: (holders: ActuatorGpus['holders']) => OperatorPause) {
  const annotations: Record<string, string> = {};
  const actuator = new GpuActuator({
    node: 'n1',
    nodeApi: {
      annotations: async () => ({ ...annotations }),
      writeResults: async (json) => void (annotations[GPU_ACTION_RESULTS_ANNOTATION] = json),
    },
    gpus,
    fence: { read: () => ({ index: [], uuid: [] }), ours: () => [], add: () => undefined, remove: () => false },
    publish: async () => undefined,
    xids: () => [],
    now: () => T0,
    ...(pause ? { pause: pause((u) => gpus.holders(u)) } : {}),
  });
  const ask = (action: string) => {
    annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
      {
        id: `req.0.${action}`,
        action,
        gpuUuid: G0,
        incident: 'n1/GPU-0/xid-95',
        requestedAt: new Date(T0).toISOString(),
        timeoutSeconds: 600,
      },
    ]);
  };
  const result = (action: string) =>
    (JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>)[
      `req.0.${action}`
    ];
  return { actuator, ask, result };
}

/** The mock NVML with a process on its GPU that NVML will not list (NOT_SUPPORTED). */
async function unlistable(): Promise<Nvml> {
  const s = await openMockNvml(oneGpu({ unsupported: ['processes'], processes: [{ pid: 4242, usedMiB: 1000 }] }));
  open = s.nvml;
  return s.nvml;
}

describe('a GPU whose compute processes NVML cannot list', () => {
  it('is not reset: unknown holders are not no holders', async () => {
    const resets: string[] = [];
    const nvml = await unlistable();
    const r = rig(nvmlGpus(nvml, async (u) => (resets.push(u), { ok: true })));
    r.ask('reset');
    await r.actuator.tick();
    expect(resets).toEqual([]);
    expect(r.result('reset')).toMatchObject({ state: 'failed' });
    expect(r.result('reset')!.reason).toMatch(/^processes unknown: .*NOT_SUPPORTED.*not reset/);
  });

  it('is not drained either', async () => {
    const nvml = await unlistable();
    const gpus = nvmlGpus(nvml, async () => ({ ok: true }));
    const r = rig(gpus);
    r.ask('drain-on');
    await r.actuator.tick();
    expect(nvml.device(0).drainState()).toBe(false);
    expect(r.result('drain-on')!.reason).toMatch(/^processes unknown: /);
  });

  it('is not reset when NVML fails the listing, and the failure stalls no tick', async () => {
    const d = {
      uuid: () => G0,
      processes: () => {
        throw new NvmlError('nvmlDeviceGetComputeRunningProcesses_v3', 4, 'Insufficient Permissions');
      },
    };
    const nvml = { devices: () => [d], device: () => d } as unknown as Nvml;
    const resets: string[] = [];
    const r = rig(nvmlGpus(nvml, async (u) => (resets.push(u), { ok: true })));
    r.ask('reset');
    await r.actuator.tick();
    expect(resets).toEqual([]);
    expect(r.result('reset')).toMatchObject({ state: 'failed' });
    expect(r.result('reset')!.reason).toMatch(/^processes unknown: .*NO_PERMISSION/);
  });

  it('is refused before the GPU Operator is paused: its clients are not taken off the node for nothing', async () => {
    const resets: string[] = [];
    const patches: (string | null)[] = [];
    let record: string | undefined;
    const nvml = await unlistable();
    const gpus = nvmlGpus(nvml, async (u) => (resets.push(u), { ok: true }));
    const r = rig(
      gpus,
      (holders) =>
        new OperatorPause({
          port: {
            read: async () => ({
              labels: {},
              annotations: record ? { [OPERATOR_PAUSED_ANNOTATION]: record } : ({} as Record<string, string>),
            }),
            patch: async (_labels, rec) => void (patches.push(rec), (record = rec ?? undefined)),
            podsOnNode: async () => [],
          },
          pauseTimeoutMs: 60_000,
          now: () => T0,
          holders,
          reset: (u) => gpus.reset(u),
        }),
    );
    r.ask('reset');
    await r.actuator.tick();
    await r.actuator.tick();
    expect(resets).toEqual([]);
    expect(r.result('reset')!.reason).toMatch(/^processes unknown: /);
    expect(patches).toEqual([]);
  });
});
