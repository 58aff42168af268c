/**
 * Numbers as EventBridge sees them: the JSON text as written, plus an exact decimal value when the
 * number is inside the range EventBridge compares numerically.
 *
 * AWS (and event-ruler behind it) compares numbers in two ways:
 * - by their literal text (`123456789012` equals `123456789012`, whatever its size), and
 * - by exact decimal value, but only for numbers between -5.0e9 and 5.0e9 with at most six digits
 *   after the decimal point (`300`, `300.0` and `3.0e+2` are equal).
 * `numeric` ranges and `anything-but` numbers need the second form, so their bounds must be in range.
 * Keeping the text is why `parseJsonText` exists: `JSON.parse` forgets how a number was spelled.
 */

/** A JSON number that remembers its spelling. Produced by parseJsonText. */
export class JsonNumber {
  readonly value: number;

  constructor(readonly text: string) {
    this.value = Number(text);
  }

  /** JSON.stringify writes the value (the spelling cannot be preserved there). */
  toJSON(): number {
    return this.value;
  }
}

/** The spelling of a number: its JSON text, or JavaScript's shortest form for a plain number. */
export function numberText(n: number | JsonNumber): string {
  return typeof n === 'number' ? String(n) : n.text;
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** 5.0e9 expressed in millionths. */
const LIMIT = 5_000_000_000_000_000n;
export const NUMBER_RANGE_REASON = 'Value must be between -5.0E9 and 5.0E9, inclusive';
export const NUMBER_DECIMALS_REASON = 'Only values upto 6 decimals are supported';

/**
 * The exact value in millionths, or the reason it cannot be compared numerically
 * (outside ±5.0e9, more than six decimals, or not a decimal at all).
 */
export function decimalMicros(text: string): bigint | string {
  const m = DECIMAL.exec(text);
  if (!m) return NUMBER_RANGE_REASON;
  const [, sign = '', int = '', frac = '', exp = '0'] = m;
  let digits = (int + frac).replace(/^0+/, '');
  // The value is digits × 10^-scale.
  let scale = frac.length - Number(exp);
  if (digits === '') return 0n;
  while (digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    scale--;
  }
  if (scale > 6) return NUMBER_DECIMALS_REASON;
  // Digits left of the point; more than ten is beyond 5e9 (checked before any big power is built).
  if (digits.length - scale > 10) return NUMBER_RANGE_REASON;
  const micros = BigInt(digits) * 10n ** BigInt(6 - scale);
  if (micros > LIMIT) return NUMBER_RANGE_REASON;
  return sign === '-' ? -micros : micros;
}

/** A number leaf of an event or a number in a pattern, ready for both kinds of comparison. */
export class Num {
  readonly text: string;
  /** Exact value in millionths; undefined when outside what EventBridge compares numerically. */
  readonly micros: bigint | undefined;

  constructor(n: number | JsonNumber) {
    this.text = numberText(n);
    const micros = decimalMicros(this.text);
    this.micros = typeof micros === 'bigint' ? micros : undefined;
  }

  /** Exact-value equality: same spelling, or same value where both are comparable. */
  equals(other: Num): boolean {
    return this.text === other.text || (this.micros !== undefined && this.micros === other.micros);
  }
}

/** A finite JavaScript number or a JsonNumber: what counts as a JSON number on input. */
export function isJsonNumber(v: unknown): v is number | JsonNumber {
  return (typeof v === 'number' && Number.isFinite(v)) || v instanceof JsonNumber;
}

/** A JSON object (not an array, not null, not a JsonNumber). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}
