import { describe, expect, it } from 'vitest';
import {
  MIG_INVENTORY_ANNOTATION,
  MIG_INVENTORY_RECONFIRM_MS,
  readMigInventory,
  type MigInventory,
} from '../../events/index.ts';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import { GpuActuator, type ActuatorGpus } from './actuator.ts';
import { nvmlMigInventory } from './mig-inventory.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const NO_GPUS: ActuatorGpus = {
  indexOf: () => undefined,
  holders: () => [],
  reset: async () => ({ ok: true }),
  health: () => ({
    nvmlAnswers: true,
    recoveryAction: 'none',
    remapPending: false,
    remapFailed: false,
    eccUncorrected: 0,
  }),
};

function rig(o: { dryRun?: boolean; gpus?: () => MigInventory['gpus'] } = {}) {
  let now = T0;
  const annotations: Record<string, string> = {};
  let writes = 0;
  let gpus: MigInventory['gpus'] = [
    {
      index: 0,
      uuid: G0,
      instances: [
        { profile: '3g.40gb', gi: 1, start: 0, size: 4, inUse: true },
        { profile: '3g.40gb', gi: 2, start: 4, size: 4, inUse: false },
      ],
    },
  ];
  const actuator = new GpuActuator({
    node: 'n1',
    nodeApi: {
      annotations: async () => ({ ...annotations }),
      writeResults: async () => undefined,
      writeMigInventory: async (json) => {
        writes++;
        annotations[MIG_INVENTORY_ANNOTATION] = json;
      },
    },
    gpus: NO_GPUS,
    fence: { read: () => ({ index: [], uuid: [] }), ours: () => [], add: () => undefined, remove: () => false },
    publish: async () => undefined,
    xids: () => [],
    now: () => now,
    migInventory: o.gpus ?? (() => gpus),
    ...(o.dryRun ? { dryRun: true } : {}),
  });
  return {
    actuator,
    annotations,
    writes: () => writes,
    set: (g: MigInventory['gpus']) => (gpus = g),
    advance: (ms: number) => (now += ms),
  };
}

