/**
 * gpu-reflex's default reflex for each of NVIDIA's resolution buckets (the codes where it
 * differs from its bucket's default, with why: curated.ts). NVIDIA's own words stay in the generated catalog;
 * this file is what we do with them. Bucket meanings: NVIDIA's Xid catalog
 * (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, read 2026-12-01).
 */
import type { NvidiaBucket } from './types.ts';

/** What gpu-reflex does by default. Ordered from mildest to strongest. */
export const REMEDIATION_ACTIONS = [
  'ignore',
  'observe',
  'restart-workload',
  'quarantine-gpu',
  'drain-node',
  'reboot-node',
  'replace-node',
] as const;
export type RemediationAction = (typeof REMEDIATION_ACTIONS)[number];

export interface Reflex {
  /** Who is usually at fault: the application, the hardware, or firmware/driver. */
  fault: 'application' | 'hardware' | 'driver' | 'unknown';
  action: RemediationAction;
  then: RemediationAction[];
  escalateOnRepeat: boolean;
  notify: boolean;
  recommendation: string;
}

const RESET: RemediationAction[] = ['reboot-node', 'replace-node'];

/**
 * One default per bucket. "reset" = quarantine the GPU, move its pods, keep it out of scheduling
 * until a node-local reset succeeds; reboot when no reset path exists.
 */
export const BUCKET_DEFAULTS: Record<NvidiaBucket, Reflex> = {
  // "No action needed": recorded, nothing fenced, evicted or cordoned.
  IGNORE: {
    fault: 'unknown',
    action: 'observe',
    then: [],
    escalateOnRepeat: false,
    notify: false,
    recommendation: 'observe: NVIDIA says no action is needed',
  },
  // Only the workload that hit it restarts; the same XID across different workloads on one GPU quarantines it.
  RESTART_APP: {
    fault: 'application',
    action: 'restart-workload',
    then: ['quarantine-gpu'],
    escalateOnRepeat: true,
    notify: false,
    recommendation:
      'restart the workload that hit it (that one only); the same XID across different workloads on one GPU ' +
      'quarantines it',
  },
  RESET_GPU: {
    fault: 'hardware',
    action: 'quarantine-gpu',
    then: RESET,
    escalateOnRepeat: false,
    notify: false,
    recommendation: 'quarantine the GPU and reset it; reboot if it persists, replace if it persists after that',
  },
  RESTART_BM: {
    fault: 'hardware',
    action: 'drain-node',
    then: RESET,
    escalateOnRepeat: false,
    notify: false,
    recommendation: 'drain the node and power-cycle it; if it recurs, replace',
  },
  RESTART_VM: {
    fault: 'driver',
    action: 'drain-node',
    then: ['replace-node'],
    escalateOnRepeat: false,
    notify: false,
    recommendation: 'drain the node and replace the instance',
  },
  CHECK_MECHANICALS: {
    fault: 'hardware',
    action: 'drain-node',
    then: [],
    escalateOnRepeat: false,
    notify: true,
    recommendation: 'drain the node; a person must check the hardware',
  },
  // NVIDIA names no automated recovery: a person decides. Never a fence or a drain on its own.
  CONTACT_SUPPORT: {
    fault: 'unknown',
    action: 'observe',
    then: [],
    escalateOnRepeat: false,
    notify: true,
    recommendation: 'observe and tell a person: NVIDIA names no automated action (contact support)',
  },
  UPDATE_SWFW: {
    fault: 'driver',
    action: 'observe',
    then: [],
    escalateOnRepeat: false,
    notify: true,
    recommendation: 'observe and tell a person: NVIDIA says update the driver or firmware',
  },
  CHECK_UVM: {
    fault: 'driver',
    action: 'observe',
    then: [],
    escalateOnRepeat: false,
    notify: true,
    recommendation: "observe and tell a person: NVIDIA says check the host's UVM driver",
  },
  // The planner applies the workflow (functions/remediate/core/workflows.ts): with other XIDs on the GPU it is ignored.
  WORKFLOW_XID_45: {
    fault: 'driver',
    action: 'observe',
    then: [],
    escalateOnRepeat: false,
    notify: true,
    recommendation:
      'with other XIDs: ignore it and follow them; alone: a person restarts Fabric Manager. Never escalates',
  },
  // RMA only when the SRAM threshold is exceeded (health condition sram-threshold-exceeded), never on a count.
  WORKFLOW_XID_48: {
    fault: 'hardware',
    action: 'quarantine-gpu',
    then: ['reboot-node'],
    escalateOnRepeat: false,
    notify: false,
    recommendation:
      'quarantine the GPU and reset it, reboot if that fails; replace only when the SRAM uncorrectable threshold ' +
      'is exceeded',
  },
  WORKFLOW_NVLINK_ERR: {
    fault: 'hardware',
    action: 'quarantine-gpu',
    then: RESET,
    escalateOnRepeat: false,
    notify: true,
    recommendation: 'quarantine the GPU, reset it, then reboot; a person checks the links; replace if it recurs',
  },
  // Undecoded (NVML only, or a row the sheet lacks): a Fatal line, or none, resets; a Nonfatal one is observed
  // (policy.ts).
  WORKFLOW_NVLINK5_ERR: {
    fault: 'hardware',
    action: 'quarantine-gpu',
    then: RESET,
    escalateOnRepeat: false,
    notify: false,
    recommendation:
      "decode intrinfo/errorStatus per NVIDIA's NVLink5 sheet: IGNORE rows are observed, RESET_GPU rows quarantine " +
      'and reset the GPU',
  },
  XID_154: {
    fault: 'hardware',
    action: 'quarantine-gpu',
    then: RESET,
    escalateOnRepeat: false,
    notify: false,
    recommendation: 'obey the recovery action NVML names (none / reset / reboot / drain-P2P / drain-and-reset)',
  },
  NONE_GIVEN: {
    fault: 'unknown',
    action: 'quarantine-gpu',
    then: [],
    escalateOnRepeat: false,
    notify: true,
    recommendation: 'quarantine the GPU and tell a person: NVIDIA gives no bucket yet',
  },
};
