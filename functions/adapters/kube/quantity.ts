/**
 * Kubernetes resource quantities ("500m", "16Gi", "2", "1e3") as plain numbers in base units
 * (cores, bytes, devices). Floats are exact enough here: sums of a few thousand requests, never
 * sub-milli values. Shared by the functions (pending pods' requests, nodes' allocatable) and the
 * simulated cluster.
 */
const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const PATTERN = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/** Parses a quantity; throws naming the text when it is not one. */
export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined) return 0;
  if (typeof q === 'number') return q;
  const m = PATTERN.exec(q.trim());
  if (!m || m[1] === undefined)
    throw new Error(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got "${q}")`,
    );
  const base = Number(m[1]);
  if (Number.isNaN(base)) throw new Error(`invalid quantity "${q}"`);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  return base * (SUFFIX[m[3] ?? ''] ?? 1);
}

export function isQuantity(q: string): boolean {
  return PATTERN.test(q.trim());
}