describe("the actuator's MIG inventory annotation", () => {
  it('writes which instances are in use, and rewrites it only when that changes', async () => {
    const r = rig();
    await r.actuator.tick();
    const first = readMigInventory(r.annotations).inventory;
    expect(first).toMatchObject({
      v: 1,
      at: new Date(T0).toISOString(),
      gpus: [
        {
          index: 0,
          instances: [
            { profile: '3g.40gb', inUse: true },
            { profile: '3g.40gb', inUse: false },
          ],
        },
      ],
    });
    r.advance(10_000);
    await r.actuator.tick();
    expect(r.writes()).toBe(1);
    r.set([
      {
        index: 0,
        uuid: G0,
        instances: [
          { profile: '3g.40gb', gi: 1, start: 0, size: 4, inUse: true },
          { profile: '3g.40gb', gi: 2, start: 4, size: 4, inUse: true },
        ],
      },
    ]);
    await r.actuator.tick();
    expect(r.writes()).toBe(2);
    expect(readMigInventory(r.annotations).inventory?.at).toBe(new Date(T0 + 10_000).toISOString());
  });

  it('stamps when it last read the GPUs, and re-confirms an unchanged inventory so a dead agent shows', async () => {
    const r = rig();
    await r.actuator.tick();
    expect(readMigInventory(r.annotations).inventory?.checked).toBe(new Date(T0).toISOString());
    // Unchanged, and confirmed recently: not written again (each write is a new resourceVersion for the functions).
    r.advance(MIG_INVENTORY_RECONFIRM_MS - 1);
    await r.actuator.tick();
    expect(r.writes()).toBe(1);
    // Due: only `checked` moves; `at` stays when what it says last changed.
    r.advance(1);
    await r.actuator.tick();
    expect(r.writes()).toBe(2);
    expect(readMigInventory(r.annotations).inventory).toMatchObject({
      at: new Date(T0).toISOString(),
      checked: new Date(T0 + MIG_INVENTORY_RECONFIRM_MS).toISOString(),
    });
    // An inventory an older agent wrote (no `checked`) is confirmed on the first pass due.
    const old = rig();
    await old.actuator.tick();
    const inv = readMigInventory(old.annotations).inventory!;
    const { checked: _c, ...unstamped } = inv;
    old.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(unstamped);
    old.advance(MIG_INVENTORY_RECONFIRM_MS);
    await old.actuator.tick();
    expect(readMigInventory(old.annotations).inventory?.checked).toBe(
      new Date(T0 + MIG_INVENTORY_RECONFIRM_MS).toISOString(),
    );
  });

  it('keeps its confirmation stale when NVML cannot be read (unknown is not re-confirmed)', async () => {
    let fail = false;
    const r = rig({
      gpus: () => {
        if (fail) throw new Error('NVML_ERROR_UNKNOWN');
        return [{ index: 0, uuid: G0, instances: [] }];
      },
    });
    await r.actuator.tick();
    fail = true;
    r.advance(MIG_INVENTORY_RECONFIRM_MS);
    await r.actuator.tick();
    expect(r.writes()).toBe(1);
    expect(readMigInventory(r.annotations).inventory?.checked).toBe(new Date(T0).toISOString());
  });

  it('writes nothing in dry run, and nothing for a node without MIG GPUs', async () => {
    const dry = rig({ dryRun: true });
    await dry.actuator.tick();
    expect(dry.writes()).toBe(0);
    const none = rig({ gpus: () => [] });
    await none.actuator.tick();
    expect(none.writes()).toBe(0);
  });

  it('keeps the last annotation when NVML cannot be read', async () => {
    let fail = false;
    const r = rig({
      gpus: () => {
        if (fail) throw new Error('NVML_ERROR_GPU_IS_LOST');
        return [{ index: 0, uuid: G0, instances: [] }];
      },
    });
    await r.actuator.tick();
    fail = true;
    await r.actuator.tick();
    expect(r.writes()).toBe(1);
  });

  it('reads a bad annotation as a problem, not an inventory', () => {
    expect(readMigInventory({ [MIG_INVENTORY_ANNOTATION]: '{' })).toEqual({
      problem: `${MIG_INVENTORY_ANNOTATION} is not JSON`,
    });
    expect(readMigInventory({ [MIG_INVENTORY_ANNOTATION]: '{"v":2}' }).problem).toContain(
      'does not match the contract',
    );
    expect(readMigInventory({})).toEqual({});
  });
});

describe('nvmlMigInventory (NVML through the mock library)', () => {
  it('lists a MIG GPU a reset left without instances, with none; a GPU without MIG mode is not listed', async () => {
    const mig = { profile: '3g.40gb', giProfileId: 9, size: 4 };
    const scenario = oneGpu({
      migMode: true,
      migDevices: [
        { ...mig, start: 0, giId: 1, uuid: 'MIG-00000000-1111-2222-3333-444444444401' },
        { ...mig, start: 4, giId: 2, uuid: 'MIG-00000000-1111-2222-3333-444444444402' },
      ],
    }) as { gpus: object[] };
    scenario.gpus.push({
      name: 'NVIDIA A100-SXM4-80GB',
      uuid: 'GPU-00000000-1111-2222-3333-555555555555',
      pciBusId: '00000000:3C:00.0',
      memoryTotalMiB: 81920,
    });
    const { nvml, mock } = await openMockNvml(scenario);
    try {
      const inventory = nvmlMigInventory(nvml);
      expect(inventory().map((g) => [g.index, g.instances.map((i) => `${i.profile}@${i.start}`)])).toEqual([
        [0, ['3g.40gb@0', '3g.40gb@4']],
      ]);
      expect(mock.resetGpu(0)).toBe(0);
      const [after] = inventory();
      expect({ ...after, profiles: undefined }).toEqual({
        index: 0,
        uuid: 'GPU-00000000-1111-2222-3333-444444444444',
        instances: [],
        profiles: undefined,
      });
      // The GPU's NVML profile table travels too: the planner's source for a model no table lists.
      const three = after!.profiles?.find((p) => p.name === '3g.40gb');
      expect(three).toMatchObject({ sliceCount: 3, instanceCount: 2 });
      expect(three!.placements).toEqual([
        { start: 0, size: 4 },
        { start: 4, size: 4 },
      ]);
    } finally {
      nvml.close();
    }
  });

  it("names the pods running in each instance, where the agent knows the process's pod", async () => {
    const mig = { profile: '3g.40gb', giProfileId: 9, size: 4 };
    const scenario = oneGpu({
      migMode: true,
      migDevices: [
        { ...mig, start: 0, giId: 1, uuid: 'MIG-00000000-1111-2222-3333-444444444401' },
        { ...mig, start: 4, giId: 2, uuid: 'MIG-00000000-1111-2222-3333-444444444402' },
      ],
      processes: [
        { pid: 4242, usedMiB: 1000, gpuInstanceId: 1, computeInstanceId: 0 },
        { pid: 4343, usedMiB: 1000, gpuInstanceId: 2, computeInstanceId: 0 },
      ],
    });
    const { nvml } = await openMockNvml(scenario);
    try {
      // pid 4343 is not a pod the agent knows (a process outside Kubernetes): in use, no pods named.
      const named = nvmlMigInventory(nvml, (pid) => (pid === 4242 ? 'uid-trainer' : undefined))();
      expect(named[0]!.instances.map((i) => [i.gi, i.inUse, i.pods])).toEqual([
        [1, true, ['uid-trainer']],
        [2, true, undefined],
      ]);
    } finally {
      nvml.close();
    }
  });
});

