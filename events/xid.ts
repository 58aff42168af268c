/**
 * The XID catalog: what each NVIDIA XID means, NVIDIA's immediate-action bucket, and gpu-reflex's
 * default reflex. Source: docs/xid-catalog.md (NVIDIA's Xid catalog "Resolution Bucket",
 * NVSentinel, k8s-device-plugin, EKS node monitoring agent). The agent prints it (`xid scan`); the
 * remediation policy starts from it. Both import it from here, so they never disagree.
 */

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

/** NVIDIA's "Resolution Bucket (Immediate Action)". */
export type NvidiaBucket =
  | 'IGNORE'
  | 'RESTART_APP'
  | 'RESET_GPU'
  | 'RESTART_BM'
  | 'RESTART_VM'
  | 'CHECK_MECHANICALS'
  | 'CONTACT_SUPPORT'
  | 'RESTART_FABRIC_MANAGER'
  | 'OBEY_RECOVERY_ACTION'
  /** Check the host's unified-memory (UVM) driver: XID 159. */
  | 'CHECK_UVM'
  /** NVIDIA's catalog lists the XID without a bucket yet (162–172 as of 2026-11): gpu-reflex's own default. */
  | 'NONE_GIVEN';

export interface XidInfo {
  xid: number;
  meaning: string;
  nvidiaAction: NvidiaBucket;
  /** Who is usually at fault: the application, the hardware, or firmware/driver. */
  fault: 'application' | 'hardware' | 'driver' | 'unknown';
  /** The first action gpu-reflex takes. */
  action: RemediationAction;
  /** What follows if the first action does not clear it (reset → reboot → replace). */
  then: RemediationAction[];
  /** Repeats escalate (application XIDs across workloads). Never true for XID 45 noise. */
  escalateOnRepeat: boolean;
  /** Set when a person must look (mechanical checks, support cases). */
  notify: boolean;
  /** The recommended action in words, for timelines, chat and `xid scan`. */
  recommendation: string;
}

type Row = [xid: number, meaning: string, bucket: NvidiaBucket, fault: XidInfo['fault'], action: RemediationAction, then: RemediationAction[], escalate: boolean, notify: boolean, recommendation: string];

const RESET: RemediationAction[] = ['reboot-node', 'replace-node'];

