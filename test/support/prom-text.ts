/**
 * Test support: `/metrics` text as Prometheus sees it. The parsing is parse-prometheus-text-format
 * (a port of Prometheus' Go text parser); it accepts things Prometheus would not ingest cleanly
 * (a family split in two, a duplicate TYPE, a value that is not a number, an untyped sample), so
 * `parseExposition` adds those checks on top. `scrape` applies what a scrape adds: the target's
 * labels, with an exposed label that clashes renamed to `exported_<name>` (honor_labels: false),
 * and empty-valued labels dropped.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

export interface ParsedSeries {
  labels: Record<string, string>;
  value: number;
}

export interface ParsedFamily {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  series: ParsedSeries[];
}

const VALUE = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]Inf)$/;

export function parseExposition(text: string): Map<string, ParsedFamily> {
  // Each family's HELP/TYPE once, before its samples; its samples together.
  const typeLines = text.split('\n').filter((l) => l.startsWith('# TYPE '));
  const typed = typeLines.map((l) => l.split(' ')[2]!);
  if (new Set(typed).size !== typed.length) throw new Error(`a TYPE line repeats: ${typed.join(', ')}`);
  const out = new Map<string, ParsedFamily>();
  for (const f of parsePrometheusTextFormat(text)) {
    if (out.has(f.name)) throw new Error(`family ${f.name} is split: its samples are not together`);
    if (f.type !== 'GAUGE' && f.type !== 'COUNTER')
      throw new Error(`family ${f.name} is ${f.type}: every exported family declares gauge or counter`);
    const seen = new Set<string>();
    const series = f.metrics.map((m) => {
      if (m.timestamp_ms !== undefined) throw new Error(`family ${f.name}: a sample carries a timestamp`);
      if (m.value === undefined || !VALUE.test(m.value))
        throw new Error(`family ${f.name}: value ${JSON.stringify(m.value)} is not a number`);
      const labels = m.labels ?? {};
      const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
      if (seen.has(key)) throw new Error(`family ${f.name}: two samples with labels ${key}`);
      seen.add(key);
      return { labels, value: Number(m.value.replace('Inf', 'Infinity')) };
    });
    out.set(f.name, { name: f.name, type: f.type === 'GAUGE' ? 'gauge' : 'counter', help: f.help, series });
  }
  return out;
}

/** One series in Prometheus after the scrape: `__name__` included. */
export type PromSeries = { labels: Record<string, string>; value: number };

export function scrape(families: Map<string, ParsedFamily>, target: Record<string, string>): PromSeries[] {
  const out: PromSeries[] = [];
  for (const f of families.values()) {
    for (const s of f.series) {
      const labels: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.labels)) labels[k in target ? `exported_${k}` : k] = v;
      Object.assign(labels, target, { __name__: f.name });
      for (const [k, v] of Object.entries(labels)) if (v === '') delete labels[k];
      out.push({ labels, value: s.value });
    }
  }
  return out;
}

/** What a ServiceMonitor scrape of the agent's pod adds (prometheus-operator's target labels). */
export const SERVICE_MONITOR_TARGET = {
  job: 'gpu-reflex-node-agent',
  instance: '10.0.3.17:9400',
  namespace: 'gpu-reflex',
  pod: 'gpu-reflex-node-agent-x7k2p',
  container: 'agent',
  service: 'gpu-reflex-node-agent',
  endpoint: 'metrics',
};
