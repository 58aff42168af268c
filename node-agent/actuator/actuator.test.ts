import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionRequest,
  type GpuActionResultDetail,
  type DcgmDiagLevel,
  type GpuActionState,
  type GpuDiag,
} from '../../events/index.ts';
import { GpuActuator, type ActuatorGpus, type GpuHealthReading } from './actuator.ts';
import { FenceFile } from './fence-file.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const G1 = 'GPU-11111111-0000-4000-8000-000000000000';
const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function rig(
  o: {
    holders?: string[];
    resetFails?: string;
    health?: Partial<GpuHealthReading>;
    dryRun?: boolean;
    gone?: string;
    diag?: (index: number, level: DcgmDiagLevel) => Promise<GpuDiag>;
  } = {},
) {
  /** A results write whose JSON matches this fails once (a 409, a 5xx, or the agent killed before it). */
  let failWrite: RegExp | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'actuator-'));
  dirs.push(dir);
  let now = T0;
  const annotations: Record<string, string> = {};
  const published: GpuActionResultDetail[] = [];
  const resets: string[] = [];
  let ecc = 0;
  const xids: { uuid: string; atMs: number; xid: number }[] = [];
  const gpus: ActuatorGpus = {
    indexOf: (u) => (u !== o.gone && [G0, G1].indexOf(u) >= 0 ? [G0, G1].indexOf(u) : undefined),
    holders: () => o.holders ?? [],
    reset: async (u) => (o.resetFails ? { ok: false, reason: o.resetFails } : (resets.push(u), { ok: true })),
    health: () => ({
      nvmlAnswers: true,
      recoveryAction: 'none',
      remapPending: false,
      remapFailed: false,
      eccUncorrected: ecc,
      ...o.health,
    }),
  };
  const fence = new FenceFile(join(dir, 'unhealthyDevices.json'));
  // A restart is a new actuator over the same Node, GPUs and file.
  const start = () =>
    new GpuActuator({
      node: 'n1',
      nodeApi: {
        annotations: async () => ({ ...annotations }),
        writeResults: async (json) => {
          if (failWrite?.test(json)) {
            failWrite = undefined;
            throw new Error('409 Conflict: the object has been modified');
          }
          annotations[GPU_ACTION_RESULTS_ANNOTATION] = json;
        },
      },
      gpus,
      fence,
      publish: async (_t, d) => void published.push(d),
      xids: (u, since) => xids.filter((x) => x.uuid === u && x.atMs >= since).map((x) => x.xid),
      now: () => now,
      ...(o.dryRun ? { dryRun: true } : {}),
      ...(o.diag ? { diag: o.diag } : {}),
    });
  const actuator = start();
  const ask = (...reqs: Partial<GpuActionRequest>[]) => {
    annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify(
      reqs.map((r, i) => ({
        id: `req.${i}.${r.action}`,
        gpuUuid: G0,
        incident: 'n1/GPU-0/xid-95',
        requestedAt: new Date(T0).toISOString(),
        timeoutSeconds: 600,
        ...r,
      })),
    );
  };
  const results = () =>
    JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>;
  return {
    dir,
    fence,
    actuator,
    restart: () => start(),
    failWriteOnce: (re: RegExp) => void (failWrite = re),
    ask,
    results,
    published,
    resets,
    advance: (ms: number) => (now += ms),
    bumpEcc: () => ecc++,
    xid: (uuid: string, xid: number) => void xids.push({ uuid, atMs: now, xid }),
  };
}

