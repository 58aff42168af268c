// The package ships no types. Shape as it returns it (a port of Prometheus' Go text parser).
declare module 'parse-prometheus-text-format' {
  interface ParsedFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED';
    metrics: { value?: string; labels?: Record<string, string>; timestamp_ms?: string }[];
  }
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
