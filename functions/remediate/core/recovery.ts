/**
 * What a quarantined GPU needs before it may return (pure): a reset and a passed probe (NVIDIA's
 * RESET_GPU answers), P2P quiesced and the driver asked again (DRAIN_P2P), or only the condition's
 * own `resolved` (a temperature). Fencing does not depend on it: every GPU quarantine fences (fence.ts).
 */
import type { HealthCondition } from '../../../events/index.ts';
import type { Incident } from './state.ts';

/** Health conditions whose recovery is a GPU reset (the rest clear when the agent says so). */
const RESET_CONDITIONS: ReadonlySet<HealthCondition> = new Set<HealthCondition>(['ecc-uncorrected', 'nvlink-down', 'recovery-action']);

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
  return i.scope === 'gpu' && !!i.gpu && i.action === 'quarantine-gpu' && i.recoveryAction === 'drain-p2p' && (i.condition === 'recovery-action' || i.xid === 154);
}
