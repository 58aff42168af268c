import { describe, expect, it } from 'vitest';
import { Metrics } from './metrics.ts';

describe('Metrics', () => {
  it('renders HELP, TYPE and labelled series in the text exposition format', () => {
    const m = new Metrics();
    const c = m.counter('gpu_reflex_events_published_total', 'Events the bus accepted.', ['detail_type']);
    c.inc({ detail_type: 'GPU XID Error' });
    c.inc({ detail_type: 'GPU XID Error' }, 2);
    c.inc({ detail_type: 'GPU Inventory' });
    m.gauge('gpu_reflex_spool_bytes', 'Spool size.').set(42);
    expect(m.render()).toBe(
      [
        '# HELP gpu_reflex_events_published_total Events the bus accepted.',
        '# TYPE gpu_reflex_events_published_total counter',
        'gpu_reflex_events_published_total{detail_type="GPU XID Error"} 3',
        'gpu_reflex_events_published_total{detail_type="GPU Inventory"} 1',
        '# HELP gpu_reflex_spool_bytes Spool size.',
        '# TYPE gpu_reflex_spool_bytes gauge',
        'gpu_reflex_spool_bytes 42',
        '',
      ].join('\n'),
    );
  });

  it('escapes backslashes, quotes and newlines in label values', () => {
    const m = new Metrics();
    m.counter('x_total', 'x', ['v']).inc({ v: 'a"b\\c\nd' });
    expect(m.render()).toContain('x_total{v="a\\"b\\\\c\\nd"} 1');
  });

  it('shows an unlabelled counter as 0 before its first increment', () => {
    const m = new Metrics();
    m.counter('gpu_reflex_events_failed_total', 'Failed.');
    expect(m.render()).toContain('\ngpu_reflex_events_failed_total 0\n');
  });

  it('returns the same metric when a part registers a name again', () => {
    const m = new Metrics();
    m.counter('a_total', 'a').inc();
    m.counter('a_total', 'a').inc();
    expect(m.counter('a_total', 'a').value()).toBe(2);
  });

  it.each([
    [(m: Metrics) => m.gauge('a_total', 'a'), /already registered as a counter/],
    [(m: Metrics) => m.counter('a_total', 'a', ['x']), /already registered/],
    [(m: Metrics) => m.counter('bad-name', 'a'), /not a valid Prometheus name/],
    [(m: Metrics) => m.counter('b_total', 'b', ['__x']), /label name/],
    [(m: Metrics) => m.counter('a_total', 'a').inc({ nope: '1' }), /unknown label "nope"/],
    [(m: Metrics) => m.counter('a_total', 'a').inc({}, -1), /must be >= 0/],
    [(m: Metrics) => m.counter('c_total', 'c', ['gpu']).inc({}), /missing label "gpu"/],
  ])('refuses misuse with an error naming the problem (%#)', (misuse, message) => {
    const m = new Metrics();
    m.counter('a_total', 'a');
    expect(() => misuse(m)).toThrow(message);
  });
});

describe('Metrics.snapshot', () => {
  it('renders each series with its own labels, replaces them whole, and hides a family with none', () => {
    const m = new Metrics();
    const f = m.snapshot('DCGM_FI_DEV_GPU_TEMP', 'GPU temperature (in C).', 'gauge');
    f.replace([
      { labels: { gpu: '0' }, value: 61 },
      { labels: { gpu: '1', GPU_I_ID: '7' }, value: 62 },
    ]);
    expect(m.render()).toBe(
      '# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0"} 61\nDCGM_FI_DEV_GPU_TEMP{gpu="1",GPU_I_ID="7"} 62\n',
    );
    f.replace([{ labels: { gpu: '1', GPU_I_ID: '7' }, value: 63 }]);
    expect(m.render()).not.toContain('gpu="0"');
    f.replace([]);
    expect(m.render()).toBe('\n');
  });

  it('refuses two series with the same labels, and a bad label name', () => {
    const f = new Metrics().snapshot('x', 'x', 'gauge');
    expect(() =>
      f.replace([
        { labels: { a: '1', b: '2' }, value: 1 },
        { labels: { b: '2', a: '1' }, value: 2 },
      ]),
    ).toThrow(/two series/);
    expect(() => f.replace([{ labels: { 'bad-name': '1' }, value: 1 }])).toThrow(/label name/);
  });
});