describe('GpuActuator', () => {
  it('fences, resets and probes once each, answering in the annotation and as events', async () => {
    const r = rig();
    r.ask({ action: 'fence' }, { action: 'reset', gpuUuid: G1 }, { action: 'probe', gpuUuid: G1, probeSeconds: 30 });
    await r.actuator.tick();
    expect(r.fence.read().uuid).toEqual([G0]);
    expect(r.resets).toEqual([G1]);
    expect(r.results()['req.2.probe']).toMatchObject({ state: 'running' });
    r.advance(30_000);
    await r.actuator.tick();
    expect(r.results()['req.2.probe']).toMatchObject({
      state: 'done',
      probe: { passed: true, eccUncorrectedDelta: 0 },
    });
    expect(r.published.map((d) => `${d.action} ${d.state}`)).toEqual(['fence done', 'reset done', 'probe done']);
    // redelivered / re-read: nothing is done twice
    await r.actuator.tick();
    expect(r.resets).toEqual([G1]);
    expect(r.published).toHaveLength(3);
  });

  it('refuses a reset while processes hold the GPU and names them', async () => {
    const r = rig({ holders: ['ml/train-0', 'pid 4242'] });
    r.ask({ action: 'reset' });
    await r.actuator.tick();
    expect(r.results()['req.0.reset']).toMatchObject({
      state: 'failed',
      reason: 'busy',
      holders: ['ml/train-0', 'pid 4242'],
    });
    expect(r.resets).toEqual([]);
  });

  it('says why a reset failed, and fails a probe that saw a new uncorrected ECC error', async () => {
    const r = rig({ resetFails: 'nvidia-smi --gpu-reset: GPU 0 did not come back' });
    r.ask({ action: 'reset' }, { action: 'probe', gpuUuid: G1, probeSeconds: 10 });
    await r.actuator.tick();
    r.bumpEcc();
    r.advance(10_000);
    await r.actuator.tick();
    expect(r.results()['req.0.reset']).toMatchObject({
      state: 'failed',
      reason: 'nvidia-smi --gpu-reset: GPU 0 did not come back',
    });
    expect(r.results()['req.1.probe']).toMatchObject({
      state: 'done',
      probe: { passed: false, eccUncorrectedDelta: 1 },
    });
  });

  it.each([
    [
      'a driver without field 230 (recovery action unknown)',
      { health: { recoveryAction: 'unknown' } },
      { recoveryAction: 'unknown' },
    ],
    [
      'a recovery-action code nvml.h does not name',
      { health: { recoveryAction: 'code 6' } },
      { recoveryAction: 'code 6' },
    ],
    ['a GPU NVML no longer lists under its UUID (missing after a reboot)', { gone: G1 }, { counted: false }],
  ] as const)('fails the probe of %s: unknown is never healthy', async (_what, o, seen) => {
    const r = rig(o);
    r.ask({ action: 'probe', gpuUuid: G1, probeSeconds: 10 });
    await r.actuator.tick();
    r.advance(10_000);
    await r.actuator.tick();
    expect(r.results()['req.0.probe']).toMatchObject({ state: 'done', probe: { passed: false, ...seen } });
  });

  it('fails a probe whose GPU raised an XID during its window, and only then', async () => {
    const r = rig();
    r.xid(G1, 79); // before the window: not the probe's
    r.advance(1_000);
    r.ask({ action: 'probe', gpuUuid: G1, probeSeconds: 10 }, { action: 'probe', gpuUuid: G0, probeSeconds: 10 });
    await r.actuator.tick();
    r.advance(5_000);
    r.xid(G0, 48);
    r.advance(5_000);
    await r.actuator.tick();
    expect(r.results()['req.0.probe']).toMatchObject({
      state: 'done',
      probe: { passed: true, xidsDuringProbe: [], counted: true },
    });
    expect(r.results()['req.1.probe']).toMatchObject({
      state: 'done',
      probe: { passed: false, xidsDuringProbe: [48] },
    });
  });

  it("runs DCGM's diagnostic after the window when the probe asks, and passes only on its pass", async () => {
    const asked: [number, number][] = [];
    const verdicts: Record<number, GpuDiag['result']> = { 0: 'pass', 1: 'fail' };
    const r = rig({
      diag: async (index, level) => {
        asked.push([index, level]);
        const result = verdicts[index]!;
        return { level, result, failed: result === 'fail' ? ['Memtest'] : [] };
      },
    });
    r.ask(
      { action: 'probe', gpuUuid: G0, probeSeconds: 10, diag: 2 },
      { action: 'probe', gpuUuid: G1, probeSeconds: 10, diag: 2 },
    );
    await r.actuator.tick();
    r.advance(10_000);
    await r.actuator.tick(); // the window is over: the diagnostics start
    expect(asked).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(r.results()['req.0.probe']).toMatchObject({ state: 'running', reason: 'DCGM diagnostic level 2 running' });
    r.advance(5_000);
    await r.actuator.tick();
    expect(r.results()['req.0.probe']).toMatchObject({
      state: 'done',
      probe: { passed: true, diag: { level: 2, result: 'pass' } },
    });
    expect(r.results()['req.1.probe']).toMatchObject({
      state: 'done',
      probe: { passed: false, diag: { result: 'fail', failed: ['Memtest'] } },
    });
    expect(asked).toHaveLength(2); // once each
  });

  it.each([
    ['no DCGM on this agent', undefined, 'this agent runs no DCGM diagnostic'],
    [
      'a diagnostic that throws',
      async () => {
        throw new Error('host engine not running');
      },
      'dcgmi: host engine not running',
    ],
  ] as const)(
    'answers a probe that asks for a diagnostic with %s as not passed (unavailable)',
    async (_w, diag, why) => {
      const r = rig(diag ? { diag } : {});
      r.ask({ action: 'probe', gpuUuid: G0, probeSeconds: 0, diag: 1 });
      await r.actuator.tick();
      await r.actuator.tick();
      expect(r.results()['req.0.probe']).toMatchObject({
        state: 'done',
        probe: { passed: false, diag: { level: 1, result: 'unavailable', reason: why } },
      });
    },
  );

  it('fails a reset it could not start within its timeout', async () => {
    const r = rig();
    r.ask({ action: 'reset', timeoutSeconds: 60 });
    r.advance(61_000);
    await r.actuator.tick();
    expect(r.results()['req.0.reset']).toMatchObject({ state: 'failed', reason: 'timeout' });
  });

  it('dry run touches neither a GPU nor the file, and says so', async () => {
    const r = rig({ dryRun: true });
    r.ask({ action: 'fence' }, { action: 'reset', gpuUuid: G1 });
    await r.actuator.tick();
    expect(r.fence.read().uuid).toEqual([]);
    expect(r.resets).toEqual([]);
    expect(r.published.every((d) => d.dryRun && d.reason?.startsWith('dry run'))).toBe(true);
    expect(r.results()).toEqual({}); // nothing written to the Node
    await r.actuator.tick();
    expect(r.published).toHaveLength(2); // answered once
  });

  it('resets once when the answer cannot be written (a 409), and writes and publishes it at the next tick', async () => {
    const r = rig();
    r.ask({ action: 'reset', gpuUuid: G1 });
    r.failWriteOnce(/"state":"done"/);
    await expect(r.actuator.tick()).rejects.toThrow('409');
    expect(r.resets).toEqual([G1]);
    await r.actuator.tick();
    expect(r.resets).toEqual([G1]); // not reset a second time
    expect(r.results()['req.0.reset']).toMatchObject({ state: 'done', reason: 'GPU reset' });
    expect(r.published.map((d) => `${d.action} ${d.state}`)).toEqual(['reset done']);
  });

  it('does not reset again after a restart between the reset and its answer: the outcome is unknown', async () => {
    const r = rig();
    r.ask({ action: 'reset', gpuUuid: G1 });
    r.failWriteOnce(/"state":"done"/); // the agent is killed before its answer reaches the Node
    await expect(r.actuator.tick()).rejects.toThrow();
    expect(r.resets).toEqual([G1]);
    const again = r.restart();
    await again.tick();
    await again.tick();
    expect(r.resets).toEqual([G1]);
    expect(r.results()['req.0.reset']).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^interrupted: /),
    });
    expect(r.published.map((d) => `${d.action} ${d.state}`)).toEqual(['reset failed']);
  });

  it('keeps a fence written back whose answer could not be written, and answers it at the next tick', async () => {
    const r = rig();
    r.ask({ action: 'fence' });
    await r.actuator.tick();
    writeFileSync(join(r.dir, 'unhealthyDevices.json'), JSON.stringify({ index: [], uuid: [] })); // another writer
    r.failWriteOnce(/"restored":1/);
    await expect(r.actuator.tick()).rejects.toThrow('409');
    expect(r.fence.read().uuid).toEqual([G0]); // written back
    await r.actuator.tick();
    expect(r.results()['req.0.fence']).toMatchObject({ state: 'done', fence: { listed: true, restored: 1 } });
    expect(r.published.map((d) => d.eventId)).toEqual([
      'gpu-action:n1:req.0.fence:done',
      'gpu-action:n1:req.0.fence:done:restored-1',
    ]);
  });

  it('answers what it cannot do yet as not-supported, never as done', async () => {
    const r = rig();
    r.ask({ action: 'drain-on' });
    await r.actuator.tick();
    expect(r.results()['req.0.drain-on']).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^not-supported/),
    });
  });
});

