// Over 300 lines (issue #26 allows five such files, each saying why): one stateful simulated region whose pool
// operations, boots and tasks and the call gate (throttles, injected failures) mutate the same maps; its types and
// scripted events are already apart (cloud-types.ts, cloud-scripted-events.ts). Next seam: the call gate.
import type { Clock } from '../../../events/clock.ts';
import { DEFAULT_INSTANCE_TYPES, type InstanceTypeSpec } from './catalog.ts';
import type { ParsedCloudFile } from './cloud-file.ts';
import type { SimSystemEvent } from './system-events.ts';
import {
  CloudError,
  MAX_ADD_PER_CALL,
  MAX_POOL_SIZE,
  type CloudChange,
  type SimInstance,
  type SimPool,
  type SimTask,
} from './cloud-types.ts';
import { scriptEvents } from './cloud-scripted-events.ts';

export {
  CloudError,
  MAX_ADD_PER_CALL,
  MAX_POOL_SIZE,
  type CloudChange,
  type InstanceStatus,
  type SimInstance,
  type SimPool,
  type SimTask,
  type TaskState,
} from './cloud-types.ts';

/**
 * The simulated region: one ACK cluster's node pools, the ECS instances behind them, and the
 * asynchronous tasks that change them. Everything that takes time (boot, reboot, removal) is a
 * timer on the injected clock, so `simulate` replays a scale-out in virtual seconds and the wall
 * clock serves `gpu-reflex alicloud serve`.
 *
 * Listeners hear instances become Running (a node joins), start rebooting (the node goes away for a
 * while) and leave the pool (the node is deleted): the local stack turns those into Nodes.
 */
export class AliCloud {
  readonly regionId: string;
  readonly zoneId: string;
  readonly clusterId: string;
  readonly pools = new Map<string, SimPool>();
  readonly instances = new Map<string, SimInstance>();
  readonly tasks = new Map<string, SimTask>();
  readonly types = new Map<string, InstanceTypeSpec>();
  /** ECS system events published so far (system-events.ts), every state. */
  readonly systemEvents: SimSystemEvent[] = [];
  /** Every call that reached an action, in order (action and caller's AccessKey id): tests count them. */
  readonly calls: { action: string; accessKeyId: string }[] = [];
  private readonly secrets = new Map<string, string>();
  private readonly throttles = new Map<string, number>();
  private readonly taskFailures = new Map<string, number>();
  private readonly listeners: ((c: CloudChange) => void)[] = [];
  private seq = 0;

  constructor(
    private readonly file: ParsedCloudFile,
    readonly clock: Clock,
  ) {
    this.regionId = file.regionId;
    this.zoneId = file.zoneId ?? `${file.regionId}-k`;
    this.clusterId = file.clusterId;
    for (const t of DEFAULT_INSTANCE_TYPES) this.types.set(t.id, t);
    for (const t of file.instanceTypes)
      this.types.set(t.id, { ...t, family: t.family ?? t.id.split('.').slice(0, 2).join('.').replace(/-.*$/, '') });
    for (const c of file.credentials) this.secrets.set(c.accessKeyId, c.accessKeySecret);
    for (const f of file.faults) this.inject(f);
    const now = clock.now();
    for (const spec of file.pools) {
      const unknown = spec.instanceTypes.filter((t) => !this.types.has(t));
      if (unknown.length > 0)
        throw new CloudError(
          400,
          'InvalidParameter',
          `node pool ${spec.id}: unknown instance type ${unknown.join(', ')} (add it under instanceTypes)`,
        );
      this.pools.set(spec.id, {
        spec,
        desired: Math.max(spec.size, spec.nodeNames.length),
        createdMs: now,
        updatedMs: now,
      });
      for (let i = 0; i < Math.max(spec.size, spec.nodeNames.length); i++) {
        const inst = this.newInstance(spec.id, spec.nodeNames[i]);
        inst.status = 'Running';
        inst.startedMs = now;
      }
    }
    scriptEvents(this, file, {
      emit: (c) => this.emit(c),
      next: () => this.next(),
      boot: (i) => this.boot(i),
      grow: (p, n, a) => this.grow(p, n, a),
    });
  }

  get bootMs(): number {
    return this.file.bootSeconds * 1000;
  }

  secretOf(accessKeyId: string): string | undefined {
    return this.secrets.get(accessKeyId);
  }

