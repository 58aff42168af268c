import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { Cluster } from './cluster.ts';
import { seedFleet } from './fleet-seed.ts';
import { EXAMPLE_FLEET_PATH, FleetError, loadFleet, parseFleet } from './fleet.ts';

describe('fleet files', () => {
  it('seeds the example fleet with every pod running and agents on every GPU node', () => {
    const cluster = new Cluster(new ManualClock());
    seedFleet(cluster, loadFleet(EXAMPLE_FLEET_PATH));
    const { store } = cluster;
    expect(store.count('nodes')).toBe(10);
    expect(
      store
        .pods()
        .filter((p) => p.status?.phase !== 'Running')
        .map((p) => p.metadata.name),
    ).toEqual([]);
    const agents = store
      .pods('gpu-reflex')
      .map((p) => p.spec.nodeName)
      .sort();
    expect(agents).toEqual(
      store
        .nodes()
        .filter((n) => n.metadata.labels?.['gpu-reflex.io/gpu'] === 'true')
        .map((n) => n.metadata.name)
        .sort(),
    );
    expect(store.node('h100-mig-0')!.status?.allocatable?.['nvidia.com/mig-1g.10gb']).toBe('16');
    expect(store.podsOnNode('h100-mig-0').filter((p) => p.metadata.namespace === 'research')).toHaveLength(3);
  });

  it.each([
    ['nodes:\n  - name: g\n    allocatable: { cpu: lots }\n', 'nodes.0.allocatable.cpu'],
    ['nodes:\n  - name: G_1\n    allocatable: {}\n', 'nodes.0.name'],
    [
      'nodes:\n  - name: g\n    allocatable: {}\n    taints: [{ key: k, effect: Sometimes }]\n',
      'nodes.0.taints.0.effect',
    ],
    ['podDisruptionBudgets:\n  - { name: p, namespace: n, selector: {} }\n', 'podDisruptionBudgets.0'],
    ['pods:\n  - { name: p, namespace: n, owner: { kind: Deployment, name: d } }\n', 'pods.0.owner.kind'],
    ['nodez: []\n', 'nodez'],
  ])('names the bad field in %j', (text, field) => {
    expect(() => parseFleet(text, 'f.yaml')).toThrow(FleetError);
    expect(() => parseFleet(text, 'f.yaml')).toThrow(field);
  });

  it('reports an API refusal while seeding with the object it hit', () => {
    const cluster = new Cluster(new ManualClock());
    const fleet = parseFleet(
      'namespaces: [{ name: a, quotas: [{ name: q, hard: { pods: 1 } }] }]\npods: [{ name: p, namespace: a, count: 2 }]\n',
    );
    expect(() => seedFleet(cluster, fleet)).toThrow('seeding pod a/p-1: pods "p-1" is forbidden: exceeded quota: q');
  });
});
