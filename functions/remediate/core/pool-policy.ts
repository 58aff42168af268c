/**
 * Per-pool lookups in a policy (split from policy.ts, which re-exports them): the pool a node is in, and the pool's
 * fence backend and PDB deadline. A pool's blast-radius limits are blast-radius.ts `poolLimits`, beside the count
 * they bound. Types only from the schema: no import of the policy's profiles.
 */
import type { FenceBackend, Policy } from './policy-schema.ts';

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
