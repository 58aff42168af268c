/**
 * The XID catalog: every code NVIDIA's Xid catalog lists (events/xid/nvidia.generated.ts, generated
 * from the committed table events/xid/nvidia-xid-catalog.tsv), NVIDIA's immediate-action bucket and
 * words, and gpu-reflex's default reflex (events/xid/defaults.ts: one per bucket, and the codes that
 * differ, docs/xid-catalog.md). The agent prints it (`xid scan`, `xid explain`); the remediation
 * policy starts from it. Both import it from here, so they never disagree.
 */
import { BUCKET_DEFAULTS, type Reflex, type RemediationAction } from './xid/defaults.ts';
import { CURATED } from './xid/curated.ts';
import { NVIDIA_XIDS } from './xid/nvidia.generated.ts';
import { alwaysIgnored } from './xid/nvlink5.ts';
import type { CatalogTuple, NvidiaBucket } from './xid/types.ts';

export { REMEDIATION_ACTIONS, type RemediationAction } from './xid/defaults.ts';
export { NVIDIA_BUCKETS, type NvidiaBucket } from './xid/types.ts';
export { decodeNvlink5, decodeWords, NVLINK5_XIDS, nvlink5Verdict, type Nvlink5Decode } from './xid/nvlink5.ts';

export interface XidInfo {
  xid: number;
  /** A short phrase for timelines and reasons (NVIDIA's description where we have none of our own). */
  meaning: string;
  /** NVIDIA's description, unchanged ('' for a code NVIDIA does not list; its mnemonic: events/xid/names.ts). */
  description: string;
  /** NVIDIA's "Resolution Bucket (Immediate Action)"; NONE_GIVEN where it gives none. */
  nvidiaAction: NvidiaBucket;
  /** Whether NVIDIA's catalog lists the code: only unlisted codes get the unknown-XID fallback. */
  listed: boolean;
  /** Who is usually at fault: the application, the hardware, or firmware/driver. */
  fault: Reflex['fault'];
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

/** "Unused" in NVIDIA's sheet reads as a sentence. */
function meaningOf(description: string): string {
  const d = description.replace(/\s*\n\s*/g, ' ');
  return d === 'Unused' ? "unused in NVIDIA's current catalog" : d;
}

function infoOf([code, description, immediate]: CatalogTuple): XidInfo {
  const e = { code, description, immediate };
  const bucket = BUCKET_DEFAULTS[e.immediate];
  // 147 (TREX) and 148 (NVLPW_CTRL): every row of NVIDIA's decode sheet is IGNORE.
  const ignoredNvlink5 = e.immediate === 'WORKFLOW_NVLINK5_ERR' && alwaysIgnored(e.code);
  const base: Reflex = ignoredNvlink5
    ? {
        ...BUCKET_DEFAULTS.IGNORE,
        fault: 'hardware',
        recommendation: `observe: every row of NVIDIA's decode sheet for XID ${e.code} is IGNORE`,
      }
    : bucket;
  const { meaning, ...reflex } = CURATED[e.code] ?? {};
  const r = { ...base, ...reflex };
  return Object.freeze({
    xid: e.code,
    meaning: meaning ?? meaningOf(e.description),
    description: e.description,
    nvidiaAction: e.immediate,
    listed: true,
    fault: r.fault,
    action: r.action,
    then: Object.freeze([...r.then]) as RemediationAction[],
    escalateOnRepeat: r.escalateOnRepeat,
    notify: r.notify,
    recommendation: r.recommendation,
  });
}

/** Every code in NVIDIA's catalog (events/xid/nvidia.generated.ts), with gpu-reflex's default reflex. */
export const XID_CATALOG: ReadonlyMap<number, XidInfo> = new Map(NVIDIA_XIDS.map((t) => [t[0], infoOf(t)]));

/** NVML reports 999 when the driver does not know the XID. */
export const UNKNOWN_XID = 999;

/**
 * An XID NVIDIA's catalog does not list: its GPU is quarantined (fenced, its pods moved) and a
 * person is told — never a node drain for something nobody can name, never a silent observe. It
 * returns like any GPU quarantine: on a reset and a passed probe. Listed codes never get this.
 */
export function describeXid(xid: number): XidInfo {
  return (
    XID_CATALOG.get(xid) ?? {
      xid,
      meaning: xid === UNKNOWN_XID ? 'unknown XID (NVML reports 999)' : `XID ${xid} is not in NVIDIA's catalog`,
      description: '',
      nvidiaAction: 'NONE_GIVEN',
      listed: false,
      fault: 'unknown',
      action: 'quarantine-gpu',
      then: [],
      escalateOnRepeat: false,
      notify: true,
      recommendation: "quarantine the GPU and tell a person; look the XID up in NVIDIA's catalog",
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

/**
 * `nvmlDeviceGpuRecoveryAction_t` (field value NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 230), by code:
 * nvml.h (NVML API 13; the enum as NVIDIA's cuda-python binds it from nvml.h) ends at 5 —
 * NONE 0, GPU_RESET 1, NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4, RECOVER_IMEX_DOMAIN 5. There is
 * no 6 or 7 (an earlier list here said `bus-reset`, `system-reboot`; fencing.md, corrections
 * 2026-12-01): a code NVML returns beyond this list has no name, and an unnamed action is unknown,
 * never `none`.
 */
export const GPU_RECOVERY_ACTIONS = [
  'none',
  'gpu-reset',
  'node-reboot',
  'drain-p2p',
  'drain-and-reset',
  'recover-imex-domain',
] as const;
export type GpuRecoveryAction = (typeof GPU_RECOVERY_ACTIONS)[number];
