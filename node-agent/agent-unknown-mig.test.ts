import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type AgentFixture } from '../test/support/agent-fixture.ts';
import { PluginHealthCheck, type NodeView } from './plugin-health.ts';
import type { OutgoingEvent } from './events.ts';

// A MIG mode NVML fails to read (an error, not NOT_SUPPORTED) is unknown: never "this GPU has no MIG".
let fx: AgentFixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

const inventories = (events: OutgoingEvent[]) => events.filter((e) => e.detailType === 'GPU Inventory');

/** h100-mig.json as the device plugin's mixed strategy advertises it: 10 MIG devices, no whole GPU. */
const node: NodeView = {
  labels: {},
  capacity: { 'nvidia.com/mig-1g.10gb': '7', 'nvidia.com/mig-2g.20gb': '2', 'nvidia.com/mig-3g.40gb': '1' },
  allocatable: { 'nvidia.com/mig-1g.10gb': '7', 'nvidia.com/mig-2g.20gb': '2', 'nvidia.com/mig-3g.40gb': '1' },
};

describe('a MIG mode NVML fails to read', () => {
  it('is not published as unsupported, and the device plugin check does not judge the node on it', async () => {
    fx = await startAgent('h100-mig.json');
    const first = await fx.agent.sampleOnce();
    expect(inventories(first)).toHaveLength(1);
    const plugin = new PluginHealthCheck({ nodeName: 'gpu-node-1', readNode: async () => node });
    expect(await plugin.check(fx.now(), fx.agent.latestInventory)).toEqual([]);

    // The driver now errors on nvmlDeviceGetMigMode for every GPU (NVML_ERROR_UNKNOWN, 999).
    const lib = fx.nvml.lib as unknown as Record<string, unknown>;
    const real = lib.nvmlDeviceGetMigMode;
    lib.nvmlDeviceGetMigMode = () => 999;
    fx.advance(1000);
    const out = await fx.agent.sampleOnce();
    // Read as "MIG off" (unsupported) the labeller would write mig.enabled=false; nothing is sent instead.
    expect(inventories(out)).toEqual([]);
    expect(fx.agent.latestInventory).toBeUndefined();
    // Read as "MIG off", the node should advertise 2 whole nvidia.com/gpu: a mismatch, a taint and a plugin restart.
    expect(await plugin.check(fx.now(), fx.agent.latestInventory)).toEqual([]);

    // NVML answers again: the inventory is known again (unchanged, so not re-sent before its interval).
    lib.nvmlDeviceGetMigMode = real;
    fx.advance(1000);
    expect(inventories(await fx.agent.sampleOnce())).toEqual([]);
    expect(fx.agent.latestInventory?.gpus.map((g) => g.migMode)).toEqual(['enabled', 'enabled']);
    expect(await plugin.check(fx.now(), fx.agent.latestInventory)).toEqual([]);
  });
});
