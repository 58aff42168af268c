/**
 * Shared-GPU reasons in words (split from words.ts, which re-exports them): what a move off a card
 * several teams share does to each of them, and how blame is counted there (sharing.ts).
 */
/** A move off a shared GPU, in the plan's reason: how many teams' pods it moves (issue #32). */
export function tenantWords(mode: string, tenants: readonly string[], pods: number): string {
  return (
    ` The GPU is shared (${mode}): this moves ${pods} pod(s) of ${tenants.length} teams (${tenants.join(', ')}),` +
    ' each told why by an Event on its pod.'
  );
}

/** Why an XID on an MPS card is every client's and counts as one workload (sharing.ts). */
export function mpsBlameWords(clients: number): string {
  return (
    `the GPU is shared through MPS: a fault takes every MPS client of the card with it (${clients} pod(s)),` +
    ' and no one client is to blame, so it counts as one workload'
  );
}

/** Why an unresolved pid on a time-sliced card counts as one unknown workload (sharing.ts). */
export function unknownTenantWords(replicas: number, tenants: number): string {
  return (
    `the GPU is time-sliced (${replicas} replicas) and nothing names the faulting process,` +
    ` so it counts as one unknown workload, not ${tenants}, and no tenant is restarted for it`
  );
}

/** The Event on one tenant's pod moved off a shared GPU: why, though its own work may be fine. */
export function tenantPodNote(
  action: string,
  gpu: string,
  node: string,
  cause: string,
  others: number,
): { type: 'Warning'; reason: string; action: string; note: string } {
  const with_ = others > 0 ? `, which it shares with pods of ${others} other team(s)` : '';
  return {
    type: 'Warning',
    reason: 'SharedGpuFault',
    action: action === 'restart-workload' ? 'Restart' : 'Evict',
    note:
      `gpu-reflex moved this pod off GPU ${gpu} of node ${node}${with_}: ${cause}.` +
      ' Its replacement is scheduled on another GPU; nothing says this pod caused it.',
  };
}
