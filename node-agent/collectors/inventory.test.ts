import { describe, expect, it } from 'vitest';
import { buildInventory, inventoryKey, podsOnGpu } from './inventory.ts';
import type { GpuReading } from './reading.ts';

const r = (procs: GpuReading['processes']): GpuReading => ({
  index: 0,
  uuid: 'GPU-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9',
  pciBusId: '00000000:18:00.0',
  name: 'NVIDIA H100 80GB HBM3',
  memoryTotalMiB: 81559,
  migMode: 'enabled',
  migDevices: [
    {
      gpuInstanceId: 1,
      computeInstanceId: 0,
      profile: '3g.40gb',
      placement: { start: 4, size: 4 },
      memoryTotalMiB: 40192,
    },
  ],
  processes: procs,
});
const sys = { driverVersion: '550.54.14', cudaVersion: '12.4' };

describe('inventory', () => {
  it('maps GPU processes to pod UIDs and MIG instances', () => {
    const inv = buildInventory(
      sys,
      [r([{ pid: 10, usedMiB: 100, gpuInstanceId: 1 }, { pid: 11 }])],
      new Map([
        [10, 'pod-a'],
        [11, undefined],
      ]),
    );
    expect(inv.gpus[0]!.processes).toEqual([{ pid: 10, usedMiB: 100, gpuInstanceId: 1, podUid: 'pod-a' }, { pid: 11 }]);
    expect(inv.gpus[0]!.migDevices[0]).toEqual({
      gpuInstanceId: 1,
      computeInstanceId: 0,
      profile: '3g.40gb',
      placement: { start: 4, size: 4 },
      memoryMiB: 40192,
    });
    expect(podsOnGpu(inv, 'GPU-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9', 1)).toEqual(['pod-a']);
    expect(podsOnGpu(inv, 'GPU-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9', 2)).toEqual([]);
    expect(podsOnGpu(inv, 'GPU-unknown')).toEqual([]);
  });

  it('treats memory churn as no change, and a new pod as a change', () => {
    const pods = new Map([
      [10, 'pod-a'],
      [12, 'pod-b'],
    ]);
    const a = inventoryKey(buildInventory(sys, [r([{ pid: 10, usedMiB: 100 }])], pods));
    const b = inventoryKey(buildInventory(sys, [r([{ pid: 10, usedMiB: 900 }])], pods));
    const c = inventoryKey(buildInventory(sys, [r([{ pid: 10, usedMiB: 900 }, { pid: 12 }])], pods));
    expect(a).toBe(b);
    expect(c).not.toBe(b);
  });
});
