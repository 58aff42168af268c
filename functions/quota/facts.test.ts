import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { MIG_INVENTORY_ANNOTATION } from '../../events/index.ts';
import { QUARANTINED_GPUS_ANNOTATION, STATE_LABEL } from '../lib/node-state.ts';
import { QuotaConfigSchema } from './core/config.ts';
import { quotaFacts } from './facts.ts';

const GPU = 'nvidia.com/gpu';
const config = QuotaConfigSchema.parse({ teams: [{ name: 'a', namespaces: ['a'] }] });
const node = (name: string, o: Partial<NodeInfo> & { gpus?: number; allocatableGpus?: number } = {}): NodeInfo =>
  ({
    name,
    labels: {},
    annotations: {},
    ready: true,
    unschedulable: false,
    taints: [],
    capacity: { [GPU]: String(o.gpus ?? 8) },
    allocatable: { [GPU]: String(o.allocatableGpus ?? o.gpus ?? 8) },
    ...o,
  }) as unknown as NodeInfo;
const fenced = (...uuids: string[]) => ({ [QUARANTINED_GPUS_ANNOTATION]: JSON.stringify(uuids) });
const capacityOf = (nodes: NodeInfo[]) => quotaFacts(config, nodes, [], []).capacity[GPU];

describe('quotaFacts: faults move capacity', () => {
  it('takes a GPU remediation fenced out at once, before the device plugin drops it, and counts it once after', () => {
    expect(capacityOf([node('n0'), node('n1')])).toBe(16);
    // Fenced, the allocatable not yet dropped (the agent's fence file is read by the plugin later).
    const before = quotaFacts(config, [node('n0', { annotations: fenced('GPU-aaaa') }), node('n1')], [], []);
    expect(before.capacity[GPU]).toBe(15);
    expect(before.out).toEqual([{ node: 'n0', why: '1 GPU fenced by remediation', gpus: 1 }]);
    // The plugin dropped it: still 15, not 14.
    expect(capacityOf([node('n0', { annotations: fenced('GPU-aaaa'), allocatableGpus: 7 }), node('n1')])).toBe(15);
    // MIG instances are not whole GPUs: their profiles' allocatable says what is out.
    expect(capacityOf([node('n0', { annotations: fenced('MIG-bbbb', 'GPU-cccc/gi1') }), node('n1')])).toBe(16);
    // Restored: the entry is gone, the capacity is back.
    expect(capacityOf([node('n0', { annotations: {} }), node('n1')])).toBe(16);
  });

  it('leaves out a node remediation is draining or that awaits repair, whatever taint its policy uses', () => {
    const f = quotaFacts(
      config,
      [
        node('n0', { labels: { [STATE_LABEL]: 'draining' } }),
        node('n1', { labels: { [STATE_LABEL]: 'awaiting-repair' } }),
      ],
      [],
      [],
    );
    expect(f.capacity[GPU]).toBe(0);
    expect(f.excluded).toEqual([`n0 (draining (${STATE_LABEL}))`, `n1 (awaiting-repair (${STATE_LABEL}))`]);
    // Quarantined (a GPU out, the node in service) and healthy nodes count.
    expect(capacityOf([node('n0', { labels: { [STATE_LABEL]: 'quarantined' } })])).toBe(8);
  });

  it('reads an unreadable quarantined-gpus annotation as nothing fenced (the allocatable still speaks)', () => {
    const bad = node('n0', { annotations: { [QUARANTINED_GPUS_ANNOTATION]: '{not json' }, allocatableGpus: 7 });
    expect(capacityOf([bad])).toBe(7);
  });
});

describe('quotaFacts: a fenced MIG instance moves capacity like a whole GPU', () => {
  const MIG = 'nvidia.com/mig-1g.10gb';
  const UUID = 'GPU-6f3d436b-50bf-7e46-2a73-970aa9422a64';
  const migConfig = QuotaConfigSchema.parse({
    teams: [{ name: 'a', namespaces: ['a'] }],
    resources: [MIG, 'nvidia.com/mig-3g.40gb'],
  });
  const inventory = JSON.stringify({
    v: 1,
    at: '2041-07-01T00:00:00.000Z',
    gpus: [
      {
        index: 0,
        uuid: UUID,
        instances: [
          { profile: '3g.40gb', gi: 1, inUse: false },
          { profile: '1g.10gb', gi: 7, inUse: false },
          { profile: '1g.10gb', gi: 8, inUse: false },
        ],
      },
    ],
  });
  const migNode = (annotations: Record<string, string>, allocatable1g = 4) =>
    ({
      name: 'h0',
      labels: {},
      annotations: { [MIG_INVENTORY_ANNOTATION]: inventory, ...annotations },
      ready: true,
      unschedulable: false,
      taints: [],
      capacity: { [MIG]: '4', 'nvidia.com/mig-3g.40gb': '1' },
      allocatable: { [MIG]: String(allocatable1g), 'nvidia.com/mig-3g.40gb': '1' },
    }) as unknown as NodeInfo;

  it('takes the instance out of its profile at once (from the agent inventory), and counts it once after', () => {
    expect(quotaFacts(migConfig, [migNode({})], [], []).capacity[MIG]).toBe(4);
    const f = quotaFacts(migConfig, [migNode(fenced(`${UUID}/gi7`))], [], []);
    expect(f.capacity).toEqual({ [MIG]: 3, 'nvidia.com/mig-3g.40gb': 1 });
    expect(f.out).toEqual([
      { node: 'h0', why: '1 1g.10gb MIG instance fenced by remediation', instances: { [MIG]: 1 } },
    ]);
    // The device plugin dropped it: still 3, not 2.
    expect(quotaFacts(migConfig, [migNode(fenced(`${UUID}/gi7`), 3)], [], []).capacity[MIG]).toBe(3);
    // Two of them, and a GPU instance the inventory does not list (or a MIG-… UUID): the allocatable speaks.
    expect(
      quotaFacts(migConfig, [migNode(fenced(`${UUID}/gi7`, `${UUID}/gi8`, `${UUID}/gi9`, 'MIG-bb'))], [], []).capacity[
        MIG
      ],
    ).toBe(2);
    // Restored: back.
    expect(quotaFacts(migConfig, [migNode({})], [], []).capacity[MIG]).toBe(4);
  });
});
