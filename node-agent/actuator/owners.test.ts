/**
 * Several reflexes ask one agent for GPU actions (docs/architecture.md "GPU actions: the protocol"):
 * each answer is kept and published under its owner, and one owner's unfence never undoes another's fence.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  GpuActionStatesSchema,
  type GpuActionRequest,
  type GpuActionResultDetail,
} from '../../events/index.ts';
import { GpuActuator } from './actuator.ts';
import { FenceFile } from './fence-file.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';
const AT = '2026-12-04T21:00:00.000Z';
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function rig() {
  const dir = mkdtempSync(join(tmpdir(), 'owners-'));
  dirs.push(dir);
  const annotations: Record<string, string> = {};
  const published: GpuActionResultDetail[] = [];
  const resets: string[] = [];
  const fence = new FenceFile(join(dir, 'unhealthyDevices.json'));
  const actuator = new GpuActuator({
    node: 'n1',
    nodeApi: {
      annotations: async () => ({ ...annotations }),
      writeResults: async (json) => void (annotations[GPU_ACTION_RESULTS_ANNOTATION] = json),
    },
    gpus: {
      indexOf: (u) => (u === G0 ? 0 : undefined),
      holders: () => [],
      reset: async (u) => (resets.push(u), { ok: true }),
      health: () => ({
        nvmlAnswers: true,
        recoveryAction: 'none',
        remapPending: false,
        remapFailed: false,
        eccUncorrected: 0,
      }),
    },
    fence,
    publish: async (_t, d) => void published.push(d),
    xids: () => [],
    now: () => Date.parse(AT),
  });
  const ask = (...reqs: (Pick<GpuActionRequest, 'id' | 'action'> & { owner?: string })[]) =>
    void (annotations[GPU_ACTIONS_ANNOTATION] = JSON.stringify(
      reqs.map((r) => ({ gpuUuid: G0, incident: 'n1/why', requestedAt: AT, timeoutSeconds: 600, ...r })),
    ));
  const results = () => GpuActionStatesSchema.parse(JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}'));
  return { actuator, fence, ask, results, published, resets };
}

describe('GpuActuator with several owners', () => {
  it("answers two owners' requests of one id each under its own key, and says whose on each event", async () => {
    const r = rig();
    // The legacy form (no owner: remediation) and MIG's, with the same id.
    r.ask({ id: 'fence.same', action: 'fence' }, { id: 'fence.same', action: 'fence', owner: 'mig' });
    await r.actuator.tick();
    await r.actuator.tick();
    expect(Object.keys(r.results()).sort()).toEqual(['fence.same', 'mig:fence.same']);
    expect(r.results()['fence.same']?.owner).toBeUndefined();
    expect(r.results()['mig:fence.same']).toMatchObject({ state: 'done', owner: 'mig' });
    expect(r.published.map((d) => `${d.owner ?? '-'} ${d.requestId} ${d.state} ${d.eventId}`)).toEqual([
      '- fence.same done gpu-action:n1:fence.same:done',
      'mig fence.same done gpu-action:n1:mig:fence.same:done',
    ]);
  });

  it("leaves the GPU listed when one owner unfences it while another owner's fence stands", async () => {
    const r = rig();
    r.ask({ id: 'fence.rem1', action: 'fence' }, { id: 'fence.mig1', action: 'fence', owner: 'mig' });
    await r.actuator.tick();
    await r.actuator.tick();
    expect(r.fence.read().uuid).toEqual([G0]);
    r.ask({ id: 'unfence.rem1', action: 'unfence' }, { id: 'fence.mig1', action: 'fence', owner: 'mig' });
    await r.actuator.tick();
    expect(r.results()['unfence.rem1']).toMatchObject({ state: 'done', reason: 'left listed: still fenced for mig' });
    expect(r.fence.read().uuid).toEqual([G0]);
    // MIG withdraws its fence and unfences: now the GPU leaves the file.
    r.ask({ id: 'unfence.mig1', action: 'unfence', owner: 'mig' });
    await r.actuator.tick();
    expect(r.fence.read().uuid).toEqual([]);
  });
});
