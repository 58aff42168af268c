import type { ParsedCloudFile } from './cloud-file.ts';

/** The simulated region's records (cloud.ts): instances, pools, tasks, the changes listeners hear, and its refusals. */
export type InstanceStatus = 'Pending' | 'Starting' | 'Running' | 'Stopping' | 'Stopped';

export interface SimInstance {
  id: string;
  /** Undefined once removed from its pool without being released (subscription instances). */
  poolId: string | undefined;
  instanceType: string;
  status: InstanceStatus;
  /** The Kubernetes node name ACK gives it: `<region>.<private ip>`. */
  nodeName: string;
  privateIp: string;
  chargeType: 'PostPaid' | 'PrePaid';
  createdMs: number;
  startedMs: number | undefined;
  /** Changes on every boot, as a node's `status.nodeInfo.bootID` does. */
  bootId: string;
  removing: boolean;
  /** `OperationLocks`: `Recycling` once a spot instance's interruption is announced. */
  locks: string[];
}

export interface SimPool {
  spec: ParsedCloudFile['pools'][number];
  desired: number;
  createdMs: number;
  updatedMs: number;
}

export type TaskState = 'running' | 'success' | 'failed';

export interface SimTask {
  id: string;
  type: 'nodepool_scale' | 'nodepool_remove_nodes';
  poolId: string;
  state: TaskState;
  createdMs: number;
  updatedMs: number;
  instanceIds: string[];
  error?: { code: string; message: string };
}

export type CloudChange =
  | { type: 'running'; instance: SimInstance; pool: SimPool | undefined }
  | { type: 'rebooting'; instance: SimInstance; pool: SimPool | undefined }
  | { type: 'removing'; instance: SimInstance; pool: SimPool; drain: boolean }
  | { type: 'removed'; instance: SimInstance; pool: SimPool; released: boolean };

/** A refusal with the status, code and message Alibaba Cloud answers with. */
export class CloudError extends Error {
  override name = 'CloudError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** ACK adds at most this many nodes in one call. */
export const MAX_ADD_PER_CALL = 500;
export const MAX_POOL_SIZE = 2000;
