/**
 * A probe's "no XID during the window" is evidence only where the agent could see the GPU's XIDs: through NVML's
 * event set (the GPU registered for XID events) or the kernel log (followed). A GPU that neither watches (its
 * events not supported, or dropped from the set once it was lost; no readable /dev/kmsg) has unknown XIDs, and a
 * probe must not return it to service on them. The real agent on the mock NVML library.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { GPU_ACTION_RESULTS_ANNOTATION, GPU_ACTIONS_ANNOTATION, type GpuActionState } from '../../events/index.ts';
import { START, startAgent, type AgentFixture } from '../../test/support/agent-fixture.ts';
import { oneGpu } from '../../test/support/mock-nvml.ts';
import { GpuActuator } from './actuator.ts';

const GPU = 'GPU-00000000-1111-2222-3333-444444444444';
let fx: AgentFixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

/** An actuator asking the agent for the probe window's XIDs, as actuator-runtime.ts wires it; one probe of 30 s. */
function probeRig(agent: AgentFixture) {
  const annotations: Record<string, string> = {
    [GPU_ACTIONS_ANNOTATION]: JSON.stringify([
      {
        id: 'probe.0001',
        action: 'probe',
        gpuUuid: GPU,
        incident: 'n1/GPU-0/xid-79',
        requestedAt: new Date(START).toISOString(),
        timeoutSeconds: 600,
        probeSeconds: 30,
      },
    ]),
  };
  const actuator = new GpuActuator({
    node: 'gpu-node-1',
    nodeApi: {
      annotations: async () => ({ ...annotations }),
      writeResults: async (json) => void (annotations[GPU_ACTION_RESULTS_ANNOTATION] = json),
    },
    gpus: {
      indexOf: (u) => (u === GPU ? 0 : undefined),
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
    fence: { read: () => ({ index: [], uuid: [] }), ours: () => [], add: () => {}, remove: () => false },
    publish: async () => undefined,
    xids: (uuid, since) => agent.agent.xidsSince(uuid, since),
    now: agent.now,
  });
  const answer = async () => {
    await actuator.tick();
    return (JSON.parse(annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>)[
      'probe.0001'
    ];
  };
  return { answer };
}

describe('a probe where the agent cannot see the GPU’s XIDs', () => {
  it('does not pass a GPU whose XIDs neither NVML events nor the kernel log show', async () => {
    // No NVML event set, and no kernel log: XIDs on this GPU reach nobody.
    fx = await startAgent(oneGpu(), { overrides: { watchEvents: false } });
    await fx.agent.sampleOnce();
    const r = probeRig(fx);
    // At once: waiting would see no more of them.
    const done = await r.answer();
    expect(done).toMatchObject({ state: 'failed' });
    expect(done?.reason).toContain('evidence unknown');
    expect(done?.reason).toContain('XID');
  });

  it('does not pass one whose kernel log stopped being read (and no NVML events)', async () => {
    const kernelLog = { catchUp: async () => false, ended: true };
    fx = await startAgent(oneGpu(), { overrides: { watchEvents: false, kernelLog } });
    await fx.agent.sampleOnce();
    const r = probeRig(fx);
    await r.answer();
    fx.advance(31_000);
    expect(await r.answer()).toMatchObject({ state: 'failed' });
  });

  it('passes as before where the GPU is watched: NVML events, or the kernel log followed', async () => {
    fx = await startAgent(oneGpu());
    await fx.agent.sampleOnce();
    let r = probeRig(fx);
    await r.answer();
    fx.advance(31_000);
    expect(await r.answer()).toMatchObject({ state: 'done', probe: { passed: true } });
    await fx.close();
    const kernelLog = { catchUp: async () => true, ended: false };
    fx = await startAgent(oneGpu(), { overrides: { watchEvents: false, kernelLog } });
    await fx.agent.sampleOnce();
    r = probeRig(fx);
    await r.answer();
    fx.advance(31_000);
    expect(await r.answer()).toMatchObject({ state: 'done', probe: { passed: true } });
  });
});
