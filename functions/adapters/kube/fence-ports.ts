// The ports that hold a GPU out of placement besides the node's taint: DRA device taints, ACK's card fence.
/** A DRA device: what a DeviceTaintRule's `deviceSelector` names (resource.k8s.io). */
export interface DeviceRef {
  driver: string;
  pool: string;
  device: string;
}

/** A DeviceTaintRule gpu-reflex keeps on one GPU's DRA device while the GPU is held out. */
export interface DeviceTaint extends DeviceRef {
  /** Deterministic per node and GPU, so a redelivered plan asks for the same rule. */
  name: string;
  node: string;
  gpuUuid: string;
  taint: { key: string; value: string; effect: 'NoSchedule' };
}

/**
 * DRA device taints (resource.k8s.io): the GPUs a node's ResourceSlices publish, and the
 * DeviceTaintRules gpu-reflex keeps on them (labelled with the node, so a node's are listed alone).
 */
export interface DeviceTaintOps {
  /** The node's devices of `driver` that carry a GPU UUID attribute, by UUID. */
  devices(node: string, driver: string): Promise<Record<string, DeviceRef>>;
  /** Names of the DeviceTaintRules gpu-reflex keeps for the node. */
  rules(node: string): Promise<string[]>;
  /** Creates the rule; `false` when it already exists. */
  create(rule: DeviceTaint): Promise<boolean>;
  /** Deletes the rule; `false` when it is already gone. */
  remove(name: string): Promise<boolean>;
}

/**
 * ACK's gpushare card fence: ConfigMap `kube-system/unhealthy-gpu-<node>`, key `gpus`, the card
 * indices its scheduler extender leaves out of placement, comma-separated with no spaces
 * (AliyunContainerService/gpushare-scheduler-extender pkg/cache/nodeinfo.go getUnhealthyGPUs: a
 * piece strconv.Atoi refuses, such as " 1", counts as card 0). Other writers' entries and other
 * keys are kept: a change is a read-modify-write under the object's resourceVersion, retried on a
 * conflict (409), never a rewrite of the whole.
 */
export interface CardFenceOps {
  /** The indices the ConfigMap lists now (empty when it does not exist; entries Atoi refuses are left out). */
  listed(node: string): Promise<number[]>;
  /** Lists `add` and unlists `remove`; `false` when it already said so (idempotent). */
  change(node: string, add: readonly number[], remove: readonly number[]): Promise<boolean>;
}
