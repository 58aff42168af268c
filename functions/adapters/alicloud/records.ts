import type { CloudTask, InstanceInfo, InstanceTypeInfo, NodePool, SystemEvent } from './ports.ts';

/**
 * Alibaba's response records → the port's types (client.ts makes the calls). Field names are the
 * APIs' own: ACK's DescribeClusterNodePools and DescribeTaskInfo (snake_case), ECS's
 * DescribeInstanceTypes, DescribeInstances and DescribeInstanceHistoryEvents (PascalCase).
 */
export type Json = Record<string, unknown>;

export const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0));
export const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));
/**
 * A price as an answer gives it (DescribePrice `TradePrice`, DescribeSpotPriceHistory `SpotPrice`: numbers, ECS API
 * reference); absent, empty or no number is unknown — never 0, which would make the type the cheapest to buy and its
 * scale-out free under any approval limit.
 */
export function priceFrom(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * A count as an answer gives it (a whole number, or its text); absent, empty or anything else is unknown — never 0.
 */
export function countFrom(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/**
 * One entry of DescribeClusterNodePools' `nodepools`. The sizes are `scaling_group.desired_size` (the size asked),
 * `status.total_nodes` (the nodes there) and `auto_scaling.min_instances`/`max_instances` (ACK API reference,
 * DescribeClusterNodePools, CS 2015-12-15). One the answer does not give is unknown: read as 0, a pool of 8 was
 * "grown" to 1 by an absolute desired size (and planned to shrink from 0), evicting its GPU jobs. `total_nodes` is
 * not the size asked either: a pool still scaling has fewer, and a size planned from them would lower it.
 */
export function nodePoolFrom(p: Json): NodePool {
  const info = (p['nodepool_info'] ?? {}) as Json;
  const status = (p['status'] ?? {}) as Json;
  const sg = (p['scaling_group'] ?? {}) as Json;
  const as = (p['auto_scaling'] ?? {}) as Json;
  const kc = (p['kubernetes_config'] ?? {}) as Json;
  const mgmt = (p['management'] ?? {}) as Json;
  const labels = Array.isArray(kc['labels']) ? (kc['labels'] as Json[]) : [];
  const taints = Array.isArray(kc['taints']) ? (kc['taints'] as Json[]) : [];
  // A type's bid as `scaling_group.spot_price_limit[].price_limit` gives it; one not given is no limit, never 0, which
  // would price its spot nodes at 0 (stock.ts priceOf takes the lower of market and limit): the cheapest type to buy,
  // and free under any approval limit.
  const limits = (Array.isArray(sg['spot_price_limit']) ? (sg['spot_price_limit'] as Json[]) : []).flatMap((l) => {
    const price = priceFrom(l['price_limit']);
    return price === undefined ? [] : [[str(l['instance_type']), price] as const];
  });
  return {
    id: str(info['nodepool_id']),
    name: str(info['name']),
    ...(str(info['region_id']) ? { regionId: str(info['region_id']) } : {}),
    state: str(status['state']),
    desiredSize: countFrom(sg['desired_size']),
    totalNodes: countFrom(status['total_nodes']),
    instanceTypes: Array.isArray(sg['instance_types']) ? (sg['instance_types'] as unknown[]).map(str) : [],
    chargeType: str(sg['instance_charge_type']) || 'PostPaid',
    ackAutoScaling: {
      enable: as['enable'] === true,
      ...(countFrom(as['min_instances']) !== undefined ? { min: countFrom(as['min_instances'])! } : {}),
      ...(countFrom(as['max_instances']) !== undefined ? { max: countFrom(as['max_instances'])! } : {}),
    },
    ackAutoRepair: mgmt['enable'] === true && mgmt['auto_repair'] === true,
    labels: Object.fromEntries(labels.map((l) => [str(l['key']), str(l['value'])])),
    taints: taints.map((t) => ({ key: str(t['key']), value: str(t['value']), effect: str(t['effect']) })),
    ...(str(sg['spot_strategy']) ? { spotStrategy: str(sg['spot_strategy']) } : {}),
    ...(limits.length > 0 ? { spotPriceLimits: Object.fromEntries(limits) } : {}),
  };
}

/**
 * DescribeTaskInfo's body for task `taskId`. ACK documents `state` as `running`, `failed` or `success`
 * (DescribeTaskInfo, ACK API reference, CS 2015-12-15; older versions of the page spell failure `fail`). Any other
 * word, or none, is `unknown` with ACK's word kept: read as `running` it was followed forever and no one told, read
 * as an end it would report a request done (or failed) that ACK never said was.
 */
export function taskFrom(taskId: string, body: Json): CloudTask {
  const raw = str(body['state']);
  const state =
    raw === 'running' || raw === 'success' ? raw : raw === 'failed' || raw === 'fail' ? 'failed' : 'unknown';
  const error = body['error'] as Json | undefined;
  return {
    id: taskId,
    state,
    ...(state === 'unknown' ? { raw: raw.slice(0, 64) } : {}),
    ...(error && (error['code'] || error['message'])
      ? { error: { code: str(error['code']), message: str(error['message']) } }
      : {}),
  };
}

/** One `InstanceTypes.InstanceType` entry of DescribeInstanceTypes. */
export function instanceTypeFrom(t: Json): InstanceTypeInfo {
  return {
    id: str(t['InstanceTypeId']),
    gpuAmount: num(t['GPUAmount']),
    gpuSpec: str(t['GPUSpec']),
    gpuMemoryGiB: num(t['GPUMemorySize']),
    cpu: num(t['CpuCoreCount']),
    memoryGiB: num(t['MemorySize']),
  };
}

/** One `Instances.Instance` entry of DescribeInstances. */
export function instanceFrom(x: Json): InstanceInfo {
  const locks = ((x['OperationLocks'] as Json | undefined)?.['LockReason'] ?? []) as Json[];
  return {
    id: str(x['InstanceId']),
    status: str(x['Status']),
    hostName: str(x['HostName']),
    instanceType: str(x['InstanceType']),
    chargeType: str(x['InstanceChargeType']),
    startTime: str(x['StartTime']),
    ...(Array.isArray(locks) && locks.length > 0 ? { locks: locks.map((l) => str(l['LockReason'])) } : {}),
  };
}

/** One `InstanceSystemEventSet.InstanceSystemEventType` entry of DescribeInstanceHistoryEvents. */
export function systemEventFrom(e: Json): SystemEvent {
  return {
    id: str(e['EventId']),
    instanceId: str(e['InstanceId']),
    type: str((e['EventType'] as Json | undefined)?.['Name']),
    status: str((e['EventCycleStatus'] as Json | undefined)?.['Name']),
    notBefore: str(e['NotBefore']),
  };
}
