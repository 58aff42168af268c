/**
 * Per-pool lookups in a policy (split from policy.ts, which re-exports them): the pool a node is
 * in, and the pool's blast-radius limits, fence backend and PDB deadline. Types only from the
 * schema, so blast-radius.ts can use them without importing the policy's profiles back.
 */
import type { FenceBackend, Policy } from './policy-schema.ts';

/** Blast-radius limits for a pool: the pool's own, else the policy's. */
export function poolLimits(
  policy: Policy,
  pool: string,
): { maxShare: number; maxCount: number; windowMinutes: number } {
  const p = policy.pools[pool];
  return {
    maxShare: p?.maxQuarantinedShare ?? policy.blastRadius.maxShare,
    maxCount: p?.maxQuarantinedCount ?? policy.blastRadius.maxCount,
    windowMinutes: policy.blastRadius.windowMinutes,
  };
}

/** How long a pod may hold a GPU that needs a reset after it was asked to move, in `pool`. */
export function pdbDeadlineOf(policy: Pick<Policy, 'repair' | 'pools'>, pool: string): number {
  return policy.pools[pool]?.pdbDeadlineMinutes ?? policy.repair.pdbDeadlineMinutes;
}

/** How a pool's GPUs are fenced: the pool's own backend, else the policy's. */
export function fenceBackendOf(policy: Pick<Policy, 'fence' | 'pools'>, pool: string): FenceBackend {
  return policy.pools[pool]?.fenceBackend ?? policy.fence.backend;
}

/** The pool a node belongs to: the first of `poolLabels` it carries, else `default`. */
export function poolOf(policy: Pick<Policy, 'poolLabels'>, labels: Readonly<Record<string, string>>): string {
  for (const l of policy.poolLabels) {
    const v = labels[l];
    if (v) return v;
  }
  return 'default';
}
