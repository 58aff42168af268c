/**
 * Canonical text for a computed quantity (quota `status.used`): integers stay plain or take the
 * largest exact binary suffix for memory-like amounts; fractions become millis, as the server does.
 */
export function formatQuantity(n: number, resourceName = ''): string {
  const rounded = Math.round(n * 1000) / 1000;
  if (!Number.isInteger(rounded)) return `${Math.round(rounded * 1000)}m`;
  const memoryLike = /memory|storage/.test(resourceName);
  if (memoryLike && rounded !== 0) {
    for (const [s, f] of [
      ['Ei', 2 ** 60],
      ['Pi', 2 ** 50],
      ['Ti', 2 ** 40],
      ['Gi', 2 ** 30],
      ['Mi', 2 ** 20],
      ['Ki', 2 ** 10],
    ] as const) {
      if (rounded % f === 0) return `${rounded / f}${s}`;
    }
  }
  return String(rounded);
}
