/**
 * Kubernetes resource quantities in the simulated cluster: parsing is shared with the functions
 * (functions/adapters/kube/quantity.ts); formatting computed amounts is the API server's job.
 */
import { isQuantity, parseQuantity } from '../../../functions/adapters/kube/quantity.ts';

export { isQuantity, parseQuantity };

/**
 * Canonical text for a computed quantity (quota `status.used`): integers stay plain or take the
 * largest exact binary suffix for memory-like amounts; fractions become millis, as the server does.
 */
export function formatQuantity(n: number, resourceName = ''): string {
  const rounded = Math.round(n * 1000) / 1000;
  if (!Number.isInteger(rounded)) return `${Math.round(rounded * 1000)}m`;
  const memoryLike = /memory|storage/.test(resourceName);
  if (memoryLike && rounded !== 0) {
    for (const [s, f] of [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) {
      if (rounded % f === 0) return `${rounded / f}${s}`;
    }
  }
  return String(rounded);
}

/** Adds `b` into `a` (both parsed), returning `a`. */
export function addInto(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  for (const [k, v] of b) a.set(k, (a.get(k) ?? 0) + v);
  return a;
}