describe('nvmlMigInventory with a process whose pod the agent cannot tell', () => {
  it('counts it in its instance beside the pods it names: the instance is not wholly theirs', async () => {
    const mig = { profile: '3g.40gb', giProfileId: 9, size: 4 };
    const { nvml } = await openMockNvml(
      oneGpu({
        migMode: true,
        migDevices: [
          { ...mig, start: 0, giId: 1, uuid: 'MIG-00000000-1111-2222-3333-444444444401' },
          { ...mig, start: 4, giId: 2, uuid: 'MIG-00000000-1111-2222-3333-444444444402' },
        ],
        // pid 4343 shares the trainer's instance (a process outside Kubernetes, or a pod whose cgroup was not read).
        processes: [
          { pid: 4242, usedMiB: 1000, gpuInstanceId: 1, computeInstanceId: 0 },
          { pid: 4343, usedMiB: 1000, gpuInstanceId: 1, computeInstanceId: 0 },
        ],
      }),
    );
    try {
      const [g] = nvmlMigInventory(nvml, (pid) => (pid === 4242 ? 'uid-trainer' : undefined))();
      expect(g!.instances.map((i) => [i.gi, i.inUse, i.pods, i.unnamed])).toEqual([
        [1, true, ['uid-trainer'], true],
        [2, false, undefined, undefined],
      ]);
    } finally {
      nvml.close();
    }
  });
});

describe('nvmlMigInventory with more pods in an instance than the contract names', () => {
  it('says the 16 it names are not all (an instance shared by 17 pods)', async () => {
    const mig = { profile: '7g.80gb', giProfileId: 0, size: 8 };
    const pids = Array.from({ length: 17 }, (_, k) => 5000 + k);
    const { nvml } = await openMockNvml(
      oneGpu({
        migMode: true,
        migDevices: [{ ...mig, start: 0, giId: 0, uuid: 'MIG-00000000-1111-2222-3333-444444444401' }],
        processes: pids.map((pid) => ({ pid, usedMiB: 100, gpuInstanceId: 0, computeInstanceId: 0 })),
      }),
    );
    try {
      const [g] = nvmlMigInventory(nvml, (pid) => `uid-${pid}`)();
      expect(g!.instances[0]!.pods).toHaveLength(16);
      expect(g!.instances[0]!.unnamed).toBe(true);
    } finally {
      nvml.close();
    }
  });
});

