import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { oneGpu } from '../test/support/mock-nvml.ts';
import { MOCK_NVML_SCENARIOS } from '../infra/local/mock-nvml/build.ts';
import { validateDetail } from '../events/validate.ts';
import { AgentHealth } from './http.ts';
import type { OutgoingEvent } from './events.ts';
import { podUidOf, startAgent, type AgentFixture } from '../test/support/agent-fixture.ts';

// The real agent on the mock NVML library through the real koffi binding, with the mock's manual
// clock: nvmlEventSetWait_v2 answers at once, so pollEventsOnce(0) is a non-blocking poll.
let fx: AgentFixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

const DGX_PIDS = [4100, 4101, 4102, 4103, 4104, 4105, 4106, 4107];
const MIG_PIDS = [2201, 2202, 2301];
const ofType = (events: OutgoingEvent[], detailType: string) => events.filter((e) => e.detailType === detailType);
const detail = (e: OutgoingEvent | undefined) => e?.detail as Record<string, unknown>;

function expectValid(events: OutgoingEvent[]): void {
  for (const e of events) expect(validateDetail(e.detailType, e.detail)).toMatchObject({ ok: true });
}

describe('NVSwitch SXids from the kernel log', () => {
  it('publishes a fatal SXid as a critical NVSwitch SXid Error, a non-fatal one as normal, and not the detail lines after them', async () => {
    fx = await startAgent(oneGpu());
    const lines = [
      '[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up',
      '[6781753.404848] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Severity 1 Engine instance 48 Sub-engine instance 00',
      '[6781753.406566] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Data {0x10000000, 0x10000000, 0x00000000}',
      '[6781760.000001] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)',
    ];
    const out = lines.flatMap((l) => fx!.agent.onKernelLine(l));
    expect(
      out.map((e) => [e.detailType, e.priority, detail(e).switch, detail(e).sxid, detail(e).severity, detail(e).link]),
    ).toEqual([
      ['NVSwitch SXid Error', 'critical', 'nvidia-nvswitch1', 20034, 'fatal', 48],
      ['NVSwitch SXid Error', 'normal', 'nvidia-nvswitch3', 12028, 'nonfatal', 32],
    ]);
    expectValid(out);
  });
});

describe('an NVML XID and its kernel-log line', () => {
  // On a real H200 the NVML event won the race every time and the kernel line, the only one naming
  // the pid, was dropped as its duplicate. The agent now lets the kernel log be read first.
  const LINE =
    '4,360,42811810,c;NVRM: Xid (PCI:0000:3B:00): 31, pid=4242, name=python3, channel 0x0000001e, intr 00000000. MMU Fault: ENGINE GRAPHICS';

  it('publishes the kernel line (with pid and process) when the follower has it, and counts the NVML sighting as its duplicate', async () => {
    const duplicates: string[] = [];
    const caughtUp: number[] = [];
    const metrics = {
      nvmlError() {},
      xidPublished() {},
      holdersSampled() {},
      xidDuplicate: (via: string) => duplicates.push(via),
      gpusSampled: async () => {},
    };
    fx = await startAgent(oneGpu(), {
      overrides: {
        metrics,
        kernelLog: {
          catchUp: async (ms) => {
            caughtUp.push(ms);
            fx!.agent.onKernelLine(LINE);
            return true;
          },
        },
      },
    });
    await fx.agent.sampleOnce();
    fx.mock.injectXid(0, 31);
    await fx.agent.pollEventsOnce(0);
    const xids = ofType(fx.published, 'GPU XID Error');
    expect(xids.map((e) => [detail(e).xid, detail(e).via, detail(e).pid, detail(e).process])).toEqual([
      [31, 'kmsg', 4242, 'python3'],
    ]);
    expect(duplicates).toEqual(['nvml']);
    expect(caughtUp).toEqual([100]);
    expectValid(xids);
  });

  it('publishes the NVML sighting when the kernel log has nothing (unreadable, or slower than the catch-up)', async () => {
    fx = await startAgent(oneGpu(), { overrides: { kernelLog: { catchUp: async () => false } } });
    await fx.agent.sampleOnce();
    fx.mock.injectXid(0, 79);
    await fx.agent.pollEventsOnce(0);
    expect(ofType(fx.published, 'GPU XID Error').map((e) => [detail(e).xid, detail(e).via, detail(e).pid])).toEqual([
      [79, 'nvml', null],
    ]);
  });
});

