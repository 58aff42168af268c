import { describe, expect, it } from 'vitest';
import { registerAgentMetrics } from './agent-metrics.ts';
import { dcgmOptionsOf } from './agent-runtime.ts';
import { loadAgentConfig } from './config.ts';
import { Metrics } from './metrics.ts';

const UUID = 'GPU-00000000-1111-2222-3333-444444444444';
const env = { NODE_NAME: 'gpu-1', EVENT_BUS_NAME: 'b' };

describe('the agent metrics', () => {
  it('count XIDs per GPU (index, UUID) and XID, so an alert fires per GPU', () => {
    const registry = new Metrics();
    const m = registerAgentMetrics(registry);
    m.xidPublished('nvml', 1000, UUID, 79, 3);
    m.xidPublished('nvml', 2000, UUID, 79, 3);
    m.xidPublished('kmsg', 3000, UUID, 31, 3);
    const text = registry.render();
    expect(text).toContain(`gpu_reflex_xids_total{via="nvml",gpu="3",UUID="${UUID}",xid="79"} 2`);
    expect(text).toContain(`gpu_reflex_xids_total{via="kmsg",gpu="3",UUID="${UUID}",xid="31"} 1`);
  });

  it('export no DCGM_FI_* names with DCGM_METRICS=false (dcgm-exporter runs there), and do by default', () => {
    const on = loadAgentConfig(env);
    const off = loadAgentConfig({ ...env, DCGM_METRICS: 'false' });
    expect(dcgmOptionsOf(on)).toMatchObject({ hostname: 'gpu-1' });
    expect(dcgmOptionsOf(off)).toBeUndefined();
    const registry = new Metrics();
    const m = registerAgentMetrics(registry, dcgmOptionsOf(off));
    m.xidPublished('nvml', 1000, UUID, 79, 0);
    expect(registry.render()).not.toContain('DCGM_FI_');
  });

  it('say which pod holds which GPU or MIG device, one series each, and none when PodResources is unknown', () => {
    const registry = new Metrics();
    const m = registerAgentMetrics(registry);
    const MIG = 'MIG-00000000-1111-2222-3333-000000000001';
    const holder = { namespace: 'research', name: 'nb', resource: 'nvidia.com/gpu', gpu: UUID };
    // Two containers of one pod name the device twice: one series.
    m.holdersSampled([holder, holder, { ...holder, name: 'small', mig: MIG }], () => 3);
    const lines = registry
      .render()
      .split('\n')
      .filter((l) => l.startsWith('gpu_reflex_gpu_allocated{'));
    expect(lines).toEqual([
      `gpu_reflex_gpu_allocated{gpu="3",UUID="${UUID}",mig="",namespace="research",pod="nb"} 1`,
      `gpu_reflex_gpu_allocated{gpu="3",UUID="${UUID}",mig="${MIG}",namespace="research",pod="small"} 1`,
    ]);
    m.holdersSampled(undefined, () => 3);
    expect(registry.render()).not.toContain('gpu_reflex_gpu_allocated{');
  });
});