describe("FenceFile (the ACK device plugin's unhealthy devices)", () => {
  it('never removes an entry it did not add, whatever it is asked', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ op: fc.constantFrom('add' as const, 'remove' as const), g: fc.constantFrom(G0, G1) }), {
          maxLength: 20,
        }),
        (ops) => {
          const dir = mkdtempSync(join(tmpdir(), 'fence-'));
          try {
            const path = join(dir, 'unhealthyDevices.json');
            writeFileSync(path, JSON.stringify({ index: ['3'], uuid: [G1] })); // written by someone else (NPD, a person)
            const f = new FenceFile(path);
            for (const o of ops) {
              if (o.op === 'add') f.add(o.g);
              else f.remove(o.g);
            }
            const now = JSON.parse(readFileSync(path, 'utf8')) as { index: string[]; uuid: string[] };
            expect(now.index).toEqual(['3']);
            expect(now.uuid).toContain(G1);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('leaves no entry nobody owns when the agent dies between the file and its record', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fence-'));
    dirs.push(dir);
    const path = join(dir, 'unhealthyDevices.json');
    const record = `${path}.gpu-reflex.json`;
    mkdirSync(record); // the record cannot be written (a full disk, the agent killed before it)
    const f = new FenceFile(path);
    expect(() => f.add(G0)).toThrow();
    rmSync(record, { recursive: true });
    f.add(G0); // the fence asked again (a restarted agent)
    expect(f.read().uuid).toEqual([G0]);
    expect(f.remove(G0)).toBe(true); // the unfence finds it its own
    expect(f.read().uuid).toEqual([]);
  });

  it('claims nothing when the file itself cannot be written: a later entry of another writer stays', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fence-'));
    dirs.push(dir);
    const path = join(dir, 'unhealthyDevices.json');
    mkdirSync(path); // the file cannot be written
    const f = new FenceFile(path);
    expect(() => f.add(G0)).toThrow();
    rmSync(path, { recursive: true });
    writeFileSync(path, JSON.stringify({ index: [], uuid: [G0] })); // then ACK's node-problem-detector lists it
    expect(f.remove(G0)).toBe(false);
    expect(f.read().uuid).toEqual([G0]);
  });
});
