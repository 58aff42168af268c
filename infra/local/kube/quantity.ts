/**
 * Kubernetes resource quantities in the simulated cluster, written from resource.Quantity's own
 * documentation (k8s.io/apimachinery/pkg/api/resource/quantity.go, its doc comment), not from the
 * functions' parser, so a wrong reading on either side shows up as a disagreement:
 *
 *   <quantity>        ::= <signedNumber><suffix>
 *   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
 *   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
 *   <decimalSI>       ::= m | "" | k | M | G | T | P | E      (suffix.go also accepts n and u)
 *   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (parsed as a base-10 int: suffix.go interpret)
 *   <signedNumber>    ::= <number> | <sign><number>
 *   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *
 * "Numbers more precise than 1n are rounded up" (ParseQuantity rounds to Nano with inf.RoundUp),
 * and a value read as an integer is rounded up too (Quantity.Value / MilliValue: "rounded up to
 * the nearest integer away from 0"). So amounts are kept exactly, as BigInt nano-units, and the
 * scheduler reads them the way kube-scheduler does (schedulerUnits). Object fields are read after
 * JSON decoding, which trims spaces (Quantity.UnmarshalJSON: strings.TrimSpace).
 */
export { formatQuantity } from './quantity-format.ts';

const PATTERN = /^([+-])?([0-9]*)(?:\.([0-9]*))?(?:([eE])([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const NANO = 1_000_000_000n;

/** The apiserver's message for text that is not a quantity (resource.ErrFormatWrong, as it reports it). */
const FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

function ceilDiv(a: bigint, b: bigint): bigint {
  // Away from zero, as inf.RoundUp and Quantity.Value do.
  const q = a / b;
  return a % b === 0n ? q : a > 0n ? q + 1n : q - 1n;
}

/** The exact amount in nano-units (1 = 1e-9 of the base unit), or undefined when it is not a quantity. */
export function quantityNanos(q: string | number): bigint | undefined {
  const text = typeof q === 'number' ? String(q) : q.trim();
  const m = PATTERN.exec(text);
  if (!m) return undefined;
  const [, sign, whole = '', frac = '', e, exp, suffix = ''] = m;
  if (whole === '' && frac === '') return undefined; // "<number>" needs a digit on one side of the point
  let n = BigInt(whole + frac || '0');
  // value = n × 10^(ten) × 2^(two), held in nanos: × 10^9.
  const ten = 9 - frac.length + (e ? Number(exp) : (DECIMAL[suffix] ?? 0));
  const two = BINARY[suffix] ?? 0;
  // Kubernetes takes any int32 exponent; past 10^400 (no amount a cluster holds) it is refused here
  // rather than raised to a BigInt of millions of digits.
  if (Math.abs(ten) > 400) return undefined;
  n *= 1n << BigInt(two);
  if (ten >= 0) n *= 10n ** BigInt(ten);
  else n = ceilDiv(n, 10n ** BigInt(-ten));
  return sign === '-' ? -n : n;
}

export function isQuantity(q: string): boolean {
  return quantityNanos(q) !== undefined;
}

/** A quantity in base units (cores, bytes, devices) as a float; throws naming the text when it is not one. */
export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined) return 0;
  if (typeof q === 'number') return q;
  const n = quantityNanos(q);
  if (n === undefined) throw new Error(`${FORMAT} (got "${q}")`);
  return Number(n) / 1e9;
}

/**
 * The integer kube-scheduler keeps for a resource: millicores for cpu (Quantity.MilliValue),
 * otherwise whole units (Quantity.Value), both rounded up (pkg/scheduler/framework/types.go
 * Resource.Add: `MilliCPU += rQuant.MilliValue()`, `Memory += rQuant.Value()`, scalar resources
 * `Value()`).
 */
export function schedulerUnits(resource: string, nanos: bigint): number {
  return Number(ceilDiv(nanos, resource === 'cpu' ? 1_000_000n : NANO));
}

/** Adds `b` into `a` (both parsed), returning `a`. */
export function addInto(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  for (const [k, v] of b) a.set(k, (a.get(k) ?? 0) + v);
  return a;
}
