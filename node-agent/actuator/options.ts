/**
 * What the GPU actuator (actuator.ts) is given: this node's Node, its GPUs, the fence file, where its
 * answers go, the clock, and the optional sources (allocatable devices, XIDs, DCGM, MIG inventory, the
 * GPU Operator pause). ports.ts has the real implementations; tests pass fakes.
 */
import type { DcgmDiagLevel, GpuActionResultDetail, GpuDiag, MigInventory } from '../../events/index.ts';
import type { OperatorPause } from './operator-pause.ts';

/** This node's Node object, as far as the actuator needs it (RBAC: nodes get, patch — its own). */
export interface ActuatorNode {
  annotations(): Promise<Record<string, string>>;
  /** Merge-patches the results annotation (only that key). */
  writeResults(json: string): Promise<void>;
  /** Merge-patches the MIG inventory annotation (only that key). */
  writeMigInventory?(json: string): Promise<void>;
  /** Merge-patches the allocatable-devices annotation (only that key; events/gpu-devices.ts). */
  writeGpuDevices?(json: string): Promise<void>;
  /**
   * GPU devices (every `nvidia.com/` resource) the Node counted allocatable at the last
   * `annotations()` read, the same GET; undefined when not read. A held fence answers again when it
   * changes (fence-hold.ts allocatableSeen).
   */
  gpuAllocatable?(): number | undefined;
}

export interface GpuHealthReading {
  nvmlAnswers: boolean;
  recoveryAction: string;
  remapPending: boolean;
  remapFailed: boolean;
  /** Aggregate uncorrected ECC errors (a reset clears the volatile count, not this one); 0 on a GPU without ECC. */
  eccUncorrected: number;
  /**
   * ECC is on, but NVML gives no aggregate uncorrected count (nvml/device-base.ts leaves out a counter it does not
   * answer): `eccUncorrected` then says nothing, and no probe passes on it.
   */
  eccUnreadable?: boolean;
}

/**
 * What holds a GPU: the holders (none: an empty list), or why they are unknown. nvmlDeviceGetComputeRunningProcesses_v3
 * fails with GPU_IS_LOST or UNKNOWN among the codes nvml.h documents for it (NVML API Reference,
 * docs.nvidia.com/deploy/nvml-api, "Device Queries"), NOT_SUPPORTED where the device does not offer the query
 * (nvml/device-base.ts reads that as undefined), and in MIG mode the GPU's own handle lists processes "only if the
 * caller has appropriate privileges" (its note there; NO_PERMISSION otherwise): no list is not an empty one.
 */
export type Holders = string[] | { unknown: string };

/** The GPUs, by UUID (RBAC-free: NVML and the reset tool on this node). */
export interface ActuatorGpus {
  /** NVML index of the GPU, undefined when NVML does not know it. */
  indexOf(uuid: string): number | undefined;
  /**
   * What holds the GPU now (pods `namespace/name`, or `pid N`): a reset waits for none. `unknown` (why): NVML
   * could not list its compute processes, and a reset or drain is refused as it would be for a holder.
   */
  holders(uuid: string): Holders;
  /** Asynchronous: a reset takes seconds, and the agent keeps watching the other GPUs meanwhile. */
  reset(uuid: string): Promise<{ ok: true } | { ok: false; reason: string }>;
  health(uuid: string): GpuHealthReading;
  /** NVML drain state on or off (`nvidia-smi drain -p <pci> -m 1|0`); absent: not supported here. */
  drain?(uuid: string, on: boolean): { ok: true } | { ok: false; reason: string };
}

/** The device plugin's unhealthy-devices file, keeping its own record of what it added. */
export interface FenceFileOps {
  /**
   * What the file lists now (`{"index": [...], "uuid": [...]}`; missing or empty: nothing). Throws when it is there
   * but cannot be read or parsed: unknown, and nothing may be written over it (`add`, `remove` throw too).
   */
  read(): { index: string[]; uuid: string[] };
  /**
   * The UUIDs the agent added (its own record; missing: none). Throws when the record is there but cannot be read or
   * parsed: unknown, so `add` and `remove` throw too and neither the record nor the file is written over.
   */
  ours(): string[];
  /** Lists the GPU (idempotent). Throws when the file cannot be read or written. */
  add(uuid: string, index: number | undefined): void;
  /** Removes an entry it added; false when the entry was not its own (left alone). Throws as `read`. */
  remove(uuid: string): boolean;
}

export interface ActuatorOptions {
  node: string;
  nodeApi: ActuatorNode;
  gpus: ActuatorGpus;
  fence: FenceFileOps;
  publish: (detailType: string, detail: GpuActionResultDetail) => Promise<void>;
  now: () => number;
  dryRun?: boolean;
  log?: (line: string) => void;
  /**
   * Each GPU's device IDs the kubelet counts allocatable (PodResources GetAllocatableResources), read each
   * tick and written to the Node when it changes (events/gpu-devices.ts): a fence under NVIDIA's plugin
   * is verified by it. Absent: not written (unknown to the functions).
   */
  devices?: () => Promise<{ known: true; gpus: Record<string, string[]> } | { known: false; reason: string }>;
  /**
   * The XIDs the agent published for a GPU at or after a time (ms): the probe window's (agent.ts xidsSince);
   * `unknown` (why) when the agent cannot see that GPU's XIDs, and no probe passes on it.
   */
  xids: (gpuUuid: string, sinceMs: number) => number[] | { unknown: string };
  /**
   * DCGM's diagnostic on the GPU at an index (dcgm-diag.ts runDcgmDiag), for a probe that asks `diag`. Absent: a
   * probe that asks gets `unavailable` (never a pass).
   */
  diag?: (index: number, level: DcgmDiagLevel) => Promise<GpuDiag>;
  /** This node's MIG GPUs as NVML sees them now (no MIG GPU: an empty list); written to the Node when it changes. */
  migInventory?: () => Omit<MigInventory, 'at' | 'v'>['gpus'];
  /**
   * Opt-in (GPU_RESET_PAUSE_OPERATOR): a reset pauses the GPU Operator's clients on the node first and
   * restores them after (operator-pause.ts). Absent: the reset runs with them in place.
   */
  pause?: OperatorPause;
}
