/**
 * A probe across an agent restart (rolling update, OOM kill): the restarted agent resumes it from what the
 * running answer on the Node recorded (when it began, the ECC baseline, the XIDs so far), never from a new
 * baseline that forgets an error seen before the restart; and the running answer is written when that
 * evidence changes, not at every tick.
 */
import { describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  GpuActionStatesSchema,
  type GpuActionState,
} from '../../events/index.ts';
import { GpuActuator, type ActuatorGpus } from './actuator.ts';
import type { FenceFileOps } from './options.ts';

const G1 = 'GPU-11111111-0000-4000-8000-000000000000';
const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const KEY = 'req.0.probe';

/** One Node, one GPU; each agent run has its own XID log (in memory: a restart starts it empty). */
function rig() {
  let now = T0;
  let ecc = 3;
  let answers = true;
  let unreadable = false;
  let writes = 0;
  const annotations: Record<string, string> = {};
  const gpus: ActuatorGpus = {
    indexOf: (u) => (u === G1 ? 1 : undefined),
    holders: () => [],
    reset: async () => ({ ok: true }),
    // NVML not answering reads no counter (ports.ts): 0.
    health: () => ({
      nvmlAnswers: answers,
      recoveryAction: answers ? 'none' : 'unknown',
      remapPending: false,
      remapFailed: false,
      eccUncorrected: answers ? ecc : 0,
      ...(unreadable ? { eccUnreadable: true } : {}),
    }),
  };
  const fence: FenceFileOps = {
    read: () => ({ index: [], uuid: [] }),
    ours: () => [],
    add: () => {},
    remove: () => false,
  };
  let xids: { atMs: number; xid: number }[] = [];
  const start = () => {
    xids = [];
    const log = xids;
    return new GpuActuator({
      node: 'n1',
      nodeApi: {
        annotations: async () => ({ ...annotations }),
        writeResults: async (json) => {
          writes++;
          annotations[GPU_ACTION_RESULTS_ANNOTATION] = json;
        },
      },
      gpus,
      fence,
      publish: async () => undefined,
      xids: (u, since) => (u === G1 ? log.filter((x) => x.atMs >= since).map((x) => x.xid) : []),
      now: () => now,
    });
  };
  annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
    {
      id: KEY,
      action: 'probe',
      gpuUuid: G1,
      incident: 'n1/GPU-1/xid-79',
      requestedAt: new Date(T0).toISOString(),
      timeoutSeconds: 600,
      probeSeconds: 30,
    },
  ]);
  const results = () =>
    JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>;
  return {
    start,
    annotations,
    results,
    answer: () => results()[KEY],
    writes: () => writes,
    advance: (ms: number) => (now += ms),
    setEcc: (n: number) => (ecc = n),
    nvmlAnswers: (yes: boolean) => (answers = yes),
    eccUnreadable: (yes: boolean) => (unreadable = yes),
    xid: (xid: number) => void xids.push({ atMs: now, xid }),
  };
}

describe('a probe across an agent restart', () => {
  it('fails on an uncorrected ECC error seen before the restart (the recorded baseline, not a new one)', async () => {
    const r = rig();
    await r.start().tick();
    r.advance(10_000);
    r.setEcc(4);
    const again = r.start(); // the agent restarts: its memory is gone, the Node's answer is not
    await again.tick();
    r.advance(30_000);
    await again.tick();
    expect(r.answer()).toMatchObject({ state: 'done', probe: { passed: false, eccUncorrectedDelta: 1 } });
  });

  it('fails on an XID seen before the restart (recorded on the running answer)', async () => {
    const r = rig();
    const first = r.start();
    await first.tick();
    r.advance(5_000);
    r.xid(79);
    await first.tick(); // the new XID is written to the Node with the running answer
    const again = r.start();
    r.advance(5_000);
    await again.tick();
    r.advance(30_000);
    await again.tick();
    expect(r.answer()).toMatchObject({ state: 'done', probe: { passed: false, xidsDuringProbe: [79] } });
  });

  it('fails on an XID the restarted agent caught up from the kernel log, before its first tick', async () => {
    const r = rig();
    await r.start().tick();
    r.advance(10_000);
    const again = r.start();
    // Logged while no agent ran; the new run's follower reads it from its cursor (kmsg/follow.ts) at start.
    r.xid(79);
    r.advance(1_000);
    await again.tick();
    r.advance(30_000);
    await again.tick();
    expect(r.answer()).toMatchObject({ state: 'done', probe: { passed: false, xidsDuringProbe: [79] } });
  });

  it('watches a full probeSeconds after the restart before it passes', async () => {
    const r = rig();
    await r.start().tick();
    r.advance(25_000);
    const again = r.start();
    await again.tick();
    r.advance(10_000); // 35 s since the probe began, 10 s since the restart
    await again.tick();
    expect(r.answer()).toMatchObject({ state: 'running' });
    r.advance(20_000);
    await again.tick();
    expect(r.answer()).toMatchObject({ state: 'done', probe: { passed: true, xidsDuringProbe: [] } });
  });

  it('does not pass when the ECC counter reads below the recorded baseline: the evidence is gone', async () => {
    const r = rig();
    await r.start().tick();
    r.setEcc(0); // the driver was reloaded: the count started over
    const again = r.start();
    await again.tick();
    r.advance(30_000);
    await again.tick();
    expect(r.answer()).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/below the 3 recorded when the probe began/),
    });
  });

  it('still says the GPU is missing when NVML stops answering (its 0 is no counter reset)', async () => {
    const r = rig();
    const agent = r.start();
    await agent.tick();
    r.nvmlAnswers(false);
    r.advance(30_000);
    await agent.tick();
    expect(r.answer()).toMatchObject({
      state: 'done',
      probe: { passed: false, nvmlAnswers: false, eccUncorrectedDelta: 0 },
    });
  });

  it('does not pass a probe an older agent was running (no recorded evidence to resume from)', async () => {
    const r = rig();
    const older: GpuActionState = {
      state: 'running',
      action: 'probe',
      gpuUuid: G1,
      at: new Date(T0).toISOString(),
      reason: 'watching for 30 s',
    };
    r.annotations[GPU_ACTION_RESULTS_ANNOTATION] = JSON.stringify({ [KEY]: older });
    const again = r.start();
    await again.tick();
    r.advance(30_000);
    await again.tick();
    expect(r.answer()).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^interrupted: /) });
  });

  it('writes the running answer when its evidence changes, not at every tick', async () => {
    const r = rig();
    const agent = r.start();
    await agent.tick();
    expect(r.writes()).toBe(1);
    for (let i = 0; i < 4; i++) {
      r.advance(5_000);
      await agent.tick();
    }
    expect(r.writes()).toBe(1);
    r.xid(48);
    await agent.tick();
    expect(r.writes()).toBe(2);
    expect(GpuActionStatesSchema.parse(r.results())[KEY]).toMatchObject({ state: 'running' });
  });
});

describe('a probe whose ECC evidence cannot be read', () => {
  it('does not pass when ECC is on but NVML gives no uncorrected count: unknown is never a clean count', async () => {
    const r = rig();
    r.eccUnreadable(true);
    const agent = r.start();
    await agent.tick();
    r.advance(30_000);
    await agent.tick();
    expect(r.answer()).toMatchObject({ state: 'failed', reason: expect.stringContaining('uncorrected ECC count') });
  });
});
