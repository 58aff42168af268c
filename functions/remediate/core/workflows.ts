/**
 * NVIDIA's XID workflows that need the node's history, not only the XID (NVIDIA's Xid catalog,
 * docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Resolution Bucket" WORKFLOW_XID_45:
 * "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)"). Pure.
 */
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