// One row per XID in docs/xid-catalog.md. "reset" there = quarantine the GPU, move its pods,
// keep it out of scheduling until a node-local reset succeeds; reboot when no reset path exists.
const ROWS: Row[] = [
  [8, 'GPU stopped processing (channel idle timeout)', 'RESTART_APP', 'application', 'restart-workload', ['quarantine-gpu'], true, false, 'restart the workload; repeated timeouts on one GPU quarantine it'],
  [13, 'graphics engine exception (usually the application)', 'RESTART_APP', 'application', 'observe', ['restart-workload', 'quarantine-gpu'], true, false, 'observe; the same XID across different workloads on one GPU escalates'],
  [31, 'GPU memory page fault (usually the application)', 'RESTART_APP', 'application', 'observe', ['restart-workload', 'quarantine-gpu'], true, false, 'observe; the same XID across different workloads on one GPU escalates'],
  [43, 'GPU stopped processing (follows another error)', 'IGNORE', 'application', 'observe', [], false, false, 'observe; act on the XID it follows'],
  [45, 'preemptive cleanup after a previous error', 'IGNORE', 'driver', 'observe', [], false, false, 'observe; never escalate on XID 45 noise (follow the other XID; alone, restart fabric manager)'],
  [46, 'GPU timeout', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it; reboot if it persists'],
  [48, 'double-bit ECC error (uncorrectable)', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it; 5 or more in 24 h: replace'],
  [54, 'auxiliary power not connected', 'CHECK_MECHANICALS', 'hardware', 'drain-node', [], false, true, 'drain the node; a person must check power cabling'],
  [61, 'unused in NVIDIA\'s current catalog (older drivers: internal micro-controller breakpoint/warning)', 'CONTACT_SUPPORT', 'driver', 'observe', [], false, true, 'observe and notify; contact support if it recurs'],
  [62, 'internal micro-controller halt', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [63, 'row remap / page retirement recorded', 'IGNORE', 'hardware', 'observe', ['quarantine-gpu'], false, false, 'observe; schedule a GPU reset when it is idle to apply the pending remap'],
  [64, 'row remap / page retirement failed', 'RESET_GPU', 'hardware', 'quarantine-gpu', ['reboot-node', 'replace-node'], false, false, 'quarantine the GPU and reset it; if it recurs, replace'],
  [68, 'video decoder exception', 'RESTART_APP', 'application', 'restart-workload', ['quarantine-gpu'], true, false, 'restart the workload'],
  [69, 'graphics engine class error', 'RESTART_APP', 'application', 'restart-workload', ['quarantine-gpu'], true, false, 'restart the workload'],
  [74, 'NVLink error', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU, reset it, then reboot; check links and replace if it recurs'],
  [79, 'GPU has fallen off the bus', 'RESTART_BM', 'hardware', 'drain-node', ['reboot-node', 'replace-node'], false, false, 'drain the node and power-cycle it; if it recurs, replace'],
  [92, 'high single-bit ECC error rate', 'IGNORE', 'hardware', 'observe', [], false, false, 'observe and count'],
  [94, 'contained ECC error (only the affected application was killed)', 'RESTART_APP', 'hardware', 'restart-workload', ['quarantine-gpu'], false, false, 'restart the workload; schedule a GPU reset'],
  [95, 'uncontained ECC error', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [109, 'context-switch timeout', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [110, 'security fault', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [119, 'GSP firmware RPC timeout', 'RESET_GPU', 'driver', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [120, 'GSP firmware error', 'RESET_GPU', 'driver', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [121, 'chip-to-chip (Grace-Hopper) link error', 'IGNORE', 'hardware', 'observe', [], false, false, 'observe'],
  [136, 'link training failed', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [137, 'illegal NVLink peer access (application)', 'IGNORE', 'application', 'observe', [], false, false, 'observe'],
  [140, 'unrecovered ECC error', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [142, 'NVENC3 engine error (GB200)', 'CONTACT_SUPPORT', 'hardware', 'observe', [], false, true, 'observe and tell a person: NVIDIA names no automated action; never drain on its own'],
  [143, 'GPU initialization error', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  ...[144, 145, 146, 147, 148, 149, 150].map((x): Row => [x, 'NVLink5 error (Blackwell)', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU, reset it, then reboot; decode per NVIDIA\'s NVLink5 sheet']),
  [151, 'confidential-computing key rotation failed', 'RESTART_VM', 'driver', 'drain-node', ['replace-node'], false, false, 'drain the node and replace the instance'],
  [154, 'GPU recovery action changed', 'OBEY_RECOVERY_ACTION', 'hardware', 'quarantine-gpu', RESET, false, false, 'obey the recovery action NVML names (none / reset / reboot / drain-P2P / drain-and-reset)'],
  [155, 'NVLink software-defined error', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [156, 'resource retirement event', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [157, 'resource retirement failed (no spare resources)', 'IGNORE', 'hardware', 'observe', [], false, true, 'observe and notify; investigate with support'],
  [158, 'GPU fatal timeout', 'RESET_GPU', 'hardware', 'quarantine-gpu', RESET, false, false, 'quarantine the GPU and reset it'],
  [159, 'CHI non-data error (Grace C2C link)', 'CHECK_UVM', 'driver', 'observe', [], false, true, 'observe and tell a person: NVIDIA says check the host\'s UVM driver; usually a report sympathetic to another fault'],
  [160, 'channel retirement event (B100/GB200)', 'IGNORE', 'hardware', 'observe', [], false, true, 'observe and notify: NVIDIA\'s current catalog says IGNORE (investigate software)'],
  [161, 'channel retirement failure', 'IGNORE', 'hardware', 'observe', [], false, true, 'observe and notify: NVIDIA\'s current catalog says IGNORE (investigate software)'],
  // 162–172: in NVIDIA's catalog by name, without a resolution bucket yet. Where the name says the
  // GPU keeps working (power smoothing), observe; where it says the GPU or its memory failed, do
  // what an XID nobody can name gets: quarantine the GPU and ask a person. 171/172 detail an XID 48.
  [162, 'power-smoothing circuitry re-engaged', 'NONE_GIVEN', 'hardware', 'observe', [], false, false, 'information: the power-smoothing capability is back'],
  [163, 'power-smoothing circuitry disengaged', 'NONE_GIVEN', 'hardware', 'observe', [], false, true, 'observe and tell a person: the GPU works, its power smoothing does not'],
  [164, 'power-smoothing circuitry near the end of its lifetime', 'NONE_GIVEN', 'hardware', 'observe', [], false, true, 'observe and tell a person: plan the board\'s service'],
  [165, 'power-smoothing circuitry lifetime exhausted', 'NONE_GIVEN', 'hardware', 'observe', [], false, true, 'observe and tell a person: service the board at the next window'],
  [166, 'NVLink traffic before the link was set up for encryption (confidential computing)', 'NONE_GIVEN', 'driver', 'quarantine-gpu', [], false, true, 'quarantine the GPU and tell a person: NVIDIA gives no bucket yet'],
  [167, 'PCIe fatal timeout', 'NONE_GIVEN', 'hardware', 'quarantine-gpu', [], false, true, 'quarantine the GPU and tell a person: NVIDIA gives no bucket yet'],
  [168, 'reduced GPU memory capacity (errors in the write-protected region)', 'NONE_GIVEN', 'hardware', 'quarantine-gpu', [], false, true, 'quarantine the GPU and tell a person: NVIDIA gives no bucket yet'],
  [169, 'SEC2 micro-controller halt', 'NONE_GIVEN', 'hardware', 'quarantine-gpu', [], false, true, 'quarantine the GPU and tell a person: NVIDIA gives no bucket yet'],
  [170, 'NVLink interrupt in confidential-computing mode', 'NONE_GIVEN', 'driver', 'quarantine-gpu', [], false, true, 'quarantine the GPU and tell a person: NVIDIA gives no bucket yet'],
  [171, 'uncorrectable DRAM error (detail of an XID 48)', 'NONE_GIVEN', 'hardware', 'quarantine-gpu', RESET, false, false, 'as XID 48: quarantine the GPU and reset it; row remapping decides the rest'],
  [172, 'uncorrectable SRAM error (detail of an XID 48)', 'NONE_GIVEN', 'hardware', 'quarantine-gpu', RESET, false, true, 'as XID 48: quarantine the GPU and reset it; the SRAM threshold (sram-threshold-exceeded) decides an RMA'],
];

export const XID_CATALOG: ReadonlyMap<number, XidInfo> = new Map(
  ROWS.map(([xid, meaning, nvidiaAction, fault, action, then, escalateOnRepeat, notify, recommendation]) => [
    xid,
    Object.freeze({ xid, meaning, nvidiaAction, fault, action, then, escalateOnRepeat, notify, recommendation }),
  ]),
);

/** NVML reports 999 when the driver does not know the XID. */
export const UNKNOWN_XID = 999;

/**
 * An XID not in the catalog: its GPU is quarantined (fenced, its pods moved) and a person is told —
 * never a node drain for something nobody can name, never a silent observe. It returns like any
 * GPU quarantine: on a reset and a passed probe.
 */
export function describeXid(xid: number): XidInfo {
  return (
    XID_CATALOG.get(xid) ?? {
      xid,
      meaning: xid === UNKNOWN_XID ? 'unknown XID (NVML reports 999)' : `XID ${xid} is not in the catalog`,
      nvidiaAction: 'CONTACT_SUPPORT',
      fault: 'unknown',
      action: 'quarantine-gpu',
      then: [],
      escalateOnRepeat: false,
      notify: true,
      recommendation: 'quarantine the GPU and tell a person; look the XID up in NVIDIA\'s catalog',
    }
  );
}

/**
 * XIDs that concern one MIG instance when NVML names one (the application-class XIDs). Every other
 * XID carrying a GPU-instance id is a whole-GPU fault: its remedy (a reset) destroys every MIG
 * instance on the GPU, so every instance's pods are affected and move first.
 */
export const INSTANCE_SCOPED_XIDS: ReadonlySet<number> = new Set([13, 31, 43, 45, 68, 69, 94]);

/** Whether an XID seen on a MIG instance stays that instance's (else it is the whole GPU's). */
export function xidStaysInInstance(xid: number): boolean {
  return INSTANCE_SCOPED_XIDS.has(xid);
}

/** `nvmlDeviceGpuRecoveryAction_t` (field value NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 230). */
export const GPU_RECOVERY_ACTIONS = ['none', 'gpu-reset', 'node-reboot', 'drain-p2p', 'drain-and-reset', 'recover-imex-domain', 'bus-reset', 'system-reboot'] as const;
export type GpuRecoveryAction = (typeof GPU_RECOVERY_ACTIONS)[number];
