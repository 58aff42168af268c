/**
 * The Alibaba Cloud port: what the pool autoscaler and node repair may ask of ACK and ECS, in our
 * own types (no SDK types leak out). Every method names the one RAM action it needs
 * (`RAM_ACTIONS`); `infra/alicloud/ram-policy.json` grants exactly those, and a test keeps the two
 * equal.
 *
 * Scaling goes through ACK node pools only (ACK owns the scaling group: never ESS or ECS directly).
 * The desired size is set absolutely, so a retried event cannot scale twice.
 */
/** The label ACK puts on each node of a node pool: the pool's id. */
export const NODEPOOL_LABEL = 'alibabacloud.com/nodepool-id';

/**
 * The Lease held by whoever sets a node pool's desired size (autoscale-pools every round,
 * remediation for a replacement's grow and removal): sizes are absolute, so two writers that read
 * the same size must not both write.
 */
export const POOL_SIZE_LEASE = 'autoscale-pools';

export interface NodePoolTaint {
  key: string;
  value: string;
  effect: string;
}

export interface NodePool {
  id: string;
  name: string;
  /** `nodepool_info.region_id`: where its nodes are (their `topology.kubernetes.io/region`). */
  regionId?: string;
  /** `active`, `scaling`, `removing`, `deleting`, `updating`. */
  state: string;
  /**
   * `scaling_group.desired_size`, the size asked; undefined when ACK's answer does not give it: unknown, never 0 (a
   * size planned from 0 would lower the pool). gpu-reflex sets no size of such a pool (`SizedPool`).
   */
  desiredSize: number | undefined;
  /** `status.total_nodes`, the nodes there; undefined when not given. */
  totalNodes: number | undefined;
  instanceTypes: string[];
  /** `PostPaid` (pay-as-you-go) or `PrePaid` (subscription: never released on removal). */
  chargeType: string;
  /** ACK's own autoscaler for this pool; when enabled, gpu-reflex leaves the pool's size to it. */
  ackAutoScaling: { enable: boolean; min?: number; max?: number };
  /** ACK managed auto repair (with GPU fault isolation); when on, gpu-reflex defers repair to it. */
  ackAutoRepair: boolean;
  labels: Record<string, string>;
  taints: NodePoolTaint[];
  /**
   * `scaling_group.spot_strategy`: `NoSpot` (pay-as-you-go), `SpotWithPriceLimit` (bids at most
   * `spot_price_limit` per type), `SpotAsPriceGo` (pays the market price); unset means `NoSpot`.
   */
  spotStrategy?: string;
  /** `scaling_group.spot_price_limit`: the highest price per hour bid for each instance type. */
  spotPriceLimits?: Record<string, number>;
}

/** A pool whose desired size ACK gave: the only kind gpu-reflex plans a size for. */
export type SizedPool = NodePool & { desiredSize: number };

export const isSized = (p: NodePool): p is SizedPool => p.desiredSize !== undefined;

/**
 * DescribeTaskInfo's `state` as ACK documents it (`running`, `success`, `failed`; older docs `fail`), or `unknown`:
 * a word it does not document, or none. Unknown is neither under way nor ended, so no follower takes it as either.
 */
export type CloudTaskState = 'running' | 'success' | 'failed' | 'unknown';

export interface CloudTask {
  id: string;
  state: CloudTaskState;
  /** ACK's own word when `state` is `unknown` (empty: the answer had none), to show a person. */
  raw?: string;
  error?: { code: string; message: string };
}

export interface InstanceTypeInfo {
  id: string;
  gpuAmount: number;
  /** `NVIDIA A10`. */
  gpuSpec: string;
  /** GiB per GPU. */
  gpuMemoryGiB: number;
  cpu: number;
  memoryGiB: number;
}

export interface InstanceInfo {
  id: string;
  status: string;
  hostName: string;
  instanceType: string;
  chargeType: string;
  /** ISO time of the last start, '' when never started. */
  startTime: string;
  /**
   * `OperationLocks.LockReason[].LockReason`: `Recycling` is a spot (preemptible) instance's interruption
   * notice, the instance is reclaimed minutes later (ECS "Detect and respond to spot instance interruption
   * events":
   * https://www.alibabacloud.com/help/en/ecs/user-guide/query-the-interruption-events-of-preemptible-instances).
   */
  locks?: string[];
}

/**
 * An ECS system event not yet over (DescribeInstanceHistoryEvents, `InstanceSystemEventSet`): the instance will be
 * rebooted, redeployed, stopped or released at `notBefore` at the earliest.
 */
export interface SystemEvent {
  id: string;
  instanceId: string;
  /** `EventType.Name`: `SystemMaintenance.Reboot`, `SystemMaintenance.Redeploy`, `SystemFailure.Redeploy`… */
  type: string;
  /** `EventCycleStatus.Name`: `Scheduled`, `Executing` or `Inquiring` (only those are asked for). */
  status: string;
  /** ISO time: the earliest the event is carried out. */
  notBefore: string;
}

export interface CloudPools {
  listNodePools(): Promise<NodePool[]>;
  /** Absolute: safe to retry. */
  setDesiredSize(poolId: string, desiredSize: number): Promise<{ taskId: string }>;
  removeNodes(
    poolId: string,
    instanceIds: string[],
    opts: { release: boolean; drain: boolean },
  ): Promise<{ taskId: string }>;
  task(taskId: string): Promise<CloudTask>;
  instanceTypes(ids: string[]): Promise<InstanceTypeInfo[]>;
  /** Pay-as-you-go price per hour (TradePrice) in the account's currency; undefined when the answer gives none. */
  hourlyPrice(instanceType: string): Promise<number | undefined>;
  /** The latest spot price per hour of the type in the region (DescribeSpotPriceHistory), undefined when none. */
  spotPrice(instanceType: string): Promise<number | undefined>;
  instances(ids: string[]): Promise<InstanceInfo[]>;
  /** The system events of these instances that are scheduled or under way (none over); read only. */
  systemEvents(instanceIds: string[]): Promise<SystemEvent[]>;
  reboot(instanceId: string): Promise<void>;
}

/** The RAM action each method needs: the adapter's whole reach into the account. */
export const RAM_ACTIONS: Readonly<Record<keyof CloudPools, string>> = {
  listNodePools: 'cs:DescribeClusterNodePools',
  setDesiredSize: 'cs:ModifyClusterNodePool',
  removeNodes: 'cs:RemoveNodePoolNodes',
  task: 'cs:DescribeTaskInfo',
  instanceTypes: 'ecs:DescribeInstanceTypes',
  hourlyPrice: 'ecs:DescribePrice',
  spotPrice: 'ecs:DescribeSpotPriceHistory',
  instances: 'ecs:DescribeInstances',
  systemEvents: 'ecs:DescribeInstanceHistoryEvents',
  reboot: 'ecs:RebootInstance',
};