  onChange(fn: (c: CloudChange) => void): () => void {
    this.listeners.push(fn);
    return () => {
      const i = this.listeners.indexOf(fn);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** Makes the next calls of `action` answer Throttling.User, or the next tasks it starts fail. */
  inject(f: { action: string; throttle?: number | undefined; failTasks?: number | undefined }): void {
    if (f.throttle) this.throttles.set(f.action, (this.throttles.get(f.action) ?? 0) + f.throttle);
    if (f.failTasks) this.taskFailures.set(f.action, (this.taskFailures.get(f.action) ?? 0) + f.failTasks);
  }

  /** Called for every authenticated call before it is served; throws the injected throttling. */
  admit(action: string, accessKeyId: string): void {
    this.calls.push({ action, accessKeyId });
    const n = this.throttles.get(action) ?? 0;
    if (n > 0) {
      this.throttles.set(action, n - 1);
      throw new CloudError(400, 'Throttling.User', 'Request was denied due to user flow control.');
    }
  }

  pool(poolId: string): SimPool {
    const p = this.pools.get(poolId);
    if (!p)
      throw new CloudError(404, 'ErrorNodePoolNotFound', `node pool ${poolId} not found in cluster ${this.clusterId}`);
    return p;
  }

  /** The pool's instances that count towards its size (not being removed). */
  members(poolId: string): SimInstance[] {
    return [...this.instances.values()].filter((i) => i.poolId === poolId && !i.removing);
  }

  cluster(clusterId: string): void {
    if (clusterId !== this.clusterId)
      throw new CloudError(404, 'ErrorClusterNotFound', `cluster ${clusterId} not found`);
  }

  /**
   * The kubeconfigs DescribeClusterUserKubeconfig hands out (`public` and `private` endpoint), set
   * by whoever runs the cluster beside this cloud (a test, the embedded stack). Unset: the call fails.
   */
  readonly userKubeconfigs: { public?: string; private?: string } = {};

  /**
   * DescribeClusterUserKubeconfig: a temporary one lasts `minutes` (15–4320); without, 3 years (ACK's default
   * certificate).
   */
  userKubeconfig(privateIp: boolean, minutes: number | undefined): { config: string; expiresMs: number } {
    if (minutes !== undefined && (!Number.isInteger(minutes) || minutes < 15 || minutes > 4320))
      throw new CloudError(
        400,
        'InvalidParameter',
        `TemporaryDurationMinutes must be an integer from 15 to 4320 (got ${minutes})`,
      );
    const config = this.userKubeconfigs[privateIp ? 'private' : 'public'];
    if (config === undefined)
      throw new CloudError(
        400,
        'InvalidParameter',
        `this simulator has no ${privateIp ? 'private' : 'public'} kubeconfig for cluster ${this.clusterId} (set ` +
          `cloud.userKubeconfigs)`,
      );
    return { config, expiresMs: this.clock.now() + (minutes ?? 3 * 365 * 24 * 60) * 60_000 };
  }

  /** ModifyClusterNodePool: the absolute desired size; a retry with the same size changes nothing. */
  setDesired(poolId: string, desired: number): SimTask {
    const pool = this.pool(poolId);
    if (!Number.isInteger(desired) || desired < 0 || desired > MAX_POOL_SIZE)
      throw new CloudError(
        400,
        'InvalidParameter',
        `scaling_group.desired_size must be an integer from 0 to ${MAX_POOL_SIZE} (got ${desired})`,
      );
    const members = this.members(poolId);
    if (desired - members.length > MAX_ADD_PER_CALL)
      throw new CloudError(
        400,
        'InvalidParameter',
        `at most ${MAX_ADD_PER_CALL} nodes can be added in one call (asked for ${desired - members.length})`,
      );
    pool.desired = desired;
    pool.updatedMs = this.clock.now();
    if (desired > members.length) return this.grow(pool, desired - members.length, 'ModifyClusterNodePool');
    const surplus = members.slice(desired).reverse();
    return this.remove(pool, surplus, { release: true, drain: true }, 'ModifyClusterNodePool', false);
  }

  /** ScaleClusterNodePool: adds `count` (not safe to retry: every call adds again). */
  scale(poolId: string, count: number): SimTask {
    const pool = this.pool(poolId);
    if (!Number.isInteger(count) || count < 1 || count > MAX_ADD_PER_CALL)
      throw new CloudError(
        400,
        'InvalidParameter',
        `count must be an integer from 1 to ${MAX_ADD_PER_CALL} (got ${count})`,
      );
    if (this.members(poolId).length + count > MAX_POOL_SIZE)
      throw new CloudError(400, 'InvalidParameter', `a node pool holds at most ${MAX_POOL_SIZE} nodes`);
    pool.desired = this.members(poolId).length + count;
    pool.updatedMs = this.clock.now();
    return this.grow(pool, count, 'ScaleClusterNodePool');
  }

  /**
   * RemoveNodePoolNodes: takes the instances out (and lowers the desired size), releasing pay-as-you-go ones when
   * asked.
   */
  removeNodes(poolId: string, instanceIds: string[], opts: { release: boolean; drain: boolean }): SimTask {
    const pool = this.pool(poolId);
    if (instanceIds.length === 0)
      throw new CloudError(400, 'InvalidParameter', 'instance_ids must name at least one instance');
    const found = instanceIds.map((id) => this.instances.get(id));
    const strangers = instanceIds.filter((id, k) => found[k]?.poolId !== poolId || found[k]?.removing);
    if (strangers.length > 0)
      throw new CloudError(
        400,
        'InvalidParameter',
        `instances not in node pool ${poolId} (or already being removed): ${strangers.join(', ')}`,
      );
    pool.desired = Math.max(0, pool.desired - instanceIds.length);
    pool.updatedMs = this.clock.now();
    return this.remove(pool, found as SimInstance[], opts, 'RemoveNodePoolNodes', true);
  }

  /** ECS RebootInstance: only a Running instance; it comes back with a new boot id. */
  reboot(instanceId: string, opts: { dryRun: boolean; forceStop: boolean }): void {
    const inst = this.instances.get(instanceId);
    if (!inst)
      throw new CloudError(404, 'InvalidInstanceId.NotFound', `The specified InstanceId does not exist: ${instanceId}`);
    if (inst.status !== 'Running')
      throw new CloudError(
        403,
        'IncorrectInstanceStatus',
        `The current status of the resource does not support this operation (instance ${instanceId} ` +
          `is ${inst.status}).`,
      );
    if (opts.dryRun)
      throw new CloudError(400, 'DryRunOperation', 'Request validation has been passed with DryRun flag set.');
    inst.status = 'Stopping';
    this.emit({ type: 'rebooting', instance: inst, pool: inst.poolId ? this.pools.get(inst.poolId) : undefined });
    this.clock.setTimer(this.file.rebootSeconds * 1000, () => {
      if (!this.instances.has(inst.id) || inst.status !== 'Stopping') return;
      this.boot(inst);
    });
  }

  task(taskId: string): SimTask {
    const t = this.tasks.get(taskId);
    if (!t) throw new CloudError(404, 'ErrorTaskNotFound', `task ${taskId} not found`);
    return t;
  }

  private emit(c: CloudChange): void {
    for (const l of [...this.listeners]) l(c);
  }

  private next(): number {
    return ++this.seq;
  }

  private newInstance(poolId: string, nodeName?: string): SimInstance {
    const pool = this.pool(poolId);
    const n = this.next();
    const ip = `10.0.${Math.floor(n / 250)}.${(n % 250) + 2}`;
    const inst: SimInstance = {
      id: `i-gr${n.toString(36).padStart(16, '0')}`,
      poolId,
      instanceType: pool.spec.instanceTypes[0]!,
      status: 'Pending',
      nodeName: nodeName ?? `${this.regionId}.${ip}`,
      privateIp: ip,
      chargeType: pool.spec.chargeType,
      createdMs: this.clock.now(),
      startedMs: undefined,
      bootId: `boot-${n}-0`,
      removing: false,
      locks: [],
    };
    this.instances.set(inst.id, inst);
    return inst;
  }

  private newTask(type: SimTask['type'], poolId: string, instanceIds: string[]): SimTask {
    const now = this.clock.now();
    const task: SimTask = {
      id: `T-${this.next().toString(16).padStart(24, '0')}`,
      type,
      poolId,
      state: 'running',
      createdMs: now,
      updatedMs: now,
      instanceIds,
    };
    this.tasks.set(task.id, task);
    return task;
  }

  private failsNext(action: string): boolean {
    const n = this.taskFailures.get(action) ?? 0;
    if (n > 0) this.taskFailures.set(action, n - 1);
    return n > 0;
  }

  private boot(inst: SimInstance): void {
    const [prefix, gen] = [inst.bootId.replace(/-\d+$/, ''), Number(inst.bootId.split('-').pop())];
    inst.bootId = inst.startedMs === undefined ? inst.bootId : `${prefix}-${gen + 1}`;
    inst.status = 'Running';
    inst.startedMs = this.clock.now();
    this.emit({ type: 'running', instance: inst, pool: inst.poolId ? this.pools.get(inst.poolId) : undefined });
  }

  /**
   * The instance type of each of `count` new instances of the pool, or undefined when the zone's
   * stock cannot supply them all. The scaling group takes its instance types in their order of
   * priority and, when one cannot be created, the next (Auto Scaling CreateScalingConfiguration,
   * `InstanceTypes`: "up to 10 instance types ... sorted in descending order of priority ... If Auto
   * Scaling cannot create instances by using the instance type of the highest priority, Auto Scaling
   * uses the instance type of the next highest priority").
   */
  /** The zone's spot price per hour for the type (cloud file `spotPrices`), undefined when it offers none. */
  spotPrice(type: string): number | undefined {
    return this.file.spotPrices?.[type];
  }

  private typesFor(pool: SimPool, count: number): string[] | undefined {
    const left = new Map(Object.entries(this.file.stock ?? {}));
    const out: string[] = [];
    for (let i = 0; i < count; i++) {
      const type = pool.spec.instanceTypes.find((t) => !left.has(t) || left.get(t)! > 0);
      if (type === undefined) return undefined;
      if (left.has(type)) left.set(type, left.get(type)! - 1);
      out.push(type);
    }
    for (const [t, n] of left) if (this.file.stock[t] !== undefined) this.file.stock[t] = n;
    return out;
  }

  private grow(pool: SimPool, count: number, action: string): SimTask {
    const created = Array.from({ length: count }, () => this.newInstance(pool.spec.id));
    const task = this.newTask(
      'nodepool_scale',
      pool.spec.id,
      created.map((i) => i.id),
    );
    const injected = this.failsNext(action);
    const types = injected ? undefined : this.typesFor(pool, count);
    types?.forEach((t, i) => (created[i]!.instanceType = t));
    this.clock.setTimer(this.bootMs, () => {
      task.updatedMs = this.clock.now();
      if (!types) {
        for (const i of created) this.instances.delete(i.id);
        pool.desired = this.members(pool.spec.id).length;
        task.state = 'failed';
        // ECS's answer when the zone has none of the type left (RunInstances error codes, 403).
        task.error = {
          code: 'OperationDenied.NoStock',
          message:
            `The requested resource is sold out in the specified zone; try other types of resources or other ` +
            `regions and zones (${pool.spec.instanceTypes.join(', ')}, ${this.zoneId}` +
            `${injected ? '; injected' : ''}).`,
        };
        return;
      }
      for (const i of created) if (this.instances.has(i.id) && i.status === 'Pending') this.boot(i);
      task.state = 'success';
    });
    return task;
  }

  private remove(
    pool: SimPool,
    victims: SimInstance[],
    opts: { release: boolean; drain: boolean },
    action: string,
    explicit: boolean,
  ): SimTask {
    const task = this.newTask(
      'nodepool_remove_nodes',
      pool.spec.id,
      victims.map((i) => i.id),
    );
    if (victims.length === 0) {
      task.state = 'success';
      return task;
    }
    const fail = this.failsNext(action);
    for (const v of victims) {
      v.removing = true;
      this.emit({ type: 'removing', instance: v, pool, drain: opts.drain });
    }
    this.clock.setTimer(this.file.removeSeconds * 1000, () => {
      task.updatedMs = this.clock.now();
      if (fail) {
        for (const v of victims) v.removing = false;
        if (explicit) pool.desired += victims.length;
        task.state = 'failed';
        task.error = {
          code: 'RemoveNodesFailed',
          message: `removing ${victims.map((v) => v.id).join(', ')} from ${pool.spec.id} failed (injected)`,
        };
        return;
      }
      for (const v of victims) {
        const released = opts.release && v.chargeType === 'PostPaid';
        v.poolId = undefined;
        v.removing = false;
        if (released) this.instances.delete(v.id);
        this.emit({ type: 'removed', instance: v, pool, released });
      }
      task.state = 'success';
    });
    return task;
  }
}
