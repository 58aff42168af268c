/**
 * The nodes gpu-reflex holds, read from what remediation writes — the node's state label
 * (lib/node-state.ts), its history annotation (core/state.ts) — and the approval store
 * (lib/approvals.ts), which `approvals list` and chat's `approve ID` read. `gpu-reflex status`
 * (status-cli.ts) prints them as a table; chat's `status` (chatops, through index.ts) in words.
 * Reads only.
 */
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { NodeOps, StateStore } from '../adapters/kube/ports.ts';
import type { ApprovalRecord } from '../lib/approvals.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { isOpen, stateOf, type Incident } from './core/state.ts';

export interface HeldIncident {
  gpu?: string;
  why: string;
  phase: Incident['phase'];
  since: string;
  action: Incident['action'];
  fence?: { backend: string; verifiedAt?: string; driftAt?: string; fallback?: string };
}

export interface HeldNode {
  node: string;
  state: string;
  cordoned: boolean;
  gpus: string[];
  incidents: HeldIncident[];
  approvals: { id: string; action: string; scope: string; expiresAt: string }[];
  next: string;
}

function why(i: Incident): string {
  const base = i.xid !== undefined ? `XID ${i.xid}` : i.condition ? i.condition : i.trigger;
  return i.count > 1 ? `${base} ×${i.count}` : base;
}

export function fenceWords(f: HeldIncident['fence']): string {
  if (!f) return '';
  const held = f.driftAt
    ? `NOT holding since ${f.driftAt}`
    : f.verifiedAt
      ? `verified ${f.verifiedAt}`
      : 'not verified yet';
  return `${f.backend}${f.fallback ? `→${f.fallback}` : ''} ${held}`;
}

function nextStep(state: string, open: HeldNode['approvals'], incidents: HeldIncident[]): string {
  if (open.length > 0) return open.map((a) => `gpu-reflex approve ${a.id}`).join(' or ');
  if (state === 'awaiting-approval') return 'an approval is asked, none open in the store: look at approvals list';
  if (state === 'awaiting-repair') return 'repair the node (or let its pool repair it), then gpu-reflex restores it';
  if (state === 'draining') return 'gpu-reflex drains it; then it waits for repair';
  const unverified = incidents.find((i) => i.fence && !i.fence.verifiedAt);
  if (unverified) return 'gpu-reflex verifies the fence, then repairs the GPU';
  return 'gpu-reflex repairs and probes the GPU, then restores it';
}

/** The held nodes, by name; `approvals` are the store's records (every status: open ones are kept). */
export function heldNodes(nodes: readonly NodeInfo[], approvals: readonly ApprovalRecord[]): HeldNode[] {
  const openBy = new Map<string, ApprovalRecord[]>();
  for (const a of approvals) if (a.status === 'open') openBy.set(a.node, [...(openBy.get(a.node) ?? []), a]);
  const out: HeldNode[] = [];
  for (const n of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const s = stateOf(n);
    const incidents = s.incidents
      // An observed fault holds nothing: only incidents that took GPUs or the node out, or wait to.
      .filter((i) => isOpen(i) && !i.closedAt && i.phase !== 'observing')
      .map((i): HeldIncident => ({
        ...((i.qid ?? i.gpu) ? { gpu: i.qid ?? i.gpu } : {}),
        why: why(i),
        phase: i.phase,
        since: i.since,
        action: i.action,
        ...(i.fence
          ? {
              fence: {
                backend: i.fence.backend,
                ...(i.fence.verifiedAt ? { verifiedAt: i.fence.verifiedAt } : {}),
                ...(i.fence.driftAt ? { driftAt: i.fence.driftAt } : {}),
                ...(i.fence.fallback ? { fallback: i.fence.fallback } : {}),
              },
            }
          : {}),
      }));
    const label = n.labels[STATE_LABEL];
    const open = (openBy.get(n.name) ?? []).map((a) => ({
      id: a.id,
      action: a.action,
      scope: a.scope,
      expiresAt: a.expiresAt,
    }));
    const held = (label !== undefined && label !== 'healthy') || s.quarantinedGpus.length > 0 || open.length > 0;
    if (!held) continue;
    const state = label ?? s.phase;
    out.push({
      node: n.name,
      state,
      cordoned: n.unschedulable,
      gpus: [...new Set([...s.quarantinedGpus, ...incidents.flatMap((i) => (i.gpu ? [i.gpu] : []))])],
      incidents,
      approvals: open,
      next: nextStep(state, open, incidents),
    });
  }
  return out;
}

/** Reads the cluster: the nodes as chat's `status` lists them, the approvals as `approvals list`. */
export async function readHeldNodes(p: { nodes: NodeOps; state: StateStore }): Promise<HeldNode[]> {
  const { listApprovals } = await import('../lib/approvals.ts');
  const [nodes, approvals] = await Promise.all([p.nodes.list(), listApprovals(p.state)]);
  return heldNodes(nodes, approvals);
}
