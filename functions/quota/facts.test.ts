import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../adapters/kube/model.ts';
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
