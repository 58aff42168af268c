/**
 * Benchmarks: speed and memory targets live here, never in timed unit tests. Each suite returns
 * rows of measurements with their targets; `gpu-reflex bench` prints them with the machine and the
 * date, and `--record FILE` appends them as a Markdown section so numbers are written down.
 */
import { cpus, totalmem } from 'node:os';

export interface Measurement {
  metric: string;
  value: number;
  unit: string;
  /** Human-readable target, e.g. `< 250 ms`. */
  target?: string;
  /** Whether the value meets the target (undefined when there is none). */
  ok?: boolean;
}

export interface BenchSuite {
  name: string;
  summary: string;
  run(progress: (line: string) => void): Promise<Measurement[]>;
}

export function machine(): string {
  const c = cpus();
  return (
    `${c.length} × ${c[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ` +
    `Node ${process.version}, ${process.platform}/${process.arch}`
  );
}

/** Percentile (nearest-rank) of a list of numbers; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const below = (metric: string, value: number, unit: string, limit: number): Measurement => ({
  metric,
  value,
  unit,
  target: `< ${limit} ${unit}`,
  ok: value < limit,
});
export const atLeast = (metric: string, value: number, unit: string, limit: number): Measurement => ({
  metric,
  value,
  unit,
  target: `≥ ${limit} ${unit}`,
  ok: value >= limit,
});
export const info = (metric: string, value: number, unit: string): Measurement => ({ metric, value, unit });

export function markdown(suite: string, rows: readonly Measurement[], when: Date): string {
  const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 2 : 1));
  return [
    `### ${suite} — ${when.toISOString().slice(0, 10)}`,
    '',
    `Machine: ${machine()}`,
    '',
    '| metric | value | target | met |',
    '| --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.metric} | ${fmt(r.value)} ${r.unit} | ${r.target ?? ''} ` +
        `| ${r.ok === undefined ? '' : r.ok ? 'yes' : '**no**'} |`,
    ),
    '',
  ].join('\n');
}