describe('Agent.sampleOnce', () => {
  it('publishes the inventory at start, with pods from /proc, and again only when it changes', async () => {
    fx = await startAgent('dgx-a100-8x.json', { pids: DGX_PIDS });
    const first = await fx.agent.sampleOnce();
    const [inv] = ofType(first, 'GPU Inventory');
    expect(inv?.priority).toBe('normal');
    const gpus = detail(inv).gpus as {
      index: number;
      processes: { pid: number; podUid?: string }[];
      migMode: string;
    }[];
    expect(gpus).toHaveLength(8);
    expect(gpus[3]).toMatchObject({
      index: 3,
      migMode: 'disabled',
      processes: [{ pid: 4103, usedMiB: 70000, podUid: podUidOf(4103) }],
    });
    expectValid(first);
    fx.advance(1000);
    expect(ofType(await fx.agent.sampleOnce(), 'GPU Inventory')).toEqual([]);
  });

  it('publishes a health crossing once, not once per sample', async () => {
    fx = await startAgent(oneGpu({ series: { intervalMs: 1000, tempC: [60, 82, 83, 84, 83] } }));
    const health: OutgoingEvent[] = [];
    for (let s = 0; s < 5; s++) {
      health.push(...ofType(await fx.agent.sampleOnce(), 'GPU Health Changed'));
      fx.advance(1000);
    }
    expect(health.map((e) => [detail(e).condition, detail(e).state, detail(e).value])).toEqual([
      ['temperature', 'firing', 82],
    ]);
    expect(health[0]?.priority).toBe('critical');
    expectValid(health);
  });

  it('publishes throttling from the clock-event bit mask through the real path (0x48: hardware and thermal slowdown)', async () => {
    // mock NVML mask → koffi binding → clock-reason names → health collector → event
    fx = await startAgent(oneGpu({ series: { intervalMs: 1000, clockEventReasons: [0, 0x48, 0x48, 0x1, 0x1] } }));
    const health: OutgoingEvent[] = [];
    for (let s = 0; s < 5; s++) {
      health.push(...ofType(await fx.agent.sampleOnce(), 'GPU Health Changed'));
      fx.advance(1000);
    }
    expect(health.map((e) => [detail(e).condition, detail(e).state])).toEqual([
      ['throttling', 'firing'],
      ['throttling', 'resolved'],
    ]);
    expect(String(detail(health[0]!).message)).toContain('hwSlowdown, hwThermalSlowdown');
    expectValid(health);
  });

  it('an odd NVML answer for one optional field fails that field alone: the rest is sampled, the error counted', async () => {
    // Field 230 (recovery action) answering NVML_ERROR_UNKNOWN, as some pre-R565 drivers do.
    fx = await startAgent(oneGpu({ recoveryActionReturn: 999, series: { intervalMs: 1000, tempC: [90] } }));
    const out = await fx.agent.sampleOnce();
    expect(ofType(out, 'GPU Health Changed').map((e) => detail(e).condition)).toEqual(['temperature']);
    expect(ofType(out, 'GPU Health Changed').some((e) => detail(e).condition === 'monitoring-degraded')).toBe(false);
  });

  it('keeps the ECC counters across a restart: a restarted agent does not report old errors as new', async () => {
    const state = join(await mkdtemp(join(tmpdir(), 'gr-ecc-')), 'spool.jsonl.ecc.json');
    const scenario = oneGpu({
      ecc: { volatileCorrected: 0, volatileUncorrected: 2, aggregateCorrected: 0, aggregateUncorrected: 2 },
    });
    fx = await startAgent(scenario, { overrides: { eccStatePath: state } });
    const first = ofType(await fx.agent.sampleOnce(), 'GPU Health Changed').map((e) => detail(e).condition);
    expect(first).toEqual(['ecc-uncorrected']); // first start: nobody has seen these before
    await fx.close();
    fx = await startAgent(scenario, { overrides: { eccStatePath: state } });
    expect(ofType(await fx.agent.sampleOnce(), 'GPU Health Changed')).toEqual([]);
    fx.mock.injectFault({ kind: 'ecc', gpu: 0, uncorrected: 1 });
    expect(ofType(await fx.agent.sampleOnce(), 'GPU Health Changed').map((e) => detail(e).condition)).toEqual([
      'ecc-uncorrected',
    ]);
  });

  it('reports a GPU that was here before and NVML no longer lists at start (gpu-missing), and its return', async () => {
    const memory = join(await mkdtemp(join(tmpdir(), 'gr-gpus-')), 'spool.jsonl.gpus.json');
    const dgx = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'), 'utf8')) as {
      gpus: { uuid: string }[];
    };
    fx = await startAgent(dgx, { overrides: { gpuMemoryPath: memory } });
    expect(ofType(await fx.agent.sampleOnce(), 'GPU Health Changed')).toEqual([]);
    await fx.close();
    // GPU 3 fell off the bus while the agent was down: the driver now enumerates seven.
    fx = await startAgent(
      { ...dgx, gpus: dgx.gpus.filter((_, i) => i !== 3) },
      { overrides: { gpuMemoryPath: memory } },
    );
    const missing = ofType(await fx.agent.sampleOnce(), 'GPU Health Changed');
    expect(
      missing.map((e) => [detail(e).condition, detail(e).state, (detail(e).gpu as { uuid: string }).uuid]),
    ).toEqual([['gpu-missing', 'firing', dgx.gpus[3]!.uuid]]);
    expectValid(missing);
    await fx.close();
    fx = await startAgent(dgx, { overrides: { gpuMemoryPath: memory } });
    expect(
      ofType(await fx.agent.sampleOnce(), 'GPU Health Changed').map((e) => [detail(e).condition, detail(e).state]),
    ).toEqual([['gpu-missing', 'resolved']]);
  });

  it('reports fewer GPUs than the node should have (EXPECTED_GPUS) at start, with no GPU to name, and its return', async () => {
    const memory = join(await mkdtemp(join(tmpdir(), 'gr-count-')), 'spool.jsonl.gpus.json');
    const dgx = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'), 'utf8')) as {
      gpus: { uuid: string }[];
    };
    // GPU 3 was dead before any agent ran here: no memory can name it; only the count says so.
    fx = await startAgent(
      { ...dgx, gpus: dgx.gpus.filter((_, i) => i !== 3) },
      { overrides: { gpuMemoryPath: memory, expectedGpus: 8 } },
    );
    const short = ofType(await fx.agent.sampleOnce(), 'GPU Health Changed');
    expect(
      short.map((e) => [detail(e).condition, detail(e).state, detail(e).value, detail(e).threshold, detail(e).gpu]),
    ).toEqual([['gpu-count', 'firing', 7, 8, undefined]]);
    expect(short[0]!.priority).toBe('critical');
    expectValid(short);
    await fx.close();
    fx = await startAgent(dgx, { overrides: { gpuMemoryPath: memory, expectedGpus: 8 } });
    expect(
      ofType(await fx.agent.sampleOnce(), 'GPU Health Changed').map((e) => [detail(e).condition, detail(e).state]),
    ).toEqual([['gpu-count', 'resolved']]);
    await fx.close();
    fx = await startAgent(dgx, { overrides: { gpuMemoryPath: memory, expectedGpus: 8 } });
    expect(ofType(await fx.agent.sampleOnce(), 'GPU Health Changed')).toEqual([]);
  });

  it('a contained ECC error (XID 94) bumps the counter without raising ecc-uncorrected; an uncontained one does', async () => {
    fx = await startAgent(oneGpu());
    await fx.agent.sampleOnce();
    fx.mock.injectXid(0, 94);
    fx.mock.injectFault({ kind: 'ecc', gpu: 0, uncorrected: 1 });
    expect(ofType(await fx.agent.pollEventsOnce(0), 'GPU XID Error').map((e) => detail(e).xid)).toEqual([94]);
    fx.advance(1000);
    expect(ofType(await fx.agent.sampleOnce(), 'GPU Health Changed')).toEqual([]);
    fx.mock.injectFault({ kind: 'ecc', gpu: 0, uncorrected: 1 });
    fx.advance(1000);
    expect(
      ofType(await fx.agent.sampleOnce(), 'GPU Health Changed').map((e) => [detail(e).condition, detail(e).value]),
    ).toEqual([['ecc-uncorrected', 2]]);
  });

  it('publishes every change of the recovery action, not only none ↔ not-none', async () => {
    // field 230 through the real path: gpu-reset (1) → node-reboot (2) → none (0)
    const faults = [1, 2, 0].map((action, i) => ({ atMs: 1000 * (i + 1), gpu: 0, kind: 'recoveryAction', action }));
    fx = await startAgent(oneGpu({}, { faults }));
    const health: OutgoingEvent[] = [];
    for (let s = 0; s < 5; s++) {
      health.push(
        ...ofType(await fx.agent.sampleOnce(), 'GPU Health Changed').filter(
          (e) => detail(e).condition === 'recovery-action',
        ),
      );
      fx.advance(1000);
    }
    expect(health.map((e) => [detail(e).state, detail(e).recoveryAction])).toEqual([
      ['firing', 'gpu-reset'],
      ['firing', 'node-reboot'],
      ['resolved', 'none'],
    ]);
    expectValid(health);
  });

  it('publishes one utilization summary when the window closes, and the rest on flush', async () => {
    fx = await startAgent('dgx-a100-8x.json');
    const summaries: OutgoingEvent[] = [];
    for (let s = 0; s <= 60; s += 10) {
      summaries.push(...ofType(await fx.agent.sampleOnce(), 'GPU Utilization Summary'));
      fx.advance(10_000);
    }
    expect(summaries.map((e) => detail(e).samples)).toEqual([6]);
    expect(fx.agent.flush().map((e) => detail(e).samples)).toEqual([1]);
    expectValid(summaries);
  });

  it('leaves NOT_SUPPORTED fields out of readings and events', async () => {
    fx = await startAgent('t4-node.json', { pids: [3100] });
    const sample = fx.agent.source.sample();
    expect(sample.ok).toBe(true);
    const r = sample.ok ? sample.readings[0]! : undefined;
    expect(r).toBeDefined();
    for (const field of ['remappedRows', 'nvlinkActive', 'recoveryAction', 'migMode', 'migDevices'] as const)
      expect(r).not.toHaveProperty(field);
    expect(r).toHaveProperty('temperatureC');
    await fx.agent.sampleOnce();
    fx.mock.injectXid(0, 13);
    const [xid] = await fx.agent.pollEventsOnce(0);
    expect(detail(xid)).not.toHaveProperty('recoveryAction');
    expect(detail(xid)).not.toHaveProperty('mig');
  });
});

