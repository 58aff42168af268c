import { describe, expect, it } from 'vitest';
import { buildInventory, cardSharing, inventoryKey, podsOnGpu } from './inventory.ts';
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

  it('MPS (issue #32): the tenants are the MPS clients, never the MPS server of the control daemon', () => {
    const uuid = 'GPU-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9';
    const whole = { ...r([{ pid: 900 }, { pid: 10, mps: true }, { pid: 11, mps: true }]), migDevices: [] };
    const owners = new Map([
      [900, 'mps-daemon'],
      [10, 'tenant-a'],
      [11, 'tenant-b'],
    ]);
    const inv = buildInventory(sys, [whole], owners);
    expect(inv.gpus[0]!.processes[1]).toEqual({ pid: 10, podUid: 'tenant-a', mps: true });
    expect(podsOnGpu(inv, uuid)).toEqual(['tenant-a', 'tenant-b']);
    expect(cardSharing(inv, uuid)).toBe('mps');
  });

  it('two pods on one whole GPU are time-slicing; one pod is not shared (issue #32)', () => {
    const uuid = 'GPU-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9';
    const whole = (pids: number[]) => ({ ...r(pids.map((pid) => ({ pid }))), migDevices: [] });
    const owners = new Map([
      [10, 'tenant-a'],
      [11, 'tenant-b'],
      [12, 'tenant-a'],
    ]);
    expect(cardSharing(buildInventory(sys, [whole([10, 11])], owners), uuid)).toBe('time-slicing');
    expect(cardSharing(buildInventory(sys, [whole([10, 12])], owners), uuid)).toBeUndefined();
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
