import type { AliCloud, SimInstance, SimPool, SimTask } from './cloud.ts';
import type { Json } from './server-call.ts';

/** The cloud's pools, tasks and instances in the shapes the CS and ECS APIs answer with. */
export const iso = (ms: number | undefined) =>
  ms === undefined ? '' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
/** ECS writes times to the minute: `2026-01-01T00:00Z`. */
const ecsTime = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().slice(0, 16) + 'Z');

export function poolView(cloud: AliCloud, pool: SimPool): Json {
  const all = [...cloud.instances.values()].filter((i) => i.poolId === pool.spec.id);
  const count = (f: (i: SimInstance) => boolean) => all.filter(f).length;
  const busy = [...cloud.tasks.values()].filter((t) => t.poolId === pool.spec.id && t.state === 'running');
  const state = busy.some((t) => t.type === 'nodepool_remove_nodes')
    ? 'removing'
    : busy.length > 0
      ? 'scaling'
      : 'active';
  const s = pool.spec;
  return {
    nodepool_info: {
      nodepool_id: s.id,
      name: s.name,
      type: 'ess',
      is_default: false,
      region_id: cloud.regionId,
      created: iso(pool.createdMs),
      updated: iso(pool.updatedMs),
    },
    status: {
      state,
      total_nodes: count((i) => !i.removing),
      healthy_nodes: count((i) => i.status === 'Running' && !i.removing),
      serving_nodes: count((i) => i.status === 'Running' && !i.removing),
      failed_nodes: 0,
      initial_nodes: count((i) => i.status === 'Pending' || i.status === 'Starting'),
      offline_nodes: count((i) => i.status === 'Stopping' || i.status === 'Stopped'),
      removing_nodes: count((i) => i.removing),
    },
    auto_scaling: {
      enable: s.autoScaling.enable,
      min_instances: s.autoScaling.min,
      max_instances: s.autoScaling.max,
      type: 'cpu',
    },
    scaling_group: {
      desired_size: pool.desired,
      instance_types: s.instanceTypes,
      instance_charge_type: s.chargeType,
      scaling_group_id: `asg-${s.id}`,
      vswitch_ids: [`vsw-${cloud.zoneId}`],
      multi_az_policy: 'PRIORITY',
      spot_strategy: s.spotStrategy,
      spot_price_limit: Object.entries(s.spotPriceLimit).map(([t, price]) => ({
        instance_type: t,
        price_limit: price,
      })),
    },
    kubernetes_config: {
      labels: Object.entries(s.labels).map(([key, value]) => ({ key, value })),
      taints: s.taints.map((t) => ({ key: t.key, value: t.value ?? '', effect: t.effect })),
      runtime: 'containerd',
    },
    management: { enable: s.autoRepair, auto_repair: s.autoRepair },
  };
}

export function taskView(cloud: AliCloud, t: SimTask): Json {
  return {
    task_id: t.id,
    cluster_id: cloud.clusterId,
    task_type: t.type,
    state: t.state,
    created: iso(t.createdMs),
    updated: iso(t.updatedMs),
    target: { id: t.poolId, type: 'nodepool' },
    stages: [],
    events: [],
    task_result: t.instanceIds.map((id) => ({
      data: id,
      status: t.state === 'success' ? 'success' : t.state === 'failed' ? 'failed' : 'running',
    })),
    ...(t.error ? { error: t.error } : {}),
  };
}

export function instanceView(cloud: AliCloud, i: SimInstance): Json {
  const type = cloud.types.get(i.instanceType);
  return {
    InstanceId: i.id,
    InstanceName: i.nodeName,
    HostName: i.nodeName,
    InstanceType: i.instanceType,
    InstanceTypeFamily: type?.family ?? '',
    Status: i.status,
    RegionId: cloud.regionId,
    ZoneId: cloud.zoneId,
    CreationTime: ecsTime(i.createdMs),
    StartTime: ecsTime(i.startedMs),
    InstanceChargeType: i.chargeType,
    Cpu: type?.cpu ?? 0,
    Memory: (type?.memoryGiB ?? 0) * 1024,
    GPUAmount: type?.gpuAmount ?? 0,
    GPUSpec: type?.gpuSpec ?? '',
    VpcAttributes: { PrivateIpAddress: { IpAddress: [i.privateIp] } },
    // A spot instance's interruption notice: `LockReason` `Recycling` (system-events.ts).
    OperationLocks: { LockReason: i.locks.map((r) => ({ LockReason: r })) },
    Tags: {
      Tag: [
        { TagKey: 'ack.aliyun.com', TagValue: cloud.clusterId },
        ...(i.poolId ? [{ TagKey: 'ack.alibabacloud.com/nodepool-id', TagValue: i.poolId }] : []),
      ],
    },
  };
}
