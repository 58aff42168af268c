/**
 * What a quarantined GPU needs before it may return (pure): a reset and a passed probe (NVIDIA's
 * RESET_GPU answers), P2P quiesced and the driver asked again (DRAIN_P2P), or only the condition's
 * own `resolved` (a temperature). Fencing does not depend on it: every GPU quarantine fences (fence.ts).
 */
import type { HealthCondition } from '../../../events/index.ts';
import type { Incident } from './state.ts';

/**
 * Health conditions whose recovery is a GPU reset (the rest clear when the agent says so). A pending
 * row remap or page retirement is applied by the next GPU reset (NVIDIA's XID catalog, XID 63: "pending
 * remap needs a reset"; the agent's own words for both conditions say so), so nothing else clears it.
 */
const RESET_CONDITIONS: ReadonlySet<HealthCondition> = new Set<HealthCondition>([
  'ecc-uncorrected',
  'nvlink-down',
  'recovery-action',
  'row-remap-pending',
  'retired-pages-pending',
]);

/**
 * RMA class: NVIDIA says the GPU must be replaced, and no reset cures it. A row-remap failure means
 * no spare rows are left (NVIDIA's "Memory error management" guide: the GPU should be RMA'd); the SRAM
 * uncorrectable threshold is NVIDIA's WORKFLOW_XID_48 test for RMA (docs.nvidia.com/deploy/xid-errors).
 */
const RMA_CONDITIONS: ReadonlySet<HealthCondition> = new Set<HealthCondition>([
  'row-remap-failure',
  'sram-threshold-exceeded',
]);

/**
 * What a quarantined GPU needs before it may return (the words of the plan say the same).
 * `instance`: one MIG instance's quarantine, which nothing fences (fence.ts) and quiet time ends.
 */
export type Recovery = 'reset' | 'replace' | 'quiesce' | 'resolve' | 'instance';

export function recoveryOf(i: Incident): Recovery {
  if (i.scope === 'mig-instance') return 'instance';
  if (needsReplace(i)) return 'replace';
  if (quiesces(i)) return 'quiesce';
  return needsReset(i) ? 'reset' : 'resolve';
}

/**
 * A whole-GPU quarantine NVIDIA answers with a replacement: the GPU stays fenced, no reset is tried,
 * and the sweep climbs to the next rung (replace-node, or awaiting-repair for a person).
 */
export function needsReplace(i: Incident): boolean {
  return (
    i.scope === 'gpu' &&
    !!i.gpu &&
    i.action === 'quarantine-gpu' &&
    i.condition !== undefined &&
    RMA_CONDITIONS.has(i.condition)
  );
}

/**
 * A whole-GPU incident the agent fences and that returns only after a reset and a probe: an XID
 * quarantine (the RESET_GPU bucket and every XID that climbs to a GPU quarantine), a reset
 * condition, or a quarantined GPU whose history was lost. MIG-instance incidents are the
 * application's (restart), and conditions such as temperature clear when the agent resolves them.
 */
export function needsReset(i: Incident): boolean {
  if (i.scope !== 'gpu' || !i.gpu || i.action !== 'quarantine-gpu') return false;
  if (quiesces(i)) return false;
  if (i.trigger === 'orphan') return true;
  return i.condition === undefined || RESET_CONDITIONS.has(i.condition);
}

/**
 * NVML's DRAIN_P2P (field 230, or XID 154 naming it): quiesce peer-to-peer traffic — the GPU is
 * fenced and its pods move, which stops its P2P work — then the driver's answer is read again. No
 * reset unless the driver then asks for one (the incident's recovery action changes to gpu-reset);
 * when it answers none, the GPU returns like any fenced quarantine that needs no reset.
 */
export function quiesces(i: Incident): boolean {
  return (
    i.scope === 'gpu' &&
    !!i.gpu &&
    i.action === 'quarantine-gpu' &&
    i.recoveryAction === 'drain-p2p' &&
    (i.condition === 'recovery-action' || i.xid === 154)
  );
}