describe('nvmlMigInventory where NVML cannot list the processes', () => {
  // nvmlDeviceGetComputeRunningProcesses_v3 answers NOT_SUPPORTED (or fails: NO_PERMISSION, GPU_IS_LOST): which
  // instances processes run in is unknown, never "none" (the MIG planner relays only GPUs nothing runs on).
  const mig = { profile: '3g.40gb', giProfileId: 9, size: 4 };
  const devices = [
    { ...mig, start: 0, giId: 1, uuid: 'MIG-00000000-1111-2222-3333-444444444401' },
    { ...mig, start: 4, giId: 2, uuid: 'MIG-00000000-1111-2222-3333-444444444402' },
  ];

  it('reads every instance in use, says why, and names no pod', async () => {
    const { nvml } = await openMockNvml(
      oneGpu({
        migMode: true,
        migDevices: devices,
        unsupported: ['processes'],
        processes: [{ pid: 4242, usedMiB: 1000, gpuInstanceId: 1, computeInstanceId: 0 }],
      }),
    );
    try {
      const [g] = nvmlMigInventory(nvml, () => 'uid-trainer')();
      expect(g!.instances.map((i) => [i.gi, i.inUse, i.pods])).toEqual([
        [1, true, undefined],
        [2, true, undefined],
      ]);
      expect(g!.inUseUnknown).toMatch(/NOT_SUPPORTED/);
    } finally {
      nvml.close();
    }
  });

  it('lists a GPU whose listing fails as unknown, instead of leaving the whole annotation as it was', async () => {
    const { nvml } = await openMockNvml(oneGpu({ migMode: true, migDevices: devices }));
    try {
      const real = nvml.devices.bind(nvml);
      const failing = Object.create(nvml) as typeof nvml;
      failing.devices = () =>
        real().map((d) =>
          Object.assign(Object.create(d) as typeof d, {
            processes: () => {
              throw new Error('nvmlDeviceGetComputeRunningProcesses_v3: NVML_ERROR_NO_PERMISSION');
            },
          }),
        );
      const [g] = nvmlMigInventory(failing)();
      expect(g!.instances.every((i) => i.inUse)).toBe(true);
      expect(g!.inUseUnknown).toMatch(/NO_PERMISSION/);
    } finally {
      nvml.close();
    }
  });

  it('rewrites an inventory that says so only when it changes, as any other', async () => {
    const unknown: MigInventory['gpus'] = [
      {
        index: 0,
        uuid: G0,
        instances: [{ profile: '3g.40gb', gi: 1, start: 0, size: 4, inUse: true }],
        inUseUnknown: 'NVML cannot list its compute processes (nvmlDeviceGetComputeRunningProcesses_v3: NOT_SUPPORTED)',
        profiles: [{ name: '3g.40gb', id: 9, sliceCount: 3, instanceCount: 2, placements: [{ start: 0, size: 4 }] }],
      },
    ];
    const r = rig({ gpus: () => unknown });
    await r.actuator.tick();
    r.advance(10_000);
    await r.actuator.tick();
    expect(r.writes()).toBe(1);
  });

  it('is read by the contract, and an older agent without the field still is', () => {
    const inv = (extra: object) =>
      JSON.stringify({
        v: 1,
        at: '2026-11-21T03:00:00.000Z',
        gpus: [{ index: 0, uuid: G0, instances: [{ profile: '3g.40gb', gi: 1, inUse: true }], ...extra }],
      });
    const why = 'NVML cannot list its compute processes (nvmlDeviceGetComputeRunningProcesses_v3: NOT_SUPPORTED)';
    expect(
      readMigInventory({ [MIG_INVENTORY_ANNOTATION]: inv({ inUseUnknown: why }) }).inventory?.gpus[0],
    ).toMatchObject({ inUseUnknown: why });
    expect(readMigInventory({ [MIG_INVENTORY_ANNOTATION]: inv({}) }).inventory?.gpus[0]?.inUseUnknown).toBeUndefined();
  });
});

