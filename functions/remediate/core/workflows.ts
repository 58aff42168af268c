/**
 * NVIDIA's XID workflows that need the node's history, not only the XID (NVIDIA's Xid catalog,
 * docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Resolution Bucket" WORKFLOW_XID_45:
 * "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)"; WORKFLOW_XID_48 below). Pure.
 */
import { takesCapacity } from './blast-radius.ts';
import { XID48_WITH_63, XID48_WITH_64, XID63_BELONGS_TO_48, XID64_AFTER_48 } from './words.ts';
import type { Rule } from './policy.ts';
import type { FaultSite } from './scope.ts';
import type { NodeState } from './state.ts';

/**
 * How close before an XID 45 another XID on the same GPU must be for the 45 to be its cleanup.
 * NVIDIA gives no number; the driver's preemptive cleanup follows the error that caused it within
 * the same teardown, so five minutes is generous (gpu-reflex's choice, not NVIDIA's).
 */
export const XID45_FOLLOWS_WINDOW_MS = 5 * 60_000;

/**
 * The other XID an XID 45 at `at` follows on the same GPU ("XID 48"), or undefined when it is alone.
 * Any XID but 45 itself counts, on the GPU or on any of its MIG instances, at most the window before.
 */
export function xid45Follows(state: Pick<NodeState, 'recent'>, site: FaultSite, at: string): string | undefined {
  if (!site.gpu) return undefined;
  const prefix = `${site.node}/${site.gpu.uuid}/`;
  const t = Date.parse(at);
  const other = state.recent
    .filter(
      (o) => o.key.startsWith(prefix) && t - Date.parse(o.at) >= 0 && t - Date.parse(o.at) <= XID45_FOLLOWS_WINDOW_MS,
    )
    .map((o) => /\/xid-(\d+)(?:-nonfatal)?$/.exec(o.key)?.[1])
    .filter((x): x is string => x !== undefined && x !== '45')
    .at(-1);
  return other === undefined ? undefined : `XID ${other}`;
}

/**
 * NVIDIA's WORKFLOW_XID_48 (double-bit ECC): what the DBE means depends on the row-remap XIDs beside it
 * (NVIDIA's catalog rows: 63 INFOROM_DRAM_RETIREMENT_EVENT IGNORE — the row is remapped, a reset applies
 * it; 64 INFOROM_DRAM_RETIREMENT_FAILURE RESET_GPU, investigate: CONTACT_SUPPORT). NVML's remapped-rows
 * documentation: "A pending remapping won't affect future work on the GPU since error-containment and
 * dynamic page blacklisting will take care of that" — so with a recorded remap the running work is safe.
 * How close the 63/64 must be is gpu-reflex's choice (NVIDIA logs them in the same teardown), as for 45.
 */
export const XID48_COMPANION_WINDOW_MS = 5 * 60_000;

/** The newest XID of `xids` on the same GPU at most the window before `at` (any MIG instance of it too). */
function nearBefore(state: Pick<NodeState, 'recent'>, site: FaultSite, at: string, xids: number[]): number | undefined {
  if (!site.gpu) return undefined;
  const prefix = `${site.node}/${site.gpu.uuid}/`;
  const t = Date.parse(at);
  const seen = state.recent
    .filter(
      (o) => o.key.startsWith(prefix) && t - Date.parse(o.at) >= 0 && t - Date.parse(o.at) <= XID48_COMPANION_WINDOW_MS,
    )
    .map((o) => Number(/\/xid-(\d+)$/.exec(o.key)?.[1]))
    .filter((x) => xids.includes(x));
  // A failed remap outweighs a recorded one: 64 before 63.
  return seen.includes(64) ? 64 : seen.at(-1);
}

/** How WORKFLOW_XID_48 changes the rule of an XID 48, 63 or 64 on a GPU (`rule` as the policy resolved it). */
export type Xid48Step =
  | { kind: 'rule'; rule: Rule }
  /** A 63 after the 48 it belongs to: nothing of its own to do; the words say why. */
  | { kind: 'belongs'; words: string };

export function xid48Workflow(
  xid: number,
  rule: Rule,
  state: Pick<NodeState, 'recent'>,
  site: FaultSite,
  at: string,
): Xid48Step {
  if (xid === 48 && rule.action === 'quarantine-gpu') {
    const c = nearBefore(state, site, at, [63, 64]);
    // 48 alone: reset the GPU (reboot if that fails); RMA only on the SRAM threshold (health condition).
    if (c === undefined) return { kind: 'rule', rule };
    if (c === 63)
      return {
        kind: 'rule',
        rule: {
          ...rule,
          letWorkFinish: rule.letWorkFinish ?? { deadlineMinutes: DRAIN_AND_RESET_MINUTES },
          source: `${rule.source} (${XID48_WITH_63})`,
        },
      };
    return {
      kind: 'rule',
      rule: { ...rule, notify: true, letWorkFinish: null, source: `${rule.source} (${XID48_WITH_64})` },
    };
  }
  if ((xid === 63 || xid === 64) && nearBefore(state, site, at, [48]) !== undefined) {
    if (xid === 63 && !takesCapacity(rule.action)) return { kind: 'belongs', words: XID63_BELONGS_TO_48 };
    return { kind: 'rule', rule: { ...rule, notify: true, source: `${rule.source} (${XID64_AFTER_48})` } };
  }
  return { kind: 'rule', rule };
}

/** As NVML's DRAIN_AND_RESET (policy-defaults.ts `RECOVERY_DEFAULTS`): running work gets up to 8 h. */
const DRAIN_AND_RESET_MINUTES = 480;
