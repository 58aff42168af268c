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
});