describe('nvmlMigInventory where NVML cannot read a MIG mode', () => {
  // nvmlDeviceGetMigMode answers NOT_SUPPORTED on a GPU without MIG (docs.nvidia.com/deploy/nvml-api, "Multi
  // Instance GPU Management"); any other error says nothing of the mode. After a reset a MIG GPU has no instance,
  // and only its mode tells it from a GPU without MIG: unread, it was left out, and remediation's restore
  // (functions/remediate/core/mig-restore.ts) read a GPU the agent does not list as one with nothing of MIG to
  // wait for, and returned it to service with no instance, where mig-manager never recreates them.
  it('lists the GPU with no instance and says why, until NVML answers it', async () => {
    const mig = { profile: '3g.40gb', giProfileId: 9, size: 4 };
    const { nvml, mock } = await openMockNvml(
      oneGpu({
        migMode: true,
        migDevices: [
          { ...mig, start: 0, giId: 1, uuid: 'MIG-00000000-1111-2222-3333-444444444401' },
          { ...mig, start: 4, giId: 2, uuid: 'MIG-00000000-1111-2222-3333-444444444402' },
        ],
      }),
    );
    try {
      const uuid = 'GPU-00000000-1111-2222-3333-444444444444';
      const r = rig({ gpus: nvmlMigInventory(nvml) });
      await r.actuator.tick();
      expect(readMigInventory(r.annotations).inventory!.gpus.map((g) => [g.uuid, g.instances.length])).toEqual([
        [uuid, 2],
      ]);

      // The reset destroys both instances, and the driver now errors on the mode (NVML_ERROR_UNKNOWN, 999).
      expect(mock.resetGpu(0)).toBe(0);
      const lib = nvml.lib as unknown as Record<string, unknown>;
      const real = lib.nvmlDeviceGetMigMode;
      lib.nvmlDeviceGetMigMode = () => 999;
      r.advance(10_000);
      await r.actuator.tick();
      // Not an inventory without the GPU, written after the reset: the GPU, empty, its mode unknown.
      const unknown = readMigInventory(r.annotations).inventory!;
      expect(unknown.at).toBe(new Date(T0 + 10_000).toISOString());
      expect(unknown.gpus).toEqual([
        { index: 0, uuid, instances: [], migModeUnknown: expect.stringMatching(/MIG mode .*nvmlDeviceGetMigMode/) },
      ]);

      // NVML answers again: the GPU is listed in MIG mode with no instance, what the restore acts on.
      lib.nvmlDeviceGetMigMode = real;
      r.advance(10_000);
      await r.actuator.tick();
      const after = readMigInventory(r.annotations).inventory!;
      expect(after.at).toBe(new Date(T0 + 20_000).toISOString());
      expect(after.gpus.map((g) => [g.uuid, g.instances.length, g.migModeUnknown])).toEqual([[uuid, 0, undefined]]);
    } finally {
      nvml.close();
    }
  });

  it('is read by the contract, and an older agent without the field still is', () => {
    const inv = (extra: object) =>
      JSON.stringify({ v: 1, at: '2026-11-21T03:00:00.000Z', gpus: [{ index: 0, uuid: G0, instances: [], ...extra }] });
    const why = 'NVML did not say whether it is in MIG mode (nvmlDeviceGetMigMode: NVML_ERROR_UNKNOWN)';
    expect(readMigInventory({ [MIG_INVENTORY_ANNOTATION]: inv({ migModeUnknown: why }) }).inventory?.gpus[0]).toEqual({
      index: 0,
      uuid: G0,
      instances: [],
      migModeUnknown: why,
    });
    expect(
      readMigInventory({ [MIG_INVENTORY_ANNOTATION]: inv({}) }).inventory?.gpus[0]?.migModeUnknown,
    ).toBeUndefined();
  });
});

