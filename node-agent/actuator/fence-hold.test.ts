/**
 * Issue #27: the agent's fence is by identity and held. The file is the real FenceFile in a temp
 * directory; another writer is a plain write over it (as ACK's NPD before 1.2.35 replaced the file).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionResultDetail,
  type GpuActionState,
} from '../../events/index.ts';
import { GpuActuator, type ActuatorGpus } from './actuator.ts';
import { FenceFile } from './fence-file.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const G5 = 'GPU-55555555-0000-4000-8000-000000000000';
const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function rig(o: { failWritesAfter?: number; dropWrites?: boolean; allocatable?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'fence-hold-'));
  dirs.push(dir);
  let now = T0;
  // The Node's GPU devices allocatable as the agent's Node read shows them (undefined: not read).
  let allocatable: number | undefined = o.allocatable;
  const annotations: Record<string, string> = {};
  const published: GpuActionResultDetail[] = [];
  const gpus: ActuatorGpus = {
    indexOf: (u) => (u === G0 ? 0 : u === G5 ? 5 : undefined),
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
  const path = join(dir, 'unhealthyDevices.json');
  const file = new FenceFile(path);
  let writes = 0;
  // The real file, whose writes can be made to fail (a read-only mount) after the first ones.
  const fence = {
    read: () => file.read(),
    ours: () => file.ours(),
    remove: (u: string) => file.remove(u),
    add: (u: string) => {
      if (o.failWritesAfter !== undefined && writes++ >= o.failWritesAfter) throw new Error('read-only file system');
      if (!o.dropWrites) file.add(u);
    },
  };
  const actuator = new GpuActuator({
    node: 'n1',
    nodeApi: {
      annotations: async () => ({ ...annotations }),
      writeResults: async (json) => void (annotations[GPU_ACTION_RESULTS_ANNOTATION] = json),
      gpuAllocatable: () => allocatable,
    },
    gpus,
    fence,
    publish: async (_t, d) => void published.push(d),
    xids: () => [],
    now: () => now,
  });
  annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
    {
      id: 'fence.0001',
      action: 'fence',
      gpuUuid: G0,
      incident: 'n1/GPU-0/xid-95',
      requestedAt: new Date(T0).toISOString(),
      timeoutSeconds: 600,
    },
  ]);
  const result = () =>
    (JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>)['fence.0001'];
  return {
    dir,
    path,
    annotations,
    fence,
    actuator,
    result,
    published,
    advance: (ms: number) => (now += ms),
    setAllocatable: (n: number) => (allocatable = n),
  };
}

describe('the fence, by identity and held', () => {
  it("answers what other writers already held out before the GPU was added (ACK's own isolation)", async () => {
    const r = rig();
    writeFileSync(r.path, JSON.stringify({ index: ['5'], uuid: [G5] }));
    await r.actuator.tick();
    expect(r.result()).toMatchObject({ state: 'done', fence: { listed: true, before: [G5, 'index:5'] } });
    expect(r.fence.read().uuid).toEqual([G5, G0]);
    expect(r.result()?.reason).toContain('2 other device(s) were already listed there');
  });

  it('writes the GPU back within one tick when another writer rewrote the file, and says so in a new result', async () => {
    const r = rig();
    await r.actuator.tick();
    expect(r.published).toHaveLength(1);
    // a quiet tick: the file still lists it, nothing is written or published
    await r.actuator.tick();
    expect(r.published).toHaveLength(1);
    r.advance(5_000);
    writeFileSync(r.path, JSON.stringify({ index: ['5'] })); // ACK NPD < 1.2.35 replaces the file with its own
    await r.actuator.tick();
    expect(r.fence.read()).toEqual({ index: ['5'], uuid: [G0] });
    expect(r.result()).toMatchObject({
      state: 'done',
      fence: { listed: true, restored: 1, restoredAt: new Date(T0 + 5_000).toISOString() },
    });
    expect(r.published.at(-1)).toMatchObject({
      action: 'fence',
      state: 'done',
      eventId: 'gpu-action:n1:fence.0001:done:restored-1',
      fence: { restored: 1 },
    });
    expect(r.published.at(-1)?.reason).toContain('another writer removed the GPU from the fence file; written back');
  });

  it('never answers done on faith: a write the file does not show fails the fence', async () => {
    const r = rig({ dropWrites: true });
    await r.actuator.tick();
    expect(r.result()).toMatchObject({
      state: 'failed',
      reason: 'the fence file does not list the GPU after it was written',
      fence: { listed: false },
    });
  });

  it('fails the fence when the file can no longer be written, so the functions escalate it', async () => {
    const r = rig({ failWritesAfter: 1 });
    await r.actuator.tick();
    writeFileSync(r.path, JSON.stringify({ uuid: [] }));
    await r.actuator.tick();
    expect(r.result()).toMatchObject({ state: 'failed', fence: { listed: false } });
    expect(r.result()?.reason).toContain('cannot be written back: read-only file system');
  });

  it("never writes over a fence file it cannot read: the other writers' entries stay, nothing is called restored", async () => {
    const r = rig();
    await r.actuator.tick();
    expect(r.result()).toMatchObject({ state: 'done', fence: { listed: true } });
    r.advance(5_000);
    // A person isolates GPU 5 by hand, and leaves a trailing comma: not JSON (the device plugin's reader fails too).
    const edited = `{"index": ["5"], "uuid": ["${G0}", "${G5}"],}\n`;
    writeFileSync(r.path, edited);
    await r.actuator.tick();
    expect(readFileSync(r.path, 'utf8')).toBe(edited); // GPU 5's isolation is not written away
    expect(r.published).toHaveLength(1); // and the fence is not said "removed by another writer, written back"
    expect(r.result()).toMatchObject({ state: 'done', at: new Date(T0).toISOString() });
  });

  it('fails a fence on a file it cannot read, and holds an unfence until it can, writing nothing over it', async () => {
    const r = rig();
    const edited = `{"index": ["5"],, }`;
    writeFileSync(r.path, edited);
    await r.actuator.tick();
    expect(readFileSync(r.path, 'utf8')).toBe(edited);
    expect(r.result()).toMatchObject({ state: 'failed', fence: { listed: false } });
    expect(r.result()?.reason).toContain('fence file not readable');
    // The file readable again: fenced; then unreadable when the GPU is to return: it stays listed, and says why.
    writeFileSync(r.path, JSON.stringify({ index: ['5'] }));
    r.annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
      {
        id: 'fence.0002',
        action: 'fence',
        gpuUuid: G0,
        incident: 'n1/GPU-0/xid-95',
        requestedAt: new Date(T0).toISOString(),
        timeoutSeconds: 600,
      },
    ]);
    await r.actuator.tick();
    expect(r.fence.read()).toEqual({ index: ['5'], uuid: [G0] });
    const again = `{"index": ["5"], "uuid": ["${G0}"]`;
    writeFileSync(r.path, again);
    r.annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
      {
        id: 'unfence.0003',
        action: 'unfence',
        gpuUuid: G0,
        incident: 'n1/GPU-0/xid-95',
        requestedAt: new Date(T0).toISOString(),
        timeoutSeconds: 600,
      },
    ]);
    await r.actuator.tick();
    expect(readFileSync(r.path, 'utf8')).toBe(again);
    const results = JSON.parse(r.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>;
    expect(results['unfence.0003']).toMatchObject({ state: 'running' });
    expect(results['unfence.0003']?.reason).toContain('fence file not readable');
    r.advance(5_000);
    await r.actuator.tick(); // still unreadable: the same answer, not rewritten
    expect(JSON.parse(r.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}')).toEqual(results);
    // Readable again: the unfence goes through, the other writer's entry kept.
    writeFileSync(r.path, JSON.stringify({ index: ['5'], uuid: [G0] }));
    await r.actuator.tick();
    expect(r.fence.read()).toEqual({ index: ['5'], uuid: [] });
    expect(r.published.at(-1)).toMatchObject({ action: 'unfence', state: 'done' });
  });

  it('reads an unreadable record of its own entries as unknown: an unfence holds, a fence fails, the record is kept', async () => {
    const r = rig();
    await r.actuator.tick(); // GPU 0 fenced: listed, and recorded as ours
    expect(r.fence.read().uuid).toEqual([G0]);
    const record = `${r.path}.gpu-reflex.json`;
    // The record cut short (a full disk, a hand edit): which entries are ours is unknown, not "none".
    const cut = `["${G0}"`;
    writeFileSync(record, cut);
    const ask = (id: string, action: string, gpuUuid: string) => ({
      id,
      action,
      gpuUuid,
      incident: 'n1/GPU-0/xid-95',
      requestedAt: new Date(T0).toISOString(),
      timeoutSeconds: 600,
    });
    r.annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
      ask('unfence.0002', 'unfence', G0),
      ask('fence.0003', 'fence', G5),
    ]);
    await r.actuator.tick();
    const results = () =>
      JSON.parse(r.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>;
    // Not "done" while the GPU stays listed: nobody is told it is back in service.
    expect(results()['unfence.0002']).toMatchObject({ state: 'running' });
    expect(results()['unfence.0002']?.reason).toContain('record');
    expect(r.fence.read().uuid).toEqual([G0]);
    // A fence of another GPU fails rather than write the record over from nothing (GPU 0's claim kept).
    expect(results()['fence.0003']).toMatchObject({ state: 'failed' });
    expect(readFileSync(record, 'utf8')).toBe(cut);
    expect(r.published.filter((d) => d.action === 'unfence')).toHaveLength(0);
    // Readable again: the unfence goes through.
    writeFileSync(record, JSON.stringify([G0]));
    r.advance(5_000);
    await r.actuator.tick();
    expect(results()['unfence.0002']).toMatchObject({ state: 'done' });
    expect(r.fence.read().uuid).toEqual([]);
  });

  it('never says the GPU left the unhealthy devices while another writer still lists it by index', async () => {
    const r = rig();
    await r.actuator.tick();
    // ACK's node-problem-detector isolates the same GPU by its index: its entry, not ours.
    writeFileSync(r.path, JSON.stringify({ index: ['0'], uuid: [G0] }));
    r.annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify([
      {
        id: 'unfence.0002',
        action: 'unfence',
        gpuUuid: G0,
        incident: 'n1/GPU-0/xid-95',
        requestedAt: new Date(T0).toISOString(),
        timeoutSeconds: 600,
      },
    ]);
    await r.actuator.tick();
    expect(r.fence.read()).toEqual({ index: ['0'], uuid: [] }); // the other writer's entry stays
    const unfence = r.published.find((d) => d.action === 'unfence');
    expect(unfence).toMatchObject({ state: 'done' });
    expect(unfence?.reason).toContain('still listed by another writer');
  });

  it("answers the fence again once its Node's allocatable changes, so the functions verify it then (not at the next sweep)", async () => {
    const r = rig({ allocatable: 8 });
    await r.actuator.tick();
    expect(r.result()).toMatchObject({ state: 'done', fence: { listed: true, allocatable: 8 } });
    expect(r.published).toHaveLength(1);
    // the device plugin has not re-read the file yet: nothing new
    await r.actuator.tick();
    expect(r.published).toHaveLength(1);
    r.advance(5_000);
    r.setAllocatable(7);
    await r.actuator.tick();
    expect(r.result()).toMatchObject({ state: 'done', at: new Date(T0).toISOString(), fence: { allocatable: 7 } });
    expect(r.published.at(-1)).toMatchObject({
      action: 'fence',
      state: 'done',
      eventId: `gpu-action:n1:fence.0001:done:allocatable-7-${T0 + 5_000}`,
      fence: { listed: true, allocatable: 7 },
    });
    // said once per change
    await r.actuator.tick();
    expect(r.published).toHaveLength(2);
  });

  it('an allocatable it cannot read prompts nothing', async () => {
    const r = rig();
    await r.actuator.tick();
    await r.actuator.tick();
    expect(r.published).toHaveLength(1);
    expect(r.result()?.fence?.allocatable).toBeUndefined();
  });
});
