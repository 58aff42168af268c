/**
 * The XID codes where gpu-reflex's reflex or words differ from their bucket's default (defaults.ts),
 * each with why.
 */
import type { Reflex } from './defaults.ts';

/** A code whose reflex or words differ from its bucket's default: `meaning` is our short phrase. */
export type Curated = Partial<Reflex> & { meaning?: string };

/**
 * Where gpu-reflex departs from the bucket default, each with its reason. Sources: NVIDIA's
 * catalog; NVIDIA k8s-device-plugin's skip list and NVSentinel's experience with XID 45 noise
 * (docs/xid-catalog.md has the table).
 */
export const CURATED: Readonly<Record<number, Curated>> = {
  // Usually the application: observed, and only repeats across different workloads escalate.
  13: {
    meaning: 'graphics engine exception (usually the application)',
    action: 'observe',
    then: ['restart-workload', 'quarantine-gpu'],
    recommendation: 'observe; the same XID across different workloads on one GPU escalates',
  },
  31: {
    meaning: 'GPU memory page fault (usually the application)',
    action: 'observe',
    then: ['restart-workload', 'quarantine-gpu'],
    recommendation: 'observe; the same XID across different workloads on one GPU escalates',
  },
  43: {
    meaning: 'GPU stopped processing (follows another error)',
    fault: 'application',
    recommendation: 'observe; act on the XID it follows',
  },
  45: { meaning: 'preemptive cleanup after a previous error' },
  48: { meaning: 'double-bit ECC error (uncorrectable)' },
  54: { meaning: 'auxiliary power not connected', recommendation: 'drain the node; a person must check power cabling' },
  61: {
    meaning: "unused in NVIDIA's current catalog (older drivers: internal micro-controller breakpoint/warning)",
    fault: 'driver',
    recommendation: 'observe and notify; contact support if it recurs',
  },
  // IGNORE, but the remap is applied only by a reset: schedule one when the GPU is idle.
  63: {
    meaning: 'row remap / page retirement recorded',
    fault: 'hardware',
    then: ['quarantine-gpu'],
    recommendation: 'observe; schedule a GPU reset when it is idle to apply the pending remap',
  },
  64: {
    meaning: 'row remap / page retirement failed',
    recommendation: 'quarantine the GPU and reset it; if it recurs, replace',
  },
  74: { meaning: 'NVLink error' },
  79: { meaning: 'GPU has fallen off the bus' },
  92: { meaning: 'high single-bit ECC error rate', fault: 'hardware', recommendation: 'observe and count' },
  // Contained: only the affected application was killed; its own counter must not re-quarantine the GPU.
  94: {
    meaning: 'contained ECC error (only the affected application was killed)',
    fault: 'hardware',
    escalateOnRepeat: false,
    recommendation: 'restart the workload; schedule a GPU reset',
  },
  95: { meaning: 'uncontained ECC error' },
  121: { meaning: 'chip-to-chip (Grace-Hopper) link error', fault: 'hardware' },
  137: { meaning: 'illegal NVLink peer access (application)', fault: 'application' },
  142: {
    meaning: 'NVENC3 engine error (GB200)',
    fault: 'hardware',
    recommendation: 'observe and tell a person: NVIDIA names no automated action; never drain on its own',
  },
  157: {
    meaning: 'resource retirement failed (no spare resources)',
    fault: 'hardware',
    notify: true,
    recommendation: 'observe and notify; investigate with support',
  },
  159: {
    meaning: 'CHI non-data error (Grace C2C link)',
    recommendation:
      "observe and tell a person: NVIDIA says check the host's UVM driver; usually a report sympathetic to " +
      'another fault',
  },
  160: {
    meaning: 'channel retirement event (B100/GB200)',
    fault: 'hardware',
    notify: true,
    recommendation: "observe and notify: NVIDIA's current catalog says IGNORE (investigate software)",
  },
  161: {
    meaning: 'channel retirement failure',
    fault: 'hardware',
    notify: true,
    recommendation: "observe and notify: NVIDIA's current catalog says IGNORE (investigate software)",
  },
  // 162–172: listed without a bucket. Where the name says the GPU keeps working (power smoothing),
  // observe; where it says the GPU or its memory failed, what an XID nobody can name gets. 171/172 detail an XID 48.
  162: {
    meaning: 'power-smoothing circuitry re-engaged',
    fault: 'hardware',
    action: 'observe',
    notify: false,
    recommendation: 'information: the power-smoothing capability is back',
  },
  163: {
    meaning: 'power-smoothing circuitry disengaged',
    fault: 'hardware',
    action: 'observe',
    recommendation: 'observe and tell a person: the GPU works, its power smoothing does not',
  },
  164: {
    meaning: 'power-smoothing circuitry near the end of its lifetime',
    fault: 'hardware',
    action: 'observe',
    recommendation: "observe and tell a person: plan the board's service",
  },
  165: {
    meaning: 'power-smoothing circuitry lifetime exhausted',
    fault: 'hardware',
    action: 'observe',
    recommendation: 'observe and tell a person: service the board at the next window',
  },
  166: {
    meaning: 'NVLink traffic before the link was set up for encryption (confidential computing)',
    fault: 'driver',
  },
  167: { meaning: 'PCIe fatal timeout', fault: 'hardware' },
  168: { meaning: 'reduced GPU memory capacity (errors in the write-protected region)', fault: 'hardware' },
  169: { meaning: 'SEC2 micro-controller halt', fault: 'hardware' },
  170: { meaning: 'NVLink interrupt in confidential-computing mode', fault: 'driver' },
  171: {
    meaning: 'uncorrectable DRAM error (detail of an XID 48)',
    fault: 'hardware',
    then: ['reboot-node'],
    notify: false,
    recommendation: 'as XID 48: quarantine the GPU and reset it; row remapping decides the rest',
  },
  172: {
    meaning: 'uncorrectable SRAM error (detail of an XID 48)',
    fault: 'hardware',
    then: ['reboot-node'],
    recommendation:
      'as XID 48: quarantine the GPU and reset it; the SRAM threshold (sram-threshold-exceeded) decides an RMA',
  },
};