describe('nvmlMigInventory where NVML cannot list a GPU’s MIG instances', () => {
  // Right after a reset the instance listing (nvmlDeviceGetMaxMigDeviceCount, …GetMigDeviceHandleByIndex, the
  // instance ids) may fail while the GPU is still in MIG mode. The GPU was then left out, and remediation's restore
  // (functions/remediate/core/mig-restore.ts) read a GPU the agent does not list as one with nothing of MIG to wait
  // for: a reset MIG GPU went back to service with no instance, where mig-manager never recreates them.
  const mig = { profile: '3g.40gb', giProfileId: 9, size: 4 };
  const uuid = 'GPU-00000000-1111-2222-3333-444444444444';
  const devices = [
    { ...mig, start: 0, giId: 1, uuid: 'MIG-00000000-1111-2222-3333-444444444401' },
    { ...mig, start: 4, giId: 2, uuid: 'MIG-00000000-1111-2222-3333-444444444402' },
  ];

  it('lists a GPU in MIG mode with no instance and says why, until NVML lists its instances', async () => {
    const { nvml, mock } = await openMockNvml(oneGpu({ migMode: true, migDevices: devices }));
    try {
      const r = rig({ gpus: nvmlMigInventory(nvml) });
      await r.actuator.tick();
      expect(readMigInventory(r.annotations).inventory!.gpus.map((g) => [g.uuid, g.instances.length])).toEqual([
        [uuid, 2],
      ]);

      // The reset destroys both instances; the mode still reads on, the listing errors (NVML_ERROR_UNKNOWN, 999).
      expect(mock.resetGpu(0)).toBe(0);
      const lib = nvml.lib as unknown as Record<string, unknown>;
      const real = lib.nvmlDeviceGetMaxMigDeviceCount;
      lib.nvmlDeviceGetMaxMigDeviceCount = () => 999;
      r.advance(10_000);
      await r.actuator.tick();
      const unknown = readMigInventory(r.annotations).inventory!;
      expect(unknown.at).toBe(new Date(T0 + 10_000).toISOString());
      expect(unknown.gpus).toEqual([
        {
          index: 0,
          uuid,
          instances: [],
          migModeUnknown: expect.stringMatching(/MIG instances .*nvmlDeviceGetMaxMigDeviceCount/),
        },
      ]);

      lib.nvmlDeviceGetMaxMigDeviceCount = real;
      r.advance(10_000);
      await r.actuator.tick();
      const after = readMigInventory(r.annotations).inventory!;
      expect(after.gpus.map((g) => [g.uuid, g.instances.length, g.migModeUnknown])).toEqual([[uuid, 0, undefined]]);
    } finally {
      nvml.close();
    }
  });

  it('lists it so too when NVML reads neither its instances nor its mode', async () => {
    const { nvml, mock } = await openMockNvml(oneGpu({ migMode: true, migDevices: devices }));
    try {
      expect(mock.resetGpu(0)).toBe(0);
      const lib = nvml.lib as unknown as Record<string, unknown>;
      lib.nvmlDeviceGetMaxMigDeviceCount = () => 999;
      lib.nvmlDeviceGetMigMode = () => 999;
      const [g, ...rest] = nvmlMigInventory(nvml)();
      expect(rest).toEqual([]);
      expect(g).toEqual({ index: 0, uuid, instances: [], migModeUnknown: expect.stringMatching(/MIG instances/) });
    } finally {
      nvml.close();
    }
  });

  it('leaves out a GPU whose mode NVML reads off, and one it cannot name; lists the others', async () => {
    const scenario = oneGpu({ migMode: false }) as { gpus: object[] };
    scenario.gpus.push({
      name: 'NVIDIA A100-SXM4-80GB',
      uuid: 'GPU-00000000-1111-2222-3333-555555555555',
      pciBusId: '00000000:3C:00.0',
      memoryTotalMiB: 81920,
      migMode: true,
      migDevices: devices.map((m) => ({ ...m, uuid: m.uuid.replace('4444444444', '5555555555') })),
    });
    scenario.gpus.push({
      name: 'NVIDIA A100-SXM4-80GB',
      uuid: 'GPU-00000000-1111-2222-3333-666666666666',
      pciBusId: '00000000:3D:00.0',
      memoryTotalMiB: 81920,
      migMode: true,
    });
    const { nvml } = await openMockNvml(scenario);
    try {
      const lib = nvml.lib as unknown as Record<string, unknown>;
      const real = lib.nvmlDeviceGetMaxMigDeviceCount as (...a: unknown[]) => number;
      const [, second, third] = nvml.devices();
      // Every GPU but the second fails its listing; the third cannot even say its UUID (lost).
      lib.nvmlDeviceGetMaxMigDeviceCount = (h: unknown, ...a: unknown[]) =>
        h === second!.handle ? real(h, ...a) : 999;
      Object.assign(third!, {
        uuid: () => {
          throw new Error('nvmlDeviceGetUUID: NVML_ERROR_GPU_IS_LOST');
        },
      });
      expect(nvmlMigInventory(nvml)().map((g) => [g.index, g.instances.length, g.migModeUnknown])).toEqual([
        [1, 2, undefined],
      ]);
    } finally {
      nvml.close();
    }
  });
});
