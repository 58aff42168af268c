/**
 * `GPU XID Error` — one XID seen on one GPU (examples: ./gpu-xid-error.example.json, and an NVLink5 XID
 * with its decoded sub-code: ./gpu-xid-error-nvlink5.example.json; repeats of an XID 45 held by the agent and
 * sent as one event with `count`: ./gpu-xid-error-aggregated.example.json).
 */
import * as z from 'zod';
import { GPU_RECOVERY_ACTIONS } from '../xid.ts';
import { NVLINK5_RESOLUTIONS } from '../xid/types.ts';
import { agentBase, count, DeviceHolder, GpuRef, int, MigRef, PodRef } from '../common.ts';

export const GPU_XID_ERROR = 'GPU XID Error';

export const GpuXidErrorDetailSchema = z
  .object({
    ...agentBase,
    gpu: GpuRef,
    /** Present when NVML tied the event to a MIG instance: remediation then acts on that instance only. */
    mig: MigRef.optional(),
    xid: int().min(0).max(65535),
    /** Where the agent saw it: NVML's event wait, the kernel log, or both (deduplicated). */
    via: z.enum(['nvml', 'kmsg', 'both']),
    pid: count().nullable(),
    process: z.string().max(256).nullable(),
    message: z.string().max(1024),
    /**
     * What the kernel line says of an NVLink5 error (XID 144–150): `Fatal` or `Nonfatal`. Absent when
     * the line says neither or the XID came from NVML only (its event carries no such word).
     */
    severity: z.enum(['fatal', 'nonfatal']).optional(),
    /**
     * NVLink5 XIDs (144–150) from the kernel line: the unit and link it names, its intrinfo and
     * errorStatus words, and what NVIDIA's "XID 144-150 Decode" sheet says of them (absent when no row
     * matches). The functions decode the two words again with the same table (events/xid/nvlink5.ts).
     */
    nvlink: z
      .object({
        unit: z.string().max(64),
        link: int().min(0).max(1023).optional(),
        intrinfo: int().min(0).max(0xffffffff),
        errorStatus: int().min(0).max(0xffffffff),
        decoded: z
          .object({
            unit: z.string().max(64),
            resolution: z.enum(NVLINK5_RESOLUTIONS).optional(),
            reason: z.string().max(512),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    /** NVML's recovery action at the time, when the driver reports one (XID 154 and newer drivers). */
    recoveryAction: z.enum(GPU_RECOVERY_ACTIONS).optional(),
    /** Pods the agent saw on this GPU (or MIG instance) when the XID arrived. */
    pods: z.array(PodRef).max(128),
    /**
     * An application XID whose kernel line names the process (pid → its pod's cgroup): the pod that
     * hit it, the one workload it restarts and counts. Absent when nothing names one (NVML only, a
     * hardware XID): then every pod of `pods` is affected.
     */
    culprit: PodRef.optional(),
    /**
     * Who holds this GPU by the kubelet's allocation (PodResources `List`): the pods given it, or one of
     * its MIG devices, by a device plugin, and every pod of the node holding a DRA device (mapped to a
     * GPU by the ResourceSlice). Absent: the agent could not read PodResources — unknown, never "no
     * pods". Empty: the kubelet says nobody holds it.
     */
    holders: z.array(DeviceHolder).max(128).optional(),
    /**
     * How the agent saw the card shared when the XID arrived (issue #32): `mps` when NVML's MPS client
     * listing (nvmlDeviceGetMPSComputeRunningProcesses_v3) names processes on it — `pods` are then its
     * MPS clients, the MPS server's pod left out — or `time-slicing` when two pods' processes run on one
     * whole GPU. Absent: one pod or none, or an agent from before #32 (the node's labels still tell).
     */
    sharing: z.enum(['time-slicing', 'mps']).optional(),
    /**
     * How many occurrences this event stands for (absent: one). The agent sends the first of a run of
     * one application-class XID on one GPU and pid at once and holds its repeats for a window
     * (node-agent/xid-aggregate.ts); this event is the latest of them, `count` all those held.
     */
    count: int().min(1).max(1_000_000_000).optional(),
    /** With `count`: the window (ms) the agent held those occurrences over (its XID_AGGREGATE_WINDOW_MS). */
    countWindowMs: int().min(1).max(600_000).optional(),
  })
  .strict();
export type GpuXidErrorDetail = z.infer<typeof GpuXidErrorDetailSchema>;
