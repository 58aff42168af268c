/**
 * A tiny metrics registry rendering the Prometheus text exposition format (version 0.0.4).
 * Every part of the agent (publisher, NVML error counts, last XID timestamp) registers its own
 * counters and gauges here; `/metrics` renders them all. Registering the same name twice with the
 * same type and labels returns the same metric, so independent parts can share one.
 */

export type Labels = Record<string, string>;

export interface Counter {
  /** Adds `n` (default 1, must be >= 0) to the series named by `labels`. */
  inc(labels?: Labels, n?: number): void;
  value(labels?: Labels): number;
}

export interface Gauge {
  /** `set(42)` for an unlabelled gauge, `set({ gpu: '0' }, 42)` for a labelled one. */
  set(value: number): void;
  set(labels: Labels, value: number): void;
  inc(labels?: Labels, n?: number): void;
  value(labels?: Labels): number;
}

export interface Series {
  labels: Labels;
  value: number;
}

/**
 * A family whose series are replaced whole, each with its own label set (rendered in the order
 * given, no empty placeholders): what an exporter of another program's names needs, where a
 * series exists only while its reading does (dcgm.ts). No series: the family is not rendered.
 */
export interface SnapshotFamily {
  /** The series from now on; one missing here is gone from the next scrape. Two with equal labels throw. */
  replace(series: readonly Series[]): void;
}

type Kind = 'counter' | 'gauge';

interface Family {
  name: string;
  help: string;
  kind: Kind;
  /** null: a snapshot family, each series names its own labels. */
  labelNames: readonly string[] | null;
  series: Map<string, Series>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class Metrics {
  private families = new Map<string, Family>();

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    const f = this.family(name, help, 'counter', labelNames);
    return {
      inc: (labels = {}, n = 1) => {
        if (!(n >= 0)) throw new Error(`counter ${name}: increment must be >= 0, got ${n}`);
        this.add(f, labels, n);
      },
      value: (labels = {}) => f.series.get(this.key(f, labels))?.value ?? 0,
    };
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    const f = this.family(name, help, 'gauge', labelNames);
    return {
      set: (labelsOrValue: Labels | number, value?: number) => {
        const labels = typeof labelsOrValue === 'number' ? {} : labelsOrValue;
        const v = typeof labelsOrValue === 'number' ? labelsOrValue : (value ?? Number.NaN);
        f.series.set(this.key(f, labels), { labels: { ...labels }, value: v });
      },
      inc: (labels = {}, n = 1) => this.add(f, labels, n),
      value: (labels = {}) => f.series.get(this.key(f, labels))?.value ?? 0,
    };
  }

  snapshot(name: string, help: string, kind: Kind): SnapshotFamily {
    const f = this.family(name, help, kind, null);
    return {
      replace: (series) => {
        const next = new Map<string, Series>();
        for (const s of series) {
          for (const l of Object.keys(s.labels)) checkLabelName(name, l);
          const k = JSON.stringify(Object.entries(s.labels).sort(([a], [b]) => a.localeCompare(b)));
          if (next.has(k)) throw new Error(`metric ${name}: two series with labels ${k}`);
          next.set(k, { labels: { ...s.labels }, value: s.value });
        }
        f.series = next;
      },
    };
  }

  /** The whole registry in the text exposition format, families sorted by name. */
  render(): string {
    const out: string[] = [];
    for (const f of [...this.families.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      if (f.labelNames === null && f.series.size === 0) continue;
      out.push(`# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`);
      out.push(`# TYPE ${f.name} ${f.kind}`);
      // An unlabelled counter shows 0 before its first event, so rate() works from the start.
      if (f.series.size === 0 && f.labelNames?.length === 0) out.push(`${f.name} 0`);
      for (const s of f.series.values())
        out.push(`${f.name}${renderLabels(f.labelNames ?? Object.keys(s.labels), s.labels)} ${formatValue(s.value)}`);
    }
    return out.join('\n') + '\n';
  }

  private family(name: string, help: string, kind: Kind, labelNames: readonly string[] | null): Family {
    if (!NAME.test(name)) throw new Error(`metric name ${JSON.stringify(name)} is not a valid Prometheus name`);
    for (const l of labelNames ?? []) checkLabelName(name, l);
    const existing = this.families.get(name);
    if (existing) {
      const shape = (names: readonly string[] | null) => (names === null ? 'per series' : names.join(', '));
      if (existing.kind !== kind || shape(existing.labelNames) !== shape(labelNames)) {
        throw new Error(
          `metric ${name} is already registered as a ${existing.kind} with labels [${shape(existing.labelNames)}]`,
        );
      }
      return existing;
    }
    const f: Family = { name, help, kind, labelNames: labelNames === null ? null : [...labelNames], series: new Map() };
    this.families.set(name, f);
    return f;
  }

  private key(f: Family, labels: Labels): string {
    if (f.labelNames === null) throw new Error(`metric ${f.name} is a snapshot family: replace() its series`);
    const given = Object.keys(labels);
    for (const l of given)
      if (!f.labelNames.includes(l)) throw new Error(`metric ${f.name}: unknown label ${JSON.stringify(l)}`);
    for (const l of f.labelNames)
      if (labels[l] === undefined) throw new Error(`metric ${f.name}: missing label ${JSON.stringify(l)}`);
    return JSON.stringify(f.labelNames.map((l) => labels[l]));
  }

  private add(f: Family, labels: Labels, n: number): void {
    const k = this.key(f, labels);
    const s = f.series.get(k);
    if (s) s.value += n;
    else f.series.set(k, { labels: { ...labels }, value: n });
  }
}

function checkLabelName(metric: string, label: string): void {
  if (!LABEL.test(label) || label.startsWith('__'))
    throw new Error(`metric ${metric}: label name ${JSON.stringify(label)} is not valid`);
}

function renderLabels(names: readonly string[], labels: Labels): string {
  if (names.length === 0) return '';
  const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return `{${names.map((n) => `${n}="${escape(labels[n] ?? '')}"`).join(',')}}`;
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
