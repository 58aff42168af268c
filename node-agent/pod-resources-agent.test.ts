/**
 * The agent with a PodResources reading (collectors/pod-resources-source.ts): who holds the GPU goes
 * out with the inventory and each XID; a reading it cannot use — no socket, a failing call, a GPU
 * device it cannot name by UUID — is unknown (no `holders`), never "nobody holds it".
 */
import { afterEach, describe, expect, it } from 'vitest';
import { oneGpu } from '../test/support/mock-nvml.ts';
import { validateDetail } from '../events/validate.ts';
import type { PodResourcesReading } from './collectors/pod-resources-source.ts';
import { startAgent, type AgentFixture } from '../test/support/agent-fixture.ts';
import { registerAgentMetrics } from './agent-metrics.ts';
import { Metrics } from './metrics.ts';

const UUID = 'GPU-00000000-1111-2222-3333-444444444444';
const LINE = 'NVRM: Xid (PCI:0000:3b:00): 95, pid=5002, name=python, Uncontained ECC error';
let fx: AgentFixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

const holding = (deviceId: string): PodResourcesReading => ({
  known: true,
  pods: [
    {
      name: 'trainer',
      namespace: 'ml',
      containers: [{ name: 'main', devices: [{ resourceName: 'nvidia.com/gpu', deviceIds: [deviceId] }], claims: [] }],
    },
  ],
  allocatable: [],
});

async function xidWith(reading: PodResourcesReading): Promise<Record<string, unknown>> {
  fx = await startAgent(oneGpu(), { overrides: { podResources: { read: async () => reading } } });
  const sampled = await fx.agent.sampleOnce();
  const [event] = fx.agent.onKernelLine(LINE);
  for (const e of [...sampled, event!]) expect(validateDetail(e.detailType, e.detail)).toMatchObject({ ok: true });
  const inventory = sampled.find((e) => e.detailType === 'GPU Inventory')!.detail as Record<string, unknown>;
  expect(inventory.holders).toEqual((event!.detail as Record<string, unknown>).holders);
  return event!.detail as Record<string, unknown>;
}

describe('the agent and PodResources', () => {
  it('sends the holders of the GPU with the XID (and the inventory), processes or not', async () => {
    const d = await xidWith(holding(UUID));
    expect(d.pods).toEqual([]);
    expect(d.holders).toEqual([
      { namespace: 'ml', name: 'trainer', resource: 'nvidia.com/gpu', deviceId: UUID, gpu: UUID },
    ]);
  });

  it.each([
    ['the socket is absent', { known: false, reason: 'no PodResources socket at /x' } as PodResourcesReading],
    ['a GPU device is named by index (deviceIDStrategy: index)', holding('0')],
  ])('sends no holders (unknown) when %s', async (_why, reading) => {
    expect(await xidWith(reading)).not.toHaveProperty('holders');
  });

  it('sends empty holders when the kubelet says nobody holds the GPU', async () => {
    expect((await xidWith({ known: true, pods: [], allocatable: [] })).holders).toEqual([]);
  });
});

describe('the utilization summary and PodResources', () => {
  async function summaryWith(reading: PodResourcesReading): Promise<Record<string, unknown>> {
    fx = await startAgent(oneGpu(), { overrides: { podResources: { read: async () => reading } } });
    await fx.agent.sampleOnce();
    const [summary] = fx.agent.flush().filter((e) => e.detailType === 'GPU Utilization Summary');
    expect(validateDetail(summary!.detailType, summary!.detail)).toMatchObject({ ok: true });
    return summary!.detail as Record<string, unknown>;
  }

  it('carries who holds each GPU, so idle-gpus knows whose allocation sat idle', async () => {
    expect((await summaryWith(holding(UUID))).holders).toEqual([
      { namespace: 'ml', name: 'trainer', resource: 'nvidia.com/gpu', deviceId: UUID, gpu: UUID },
    ]);
  });

  it('exports who holds each GPU as gpu_reflex_gpu_allocated at each sample', async () => {
    const registry = new Metrics();
    fx = await startAgent(oneGpu(), {
      overrides: { podResources: { read: async () => holding(UUID) }, metrics: registerAgentMetrics(registry) },
    });
    await fx.agent.sampleOnce();
    expect(registry.render()).toContain(
      `gpu_reflex_gpu_allocated{gpu="0",UUID="${UUID}",mig="",namespace="ml",pod="trainer"} 1`,
    );
  });

  it('carries no holders (unknown) when PodResources cannot be read', async () => {
    expect(await summaryWith({ known: false, reason: 'no PodResources socket at /x' })).not.toHaveProperty('holders');
  });
});

describe('a lost MIG GPU and PodResources', () => {
  const GPU0 = 'GPU-344e1aa0-d0ea-ba06-729f-5261a1d94e06';
  const MIG0 = 'MIG-3373d2c4-f4f1-7423-0b8f-021ad60dcacf';
  const onMig: PodResourcesReading = {
    known: true,
    pods: [
      {
        name: 'infer',
        namespace: 'ml',
        containers: [
          { name: 'main', devices: [{ resourceName: 'nvidia.com/mig-1g.10gb', deviceIds: [MIG0] }], claims: [] },
        ],
      },
    ],
    allocatable: [],
  };
  const holders = (events: { detailType: string; detail: unknown }[]) =>
    events.filter((e) => e.detailType === 'GPU Health Changed').map((e) => (e.detail as { holders?: unknown }).holders);

  it('keeps matching its MIG devices as last seen, sample after sample, while it stays lost', async () => {
    fx = await startAgent('h100-mig.json', { overrides: { podResources: { read: async () => onMig } } });
    await fx.agent.sampleOnce();
    fx.mock.injectFault({ kind: 'gpuLost', gpu: 0 });
    fx.advance(1000);
    const want = [
      { namespace: 'ml', name: 'infer', resource: 'nvidia.com/mig-1g.10gb', deviceId: MIG0, gpu: GPU0, mig: MIG0 },
    ];
    expect(holders(await fx.agent.sampleOnce())).toEqual([want]);
    // Two samples later the pod still holds the instance: its holder is still known, not "unknown" for the node.
    fx.advance(1000);
    await fx.agent.sampleOnce();
    fx.advance(1000);
    const later = await fx.agent.sampleOnce();
    expect(later).toEqual([]);
    const [summary] = fx.agent.flush().filter((e) => e.detailType === 'GPU Utilization Summary');
    expect((summary!.detail as { holders?: unknown }).holders).toEqual(want);
  });
});
