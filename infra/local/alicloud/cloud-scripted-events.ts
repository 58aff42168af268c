import { CloudError, type CloudChange, type SimInstance, type SimPool, type SimTask } from './cloud-types.ts';
import type { ParsedCloudFile } from './cloud-file.ts';
import { SPOT_RECLAIM_MS, type SimSystemEvent } from './system-events.ts';
import type { Clock } from '../../../events/clock.ts';

/** What the scripted events change in the cloud beyond its public records (AliCloud's own steps). */
export interface CloudSteps {
  emit(c: CloudChange): void;
  next(): number;
  boot(inst: SimInstance): void;
  grow(pool: SimPool, count: number, action: string): SimTask;
}

/** Puts the cloud file's system events and spot interruptions on the cloud's clock (see scriptAll). */
export function scriptEvents(
  cloud: {
    readonly clock: Clock;
    readonly instances: Map<string, SimInstance>;
    readonly pools: Map<string, SimPool>;
    readonly systemEvents: SimSystemEvent[];
    members(poolId: string): SimInstance[];
  },
  file: ParsedCloudFile,
  h: CloudSteps,
): void {
  /** The instance a scripted event names (by node name or id); a name the region lacks is refused at start. */
  function scripted(e: { node?: string | undefined; instanceId?: string | undefined }, what: string): SimInstance {
    const inst = [...cloud.instances.values()].find((i) => i.id === e.instanceId || i.nodeName === e.node);
    if (!inst)
      throw new CloudError(400, 'InvalidParameter', `${what}: no instance ${e.instanceId ?? `with node ${e.node}`}`);
    return inst;
  }

  /**
   * The cloud file's system events and spot interruptions, on the clock. A system event is published, carried out at
   * its NotBefore (the instance restarts: Executing), and Executed once the instance runs again; one whose instance
   * is gone by then is Canceled. A spot instance's notice locks it `Recycling`; 5 minutes later it is reclaimed
   * (released), and its pool, which keeps its desired size, boots another (ACK: a node deleted another way is
   * replaced).
   */
  function scriptAll(): void {
    for (const spec of file.systemEvents ?? []) {
      const inst = scripted(spec, 'systemEvents');
      const e: SimSystemEvent = {
        id: `e-gr${h.next().toString(36).padStart(16, '0')}`,
        instanceId: inst.id,
        type: spec.type,
        status: 'Scheduled',
        publishedMs: cloud.clock.now() + spec.publishSeconds * 1000,
        notBeforeMs: cloud.clock.now() + spec.notBeforeSeconds * 1000,
      };
      if (spec.publishSeconds === 0) cloud.systemEvents.push(e);
      else cloud.clock.setTimer(spec.publishSeconds * 1000, () => cloud.systemEvents.push(e));
      cloud.clock.setTimer(spec.notBeforeSeconds * 1000, () => carryOut(e));
    }
    for (const spec of file.preemptions ?? []) {
      const inst = scripted(spec, 'preemptions');
      cloud.clock.setTimer(spec.atSeconds * 1000, () => {
        if (!cloud.instances.has(inst.id)) return;
        inst.locks = ['Recycling'];
        cloud.clock.setTimer(SPOT_RECLAIM_MS, () => reclaim(inst));
      });
    }
  }

  function carryOut(e: SimSystemEvent): void {
    const inst = cloud.instances.get(e.instanceId);
    if (!inst || inst.status !== 'Running') {
      e.status = 'Canceled';
      e.finishedMs = cloud.clock.now();
      return;
    }
    e.status = 'Executing';
    inst.status = 'Stopping';
    h.emit({ type: 'rebooting', instance: inst, pool: inst.poolId ? cloud.pools.get(inst.poolId) : undefined });
    cloud.clock.setTimer(file.rebootSeconds * 1000, () => {
      if (cloud.instances.has(inst.id) && inst.status === 'Stopping') h.boot(inst);
      e.status = 'Executed';
      e.finishedMs = cloud.clock.now();
    });
  }

  function reclaim(inst: SimInstance): void {
    if (!cloud.instances.has(inst.id)) return;
    const pool = inst.poolId ? cloud.pools.get(inst.poolId) : undefined;
    cloud.instances.delete(inst.id);
    if (!pool) return;
    inst.poolId = undefined;
    h.emit({ type: 'removed', instance: inst, pool, released: true });
    const short = pool.desired - cloud.members(pool.spec.id).length;
    if (short > 0) h.grow(pool, short, 'ReclaimReplacement');
  }

  scriptAll();
}
