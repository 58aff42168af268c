/**
 * PodResources' allocatable device IDs by GPU (pod-resources-source.ts allocatableByGpu), written by the
 * actuator to the Node when they change (events/gpu-devices.ts): the functions verify a fence under
 * NVIDIA's plugin by them (issue #27).
 */
import { describe, expect, it } from 'vitest';
import { GPU_DEVICES_ANNOTATION, GPU_DEVICES_RECONFIRM_MS, readGpuDevices } from '../../events/index.ts';
import { allocatableByGpu, type PodResourcesReading } from '../collectors/pod-resources-source.ts';
import { GpuActuator } from './actuator.ts';
import type { FenceFileOps } from './actuator.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const G1 = 'GPU-11111111-0000-4000-8000-000000000000';
const MIG = 'MIG-22222222-0000-4000-8000-000000000000';
const GPUS = [
  { uuid: G0, migDevices: [] },
  { uuid: G1, migDevices: [{ uuid: MIG }] },
];
const reading = (allocatable: { resourceName: string; deviceIds: string[] }[]): PodResourcesReading => ({
  known: true,
  pods: [],
  allocatable,
});

describe('allocatableByGpu', () => {
  it("names each GPU's allocatable device IDs: replicas and MIG devices by their GPU, an absent GPU with none", () => {
    const r = allocatableByGpu(
      reading([
        { resourceName: 'nvidia.com/gpu', deviceIds: [`${G0}::1`, `${G0}::0`] },
        { resourceName: 'nvidia.com/mig-1g.10gb', deviceIds: [MIG] },
        { resourceName: 'example.com/nic', deviceIds: ['eth9'] },
      ]),
      GPUS,
    );
    expect(r).toEqual({ known: true, gpus: { [G0]: [`${G0}::0`, `${G0}::1`], [G1]: [MIG] } });
    expect(allocatableByGpu(reading([]), GPUS)).toEqual({ known: true, gpus: { [G0]: [], [G1]: [] } });
  });

  it('unknown, never "out": no socket, or device IDs that name no GPU here (deviceIDStrategy: index)', () => {
    expect(allocatableByGpu({ known: false, reason: 'no PodResources socket' }, GPUS)).toEqual({
      known: false,
      reason: 'no PodResources socket',
    });
    const r = allocatableByGpu(reading([{ resourceName: 'nvidia.com/gpu', deviceIds: ['0'] }]), GPUS);
    expect(r).toMatchObject({ known: false, reason: expect.stringContaining('names no GPU here') });
  });
});

describe('the actuator writes the allocatable devices to its Node', () => {
  it('when what they say changes, not every tick', async () => {
    const annotations: Record<string, string> = {};
    let writes = 0;
    let now = Date.parse('2026-12-05T00:00:00.000Z');
    let said: { known: true; gpus: Record<string, string[]> } = { known: true, gpus: { [G0]: [G0] } };
    const fence: FenceFileOps = {
      read: () => ({ index: [], uuid: [] }),
      ours: () => [],
      add: () => {},
      remove: () => true,
    };
    const actuator = new GpuActuator({
      node: 'n1',
      nodeApi: {
        annotations: async () => ({ ...annotations }),
        writeResults: async () => {},
        writeGpuDevices: async (json) => void (writes++, (annotations[GPU_DEVICES_ANNOTATION] = json)),
      },
      gpus: {
        indexOf: () => 0,
        holders: () => [],
        reset: async () => ({ ok: true }),
        health: () => ({
          nvmlAnswers: true,
          recoveryAction: 'none',
          remapPending: false,
          remapFailed: false,
          eccUncorrected: 0,
        }),
      },
      fence,
      devices: async () => said,
      publish: async () => {},
      xids: () => [],
      now: () => now,
    });
    await actuator.tick();
    now += 5_000;
    await actuator.tick();
    expect(writes).toBe(1);
    said = { known: true, gpus: { [G0]: [] } };
    await actuator.tick();
    expect(writes).toBe(2);
    const changedAt = new Date(now).toISOString();
    expect(readGpuDevices(annotations)).toEqual({
      v: 1,
      at: changedAt,
      checked: changedAt,
      known: true,
      gpus: { [G0]: [] },
    });
    // G0 is out (a fence rests on it): unchanged, the word is re-confirmed every 2 minutes, `at` kept.
    now += GPU_DEVICES_RECONFIRM_MS - 5_000;
    await actuator.tick();
    expect(writes).toBe(2);
    now += 5_000;
    await actuator.tick();
    expect(writes).toBe(3);
    expect(readGpuDevices(annotations)).toMatchObject({ at: changedAt, checked: new Date(now).toISOString() });
    // Nothing out: nothing rests on it, so no writes while it does not change.
    said = { known: true, gpus: { [G0]: [G0] } };
    await actuator.tick();
    expect(writes).toBe(4);
    now += 10 * GPU_DEVICES_RECONFIRM_MS;
    await actuator.tick();
    expect(writes).toBe(4);
  });
});
