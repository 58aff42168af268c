import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from './index.ts';
import { describeSystemEvents } from './system-events-api.ts';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
let sim: AliCloudSim;
afterEach(() => sim.close());

async function region(clock: VirtualClock) {
  sim = await startAliCloudSim({
    clock,
    cloud: {
      rebootSeconds: 60,
      pools: [{ id: 'np-a', name: 'a', instanceTypes: ['ecs.gn6i-c4g1.xlarge'], size: 2, nodeNames: ['n-a', 'n-b'] }],
      systemEvents: [{ node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 7200 }],
      preemptions: [{ node: 'n-b', atSeconds: 60 }],
    },
  });
  return sim.cloud;
}

const ask = (q: Record<string, string>) =>
  describeSystemEvents(sim.cloud, new URLSearchParams({ RegionId: 'cn-hangzhou', ...q }), 'r') as {
    InstanceSystemEventSet: { InstanceSystemEventType: { EventCycleStatus: { Name: string }; NotBefore: string }[] };
  };
const states = (q: Record<string, string>) =>
  ask(q).InstanceSystemEventSet.InstanceSystemEventType.map((e) => e.EventCycleStatus.Name);

describe('simulated ECS system events (DescribeInstanceHistoryEvents)', () => {
  it('lists only events that are over unless the caller names the active states', async () => {
    await region(new VirtualClock(T0));
    expect(states({})).toEqual([]);
    const active = { 'InstanceEventCycleStatus.1': 'Scheduled', 'InstanceEventCycleStatus.2': 'Executing' };
    expect(states(active)).toEqual(['Scheduled']);
    expect(ask(active).InstanceSystemEventSet.InstanceSystemEventType[0]!.NotBefore).toBe('2026-01-01T02:00:00Z');
  });

  it('carries the event out at NotBefore: the instance restarts (Executing), then Executed', async () => {
    const clock = new VirtualClock(T0);
    const cloud = await region(clock);
    const changes: string[] = [];
    cloud.onChange((c) => changes.push(`${c.type} ${c.instance.nodeName}`));
    clock.advance(7200_000);
    expect(states({ 'InstanceEventCycleStatus.1': 'Executing' })).toEqual(['Executing']);
    clock.advance(60_000);
    expect(states({})).toEqual(['Executed']);
    expect(changes.filter((c) => c.endsWith('n-a'))).toEqual(['rebooting n-a', 'running n-a']);
  });

  it('locks a spot instance Recycling at its notice and reclaims it 5 minutes later; the pool boots another', async () => {
    const clock = new VirtualClock(T0);
    const cloud = await region(clock);
    const b = [...cloud.instances.values()].find((i) => i.nodeName === 'n-b')!;
    clock.advance(60_000);
    expect(b.locks).toEqual(['Recycling']);
    clock.advance(5 * 60_000);
    expect(cloud.instances.has(b.id)).toBe(false);
    expect(cloud.members('np-a')).toHaveLength(2);
  });

  it('refuses an unknown lifecycle state and more than 100 resources, as ECS does', async () => {
    await region(new VirtualClock(T0));
    expect(() => states({ 'InstanceEventCycleStatus.1': 'Soon' })).toThrow(/EventCycleStatus is not valid/);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`ResourceId.${i + 1}`, `i-${i}`]));
    expect(() => states(many)).toThrow(/at most 100/);
  });
});
