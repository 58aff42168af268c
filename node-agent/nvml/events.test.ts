import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MOCK_NVML_SCENARIOS } from '../../infra/local/mock-nvml/build.ts';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import { NVML_EVENT, type NvmlEventWatcher } from './events.ts';
import type { Nvml } from './nvml.ts';

// Manual mock clock: nvmlEventSetWait_v2 answers TIMEOUT at once when nothing is pending, so
// wait(0) is a non-blocking poll and nothing here sleeps.
let nvml: Nvml | undefined;
let watcher: NvmlEventWatcher | undefined;
afterEach(async () => {
  await watcher?.close();
  nvml?.close();
  nvml = watcher = undefined;
});

async function watch(scenario: string | object, mask?: bigint, manualClock = true) {
  const s = await openMockNvml(scenario, { manualClock });
  nvml = s.nvml;
  watcher = s.nvml.events(mask);
  return { ...s, watcher };
}

describe('NvmlEventWatcher', () => {
  it('delivers an injected XID 79 with the GPU index and UUID', async () => {
    const { mock, watcher } = await watch('dgx-a100-8x.json');
    expect(await watcher.wait(0)).toBeNull();
    expect(mock.injectXid(6, 79)).toBe(0);
    const event = await watcher.wait(1000);
    expect(event).toEqual({
      kind: 'event',
      deviceIndex: 6,
      uuid: nvml?.device(6).uuid(),
      pciBusId: '00000000:B7:00.0',
      eventType: 8,
      eventData: 79,
      xid: 79,
    });
    expect(await watcher.wait(0)).toBeNull();
  });

  it('ties an XID on a MIG instance to its GPU and compute instance ids', async () => {
    const { mock, watcher } = await watch('h100-mig.json');
    mock.injectXid(1, 48, 2, 0);
    expect(await watcher.wait(0)).toMatchObject({ deviceIndex: 1, xid: 48, gpuInstanceId: 2, computeInstanceId: 0 });
  });

  it('fires a scheduled scenario fault only once mock time has passed it', async () => {
    const { mock, watcher } = await watch('h100-mig.json');
    mock.advanceMs(19_999);
    expect(await watcher.wait(0)).toBeNull();
    mock.advanceMs(1);
    expect(await watcher.wait(0)).toMatchObject({ deviceIndex: 0, xid: 31, gpuInstanceId: 9 });
  });

  it('keeps events in the order they happened', async () => {
    const { mock, watcher } = await watch('dgx-a100-8x.json');
    for (const [gpu, xid] of [
      [0, 13],
      [3, 31],
      [0, 43],
    ] as const)
      mock.injectXid(gpu, xid);
    const seen = [];
    for (let e = await watcher.wait(0); e; e = await watcher.wait(0))
      seen.push(e.kind === 'event' ? [e.deviceIndex, e.xid] : e.kind);
    expect(seen).toEqual([
      [0, 13],
      [3, 31],
      [0, 43],
    ]);
  });

  it('registers only the event types each GPU reports as supported', async () => {
    const scenario = oneGpu({ supportedEvents: 0x3 }, {});
    const { mock, watcher } = await watch(scenario, NVML_EVENT.xidCriticalError | NVML_EVENT.doubleBitEcc);
    expect(watcher.registered.map((r) => r.index)).toEqual([0]);
    mock.injectXid(0, 79); // XID is not supported on this GPU: nothing registered for it
    mock.injectFault({ kind: 'ecc', gpu: 0, uncorrected: 1 });
    expect(await watcher.wait(0)).toMatchObject({ kind: 'event', eventType: 0x2, eventData: 0 });
    expect(await watcher.wait(0)).toBeNull();
  });

  it('skips a GPU that supports none of the requested types', async () => {
    const { watcher } = await watch(oneGpu({ supportedEvents: 0x1 }));
    expect(watcher.registered).toEqual([]);
    expect(watcher.skipped).toEqual([{ index: 0, reason: 'no requested event type supported' }]);
    expect(await watcher.wait(0)).toBeNull();
  });

  it('a GPU that refuses event registration is skipped, and the set keeps the others', async () => {
    const two = oneGpu() as { gpus: Record<string, unknown>[] };
    const scenario = {
      ...two,
      gpus: [
        { ...two.gpus[0], registerEventsReturn: 999 },
        { ...two.gpus[0], uuid: 'GPU-00000000-1111-2222-3333-555555555555', pciBusId: '00000000:3C:00.0' },
      ],
    };
    const { mock, watcher } = await watch(scenario);
    expect(watcher.registered.map((r) => r.index)).toEqual([1]);
    expect(watcher.skipped).toEqual([{ index: 0, reason: 'nvmlDeviceRegisterEvents: Unknown Error' }]);
    expect(mock.injectXid(1, 79)).toBe(0);
    expect(await watcher.wait(1000)).toMatchObject({ kind: 'event', deviceIndex: 1, xid: 79 });
  });

  it('reports a lost GPU once and keeps delivering the others', async () => {
    const { mock, watcher, nvml } = await watch('dgx-a100-8x.json');
    const uuid = nvml.device(5).uuid();
    mock.injectFault({ kind: 'gpuLost', gpu: 5 });
    expect(await watcher.wait(0)).toEqual({ kind: 'gpu-lost', deviceIndex: 5, uuid, pciBusId: '00000000:90:00.0' });
    expect(() => nvml.device(5).uuid()).toThrow(/NVML_ERROR_GPU_IS_LOST/);
    expect(watcher.registered.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 6, 7]);
    mock.injectXid(5, 79); // a lost GPU reports nothing more
    mock.injectXid(2, 94);
    expect(await watcher.wait(0)).toMatchObject({ deviceIndex: 2, xid: 94 });
    expect(await watcher.wait(0)).toBeNull();
  });

  it('watches a lost GPU again once a reset brings it back, found by its UUID', async () => {
    let now = 0;
    const dgx = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'), 'utf8')) as {
      gpus: object[];
    };
    // No processes on GPU 5: the mock's reset refuses a GPU in use, as a real one does.
    const s = await openMockNvml(
      { ...dgx, faults: [], gpus: dgx.gpus.map((g, i) => (i === 5 ? { ...g, processes: [] } : g)) },
      { manualClock: true },
    );
    nvml = s.nvml;
    watcher = s.nvml.events(undefined, { now: () => now });
    const w = watcher;
    const uuid = nvml.device(5).uuid();
    s.mock.injectFault({ kind: 'gpuLost', gpu: 5 });
    expect(await w.wait(0)).toMatchObject({ kind: 'gpu-lost', deviceIndex: 5, uuid });
    expect(w.watchesXids(uuid)).toBe(false);
    expect(s.mock.resetGpu(5)).toBe(0); // the GPU answers NVML again
    now += 60_000;
    expect(await w.wait(0)).toEqual({ kind: 'gpu-watched', deviceIndex: 5, uuid, pciBusId: '00000000:90:00.0' });
    expect(w.watchesXids(uuid)).toBe(true);
    s.mock.injectXid(5, 79);
    expect(await w.wait(0)).toMatchObject({ kind: 'event', deviceIndex: 5, uuid, xid: 79 });
    // Lost again: reported again (a new loss, not the old one).
    s.mock.injectFault({ kind: 'gpuLost', gpu: 5 });
    expect(await w.wait(0)).toMatchObject({ kind: 'gpu-lost', deviceIndex: 5, uuid });
  });

  it('omits MIG ids when NVML reports 0xFFFFFFFF', async () => {
    const { mock, watcher } = await watch(oneGpu());
    mock.injectXid(0, 999);
    const event = await watcher.wait(0);
    expect(event).toEqual({
      kind: 'event',
      deviceIndex: 0,
      uuid: 'GPU-00000000-1111-2222-3333-444444444444',
      pciBusId: '00000000:3B:00.0',
      eventType: 8,
      eventData: 999,
      xid: 999,
    });
  });

  it('refuses a second concurrent wait', async () => {
    const { watcher } = await watch(oneGpu());
    const first = watcher.wait(0);
    await expect(watcher.wait(0)).rejects.toThrow(/another wait is in progress/);
    expect(await first).toBeNull();
  });

  it('with the real clock, returns an event injected while the wait is pending', async () => {
    const { mock, watcher } = await watch(oneGpu(), undefined, false);
    const waiting = watcher.wait(60_000); // the mock's condition variable wakes it; a minute if nothing did
    mock.injectXid(0, 94);
    expect(await waiting).toMatchObject({ kind: 'event', xid: 94 });
  });
});