describe('Agent when NVML stops answering', () => {
  it('reports monitoring-degraded after three failed samples, marks NVML unhealthy, and never blames a GPU', async () => {
    const health = new AgentHealth();
    fx = await startAgent('t4-node.json', { overrides: { watchEvents: false, health } });
    await fx.agent.sampleOnce();
    // After nvmlShutdown every call answers UNINITIALIZED: the driver "went away" under the agent.
    fx.nvml.close();
    const failed: OutgoingEvent[] = [];
    for (let i = 0; i < 4; i++) failed.push(...(await fx.agent.sampleOnce()));
    expect(failed.map((e) => [e.detailType, detail(e).condition, detail(e).state, detail(e).gpu])).toEqual([
      ['GPU Health Changed', 'monitoring-degraded', 'firing', undefined],
    ]);
    expectValid(failed);
    expect(health.nvmlHealthy).toBe(false);
    expect(health.nvmlReason).toContain('NVML_ERROR_UNINITIALIZED');
  });
});

describe('Agent.pollEventsOnce and onKernelLine', () => {
  it('turns an injected XID on a MIG instance into a GPU XID Error with the instance and its pods', async () => {
    fx = await startAgent('h100-mig.json', { pids: MIG_PIDS });
    await fx.agent.sampleOnce();
    expect(await fx.agent.pollEventsOnce(0)).toEqual([]);
    fx.advance(5000);
    fx.mock.injectXid(1, 48, 2, 0);
    const events = await fx.agent.pollEventsOnce(0);
    expect(events.map((e) => e.detailType)).toEqual(['GPU XID Error']);
    expectValid(events);
    expect(events[0]?.priority).toBe('critical');
    expect(detail(events[0])).toMatchObject({
      node: 'gpu-node-1',
      observedAt: '2026-01-01T00:00:05.000Z',
      gpu: {
        index: 1,
        uuid: 'GPU-4822a95c-0707-b9c0-e66a-fc869143501b',
        pciBusId: '00000000:2A:00.0',
        name: expect.any(String),
      },
      mig: {
        gpuInstanceId: 2,
        computeInstanceId: 0,
        uuid: 'MIG-3c5cea4d-779f-dc0a-048a-857e0709611d',
        profile: '3g.40gb',
      },
      xid: 48,
      via: 'nvml',
      recoveryAction: 'none',
      pods: [{ uid: podUidOf(2301) }],
    });
  });

  it('names only the pods of the MIG instance that failed, not the whole GPU', async () => {
    fx = await startAgent('h100-mig.json', { pids: MIG_PIDS });
    await fx.agent.sampleOnce();
    fx.mock.injectXid(0, 31, 9, 0);
    const [event] = await fx.agent.pollEventsOnce(0);
    expect(detail(event).pods).toEqual([{ uid: podUidOf(2202) }]);
  });

  it('names the pods of every instance for a whole-GPU XID seen on one MIG instance (its reset destroys them all)', async () => {
    fx = await startAgent('h100-mig.json', { pids: MIG_PIDS });
    await fx.agent.sampleOnce();
    fx.mock.injectXid(0, 95, 9, 0);
    const [event] = await fx.agent.pollEventsOnce(0);
    expect(detail(event)).toMatchObject({ xid: 95, mig: { gpuInstanceId: 9 } });
    expect((detail(event).pods as { uid: string }[]).map((p) => p.uid).sort()).toEqual(
      [podUidOf(2201), podUidOf(2202)].sort(),
    );
  });

  it('does not publish the kernel-log sighting of an XID NVML already reported', async () => {
    fx = await startAgent('h100-mig.json', { pids: MIG_PIDS });
    await fx.agent.sampleOnce();
    fx.mock.injectXid(1, 48, 2, 0);
    expect(await fx.agent.pollEventsOnce(0)).toHaveLength(1);
    fx.advance(2000);
    const line =
      '6,1234,5678901,-;NVRM: Xid (PCI:0000:2a:00 GPU-I:02): 48, pid=2301, name=python3, DBE (double bit error) ECC error';
    expect(fx.agent.onKernelLine(line)).toEqual([]);
    // A later occurrence, outside the pairing window, is a new XID.
    fx.advance(60_000);
    const later = fx.agent.onKernelLine(line);
    expect(later.map((e) => [detail(e).via, detail(e).pid, detail(e).process])).toEqual([['kmsg', 2301, 'python3']]);
    expect(detail(later[0])).toMatchObject({
      mig: { gpuInstanceId: 2, profile: '3g.40gb' },
      pods: [{ uid: podUidOf(2301) }],
    });
    expectValid(later);
    expect(fx.published.filter((e) => e.detailType === 'GPU XID Error')).toHaveLength(2);
  });

  it("carries an NVLink5 line's words and NVIDIA's decode of them on the event", async () => {
    fx = await startAgent('h100-mig.json', { pids: MIG_PIDS });
    await fx.agent.sampleOnce();
    const [event] = fx.agent.onKernelLine(
      'NVRM: Xid (PCI:0000:2a:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 08 (0x00000013 0x00000000 0x00000000 0x00000000)',
    );
    expectValid([event!]);
    expect(detail(event)).toMatchObject({
      xid: 149,
      severity: 'nonfatal',
      nvlink: {
        unit: 'NETIR_BER_EVENT',
        link: 8,
        intrinfo: 0x13,
        errorStatus: 0,
        decoded: {
          unit: 'NETIR_BER_EVENT',
          resolution: 'IGNORE',
          reason: expect.stringContaining('INVESTIGATE_LINK_SI_AND_CABLES'),
        },
      },
    });
  });

  it('on a shared GPU, an application XID names the pod of the pid the kernel log gives as its culprit; a hardware XID names none', async () => {
    // Two pods time-slicing one GPU.
    fx = await startAgent(
      oneGpu({
        processes: [
          { pid: 5001, usedMiB: 1000 },
          { pid: 5002, usedMiB: 1000 },
        ],
      }),
      { pids: [5001, 5002] },
    );
    await fx.agent.sampleOnce();
    const both = [podUidOf(5001), podUidOf(5002)].sort();
    const app = fx.agent.onKernelLine('NVRM: Xid (PCI:0000:3b:00): 13, pid=5002, name=python, Graphics Exception');
    expect(detail(app[0]).culprit).toEqual({ uid: podUidOf(5002) });
    // Every pod on the GPU is still listed: a quarantine the XID escalates to moves them all.
    expect((detail(app[0]).pods as { uid: string }[]).map((p) => p.uid).sort()).toEqual(both);
    fx.advance(60_000);
    const hw = fx.agent.onKernelLine('NVRM: Xid (PCI:0000:3b:00): 95, pid=5002, name=python, Uncontained ECC error');
    expect((detail(hw[0]).pods as { uid: string }[]).map((p) => p.uid).sort()).toEqual(both);
    expect(detail(hw[0]).culprit).toBeUndefined();
    expectValid([...app, ...hw]);
  });

  it("passes an NVLink5 line's Nonfatal/Fatal verdict on in the XID event", async () => {
    fx = await startAgent('dgx-a100-8x.json', { pids: DGX_PIDS });
    await fx.agent.sampleOnce();
    const out = fx.agent.onKernelLine(
      'NVRM: Xid (PCI:0000:07:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 09 (0x00000000 0x00000000)',
    );
    expect(detail(out[0])).toMatchObject({ xid: 145, via: 'kmsg', severity: 'nonfatal' });
    expectValid(out);
  });

  it('publishes a kernel-log XID first and absorbs the NVML sighting that follows', async () => {
    fx = await startAgent('dgx-a100-8x.json', { pids: DGX_PIDS });
    await fx.agent.sampleOnce();
    const out = fx.agent.onKernelLine(
      '[ 1234.567890] NVRM: Xid (PCI:0000:b7:00): 79, pid=4106, name=python, GPU has fallen off the bus.',
    );
    expect(out.map((e) => [detail(e).xid, detail(e).via, detail(e).message])).toEqual([
      [79, 'kmsg', 'GPU has fallen off the bus.'],
    ]);
    fx.mock.injectXid(6, 79);
    expect(await fx.agent.pollEventsOnce(0)).toEqual([]);
    expect(fx.agent.onKernelLine('NVRM: Xid (PCI:0000:ff:00): 79, pid=1, name=x, not ours')).toEqual([]);
    expect(fx.agent.onKernelLine('some other kernel line')).toEqual([]);
    const long = fx.agent.onKernelLine(
      `NVRM: Xid (PCI:0000:07:00): 13, pid=4100, name=${'p'.repeat(400)}, Graphics Exception`,
    );
    expect((detail(long[0]).process as string).length).toBe(256);
    expectValid(long);
  });

  it('reports a lost GPU as GPU Health Changed gpu-lost with its pods, once, and keeps running', async () => {
    fx = await startAgent('dgx-a100-8x.json', { pids: DGX_PIDS });
    await fx.agent.sampleOnce();
    fx.advance(1000);
    fx.mock.injectFault({ kind: 'gpuLost', gpu: 5 });
    const events = await fx.agent.pollEventsOnce(0);
    const lost = ofType(events, 'GPU Health Changed');
    expect(lost.map((e) => [detail(e).condition, detail(e).state, (detail(e).gpu as { index: number }).index])).toEqual(
      [['gpu-lost', 'firing', 5]],
    );
    expect(detail(lost[0]).pods).toEqual([{ uid: podUidOf(4105) }]);
    // The inventory now lists the seven GPUs that can take work.
    const [inv] = ofType(events, 'GPU Inventory');
    expect((detail(inv).gpus as unknown[]).length).toBe(7);
    expectValid(events);
    fx.advance(1000);
    const next = await fx.agent.sampleOnce();
    expect(ofType(next, 'GPU Health Changed')).toEqual([]);
    fx.mock.injectXid(2, 13);
    expect((await fx.agent.pollEventsOnce(0)).map((e) => detail(e).xid)).toEqual([13]);
  });

  it('samples at once on an uncorrectable ECC event, so the health crossing does not wait for the tick', async () => {
    fx = await startAgent('dgx-a100-8x.json');
    await fx.agent.sampleOnce();
    fx.advance(1500);
    fx.mock.injectFault({ kind: 'ecc', gpu: 2, uncorrected: 1 });
    const events = await fx.agent.pollEventsOnce(0);
    expect(
      ofType(events, 'GPU Health Changed').map((e) => [
        detail(e).condition,
        (detail(e).gpu as { index: number }).index,
      ]),
    ).toEqual([['ecc-uncorrected', 2]]);
  });
});
